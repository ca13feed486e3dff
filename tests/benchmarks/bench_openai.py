"""The ``openai`` provider (``seamkit-openai``) against the official ``openai`` SDK.

Four requirements of the provider's issue, measured side by side in one run:

1. **CPU per streamed turn**, client side: ``async for item in model.stream(request)``
   on the provider against the official SDK's
   ``await AsyncOpenAI(...).chat.completions.create(..., stream=True,
   stream_options={"include_usage": True})`` consumed with ``async for chunk in
   stream``, both reading the same bytes from the same local server. Two turns:
   ``text``, 1 KB of text in 50 chunks; ``tools``, four tool calls, each a first
   fragment (index, id, type, name, empty arguments) and six argument fragments.
   Each ends with a finish chunk, a usage chunk (``"choices": []``) and
   ``[DONE]``. The server runs in a separate process, so ``time.process_time()``
   of this process is the clients' CPU alone. Each client is first checked to
   read the server's text or calls exactly (the warm-up turns, discarded). Then
   rounds alternate the clients (their order swapped every round); a sample is
   the CPU time of ``turns`` turns over their count; a figure is the median of
   the rounds. Target: seamkit / openai <= 0.5, for each turn.
2. **200 concurrent streamed runs**: ``asyncio.gather`` of 200
   ``seamkit.Agent.stream("hi")`` on one agent over the provider (the kernel's
   drive loop included), each checked to end with a ``RunFinished`` whose
   outcome is ``completed``, whose output is the server's text and which
   streamed its 50 deltas. Beside them, the same number of runs one after the
   other (the baseline of the wall time, no target). In the harness' form the
   count is a figure ``concurrent/started`` (the runs started over every round)
   whose ratio is taken against ``concurrent/completed``, target 1.0: met
   exactly when every run started completed.
3. **Memory**: 10,000 streamed agent runs (in batches of ``MEMORY_BATCH``
   gathered at once, after a warm-up); the RSS (``/proc/self/statm``) is read
   after ``gc.collect()`` at the half and at the end; ratio = end / half,
   target 1.05 (it grows less than 5 %).
4. **Import cost**: ``import seamkit_openai`` against ``import openai``, each
   timed inside a fresh interpreter around the import statement alone (so the
   interpreter's start-up is not counted): its CPU time (``time.process_time``,
   the figure: robust against other load on the machine) and its wall time
   (reported). Interleaved in rounds with their order rotated; one warm-up round
   discarded, which writes byte code (``PYTHONDONTWRITEBYTECODE`` and
   ``SEAMKIT_*`` are removed from the children's environment, as in
   ``bench_cold_start``); medians. Target: seamkit_openai / openai <= 1/3.
   Reported without a target: the import once the model class is used
   (``from seamkit_openai import OpenAIModel``, which loads the config model,
   pydantic and httpx; the provider imports them lazily).

The extra key ``baselines`` maps every figure to the one its ratio is taken
against; ``connections_per_turn`` says how many connections the server
accepted per turn of each client (1.0: a new connection every turn).

The server (:func:`serve`) is a raw asyncio HTTP/1.1 server on 127.0.0.1 and a
free port, with keep-alive: it reads a request (``Content-Length`` body) and
writes one of two pre-rendered responses (``text/event-stream``, chunked, one
HTTP chunk per SSE event) in one write, chosen by the request's model name, so
its cost is the same whatever the client (``Server(more="module:function")``
serves further pre-rendered answers by model name: ``bench_output``'s). It
counts connections and requests (``GET /stats``); a sample whose turns did not
make one request each fails the benchmark.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import importlib
import itertools
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from importlib import metadata
from typing import Any

import seamkit

from tests.benchmarks._harness import ROOT, figure, print_figures, result, verdict

# --- the answers ---------------------------------------------------------------

TEXT_MODEL = "bench-text"
TOOLS_MODEL = "bench-tools"
TEXT_CHUNKS = 50
TEXT_CHARS = 1024
TOOL_CALLS = 4
ARGUMENT_FRAGMENTS = 6
CREATED = 1_767_225_600
CITIES = ("Paris", "Lisbon", "Reykjavik", "Ulaanbaatar")
PROMPT = "hi"

# --- the counts --------------------------------------------------------------------

FULL = {
    "rounds": 15,  # CPU rounds (each: every turn kind x every client)
    "turns": 30,  # turns per CPU sample
    "warmup_turns": 20,  # per client and turn kind, checked, discarded
    "concurrent": 200,  # runs gathered at once
    "concurrent_rounds": 3,
    "memory_runs": 10_000,
    "memory_warmup": 500,
    "import_rounds": 15,
    "import_warmup": 1,
}
QUICK = {
    "rounds": 2,
    "turns": 2,
    "warmup_turns": 1,
    "concurrent": 10,
    "concurrent_rounds": 1,
    "memory_runs": 20,
    "memory_warmup": 2,
    "import_rounds": 1,
    "import_warmup": 0,
}
MEMORY_BATCH = 10  # memory runs gathered at once
CPU_TARGET = 0.5
MEMORY_TARGET = 1.05
IMPORT_TARGET = 1 / 3


@functools.cache
def text() -> str:
    """The text turn's 1 KB of text (ASCII, deterministic)."""
    words = ("the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "while")
    out: list[str] = []
    size = 0
    i = 0
    while size < TEXT_CHARS:
        word = words[i % len(words)]
        out.append(word)
        size += len(word) + 1
        i += 1
    return " ".join(out)[:TEXT_CHARS]


def arguments(i: int) -> str:
    """The JSON arguments of tool call ``i``."""
    return json.dumps({"city": CITIES[i], "unit": "celsius", "days": i + 1})


def _pieces(value: str, n: int) -> list[str]:
    """``value`` cut into ``n`` pieces of (nearly) equal length."""
    bounds = [round(k * len(value) / n) for k in range(n + 1)]
    return [value[a:b] for a, b in itertools.pairwise(bounds)]


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{model}",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _usage(model: str, completion_tokens: int) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{model}",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": model,
        "choices": [],
        "usage": {
            "prompt_tokens": 9,
            "completion_tokens": completion_tokens,
            "total_tokens": 9 + completion_tokens,
        },
    }


def content_events(
    model: str, content: str, chunks: int, completion_tokens: int
) -> list[dict[str, Any]]:
    """A text answer of ``model``: ``content`` in ``chunks`` content chunks,
    the finish chunk (``stop``), the usage chunk."""
    pieces = _pieces(content, chunks)
    events = [_chunk(model, {"role": "assistant", "content": pieces[0]})]
    events += [_chunk(model, {"content": p}) for p in pieces[1:]]
    events.append(_chunk(model, {}, "stop"))
    events.append(_usage(model, completion_tokens))
    return events


def text_events() -> list[dict[str, Any]]:
    """The text turn: 50 content chunks, the finish chunk, the usage chunk."""
    return content_events(TEXT_MODEL, text(), TEXT_CHUNKS, 240)


def tool_events() -> list[dict[str, Any]]:
    """The tools turn: four calls, each opened then its arguments in fragments."""
    events: list[dict[str, Any]] = []
    for i in range(TOOL_CALLS):
        opening = {
            "index": i,
            "id": f"call_{i:024d}",
            "type": "function",
            "function": {"name": "get_weather", "arguments": ""},
        }
        delta: dict[str, Any] = {"tool_calls": [opening]}
        if i == 0:
            delta = {"role": "assistant", "content": None, **delta}
        events.append(_chunk(TOOLS_MODEL, delta))
        for piece in _pieces(arguments(i), ARGUMENT_FRAGMENTS):
            fragment = {"index": i, "function": {"arguments": piece}}
            events.append(_chunk(TOOLS_MODEL, {"tool_calls": [fragment]}))
    events.append(_chunk(TOOLS_MODEL, {}, "tool_calls"))
    events.append(_usage(TOOLS_MODEL, 96))
    return events


def render(events: list[dict[str, Any]]) -> bytes:
    """The whole HTTP response: head, then each SSE event in its own HTTP chunk."""
    head = (
        b"HTTP/1.1 200 OK\r\n"
        b"content-type: text/event-stream; charset=utf-8\r\n"
        b"cache-control: no-cache\r\n"
        b"transfer-encoding: chunked\r\n"
        b"\r\n"
    )
    datas = [json.dumps(e, separators=(",", ":")) for e in events] + ["[DONE]"]
    body = b"".join(
        b"%x\r\n%s\r\n" % (len(event), event)
        for event in (f"data: {d}\n\n".encode() for d in datas)
    )
    return head + body + b"0\r\n\r\n"


# --- the server (its own process) ----------------------------------------------------


def serve(more: str | None = None) -> None:
    """Run the server: print its port on stdout, answer until stdin closes.

    ``more`` (``"module:function"``) names a function returning further
    answers, ``{model name: events}``, served beside the text and tools turns
    to a request for that model (another benchmark's own stream); an answer
    given as bytes is served as it is (a whole HTTP response: another API's
    stream, ``bench_anthropic``'s)."""
    answers = {TEXT_MODEL: render(text_events()), TOOLS_MODEL: render(tool_events())}
    if more is not None:
        module, _, function = more.partition(":")
        events: dict[str, list[dict[str, Any]] | bytes] = getattr(
            importlib.import_module(module), function
        )()
        answers |= {
            name: turn if isinstance(turn, bytes) else render(turn) for name, turn in events.items()
        }
    asyncio.run(_serve(answers))


def _answer(answers: dict[str, bytes], body: bytes) -> bytes:
    """The answer for a request's ``body``: the one of the model it names (the
    text turn when none is found). A plain search for the common two, so the
    server's cost stays the same whatever the client."""
    if TOOLS_MODEL.encode() in body:
        return answers[TOOLS_MODEL]
    if len(answers) > 2:
        found = re.search(rb'"model": ?"([^"]*)"', body)
        if found is not None:
            return answers.get(found.group(1).decode(), answers[TEXT_MODEL])
    return answers[TEXT_MODEL]


async def _serve(answers: dict[str, bytes]) -> None:
    counted = {"connections": 0, "requests": 0}

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        counted["connections"] += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                if head.startswith(b"GET /stats "):  # the benchmark's own question
                    counted["connections"] -= 1
                    stats = json.dumps(counted).encode()
                    writer.write(b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n" + stats)
                    break
                counted["requests"] += 1
                length, close = 0, False
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    name = name.strip().lower()
                    if name == b"content-length":
                        length = int(value)
                    elif name == b"connection" and value.strip().lower() == b"close":
                        close = True
                body = await reader.readexactly(length) if length else b""
                writer.write(_answer(answers, body))
                await writer.drain()
                if close:
                    break
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=2048)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until EOF
    server.close()


async def server_stats(port: int) -> dict[str, int]:
    """The connections the server accepted and the requests it answered so far."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /stats HTTP/1.1\r\nhost: bench\r\nconnection: close\r\n\r\n")
    raw = await reader.read()
    writer.close()
    await writer.wait_closed()
    stats: dict[str, int] = json.loads(raw.partition(b"\r\n\r\n")[2])
    return stats


class Server:
    """The server process, as a context manager; ``base_url`` once entered.
    ``more``: further answers by model name (see :func:`serve`)."""

    def __init__(self, more: str | None = None) -> None:
        self.more = more

    def __enter__(self) -> Server:
        code = f"from tests.benchmarks.bench_openai import serve; serve({self.more!r})"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,  # its port; its stderr is this process's
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.strip().isdigit():
            self.__exit__()
            raise RuntimeError(f"the benchmark's server did not start: {line!r}")
        self.port = int(line)
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


# --- the clients ---------------------------------------------------------------------


def provider_model(base_url: str, name: str) -> Any:
    """The ``openai`` provider's model ``name`` at ``base_url`` (seamkit-openai)."""
    from seamkit_openai import OpenAIConfig, build_model

    key = seamkit.Secret("sk-bench")
    config = OpenAIConfig(provider="openai", name=name, base_url=base_url, api_key=key)
    return build_model(config)


class Clients:
    """Both clients, one connection pool each; a turn of each kind with each."""

    def __init__(self, base_url: str) -> None:
        from openai import AsyncOpenAI

        self.models = {k: provider_model(base_url, k) for k in (TEXT_MODEL, TOOLS_MODEL)}
        self.sdk = AsyncOpenAI(base_url=base_url, api_key="sk-bench")
        self.request = seamkit.ModelRequest(messages=(seamkit.Message.user(PROMPT),))
        self.messages: Any = [{"role": "user", "content": PROMPT}]

    async def seamkit_turn(self, kind: str) -> list[Any]:
        return [item async for item in self.models[kind].stream(self.request)]

    async def openai_turn(self, kind: str) -> list[Any]:
        stream = await self.sdk.chat.completions.create(
            model=kind,
            messages=self.messages,
            stream=True,
            stream_options={"include_usage": True},
        )
        return [chunk async for chunk in stream]

    async def aclose(self) -> None:
        for model in self.models.values():
            await model.aclose()
        await self.sdk.close()


def _check_seamkit(kind: str, items: list[Any]) -> None:
    *deltas, turn = items
    if not isinstance(turn, seamkit.ModelTurn) or turn.usage.input_tokens != 9:
        raise RuntimeError(f"seamkit {kind}: no turn with the usage at the end: {turn!r}")
    if kind == TEXT_MODEL:
        if "".join(deltas) != text() or turn.message.text != text():
            raise RuntimeError("seamkit text: the text is not the server's")
        return
    calls = [(c.id, c.function.name, c.function.arguments) for c in turn.message.tool_calls or ()]
    expected = [(f"call_{i:024d}", "get_weather", arguments(i)) for i in range(TOOL_CALLS)]
    if calls != expected:
        raise RuntimeError(f"seamkit tools: the calls are {calls!r}")


def _check_openai(kind: str, chunks: list[Any]) -> None:
    content: list[str] = []
    calls: dict[int, list[str]] = {}
    for chunk in chunks:
        for choice in chunk.choices:
            content.append(choice.delta.content or "")
            for fragment in choice.delta.tool_calls or ():
                calls.setdefault(fragment.index, []).append(fragment.function.arguments or "")
    if chunks[-1].usage is None or chunks[-1].usage.prompt_tokens != 9:
        raise RuntimeError(f"openai {kind}: no usage at the end")
    if kind == TEXT_MODEL and "".join(content) != text():
        raise RuntimeError("openai text: the text is not the server's")
    if kind == TOOLS_MODEL:
        found = ["".join(calls[i]) for i in sorted(calls)]
        if found != [arguments(i) for i in range(TOOL_CALLS)]:
            raise RuntimeError(f"openai tools: the arguments are {found!r}")


# --- 1. CPU per streamed turn ------------------------------------------------------------

CLIENTS = ("openai", "seamkit")
KINDS = {"text": TEXT_MODEL, "tools": TOOLS_MODEL}


async def _cpu(clients: Clients, port: int, counts: dict[str, int]) -> dict[str, Any]:
    turns: dict[str, Callable[[str], Awaitable[list[Any]]]] = {
        "openai": clients.openai_turn,
        "seamkit": clients.seamkit_turn,
    }
    checks = {"openai": _check_openai, "seamkit": _check_seamkit}
    for kind in KINDS.values():
        for client in CLIENTS:
            for _ in range(counts["warmup_turns"]):
                checks[client](kind, await turns[client](kind))
    cpu: dict[str, list[float]] = {f"{k}/{c}": [] for k in KINDS for c in CLIENTS}
    wall: dict[str, list[float]] = {name: [] for name in cpu}
    opened = dict.fromkeys(cpu, 0)
    n = counts["turns"]
    gc.collect()
    for r in range(counts["rounds"]):
        order = CLIENTS[r % 2 :] + CLIENTS[: r % 2]
        for label, kind in KINDS.items():
            for client in order:
                name, turn = f"{label}/{client}", turns[client]
                before = await server_stats(port)
                start_wall, start = time.perf_counter(), time.process_time()
                for _ in range(n):
                    await turn(kind)
                cpu[name].append((time.process_time() - start) / n)
                wall[name].append((time.perf_counter() - start_wall) / n)
                after = await server_stats(port)
                if (made := after["requests"] - before["requests"]) != n:
                    raise RuntimeError(f"{name}: {n} turns made {made} requests")
                opened[name] += after["connections"] - before["connections"]
    per_turn = {name: count / (n * counts["rounds"]) for name, count in opened.items()}
    return {"cpu": cpu, "wall": wall, "connections_per_turn": per_turn}


# --- 2 and 3. agent runs -------------------------------------------------------------------


async def _agent_run(agent: seamkit.Agent) -> str | None:
    """One streamed run; None when it completed with the server's text, else why not."""
    from seamkit.stream import RunFinished, TextDelta

    finished = None
    deltas = 0
    async for event in agent.stream(PROMPT):
        if isinstance(event, TextDelta):
            deltas += 1
        elif isinstance(event, RunFinished):
            finished = event.result
    if finished is None:
        return "no RunFinished"
    if finished.outcome.kind != "completed":
        return f"outcome {finished.outcome!r}"
    if finished.output != text() or deltas != TEXT_CHUNKS:
        return f"output {finished.output!r:.60} in {deltas} deltas"
    return None


async def _concurrency(agent: seamkit.Agent, n: int, rounds: int) -> dict[str, Any]:
    sequential: list[float] = []
    concurrent: list[float] = []
    started = completed = 0
    errors: list[str] = []
    for r in range(rounds):
        for mode in ("sequential", "concurrent") if r % 2 == 0 else ("concurrent", "sequential"):
            start = time.perf_counter()
            if mode == "sequential":
                for _ in range(n):
                    if (why := await _agent_run(agent)) is not None:
                        raise RuntimeError(f"a sequential run failed: {why}")
                sequential.append(time.perf_counter() - start)
                continue
            outcomes = await asyncio.gather(
                *(_agent_run(agent) for _ in range(n)), return_exceptions=True
            )
            concurrent.append(time.perf_counter() - start)
            started += n
            for outcome in outcomes:
                if outcome is None:
                    completed += 1
                else:
                    text_ = outcome if isinstance(outcome, str) else repr(outcome)
                    errors.append(seamkit.redact(text_, ["sk-bench"]))
    if completed == 0:
        raise RuntimeError(f"no concurrent run completed: {errors[:3]}")
    return {
        "sequential": sequential,
        "concurrent": concurrent,
        "started": started,
        "completed": completed,
        "errors": errors[:5],
    }


def _rss_mib() -> float:
    """The resident set size in MiB (Linux ``/proc``), else the peak from ``resource``."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10


async def _memory(agent: seamkit.Agent, runs: int, warmup: int) -> dict[str, Any]:
    async def batch(size: int, first: int) -> None:
        outcomes = await asyncio.gather(*(_agent_run(agent) for _ in range(size)))
        for i, why in enumerate(outcomes):
            if why is not None:
                raise RuntimeError(f"memory run {first + i} failed: {why}")

    for done in range(0, warmup, MEMORY_BATCH):
        await batch(min(MEMORY_BATCH, warmup - done), done - warmup)
    gc.collect()
    readings = {"start": _rss_mib()}
    start = time.perf_counter()
    half, done = runs // 2, 0
    while done < runs:
        size = min(MEMORY_BATCH, (half if done < half else runs) - done)
        await batch(size, done)
        done += size
        if done == half:
            gc.collect()
            readings["half"] = _rss_mib()
    gc.collect()
    readings["end"] = _rss_mib()
    return {**readings, "seconds": time.perf_counter() - start}


async def _measure(server: Server, counts: dict[str, int]) -> dict[str, Any]:
    clients = Clients(server.base_url)
    model = provider_model(server.base_url, TEXT_MODEL)
    try:
        cpu = await _cpu(clients, server.port, counts)
        async with seamkit.Agent(model=model, name="bench") as agent:
            concurrency = await _concurrency(
                agent, counts["concurrent"], counts["concurrent_rounds"]
            )
            memory = await _memory(agent, counts["memory_runs"], counts["memory_warmup"])
    finally:
        await clients.aclose()
        await model.aclose()
    return {"cpu_wall": cpu, "concurrency": concurrency, "memory": memory}


# --- 4. import cost ------------------------------------------------------------------------

IMPORTS = (
    ("import/openai", "import openai", None),
    ("import/seamkit_openai", "import seamkit_openai", IMPORT_TARGET),
    (
        "import/seamkit_openai_used",
        "import seamkit_openai; from seamkit_openai import OpenAIModel",
        None,
    ),
)


def _child_env() -> dict[str, str]:
    """The environment without SEAMKIT_* and PYTHONDONTWRITEBYTECODE (see bench_cold_start)."""
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("SEAMKIT_") and k != "PYTHONDONTWRITEBYTECODE"
    }


def _import_seconds(statement: str, env: dict[str, str], cwd: str) -> tuple[float, float]:
    """CPU and wall seconds of ``statement`` in a fresh interpreter."""
    code = (
        "import time; _c, _w = time.process_time(), time.perf_counter(); "
        f"{statement}; print(time.process_time() - _c, time.perf_counter() - _w)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{statement!r} exited with {proc.returncode}:\n{proc.stderr}")
    cpu, wall = proc.stdout.split()
    return float(cpu), float(wall)


def _imports(rounds: int, warmup: int) -> dict[str, dict[str, list[float]]]:
    """CPU and wall seconds of each import, per round."""
    env, cwd = _child_env(), tempfile.gettempdir()
    samples: dict[str, dict[str, list[float]]] = {
        name: {"cpu": [], "wall": []} for name, *_ in IMPORTS
    }
    for i in range(warmup + rounds):
        shift = i % len(IMPORTS)
        for name, statement, _target in IMPORTS[shift:] + IMPORTS[:shift]:
            cpu, wall = _import_seconds(statement, env, cwd)
            if i >= warmup:
                samples[name]["cpu"].append(cpu)
                samples[name]["wall"].append(wall)
    return samples


# --- the result ----------------------------------------------------------------------------


def _specs(
    found: dict[str, Any], imports: dict[str, dict[str, list[float]]], n: int
) -> list[tuple[str, str, list[float], str, str, float | None]]:
    """(name, command, samples, baseline's name, unit, target) of every figure."""
    ms = [1000.0]
    cpu = found["cpu_wall"]["cpu"]
    con, mem = found["concurrency"], found["memory"]
    specs: list[tuple[str, str, list[float], str, str, float | None]] = []
    for label in KINDS:
        what = "1 KB of text in 50 chunks" if label == "text" else "4 tool calls"
        base = f"{label}/openai"
        specs += [
            (
                base,
                f"{label} ({what}): openai SDK, create(stream=True) + async for",
                [s * ms[0] for s in cpu[base]],
                base,
                "ms",
                None,
            ),
            (
                f"{label}/seamkit",
                f"{label} ({what}): seamkit-openai, async for in model.stream",
                [s * ms[0] for s in cpu[f"{label}/seamkit"]],
                base,
                "ms",
                CPU_TARGET,
            ),
        ]
    specs += [
        (
            "concurrent/sequential_wall",
            f"{n} agent.stream runs one after the other, wall",
            con["sequential"],
            "concurrent/sequential_wall",
            "s",
            None,
        ),
        (
            "concurrent/wall",
            f"{n} agent.stream runs gathered at once, wall",
            con["concurrent"],
            "concurrent/sequential_wall",
            "s",
            None,
        ),
        (
            "concurrent/completed",
            "concurrent runs that completed, every round",
            [float(con["completed"])],
            "concurrent/completed",
            "runs",
            None,
        ),
        (
            "concurrent/started",
            "concurrent runs started, over those completed",
            [float(con["started"])],
            "concurrent/completed",
            "runs",
            1.0,
        ),
        (
            "memory/rss_half",
            f"RSS at run {mem['runs'] // 2:,} of {mem['runs']:,} streamed runs",
            [mem["half"]],
            "memory/rss_half",
            "MiB",
            None,
        ),
        (
            "memory/rss_end",
            f"RSS at run {mem['runs']:,}, over the half",
            [mem["end"]],
            "memory/rss_half",
            "MiB",
            MEMORY_TARGET,
        ),
    ]
    for name, statement, target in IMPORTS:
        samples = [s * ms[0] for s in imports[name]["cpu"]]
        command = f"{statement} (fresh python, CPU)"
        specs.append((name, command, samples, "import/openai", "ms", target))
    return specs


def _print(res: dict[str, Any]) -> None:
    print_figures(res["figures"], res["baselines"])
    mem, con = res["memory"], res["concurrency"]
    print(
        f"CPU: client-side process time per turn, median of {res['rounds']} rounds of "
        f"{res['turns']} turns; concurrency: {con['completed']} of {con['started']} runs "
        f"completed over {res['concurrent_rounds']} rounds of {res['concurrent']}"
        + (f", errors: {con['errors']}" if con["errors"] else "")
    )
    print(
        "per turn, wall (server included) and connections the server accepted: "
        + "; ".join(
            f"{name} {ms:.2f} ms, {res['connections_per_turn'][name]:.2f}"
            for name, ms in res["wall_per_turn_ms"].items()
        )
    )
    print(
        f"memory: RSS {mem['start']:.1f} MiB after the warm-up, {mem['half']:.1f} at the "
        f"half, {mem['end']:.1f} at the end of {mem['runs']:,} runs in batches of "
        f"{MEMORY_BATCH} ({mem['seconds'] / mem['runs'] * 1e3:.2f} ms a run, wall)"
    )
    print(
        "imports, wall (median): "
        + ", ".join(f"{name} {ms:.0f} ms" for name, ms in res["import_wall_ms"].items())
    )
    print(f"{res['benchmark']}: {verdict(res)}")


def main(quick: bool = False) -> dict[str, Any]:
    counts = QUICK if quick else FULL
    versions = {d: metadata.version(d) for d in ("seamkit-openai", "openai", "httpx")}
    print(
        f"openai provider: {counts['rounds']} rounds x {counts['turns']} turns per client "
        f"and turn kind; {counts['concurrent']} concurrent runs x "
        f"{counts['concurrent_rounds']}; {counts['memory_runs']:,} runs for memory; "
        f"{counts['import_rounds']} import rounds"
    )
    print(
        f"python {sys.version.split()[0]}, "
        + ", ".join(f"{k} {v}" for k, v in versions.items())
        + f", {os.cpu_count()} cpus"
    )
    with Server() as server:
        found = asyncio.run(_measure(server, counts))
    imports = _imports(counts["import_rounds"], counts["import_warmup"])
    found["memory"]["runs"] = counts["memory_runs"]

    specs = _specs(found, imports, counts["concurrent"])
    medians = {name: statistics.median(samples) for name, _, samples, *_ in specs}
    figures = [
        figure(name, command, samples, medians[base], unit=unit, target=target)
        for name, command, samples, base, unit, target in specs
    ]
    res = result(
        "openai",
        quick=quick,
        baseline="text/openai",
        figures=figures,
        baselines={name: base for name, _, _, base, *_ in specs},
        **counts,
        concurrency={
            k: v for k, v in found["concurrency"].items() if k not in ("sequential", "concurrent")
        },
        memory=found["memory"],
        connections_per_turn=found["cpu_wall"]["connections_per_turn"],
        import_wall_ms={k: statistics.median(v["wall"]) * 1e3 for k, v in imports.items()},
        wall_per_turn_ms={
            k: statistics.median(v) * 1e3 for k, v in found["cpu_wall"]["wall"].items()
        },
        versions=versions,
    )
    _print(res)
    return res


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
