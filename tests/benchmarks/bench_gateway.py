"""``seamkit serve`` as a gateway, against the gateway users run today:
LiteLLM's proxy, both in front of the same loopback model server.

Five servers, one process each, on 127.0.0.1, measured in one run with the
same request mix:

- **seamkit**: ``seamkit serve`` (one worker, one API key) of an app whose
  model is the ``openai`` provider pointed at the model server (``base_url``);
- **litellm**: LiteLLM's proxy (``litellm[proxy]``, the release the LiteLLM
  test pins, installed from the package index into a throwaway virtual
  environment, by uv under ``uv run``) whose ``bench`` model forwards to the
  same model server (``openai/upstream``, ``api_base``); a master key (this
  release refuses to start without one), no database, ``num_retries: 0``;
- **litellm_mock**: the same proxy's ``bench-mock`` model, LiteLLM's own
  ``mock_response`` (nothing behind it): the proxy alone, reported;
- **forward**: the forwarding floor (`forward_app`): bare Starlette that
  parses the request, sends it on to the same model server with one pooled
  ``httpx.AsyncClient`` and relays the bytes, served as ``seamkit serve``
  serves (same socket, same uvicorn options, access log on);
- **floor**: ``bench_serve``'s bare Starlette floor (`bare_app`), which
  parses the request and answers with the bytes seamkit sent for it, captured
  once at the start: no model server behind it.

The **model server** (`model_app`, its own uvicorn process) is a raw ASGI app
that answers every chat completion with `TEXT`, in its 10 `DELTAS` when
streamed (``include_usage`` honoured), whole otherwise.

The request mix: stateless chat completions, streamed and whole in turn, one
at a time on one keep-alive connection per server (``bench_serve``'s
`Connection`: it costs the shared CPUs far less than ``httpx``), in rounds
that rotate the servers' order, after a discarded warm-up. A latency is from
writing the request to the last byte of the answer; every answer is checked
(status 200, the text `TEXT` whole, a stream ending in ``[DONE]``). A
wrong answer from seamkit or a floor stops the benchmark. A wrong answer from
a peer (LiteLLM's proxy, `PEERS`) is not discarded silently: it is counted,
printed and reported (``wrong_answers``), and the request is sent again, up
to `PEER_TRIES` times; the latency kept is the right answer's. (CI once saw
LiteLLM answer one ``mock_response`` request with an HTTP 500 whose message
is empty, on a loaded 2-core machine; the benchmark measures latency, and
another project's rare failure is news, not a reason to fail the suite.)

Figures (milliseconds): the p50 of each server's latencies (its figure's
median) and the p95 (one sample). Targets: seamkit's p50 <= 0.5x LiteLLM
proxy's (``p50/seamkit_vs_litellm``), and <= 2x the floor's: the floor that
takes the same path, the forwarding one (``p50/seamkit``, against
``p50/forward``). Against ``bench_serve``'s floor, which has no model server
behind it, the ratio is reported (``p50/seamkit_vs_floor``) without a target:
a hop to the model server costs that floor's whole latency several times
over, so 2x of it measures the hop, not the gateway; ``bench_serve`` keeps
that floor's 2x target for ``seamkit serve`` of a scripted app, like for like.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
import venv
from importlib import metadata
from pathlib import Path
from typing import Any

from tests.benchmarks._harness import figure, print_figures, result, verdict
from tests.benchmarks.bench_serve import (
    DELTAS,
    TEXT,
    Connection,
    Server,
    bare_server,
    seamkit_server,
)

LITELLM = "litellm[proxy]==1.106.2"
"""The release ``tests/plugins/test_openai_litellm.py`` pins and describes."""

FULL = {"warmup": 40, "per_round": 50, "rounds": 20}  # 1,000 measured per server
QUICK = {"warmup": 2, "per_round": 4, "rounds": 2}
LITELLM_TARGET = 0.5
FLOOR_TARGET = 2.0
START_SECONDS = 180.0
KEY = "sk-" + secrets.token_hex(32)
"""The one API key: LiteLLM's master key, and seamkit's ``serve.api_keys``
(the floor checks none)."""
KEY_VARIABLE = "BENCH_GATEWAY_KEY"
SERVERS = ("seamkit", "litellm", "litellm_mock", "forward", "floor")
MODEL = {
    "seamkit": "bench",
    "litellm": "bench",
    "litellm_mock": "bench-mock",
    "forward": "bench",
    "floor": "bench",
}
"""The ``model`` each server's requests name."""
PEERS = frozenset({"litellm", "litellm_mock"})
"""The servers others wrote: a wrong answer of theirs is counted and retried."""
PEER_TRIES = 3
"""How many times a peer's request is sent before a wrong answer stops the run."""


# --- the loopback model server (its own process) ---------------------------------------


def _chunk(delta: dict[str, Any], finish: str | None) -> bytes:
    data = {
        "id": "chatcmpl-upstream",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "upstream",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(data).encode() + b"\n\n"


USAGE = {"prompt_tokens": 9, "completion_tokens": 10, "total_tokens": 19}
WHOLE = json.dumps(
    {
        "id": "chatcmpl-upstream",
        "object": "chat.completion",
        "created": 1,
        "model": "upstream",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": TEXT},
                "finish_reason": "stop",
            }
        ],
        "usage": USAGE,
    }
).encode()
STREAM = [
    _chunk({"role": "assistant", "content": ""}, None),
    *(_chunk({"content": d}, None) for d in DELTAS),
    _chunk({}, "stop"),
]
USAGE_CHUNK = (
    b"data: "
    + json.dumps(
        {
            "id": "chatcmpl-upstream",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "upstream",
            "choices": [],
            "usage": USAGE,
        }
    ).encode()
    + b"\n\n"
)


async def model_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The model server: every ``POST .../chat/completions`` answered with
    `TEXT` (streamed in `DELTAS`, with a usage chunk when asked), and
    ``GET .../models``."""
    if scope["type"] != "http":
        return
    raw = b""
    while True:
        message = await receive()
        raw += message.get("body", b"")
        if not message.get("more_body"):
            break
    if scope["method"] == "GET":
        body = json.dumps({"object": "list", "data": [{"id": "upstream", "object": "model"}]})
        await _send_whole(send, body.encode())
        return
    request = json.loads(raw)
    if not request.get("stream"):
        await _send_whole(send, WHOLE)
        return
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/event-stream")],
        }
    )
    events = list(STREAM)
    if (request.get("stream_options") or {}).get("include_usage"):
        events.append(USAGE_CHUNK)
    events.append(b"data: [DONE]\n\n")
    for event in events:
        await send({"type": "http.response.body", "body": event, "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _send_whole(send: Any, body: bytes) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def serve_model(port: int) -> None:
    """Serve `model_app` on ``port`` (uvicorn, one process, no access log)."""
    import uvicorn
    from seamkit.plugins import listening_socket

    config = uvicorn.Config(model_app, log_level="warning", access_log=False, lifespan="off")
    uvicorn.Server(config).run(sockets=[listening_socket("127.0.0.1", port)])


# --- the forwarding floor (its own process) -------------------------------------------

UPSTREAM = "BENCH_GATEWAY_UPSTREAM"  # the model server's base URL, for the forwarding floor


def forward_app() -> Any:
    """The forwarding floor: a bare Starlette app whose one route reads and
    parses the request's JSON, sends it on to the model server with one
    pooled ``httpx.AsyncClient`` and answers with the model server's bytes
    (streamed through as they come, or whole): the least a gateway in front
    of a model server does, with no run, no hooks, no conversion."""
    import httpx
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    url = os.environ[UPSTREAM] + "/chat/completions"
    client = httpx.AsyncClient(timeout=60.0)

    async def chat(request: Request) -> Response:
        body = await request.body()
        headers = {"content-type": "application/json"}
        if not json.loads(body).get("stream"):
            answer = await client.post(url, content=body, headers=headers)
            return Response(answer.content, media_type="application/json")
        upstream = await client.send(
            client.build_request("POST", url, content=body, headers=headers), stream=True
        )

        async def relay() -> Any:
            try:
                async for piece in upstream.aiter_raw():
                    yield piece
            finally:
                await upstream.aclose()

        return StreamingResponse(relay(), media_type="text/event-stream")

    async def readyz(request: Request) -> Response:
        return JSONResponse({"status": "ready", "app": "forward"})

    return Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/readyz", readyz, methods=["GET"]),
        ]
    )


def serve_forward(port: int) -> None:
    """Serve `forward_app` as ``seamkit serve`` serves its app (the same
    socket and uvicorn options as ``bench_serve.serve_bare``), one worker."""
    import uvicorn
    from seamkit.plugins import listening_socket

    config = uvicorn.Config(
        "tests.benchmarks.bench_gateway:forward_app",
        factory=True,
        timeout_graceful_shutdown=30,
        log_level="info",
        lifespan="on",
    )
    uvicorn.Server(config).run(sockets=[listening_socket("127.0.0.1", port)])


# --- processes ----------------------------------------------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


class Process:
    """A server process that is not a ``bench_serve.Server`` (the model server,
    LiteLLM's proxy): ready once ``ready_path`` answers 200."""

    def __init__(
        self,
        name: str,
        argv: list[str],
        port: int,
        ready_path: str,
        logs: Path,
        env: dict[str, str],
        cwd: Path,
    ) -> None:
        self.name = name
        self.port = port
        self.log = logs / f"{name}-{port}.log"
        with self.log.open("w") as out:
            self.process = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd
            )
        self.ready_url = f"http://127.0.0.1:{port}{ready_path}"

    def wait(self, deadline: float) -> None:
        import httpx

        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited:\n{self.log.read_text()[-3000:]}")
            try:
                if httpx.get(self.ready_url, timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} never got ready:\n{self.log.read_text()[-3000:]}")
            time.sleep(0.1)

    def stop(self) -> str:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.log.read_text()


def _clean_env(**extra: str) -> dict[str, str]:
    prefixes = ("SEAMKIT_", "VIRTUAL_ENV", "PYTHON", "LITELLM_", "OPENAI_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    env.update(extra)
    return env


def install_litellm(directory: Path) -> Path:
    """``litellm`` from a fresh virtual environment holding `LITELLM`, by uv
    when run under ``uv run`` (it sets ``UV``), else by pip."""
    uv = os.environ.get("UV")
    venv.EnvBuilder(with_pip=uv is None, clear=True).create(directory)
    python = directory / "bin" / "python"
    if uv is not None:
        command = [uv, "pip", "install", "--quiet", "--python", str(python), LITELLM]
    else:
        command = [str(python), "-m", "pip", "install", "--quiet", LITELLM]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        env=_clean_env(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1"),
        timeout=900,
    )
    if done.returncode != 0:
        raise RuntimeError(f"installing {LITELLM} failed:\n{done.stderr[-3000:]}")
    return directory / "bin" / "litellm"


def _litellm_config(upstream: str) -> dict[str, Any]:
    return {
        "model_list": [
            {
                "model_name": MODEL["litellm"],
                "litellm_params": {
                    "model": "openai/upstream",
                    "api_base": upstream,
                    "api_key": "none",
                },
            },
            {
                "model_name": MODEL["litellm_mock"],
                "litellm_params": {
                    "model": "openai/bench-mock",
                    "api_key": "none",
                    "mock_response": TEXT,
                },
            },
        ],
        "router_settings": {"num_retries": 0},
        "general_settings": {"master_key": KEY},
    }


def _seamkit_app(directory: Path, upstream: str) -> Path:
    app = directory / "bench.yaml"
    app.write_text(
        f"name: bench\nmodel:\n  provider: openai\n  name: upstream\n  base_url: {upstream}\n",
        encoding="utf-8",
    )
    return app


# --- the load -------------------------------------------------------------------------------


def _body(model: str, stream: bool) -> bytes:
    messages = [{"role": "user", "content": "hi"}]
    return json.dumps({"model": model, "stream": stream, "messages": messages}).encode()


def check(status: int, raw: bytes, stream: bool) -> str | None:
    """None when ``raw`` is `TEXT` answered right (any server's chunking),
    else what is wrong."""
    if status != 200:
        return f"HTTP {status}: {raw[:300]!r}"
    try:
        if not stream:
            content = json.loads(raw)["choices"][0]["message"]["content"]
            return None if content == TEXT else f"the answer is {content!r}"
        events = [e for e in raw.split(b"\n\n") if e.strip()]
        if not events or events[-1] != b"data: [DONE]":
            return f"no [DONE] at the end: {raw[-200:]!r}"
        text = ""
        for event in events[:-1]:
            data = json.loads(event.removeprefix(b"data: "))
            if "error" in data:
                return f"an error event: {data['error']}"
            for choice in data.get("choices") or []:
                text += (choice.get("delta") or {}).get("content") or ""
        return None if text == TEXT else f"the streamed text is {text!r}"
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        return f"unreadable answer ({exc!r}): {raw[:300]!r}"


class WrongAnswer(RuntimeError):
    """A server answered wrong (a peer, `PEER_TRIES` times in a row)."""

    def __init__(self, name: str, why: str) -> None:
        super().__init__(f"{name}: a wrong answer: {why}")
        self.name = name


async def measure(
    ports: dict[str, int], counts: dict[str, int], wrong: dict[str, list[str]] | None = None
) -> dict[str, list[float]]:
    """Each server's latencies in ms, the same mix (streamed and whole in
    turn) in rounds that rotate the servers' order. Raises `WrongAnswer` on
    a wrong answer, except a peer's, which goes into ``wrong`` (by server)
    and is asked again, up to `PEER_TRIES` times."""
    conns = {name: Connection(port) for name, port in ports.items()}
    latencies: dict[str, list[float]] = {name: [] for name in ports}
    wrong = {} if wrong is None else wrong
    order = list(ports)
    try:
        for r in range(-1, counts["rounds"]):  # round -1: the warm-up, discarded
            n = counts["warmup"] if r < 0 else counts["per_round"]
            for name in order[r % len(order) :] + order[: r % len(order)]:
                conn = conns[name]
                for i in range(n):
                    stream = i % 2 == 0
                    body = _body(MODEL[name], stream)
                    for attempt in range(1, (PEER_TRIES if name in PEERS else 1) + 1):
                        await conn.ready()
                        start = time.perf_counter()
                        status, raw = await conn.post(body, None, KEY)
                        took = time.perf_counter() - start
                        if (why := check(status, raw, stream)) is None:
                            break
                        wrong.setdefault(name, []).append(why)
                        print(f"{name}: a wrong answer (try {attempt}): {why}")
                    else:
                        raise WrongAnswer(name, why)
                    if r >= 0:
                        latencies[name].append(took * 1e3)
    finally:
        await asyncio.gather(*(c.aclose() for c in conns.values()))
    return latencies


async def capture(port: int) -> dict[str, Any]:
    """What seamkit sent for one request, streamed (its SSE events) and whole
    (the JSON body): what the floor answers (``bench_serve.bare_app``)."""
    conn = Connection(port)
    await conn.ready()
    try:
        streamed = await conn.post(_body(MODEL["seamkit"], True), None, KEY)
        whole = await conn.post(_body(MODEL["seamkit"], False), None, KEY)
    finally:
        await conn.aclose()
    for (status, raw), stream in ((streamed, True), (whole, False)):
        if (why := check(status, raw, stream)) is not None:
            raise RuntimeError(f"seamkit's answer to capture is wrong: {why}")
    events = [e.decode() + "\n\n" for e in streamed[1].split(b"\n\n") if e.strip()]
    return {"events": events, "whole": whole[1].decode()}


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def _run(
    counts: dict[str, int], tmp: Path, wrong: dict[str, list[str]]
) -> tuple[dict[str, list[float]], dict[str, str]]:
    """Start the servers, measure them (a peer's wrong answers into
    ``wrong``), stop them: the latencies and each server's log. A wrong
    answer that stops the run carries the tail of the server's log."""
    logs = tmp / "logs"
    logs.mkdir()
    installed = time.monotonic()
    litellm = install_litellm(tmp / "litellm-venv")
    print(f"{LITELLM} installed in {time.monotonic() - installed:.1f} s")
    model_port = _free_port()
    upstream = f"http://127.0.0.1:{model_port}/v1"
    code = f"from tests.benchmarks.bench_gateway import serve_model; serve_model({model_port})"
    root = Path(__file__).resolve().parent.parent.parent
    env = _clean_env()
    model = Process(
        "model", [sys.executable, "-c", code], model_port, "/v1/models", logs, env, root
    )
    proxy_dir = tmp / "litellm"
    proxy_dir.mkdir()
    (proxy_dir / "config.yaml").write_text(json.dumps(_litellm_config(upstream)), encoding="utf-8")
    proxy_port = _free_port()
    proxy = Process(
        "litellm",
        [str(litellm), "--config", "config.yaml", "--host", "127.0.0.1", "--port", str(proxy_port)],
        proxy_port,
        "/health/liveliness",
        logs,
        _clean_env(LITELLM_LOCAL_MODEL_COST_MAP="True", PYTHONUNBUFFERED="1"),
        proxy_dir,
    )
    servers: list[Server] = []
    try:
        deadline = time.monotonic() + START_SECONDS
        model.wait(deadline)
        app = _seamkit_app(tmp, upstream)
        os.environ[KEY_VARIABLE] = KEY  # inherited by seamkit serve
        try:
            seamkit = seamkit_server("seamkit", app, str(tmp / "sessions.sqlite"), 1, logs)
        finally:
            del os.environ[KEY_VARIABLE]
        servers.append(seamkit)
        events = tmp / "captured.json"
        events.write_text(json.dumps(asyncio.run(capture(seamkit.port))), encoding="utf-8")
        servers.append(bare_server(events, 1, logs))
        servers.append(forward_server(upstream, logs))
        proxy.wait(deadline)
        ports = {
            "seamkit": seamkit.port,
            "litellm": proxy_port,
            "litellm_mock": proxy_port,
            "forward": servers[2].port,
            "floor": servers[1].port,
        }
        try:
            latencies = asyncio.run(measure(ports, counts, wrong))
        except WrongAnswer as exc:
            owner = next(s for s in (*servers, proxy) if s.port == ports[exc.name])
            log = owner.stop()[-3000:]
            raise RuntimeError(f"{exc}\n{owner.name}'s log ends:\n{log}") from None
    finally:
        logs_text = {s.name: s.stop() for s in servers}
        logs_text["litellm"] = proxy.stop()
        logs_text["model"] = model.stop()
    return latencies, logs_text


def forward_server(upstream: str, logs: Path) -> Server:
    port = _free_port()
    code = f"from tests.benchmarks.bench_gateway import serve_forward; serve_forward({port})"
    os.environ[UPSTREAM] = upstream  # inherited by the server
    try:
        return Server("forward", [sys.executable, "-c", code], port, 1, logs)
    finally:
        del os.environ[UPSTREAM]


def _versions() -> dict[str, str]:
    found = {}
    for dist in ("seamkit-serve", "seamkit-openai", "starlette", "uvicorn"):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            found[dist] = "not installed"
    found["litellm"] = LITELLM.partition("==")[2]
    return found


def main(quick: bool = False) -> dict[str, Any]:
    counts = QUICK if quick else FULL
    versions = _versions()
    print(
        f"gateway: one process per server; {counts['rounds']} rounds x {counts['per_round']} "
        f"requests per server (streamed and whole in turn), after {counts['warmup']} warm-up; "
        + ", ".join(f"{k} {v}" for k, v in versions.items())
        + f"; python {sys.version.split()[0]}, {os.cpu_count()} cpus"
    )
    with tempfile.TemporaryDirectory(prefix="seamkit-bench-gateway-") as tmp:
        wrong: dict[str, list[str]] = {}
        latencies, _ = _run(counts, Path(tmp), wrong)
    p50 = {name: statistics.median(samples) for name, samples in latencies.items()}
    high = {name: p95(samples) for name, samples in latencies.items()}
    labels = {
        "seamkit": "seamkit serve -> model server",
        "litellm": "LiteLLM proxy -> model server",
        "litellm_mock": "LiteLLM proxy, mock_response",
        "forward": "bare Starlette + httpx -> model server",
        "floor": "bare Starlette floor (no model server)",
    }
    against = {  # each p50's baseline and target
        "floor": ("floor", None),
        "forward": ("floor", None),
        "seamkit": ("forward", FLOOR_TARGET),
        "litellm": ("forward", None),
        "litellm_mock": ("floor", None),
    }
    figures, baselines = [], {}
    for name, (base, target) in against.items():
        figures.append(
            figure(f"p50/{name}", f"p50 {labels[name]}", latencies[name], p50[base],
                   unit="ms", target=target)
        )  # fmt: skip
        baselines[f"p50/{name}"] = f"p50/{base}"
    figures.append(
        figure("p50/seamkit_vs_litellm", "p50 seamkit serve, against LiteLLM proxy",
               latencies["seamkit"], p50["litellm"], unit="ms", target=LITELLM_TARGET)
    )  # fmt: skip
    baselines["p50/seamkit_vs_litellm"] = "p50/litellm"
    figures.append(
        figure("p50/seamkit_vs_floor", "p50 seamkit serve, against the bare floor",
               latencies["seamkit"], p50["floor"], unit="ms")
    )  # fmt: skip
    baselines["p50/seamkit_vs_floor"] = "p50/floor"
    for name in SERVERS:
        figures.append(
            figure(f"p95/{name}", f"p95 {labels[name]}", [high[name]], high["floor"], unit="ms")
        )
        baselines[f"p95/{name}"] = "p95/floor"
    res = result(
        "gateway",
        quick=quick,
        baseline="p50/floor",
        figures=figures,
        baselines=baselines,
        **counts,
        requests={name: len(samples) for name, samples in latencies.items()},
        versions=versions,
        upstream="model server",
        wrong_answers={name: len(whys) for name, whys in wrong.items()},
    )
    print_figures(res["figures"], baselines)
    for name, whys in wrong.items():
        print(f"{name}: {len(whys)} wrong answer(s), each asked again: {whys[0]}")
    print(f"{res['benchmark']}: {verdict(res)}")
    return res


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
