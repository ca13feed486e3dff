"""The ``anthropic`` provider (``seamkit-anthropic``) against the official
``anthropic`` SDK (issue 33's "Measured").

1. **CPU per streamed turn**, client side: ``async for item in
   model.stream(request)`` on the provider against the official SDK's
   ``await AsyncAnthropic(...).messages.create(..., stream=True)`` consumed
   with ``async for event in stream``, both reading the same bytes from the
   same local server. Two turns: ``text``, 1 KB of text in 50 ``text_delta``
   events; ``tools``, four ``tool_use`` blocks, each opened
   (``content_block_start``) then its input in six ``input_json_delta``
   fragments. Each starts with ``message_start`` and ends with
   ``message_delta`` (stop reason, usage) and ``message_stop``. The server is
   ``bench_openai``'s (its own process, so ``time.process_time()`` here is the
   clients' CPU alone), serving this module's pre-rendered answers by model
   name (`answers`). Each client is first checked to read the server's text or
   calls exactly (the warm-up turns, discarded); rounds alternate the clients
   (their order swapped every round); a sample is the CPU time of ``turns``
   turns over their count; a figure is the median of the rounds. Target:
   seamkit / anthropic <= 0.5, for each turn. Beside them, without a target,
   two floors: ``plain``, the same POST on a bare ``httpx.AsyncClient``, its
   events read with httpx-sse's ``aiter_sse`` and each ``data`` parsed with
   ``json.loads`` (what a client written the obvious way on httpx costs);
   and ``transport``, the provider's own transport and nothing else: the POST
   on an ``httpx.AsyncHTTPTransport``, its bytes through
   ``seamkit_http.EventDecoder`` and each ``data`` parsed (seamkit minus this
   is the provider's own work); rounds rotate the four.
2. **Import cost**: ``import seamkit_anthropic`` against ``import anthropic``,
   each timed inside a fresh interpreter around the import statement alone,
   CPU time (the figure) and wall time (reported), interleaved in rounds with
   their order rotated, as ``bench_openai`` does. Target: seamkit_anthropic /
   anthropic <= 1/3. Reported without a target: the import once the model
   class is used (``from seamkit_anthropic import AnthropicModel``).

The extra key ``baselines`` maps every figure to the one its ratio is taken
against.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from importlib import metadata
from typing import Any

import seamkit

from tests.benchmarks._harness import figure, print_figures, result, verdict
from tests.benchmarks.bench_openai import Server, server_stats, text

TEXT_MODEL = "anthropic-text"
TOOLS_MODEL = "anthropic-tools"
TEXT_EVENTS = 50
TOOL_CALLS = 4
ARGUMENT_FRAGMENTS = 6
CITIES = ("Paris", "Lisbon", "Reykjavik", "Ulaanbaatar")
PROMPT = "hi"
INPUT_TOKENS = 9

FULL = {"rounds": 15, "turns": 30, "warmup_turns": 20, "import_rounds": 15, "import_warmup": 1}
QUICK = {"rounds": 2, "turns": 2, "warmup_turns": 1, "import_rounds": 1, "import_warmup": 0}
CPU_TARGET = 0.5
IMPORT_TARGET = 1 / 3


# --- the answers ----------------------------------------------------------------------


def arguments(i: int) -> dict[str, Any]:
    """The input of tool call ``i``."""
    return {"city": CITIES[i], "unit": "celsius", "days": i + 1}


def _pieces(value: str, n: int) -> list[str]:
    bounds = [round(k * len(value) / n) for k in range(n + 1)]
    return [value[a:b] for a, b in itertools.pairwise(bounds)]


def _frame(model: str, blocks: list[list[dict[str, Any]]], stop: str, output: int) -> list[Any]:
    usage = {"input_tokens": INPUT_TOKENS, "output_tokens": 1}
    start = {
        "id": f"msg_{model}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for block in blocks:
        events += block
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": output},
        }
    )
    events.append({"type": "message_stop"})
    return events


def text_events() -> list[dict[str, Any]]:
    """The text turn: one text block, 1 KB in 50 ``text_delta`` events."""
    block: list[dict[str, Any]] = [
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    ]
    block += [
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}}
        for p in _pieces(text(), TEXT_EVENTS)
    ]
    block.append({"type": "content_block_stop", "index": 0})
    return _frame(TEXT_MODEL, [block], "end_turn", 240)


def tool_events() -> list[dict[str, Any]]:
    """The tools turn: four ``tool_use`` blocks, each input in six fragments."""
    blocks = []
    for i in range(TOOL_CALLS):
        opening = {"type": "tool_use", "id": f"toolu_{i:024d}", "name": "get_weather", "input": {}}
        block: list[dict[str, Any]] = [
            {"type": "content_block_start", "index": i, "content_block": opening}
        ]
        block += [
            {
                "type": "content_block_delta",
                "index": i,
                "delta": {"type": "input_json_delta", "partial_json": p},
            }
            for p in _pieces(json.dumps(arguments(i)), ARGUMENT_FRAGMENTS)
        ]
        block.append({"type": "content_block_stop", "index": i})
        blocks.append(block)
    return _frame(TOOLS_MODEL, blocks, "tool_use", 96)


def render(events: list[dict[str, Any]]) -> bytes:
    """The whole HTTP response: head, then each SSE event (``event:`` and
    ``data:`` lines) in its own HTTP chunk."""
    head = (
        b"HTTP/1.1 200 OK\r\n"
        b"content-type: text/event-stream; charset=utf-8\r\n"
        b"cache-control: no-cache\r\n"
        b"transfer-encoding: chunked\r\n"
        b"\r\n"
    )
    frames = (
        f"event: {e['type']}\ndata: {json.dumps(e, separators=(',', ':'))}\n\n".encode()
        for e in events
    )
    body = b"".join(b"%x\r\n%s\r\n" % (len(f), f) for f in frames)
    return head + body + b"0\r\n\r\n"


def answers() -> dict[str, bytes]:
    """The pre-rendered answers by model name, for ``bench_openai``'s server."""
    return {TEXT_MODEL: render(text_events()), TOOLS_MODEL: render(tool_events())}


# --- the clients ----------------------------------------------------------------------


def provider_model(base_url: str, name: str) -> Any:
    """The ``anthropic`` provider's model ``name`` at ``base_url``."""
    from seamkit_anthropic import (  # lazy: the CPU benchmark's only; imports are timed apart
        AnthropicConfig,
        build_model,
    )

    key = seamkit.Secret("sk-bench")
    config = AnthropicConfig(provider="anthropic", name=name, base_url=base_url, api_key=key)
    return build_model(config)


class Clients:
    """Both clients, one connection pool each; a turn of each kind with each."""

    def __init__(self, base_url: str) -> None:
        import httpx  # lazy: the clients load when the CPU benchmark runs, not on discovery
        from anthropic import AsyncAnthropic  # lazy: the SDK baseline is heavy; CPU runs only

        self.models = {k: provider_model(base_url, k) for k in (TEXT_MODEL, TOOLS_MODEL)}
        self.sdk = AsyncAnthropic(base_url=base_url, api_key="sk-bench", max_retries=0)
        self.request = seamkit.ModelRequest(messages=(seamkit.Message.user(PROMPT),))
        self.messages: Any = [{"role": "user", "content": PROMPT}]
        self.http = httpx.AsyncClient()
        self.transport = httpx.AsyncHTTPTransport(verify=False)
        self.url = f"{base_url}/v1/messages"

    async def seamkit_turn(self, kind: str) -> list[Any]:
        return [item async for item in self.models[kind].stream(self.request)]

    async def anthropic_turn(self, kind: str) -> list[Any]:
        stream = await self.sdk.messages.create(
            model=kind, max_tokens=4096, messages=self.messages, stream=True
        )
        return [event async for event in stream]

    def _body(self, kind: str) -> str:
        return json.dumps(
            {"model": kind, "max_tokens": 4096, "messages": self.messages, "stream": True}
        )

    async def plain_turn(self, kind: str) -> list[Any]:
        """The same POST on a bare httpx client, its events read with
        httpx-sse and each ``data`` parsed: a client written the obvious way."""
        from httpx_sse import EventSource  # lazy: the plain client's only

        headers = {"content-type": "application/json", "x-api-key": "sk-bench"}
        body = self._body(kind)
        async with self.http.stream("POST", self.url, content=body, headers=headers) as response:
            return [json.loads(event.data) async for event in EventSource(response).aiter_sse()]

    async def transport_turn(self, kind: str) -> list[Any]:
        """The provider's transport alone: the POST on an httpx transport, its
        bytes through seamkit-http's event decoder, each ``data`` parsed."""
        import httpx  # lazy: loaded with the clients
        from seamkit_http import EventDecoder  # lazy: likewise

        headers = {"content-type": "application/json", "x-api-key": "sk-bench"}
        request = httpx.Request("POST", self.url, content=self._body(kind), headers=headers)
        response = await self.transport.handle_async_request(request)
        decoder, events = EventDecoder(), []
        try:
            async for chunk in response.aiter_raw():
                events += [json.loads(event.data) for event in decoder.feed(chunk)]
        finally:
            await response.aclose()
        return events

    async def aclose(self) -> None:
        for model in self.models.values():
            await model.aclose()
        await self.sdk.close()
        await self.http.aclose()
        await self.transport.aclose()


def _expected_calls() -> list[tuple[str, str, dict[str, Any]]]:
    return [(f"toolu_{i:024d}", "get_weather", arguments(i)) for i in range(TOOL_CALLS)]


def _check_seamkit(kind: str, items: list[Any]) -> None:
    *deltas, turn = items
    if not isinstance(turn, seamkit.ModelTurn) or turn.usage.input_tokens != INPUT_TOKENS:
        raise RuntimeError(f"seamkit {kind}: no turn with the usage at the end: {turn!r:.200}")
    if kind == TEXT_MODEL:
        if (
            "".join(d for d in deltas if isinstance(d, str)) != text()
            or turn.message.text != text()
        ):
            raise RuntimeError("seamkit text: the text is not the server's")
        return
    calls = [
        (c.id, c.function.name, json.loads(c.function.arguments))
        for c in turn.message.tool_calls or ()
    ]
    if calls != _expected_calls():
        raise RuntimeError(f"seamkit tools: the calls are {calls!r}")


def _check_floor(kind: str, events: list[Any]) -> None:
    if events != (text_events() if kind == TEXT_MODEL else tool_events()):
        raise RuntimeError(f"a floor client's {kind} stream is not the server's")


def _check_anthropic(kind: str, events: list[Any]) -> None:
    content: list[str] = []
    inputs: dict[int, list[str]] = {}
    starts: dict[int, tuple[str, str]] = {}
    for event in events:
        if event.type == "content_block_start" and event.content_block.type == "tool_use":
            starts[event.index] = (event.content_block.id, event.content_block.name)
        elif event.type == "content_block_delta":
            if event.delta.type == "text_delta":
                content.append(event.delta.text)
            elif event.delta.type == "input_json_delta":
                inputs.setdefault(event.index, []).append(event.delta.partial_json)
    if events[0].message.usage.input_tokens != INPUT_TOKENS or events[-1].type != "message_stop":
        raise RuntimeError(f"anthropic {kind}: the stream is not whole")
    if kind == TEXT_MODEL and "".join(content) != text():
        raise RuntimeError("anthropic text: the text is not the server's")
    if kind == TOOLS_MODEL:
        calls = [(*starts[i], json.loads("".join(inputs[i]))) for i in sorted(starts)]
        if calls != _expected_calls():
            raise RuntimeError(f"anthropic tools: the calls are {calls!r}")


# --- 1. CPU per streamed turn ------------------------------------------------------------

CLIENTS = ("anthropic", "seamkit", "plain", "transport")
KINDS = {"text": TEXT_MODEL, "tools": TOOLS_MODEL}


async def _cpu(clients: Clients, port: int, counts: dict[str, int]) -> dict[str, Any]:
    turns: dict[str, Callable[[str], Awaitable[list[Any]]]] = {
        "anthropic": clients.anthropic_turn,
        "seamkit": clients.seamkit_turn,
        "plain": clients.plain_turn,
        "transport": clients.transport_turn,
    }
    checks = {
        "anthropic": _check_anthropic,
        "seamkit": _check_seamkit,
        "plain": _check_floor,
        "transport": _check_floor,
    }
    for kind in KINDS.values():
        for client in CLIENTS:
            for _ in range(counts["warmup_turns"]):
                checks[client](kind, await turns[client](kind))
    cpu: dict[str, list[float]] = {f"{k}/{c}": [] for k in KINDS for c in CLIENTS}
    wall: dict[str, list[float]] = {name: [] for name in cpu}
    n = counts["turns"]
    gc.collect()
    for r in range(counts["rounds"]):
        shift = r % len(CLIENTS)
        order = CLIENTS[shift:] + CLIENTS[:shift]
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
    return {"cpu": cpu, "wall": wall}


async def _measure(base_url: str, port: int, counts: dict[str, int]) -> dict[str, Any]:
    clients = Clients(base_url)
    try:
        return await _cpu(clients, port, counts)
    finally:
        await clients.aclose()


# --- 2. import cost ------------------------------------------------------------------------

IMPORTS = (
    ("import/anthropic", "import anthropic", None),
    ("import/seamkit_anthropic", "import seamkit_anthropic", IMPORT_TARGET),
    (
        "import/seamkit_anthropic_used",
        "import seamkit_anthropic; from seamkit_anthropic import AnthropicModel",
        None,
    ),
)


def _import_seconds(statement: str) -> tuple[float, float]:
    """CPU and wall seconds of ``statement`` in a fresh interpreter (its
    environment without SEAMKIT_* and PYTHONDONTWRITEBYTECODE, as in
    ``bench_cold_start``)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("SEAMKIT_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    code = (
        "import time; _c, _w = time.process_time(), time.perf_counter(); "
        f"{statement}; print(time.process_time() - _c, time.perf_counter() - _w)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=tempfile.gettempdir(),
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{statement!r} exited with {proc.returncode}:\n{proc.stderr}")
    cpu, wall = proc.stdout.split()
    return float(cpu), float(wall)


def _imports(rounds: int, warmup: int) -> dict[str, dict[str, list[float]]]:
    samples: dict[str, dict[str, list[float]]] = {
        name: {"cpu": [], "wall": []} for name, *_ in IMPORTS
    }
    for i in range(warmup + rounds):
        shift = i % len(IMPORTS)
        for name, statement, _target in IMPORTS[shift:] + IMPORTS[:shift]:
            cpu, wall = _import_seconds(statement)
            if i >= warmup:
                samples[name]["cpu"].append(cpu)
                samples[name]["wall"].append(wall)
    return samples


# --- the result ----------------------------------------------------------------------------


def _specs(
    cpu: dict[str, list[float]], imports: dict[str, dict[str, list[float]]]
) -> list[tuple[str, str, list[float], str, str, float | None]]:
    """(name, command, samples, baseline's name, unit, target) of every figure."""
    specs: list[tuple[str, str, list[float], str, str, float | None]] = []
    for label in KINDS:
        what = "1 KB of text in 50 text_delta events" if label == "text" else "4 tool_use blocks"
        base = f"{label}/anthropic"
        specs += [
            (
                base,
                f"{label} ({what}): anthropic SDK, messages.create(stream=True) + async for",
                [s * 1e3 for s in cpu[base]],
                base,
                "ms",
                None,
            ),
            (
                f"{label}/seamkit",
                f"{label} ({what}): seamkit-anthropic, async for in model.stream",
                [s * 1e3 for s in cpu[f"{label}/seamkit"]],
                base,
                "ms",
                CPU_TARGET,
            ),
            (
                f"{label}/plain",
                f"{label} ({what}): plain httpx client + httpx-sse + json.loads",
                [s * 1e3 for s in cpu[f"{label}/plain"]],
                base,
                "ms",
                None,
            ),
            (
                f"{label}/transport",
                f"{label} ({what}): the provider's transport alone (httpx transport + "
                "EventDecoder + json.loads)",
                [s * 1e3 for s in cpu[f"{label}/transport"]],
                base,
                "ms",
                None,
            ),
        ]
    for name, statement, target in IMPORTS:
        samples = [s * 1e3 for s in imports[name]["cpu"]]
        specs.append(
            (name, f"{statement} (fresh python, CPU)", samples, "import/anthropic", "ms", target)
        )
    return specs


@functools.cache
def _versions() -> dict[str, str]:
    return {d: metadata.version(d) for d in ("seamkit-anthropic", "anthropic", "httpx")}


def main(quick: bool = False) -> dict[str, Any]:
    counts = QUICK if quick else FULL
    print(
        f"anthropic provider: {counts['rounds']} rounds x {counts['turns']} turns per client "
        f"and turn kind; {counts['import_rounds']} import rounds"
    )
    print(
        f"python {sys.version.split()[0]}, "
        + ", ".join(f"{k} {v}" for k, v in _versions().items())
        + f", {os.cpu_count()} cpus"
    )
    with Server(more=f"{__name__}:answers") as server:
        base_url = server.base_url.removesuffix("/v1")
        found = asyncio.run(_measure(base_url, server.port, counts))
    imports = _imports(counts["import_rounds"], counts["import_warmup"])
    specs = _specs(found["cpu"], imports)
    medians = {name: statistics.median(samples) for name, _, samples, *_ in specs}
    figures = [
        figure(name, command, samples, medians[base], unit=unit, target=target)
        for name, command, samples, base, unit, target in specs
    ]
    res = result(
        "anthropic",
        quick=quick,
        baseline="text/anthropic",
        figures=figures,
        baselines={name: base for name, _, _, base, *_ in specs},
        **counts,
        import_wall_ms={k: statistics.median(v["wall"]) * 1e3 for k, v in imports.items()},
        wall_per_turn_ms={k: statistics.median(v) * 1e3 for k, v in found["wall"].items()},
        versions=_versions(),
    )
    print_figures(res["figures"], res["baselines"])
    print(
        f"CPU: client-side process time per turn, median of {res['rounds']} rounds of "
        f"{res['turns']} turns; wall per turn (server included): "
        + ", ".join(f"{k} {v:.2f} ms" for k, v in res["wall_per_turn_ms"].items())
    )
    print(
        "imports, wall (median): "
        + ", ".join(f"{name} {ms:.0f} ms" for name, ms in res["import_wall_ms"].items())
    )
    print(f"{res['benchmark']}: {verdict(res)}")
    return res


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
