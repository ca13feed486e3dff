"""Prompt caching through the ``anthropic`` provider (issue 33), against a
simulator of Anthropic's documented cache rules (`tests.benchmarks._cache_sim`).

The scenario is ``bench_prefix``'s: a 50-turn session (one ``seamkit``
session in a SQLite store, one user message per run, the clock one minute
later each run) with the same two ``tool_call`` hooks (``profile``, TTL 3
minutes, its answer changing every 10 turns; ``clock``, ``always``) and the
same answers. Two things differ, because ``bench_prefix``'s app has no
instructions and every prefix would be far below any model's minimum
cacheable length, so nothing would ever be cached:

- the app has a fixed preamble of about 1,500 estimated tokens (`PREAMBLE`);
- the hooks' two tools (``profile`` and ``clock``) are the agent's tools, so
  the request carries two tool definitions.

Every request goes through the real ``AnthropicModel`` (``agent.run`` asks
for whole answers) to a local ASGI server on 127.0.0.1 (uvicorn on a thread,
a free port) that records each ``/v1/messages`` body and answers ``ok`` with
the usage the simulator computes for that body at the session's simulated
clock (T0 + one minute a turn). The model is `MODEL` (minimum cacheable
length `minimum_for(MODEL)` = 1,024 estimated tokens).

Three lines, side by side:

- ``stable/auto``: ``placement: stable``, ``cache: auto`` (the provider's
  breakpoints);
- ``stable/system``: ``placement: stable`` with one fixed breakpoint on the
  system prompt, the common default. The provider is not changed for the
  benchmark: the server strips every ``cache_control`` from the body and
  puts one on the last system block before the simulator sees it;
- ``history/auto``: ``placement: history``, ``cache: auto``.

And two more showing expiry: ``stable/auto`` with the cache's clock (the
server's, not the session's: the hooks keep their schedule) jumping
`GAP_MINUTES` minutes before turn `GAP_AT`, once with ``ttl: 5m`` and once
with ``cache: {ttl: 1h}``.

Figure, per turn: the cache-read share, ``read / (input + read + write)``
from the simulator. Target: at least 90 % on every turn from turn 3 on for
``stable/auto``. In the harness' form: the figure is the share *not* read
from cache on the worst turn from turn 3 on, its ratio is taken against the
10 % budget, target 1.0. The table prints each line's minimum and mean share
from turn 3 on.

Also checked, each line: the sum of the runs' ``Usage`` (the provider's
reading of the answers) equals the simulator's totals (``input_tokens`` = all
three, ``cache_read_tokens``, ``cache_write_tokens``); every body the provider
sent passes the simulator's checks (at most 4 breakpoints, none on a thinking
block, longer TTLs first); the profile tool is called exactly on the turns its
result is stale, and the last profile and clock results in every body are the
current ones.
"""

from __future__ import annotations

import asyncio
import json
import socket
import statistics
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import seamkit
import uvicorn
from seamkit import SQLiteSessionStore

from tests.benchmarks._cache_sim import CacheSimulator, SimUsage, minimum_for
from tests.benchmarks._harness import figure, print_rows, result, verdict
from tests.benchmarks.bench_prefix import (
    CHANGE_EVERY,
    QUICK_TURNS,
    T0,
    TTL_MINUTES,
    TURNS,
    Service,
    hooks,
)

MODEL = "claude-sonnet-4-6"
TARGET_SHARE = 0.90
BUDGET = 1 - TARGET_SHARE
FROM_TURN = 3
GAP_MINUTES = 6
GAP_AT = 6  # the turn before which the cache's clock jumps (1-based)


def _preamble() -> str:
    """About 1,500 estimated tokens of fixed instructions (deterministic)."""
    rules = [
        f"Rule {i}: answer the user's message {i} with care, cite the profile when it "
        f"matters, keep the answer short, and never invent a turn number or a date."
        for i in range(1, 200)
    ]
    out, size = [], 0
    for rule in rules:
        if size >= 6000:
            break
        out.append(rule)
        size += len(rule) + 1
    return "You are the benchmark's assistant.\n" + "\n".join(out)


PREAMBLE = _preamble()


@dataclass(frozen=True)
class Line:
    """One way of sending the session: hook placement, the provider's cache
    setting, whether the server moves every breakpoint to the system prompt,
    and a jump of the cache's clock (minutes, before turn `GAP_AT`)."""

    name: str
    placement: str
    cache: object
    system_only: bool = False
    gap_minutes: int = 0


LINES = (
    Line("stable/auto", "stable", "auto"),
    Line("stable/system", "stable", "auto", system_only=True),
    Line("history/auto", "history", "auto"),
)
GAPS = (
    Line("stable/auto, 6 min gap, ttl 5m", "stable", "auto", gap_minutes=GAP_MINUTES),
    Line("stable/auto, 6 min gap, ttl 1h", "stable", {"ttl": "1h"}, gap_minutes=GAP_MINUTES),
)


# --- the server --------------------------------------------------------------------


def system_only(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` with every ``cache_control`` removed and one on the last system block."""

    def strip(block: Any) -> Any:
        return {k: v for k, v in block.items() if k != "cache_control"}

    out = {k: v for k, v in body.items() if k != "cache_control"}
    out["tools"] = [strip(t) for t in body.get("tools") or ()]
    system = body.get("system") or []
    if isinstance(system, str):
        system = [{"type": "text", "text": system}]
    system = [strip(b) for b in system]
    if system:
        system[-1] = {**system[-1], "cache_control": {"type": "ephemeral"}}
    out["system"] = system
    out["messages"] = [
        {**m, "content": [strip(b) for b in m["content"]]}
        if isinstance(m.get("content"), list)
        else m
        for m in body.get("messages") or ()
    ]
    if not out["tools"]:
        del out["tools"]
    return out


def message(model: str, usage: SimUsage) -> dict[str, Any]:
    """The whole answer: ``ok`` with the simulator's usage."""
    return {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {**usage.as_wire(), "output_tokens": 1},
    }


def sse_events(model: str, usage: SimUsage) -> list[tuple[str, dict[str, Any]]]:
    """The streamed answer: ``ok`` in one text delta, the usage in
    ``message_start`` and (cumulative, as the API sends it) ``message_delta``."""
    start = message(model, usage) | {"content": [], "stop_reason": None}
    start["usage"] = {**usage.as_wire(), "output_tokens": 1}
    return [
        ("message_start", {"type": "message_start", "message": start}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "ok"},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {**usage.as_wire(), "output_tokens": 1},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


Send = Callable[[dict[str, Any]], Awaitable[None]]
Receive = Callable[[], Awaitable[dict[str, Any]]]


@dataclass
class CacheServer:
    """The ASGI app: records each ``POST /v1/messages`` body as sent (and the
    breakpoints the simulator saw in it), answers
    ``ok`` with the simulator's usage at `now` (seconds since T0, set by the
    benchmark), whole or streamed as the body asks."""

    system_only: bool = False
    simulator: CacheSimulator = field(default_factory=CacheSimulator)
    now: float = 0.0
    bodies: list[dict[str, Any]] = field(default_factory=list)
    breakpoints: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        raw = b""
        while True:
            event = await receive()
            raw += event.get("body", b"")
            if not event.get("more_body"):
                break
        if scope["method"] != "POST" or scope["path"] != "/v1/messages":
            await self._reply(send, 404, {"type": "error", "error": {"type": "not_found_error"}})
            return
        body = json.loads(raw)
        self.bodies.append(body)
        seen = system_only(body) if self.system_only else body
        self.breakpoints.append(sum(1 for b in _blocks(seen) if "cache_control" in b))
        try:
            usage = self.simulator.answer(seen, self.now)
        except ValueError as e:
            self.errors.append(str(e))
            error = {"type": "invalid_request_error", "message": str(e)}
            await self._reply(send, 400, {"type": "error", "error": error})
            return
        model = str(body.get("model"))
        if not body.get("stream"):
            await self._reply(send, 200, message(model, usage))
            return
        headers = [(b"content-type", b"text/event-stream; charset=utf-8")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for name, data in sse_events(model, usage):
            chunk = f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    @staticmethod
    async def _reply(send: Send, status: int, data: dict[str, Any]) -> None:
        payload = json.dumps(data).encode()
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": payload})


class Served:
    """An ASGI app served by uvicorn on 127.0.0.1, a free port, on its own
    thread; a context manager with ``base_url`` (no ``/v1``)."""

    def __init__(self, app: Any) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self.port: int = self._sock.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, log_level="critical", lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        self._server.run(sockets=[self._sock])

    def __enter__(self) -> Served:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the benchmark's server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=5)
        self._sock.close()


# --- the session ---------------------------------------------------------------------


def _last_results(body: dict[str, Any]) -> dict[str, str]:
    """The content of the last result of each tool in a body (by the tool
    name of the ``tool_use`` it answers)."""
    names: dict[str, str] = {}
    last: dict[str, str] = {}
    for m in body["messages"]:
        for block in m["content"] if isinstance(m["content"], list) else ():
            if block.get("type") == "tool_use":
                names[block["id"]] = block["name"]
            elif block.get("type") == "tool_result":
                content = block.get("content")
                if isinstance(content, list):
                    content = "".join(b.get("text", "") for b in content)
                last[names.get(block["tool_use_id"], "?")] = str(content)
    return last


async def _session(line: Line, turns: int, directory: Path) -> dict[str, Any]:
    service = Service()
    app_server = CacheServer(system_only=line.system_only)
    now = [T0]
    with Served(app_server) as served:
        model = {
            "provider": "anthropic",
            "name": MODEL,
            "base_url": served.base_url,
            "api_key": "sk-bench",
            "cache": line.cache,
        }
        app = {
            "name": "anthropic-cache",
            "model": model,
            "preamble": PREAMBLE,
            "hooks": hooks(line.placement),
        }
        agent = await seamkit.Agent.load(app, tools=service.tools, clock=lambda: now[0])
        store = SQLiteSessionStore(directory / f"{line.name.replace('/', '_')}.sqlite")
        usage = seamkit.Usage()
        shift = 0.0
        async with agent:
            for turn in range(turns):
                service.turn, now[0] = turn, T0 + timedelta(minutes=turn)
                if line.gap_minutes and turn + 1 == GAP_AT:
                    shift += line.gap_minutes * 60 - 60
                app_server.now = turn * 60.0 + shift
                before = len(app_server.bodies)
                run = await agent.run(f"message {turn}", session="s", store=store)
                if run.outcome.kind != "completed":
                    raise RuntimeError(f"{line.name}: turn {turn}: {run.outcome}")
                if len(app_server.bodies) != before + 1:
                    raise RuntimeError(f"{line.name}: turn {turn} made no single request")
                usage = usage + run.usage
                last = _last_results(app_server.bodies[-1])
                if last.get("profile") != service.last_profile:
                    raise RuntimeError(f"{line.name}: turn {turn}: the last profile is stale")
                if last.get("clock") != f"turn {turn}":
                    raise RuntimeError(f"{line.name}: turn {turn}: the last clock is stale")
    if app_server.errors:
        raise RuntimeError(f"{line.name}: the simulator refused a body: {app_server.errors[0]}")
    expected = list(range(0, turns, TTL_MINUTES))
    if service.profile_calls != expected:
        raise RuntimeError(f"{line.name}: profile called at {service.profile_calls}")
    totals = app_server.simulator.totals()
    provider = (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens)
    simulated = (
        totals.total,
        totals.cache_read_input_tokens,
        totals.cache_creation_input_tokens,
    )
    if provider != simulated:
        raise RuntimeError(
            f"{line.name}: the provider's usage (input, read, write) {provider} is not the "
            f"simulator's {simulated}"
        )
    history = app_server.simulator.history
    return {
        "shares": [u.read_share for u in history],
        "totals": simulated,
        "breakpoints": app_server.breakpoints,
        "tools": len(app_server.bodies[-1].get("tools") or ()),
    }


def _blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    out = list(body.get("tools") or ())
    system = body.get("system")
    out += system if isinstance(system, list) else []
    for m in body.get("messages") or ():
        out += m["content"] if isinstance(m["content"], list) else []
    return out


# --- the result ----------------------------------------------------------------------


def main(quick: bool = False) -> dict[str, Any]:
    turns = QUICK_TURNS if quick else TURNS
    minimum = minimum_for(MODEL)
    print(
        f"anthropic caching: a {turns}-turn session (bench_prefix's hooks: TTL "
        f"{TTL_MINUTES} min, the answer changing every {CHANGE_EVERY} turns; 'always'), "
        f"a {len(PREAMBLE) // 4:,}-token preamble and two tools, through AnthropicModel "
        f"({MODEL}, minimum cacheable {minimum:,} estimated tokens) to a simulator of "
        "Anthropic's cache rules"
    )
    with tempfile.TemporaryDirectory() as tmp:
        found = {line.name: asyncio.run(_session(line, turns, Path(tmp))) for line in LINES + GAPS}
    figures = [
        figure(
            "budget",
            f"{BUDGET:.0%} of a turn's input tokens (the target's budget)",
            [BUDGET],
            BUDGET,
            unit="share",
        )
    ]
    rows = [
        (
            "line",
            f"min share from turn {FROM_TURN}",
            "mean",
            "input / read / write tokens",
            "breakpoints",
            "target",
            "met",
        )
    ]
    summary: dict[str, dict[str, float]] = {}
    for line in LINES + GAPS:
        f = found[line.name]
        later = f["shares"][FROM_TURN - 1 :]
        low, mean = min(later), statistics.mean(later)
        summary[line.name] = {"min": low, "mean": mean}
        targeted = line.name == "stable/auto"
        fig = figure(
            f"{line.name}/not_read",
            f"{line.name}: share of the worst turn's input not read from cache",
            [1 - low],
            BUDGET,
            unit="share",
            target=1.0 if targeted else None,
        )
        figures.append(fig)
        total, read, write = f["totals"]
        rows.append(
            (
                line.name,
                f"{low:.1%}",
                f"{mean:.1%}",
                f"{total - read - write:,} / {read:,} / {write:,}",
                f"{min(f['breakpoints'])}-{max(f['breakpoints'])}",
                f">= {TARGET_SHARE:.0%}" if targeted else "-",
                "-" if fig["met"] is None else ("met" if fig["met"] else "NOT MET"),
            )
        )
    print_rows(rows)
    gap = {line.name: found[line.name]["shares"][GAP_AT - 1] for line in GAPS}
    print(
        f"expiry: the cache's clock jumps {GAP_MINUTES} min before turn {GAP_AT}: its read "
        "share is " + ", ".join(f"{share:.1%} ({name})" for name, share in gap.items())
    )
    res = result(
        "anthropic_cache",
        quick=quick,
        baseline="budget",
        figures=figures,
        model=MODEL,
        minimum=minimum,
        preamble_tokens=len(PREAMBLE) // 4,
        shares={name: found[name]["shares"] for name in found},
        summary=summary,
        totals={name: found[name]["totals"] for name in found},
        gap_share=gap,
    )
    print(
        "in every line the provider's summed Usage equals the simulator's totals, the "
        "TTL tool was called exactly when stale and every body carried the current "
        f"answers; ratio = the share not read on the worst turn from turn {FROM_TURN} over "
        f"the {BUDGET:.0%} budget (the baseline)\nanthropic_cache: {verdict(res)}"
    )
    return res


if __name__ == "__main__":
    main()
