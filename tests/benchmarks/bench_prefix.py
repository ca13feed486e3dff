"""Prefix stability of injected tool results (issue 11).

Model providers cache the longest unchanged prefix of a request: a request
whose messages are a byte-identical extension of the previous request's is
read from cache up to where it grows; any change to a message already sent
makes the provider read everything after that byte again at full price.

The scenario, run once per placement (``history``, the reference-compatible
default, and ``stable``): a 50-turn session (one ``seamkit`` session in a
SQLite store, one user message per run, the clock one minute later each run)
with two ``tool_call`` hooks at ``on_request_start``:

- ``profile``: ``refresh_condition: {kind: ttl, ttl_minutes: 3}``; the tool's
  answer changes every 10 turns (``profile v0`` ... ``profile v4``);
- ``clock``: ``frequency: always``; answers ``turn N``.

A recording model keeps every request. For each request after the first, the
messages (one JSON line each) are compared with the previous request's: it is
*prefix-stable* when the previous bytes are its prefix; otherwise the bytes
from the first changed byte to the end count as *re-sent*.

The benchmark asserts, in both modes, that the last pair of each hook's
identity in every request carries the tool's current answer, and that the
``profile`` tool is called exactly on the turns its result is stale (every
third turn with a three-minute TTL), so an injection that does nothing cannot
pass.

Target: under ``stable`` at least 95 % of requests prefix-stable. In the
harness' form: the figure is the share of requests that are *not*
prefix-stable, its ratio is taken against the 5 % budget, target 1.0.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import seamkit
from seamkit import Message, ModelRequest, ModelTurn, SQLiteSessionStore

from tests.benchmarks._harness import figure, print_rows, result, verdict

TURNS = 50
QUICK_TURNS = 12
TTL_MINUTES = 3
CHANGE_EVERY = 10
BUDGET = 0.05
T0 = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
PLACEMENTS = ("history", "stable")


class RecordingModel:
    """Answers ``ok`` and keeps each request's messages as JSON lines."""

    def __init__(self) -> None:
        self.requests: list[list[str]] = []

    async def complete(self, request: ModelRequest) -> ModelTurn:
        self.requests.append([m.model_dump_json(exclude_none=True) for m in request.messages])
        return ModelTurn(message=Message.assistant("ok"))

    async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
        yield await self.complete(request)


class Service:
    """The two tools the hooks call, counting the calls by turn."""

    def __init__(self) -> None:
        self.turn = 0
        self.profile_calls: list[int] = []
        self.last_profile = ""

        @seamkit.tool
        def profile() -> str:
            """The user's profile."""
            self.profile_calls.append(self.turn)
            self.last_profile = f"profile v{self.turn // CHANGE_EVERY}"
            return self.last_profile

        @seamkit.tool
        def clock() -> str:
            """The turn."""
            return f"turn {self.turn}"

        self.tools = [profile, clock]


def hooks(placement: str) -> list[dict[str, Any]]:
    """The scenario's two hooks, with ``placement`` (``bench_anthropic_cache`` uses them too)."""
    common = {"kind": "tool_call", "event": "on_request_start", "placement": placement}
    return [
        {
            **common,
            "tool_name": "profile",
            "refresh_condition": {"kind": "ttl", "ttl_minutes": TTL_MINUTES},
        },
        {**common, "tool_name": "clock", "frequency": "always"},
    ]


def _last_content(lines: list[str], tool: str) -> str | None:
    """The content of the last pair calling ``tool`` in a request's messages."""
    messages = [Message.model_validate_json(line) for line in lines]
    found = None
    for i, m in enumerate(messages[:-1]):
        calls = m.tool_calls or []
        if len(calls) == 1 and calls[0].function.name == tool and calls[0].id.startswith("synth_"):
            found = messages[i + 1].content
    return found


async def _session(placement: str, turns: int, directory: Path) -> dict[str, Any]:
    service, model = Service(), RecordingModel()
    now = [T0]
    app = {"name": "prefix", "model": "scripted:unused", "hooks": hooks(placement)}
    agent = await seamkit.Agent.load(app, tools=service.tools, model=model, clock=lambda: now[0])
    store = SQLiteSessionStore(directory / f"{placement}.sqlite")
    async with agent:
        for turn in range(turns):
            service.turn, now[0] = turn, T0 + timedelta(minutes=turn)
            result_ = await agent.run(f"message {turn}", session="s", store=store)
            if result_.outcome.kind != "completed":
                raise RuntimeError(f"{placement}: turn {turn}: {result_.outcome}")
            sent = model.requests[-1]
            if _last_content(sent, "profile") != service.last_profile:
                raise RuntimeError(f"{placement}: turn {turn}: the last profile pair is stale")
            if _last_content(sent, "clock") != f"turn {turn}":
                raise RuntimeError(f"{placement}: turn {turn}: the last clock pair is stale")
    expected = list(range(0, turns, TTL_MINUTES))
    if service.profile_calls != expected:
        raise RuntimeError(
            f"{placement}: profile called at turns {service.profile_calls}, not {expected}"
        )
    stable = resent = 0
    for before, after in zip(model.requests, model.requests[1:], strict=False):
        old, new = "\n".join(before) + "\n", "\n".join(after) + "\n"
        if new.startswith(old):
            stable += 1
            continue
        first = next(i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b)
        resent += len(new.encode()) - len(new[:first].encode())
    compared = len(model.requests) - 1
    return {"compared": compared, "stable": stable, "resent_bytes": resent}


def main(quick: bool = False) -> dict[str, Any]:
    turns = QUICK_TURNS if quick else TURNS
    print(
        f"prefix stability: a {turns}-turn session, a TTL hook ({TTL_MINUTES} min, the answer "
        f"changing every {CHANGE_EVERY} turns) and an 'always' hook, per placement"
    )
    with tempfile.TemporaryDirectory() as tmp:
        found = {p: asyncio.run(_session(p, turns, Path(tmp))) for p in PLACEMENTS}
    figures = [
        figure("budget", "5 % of requests (the target's budget)", [BUDGET], BUDGET, unit="share")
    ]
    for placement in PLACEMENTS:
        f = found[placement]
        unstable = (f["compared"] - f["stable"]) / f["compared"]
        figures.append(
            figure(
                f"{placement}/not_prefix_stable",
                f"placement: {placement}: requests that change bytes already sent",
                [unstable],
                BUDGET,
                unit="share",
                target=1.0 if placement == "stable" else None,
            )
        )
    rows = [
        (
            "placement",
            "prefix-stable requests",
            "share",
            "bytes re-sent after a change",
            "target",
            "met",
        )
    ]
    for placement, fig in zip(PLACEMENTS, figures[1:], strict=True):
        f = found[placement]
        rows.append(
            (
                placement,
                f"{f['stable']} of {f['compared']}",
                f"{f['stable'] / f['compared']:.0%}",
                f"{f['resent_bytes']:,}",
                ">= 95%" if fig["target"] is not None else "-",
                "-" if fig["met"] is None else ("met" if fig["met"] else "NOT MET"),
            )
        )
    print_rows(rows)
    res = result(
        "prefix",
        quick=quick,
        baseline="budget",
        figures=figures,
        resent_bytes={p: found[p]["resent_bytes"] for p in PLACEMENTS},
        prefix_stable={p: found[p]["stable"] / found[p]["compared"] for p in PLACEMENTS},
    )
    print(
        "in both modes the last pair of each hook carried the current answer, and the TTL "
        "tool was called exactly when its result was stale; ratio = the share not "
        f"prefix-stable over the 5 % budget (the baseline)\nprefix: {verdict(res)}"
    )
    return res


if __name__ == "__main__":
    main()
