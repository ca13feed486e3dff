"""Fault trials on Temporal (issue 32, "Measured: Fault trials"): real worker
processes killed with SIGKILL at random moments of a run.

``python -m tests.benchmarks temporal_faults`` (100 trials) or ``--quick``
(3 trials). One dev server (`tests.plugins.temporal_server`) serves every
trial; a trial has its own task queue, session and folder. Each trial:

- starts **2 workers** (`tests.benchmarks._temporal_fault_worker`: the crash
  harness's script and tools, each tool body taking a drawn 0.2-0.8 s after
  it logs its effect) and a run of the app ``faults`` on its session: four
  model turns, ``lookup`` and ``reserve`` (idempotent), then ``refund(A)``
  (``once``, needs approval) with ``reserve`` and ``lookup``, then
  ``refund(B)`` and ``refund(C)``, then the answer; the caller approves every
  call the run waits on;
- after a drawn delay (0 to 3 s from the run's start, about the run's
  length without faults) **kills one of the live workers** (SIGKILL) and
  starts another; in every fourth trial (from the first) the kill lands
  instead at a drawn moment of the first ``refund`` body (after its effect),
  on the worker running it;
- in every fourth trial (from the third), at the run's first suspension, kills **every**
  worker, sends the decisions (`TemporalRunner.decide`: with no worker up
  they go as the ``decisions`` signal), waits 6 s, then starts two workers.

A trial counts: the run completed (its answer is the script's last turn)
and on which worker (the one that completed its last workflow task);
duplicate ``once`` effects (a refund's effect logged twice: must be 0);
model turns asked twice (a recorded turn asked anew,
`tests.benchmarks._temporal_faults.turns_asked_twice`: must be 0);
``once`` calls in doubt (an ``InDoubt`` result in the session) and those
reported (the result also carried an ``in_doubt`` diagnostic: all); refund
effects whose call got neither its result nor ``InDoubt`` (lost: 0); and
decisions sent while no worker was up, and those applied (all). One more
trial kills the **dev server** (SIGKILL) at a drawn moment of the run and
restarts it on its database file: the run completes.

A trial that breaks one of these prints its folder's logs and the benchmark
raises (the command exits 1).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import seamkit

from tests.benchmarks._crash_app import FINAL, MESSAGE
from tests.benchmarks._harness import figure, print_figures, print_rows, result, verdict
from tests.benchmarks._temporal_fault_worker import APP
from tests.benchmarks._temporal_faults import Worker, effects, turns_asked_twice

FULL = 100
QUICK = 3
CONCURRENT = 4
"""Trials at a time (each mostly waits for Temporal's time-outs)."""
SEED = 32
KILL_WITHIN = 3.0
"""A worker is killed at a moment drawn in [0, KILL_WITHIN) s from the run's start."""
NO_WORKER_EVERY = 4
"""Every this many trials (the third, the seventh, ...), the first decisions
are sent while no worker is up."""
NO_WORKER_SECONDS = 6.0
IN_REFUND_EVERY = 4
"""Every this many trials (the first, the fifth, ...), the kill lands in the
first ``refund`` body (a ``once`` call: it must be reported in doubt)."""
TRIAL_SECONDS = 240.0
"""A trial whose run has not completed by then counts as hung."""
IN_DOUBT_MARK = "Error: InDoubt:"


@dataclass
class Trial:
    """One trial's draw and what it found."""

    index: int
    kill_at: float
    tool_seconds: float
    no_worker: bool
    in_refund: bool = False
    server_restart: bool = False
    completed: bool = False
    on_survivor: bool = False
    hung: bool = False
    error: str = ""
    seconds: float = 0.0
    killed: list[int] = field(default_factory=list)
    killed_at: float = 0.0
    """Seconds from the run's start to the first kill."""
    kill_landed: bool = False
    """The kill came before the run completed."""
    duplicate_once: int = 0
    asked_twice: int = 0
    in_doubt: int = 0
    in_doubt_reported: int = 0
    lost: int = 0
    sent_without_worker: int = 0
    applied_without_worker: int = 0

    def violations(self) -> list[str]:
        out = []
        if not self.completed:
            out.append("hung" if self.hung else f"did not complete: {self.error}")
        elif not self.on_survivor:
            out.append("completed on a killed worker")
        if self.duplicate_once:
            out.append(f"{self.duplicate_once} duplicate once effects")
        if self.asked_twice:
            out.append(f"{self.asked_twice} model turns asked twice")
        if self.in_doubt != self.in_doubt_reported:
            out.append(f"{self.in_doubt - self.in_doubt_reported} in-doubt calls not reported")
        if self.lost:
            out.append(f"{self.lost} refund effects with no result and no InDoubt")
        if self.sent_without_worker != self.applied_without_worker:
            out.append("decisions sent while no worker was up were not applied")
        return out


class Pool:
    """A trial's worker processes."""

    def __init__(self, address: str, queue: str, folder: Path) -> None:
        self.address, self.queue, self.folder = address, queue, folder
        self.all: list[Worker] = []

    async def start(self, n: int = 1) -> None:
        new = [Worker(self.address, self.queue, self.folder) for _ in range(n)]
        self.all += new
        await asyncio.gather(*(w.started() for w in new))

    def live(self) -> list[Worker]:
        return [w for w in self.all if w.alive]

    def kill_all(self) -> list[int]:
        pids = [w.pid for w in self.live()]
        for w in self.all:
            w.kill()
        return pids


def _waiting(res: seamkit.RunResult) -> list[str]:
    if not isinstance(res.outcome, seamkit.Suspended):
        return []
    return [p.call_id for p in res.outcome.pending if p.decision is None]


def _approve(res: seamkit.RunResult) -> seamkit.Decisions:
    assert isinstance(res.outcome, seamkit.Suspended)
    return seamkit.Decisions(
        {
            p.call_id: seamkit.Approve(digest=p.digest)
            for p in res.outcome.pending
            if p.decision is None
        }
    )


async def _drive(t: Trial, runner: Any, pool: Pool, session: str, killer: Any) -> list[str]:
    """The run to its end, approving each suspension; the codes of the
    diagnostics of every result it got."""
    codes: list[str] = []
    res = await runner.run(APP, MESSAGE, session=session)
    codes += [d.code for d in res.diagnostics]
    first = True
    while isinstance(res.outcome, seamkit.Suspended):
        decisions = _approve(res)
        if t.no_worker and first:
            with contextlib.suppress(Exception):
                await killer
            t.killed += pool.kill_all()
            deciding = asyncio.ensure_future(runner.decide(session, decisions))
            await asyncio.sleep(NO_WORKER_SECONDS)
            t.sent_without_worker += 1
            await pool.start(2)
            before = set(_waiting(res))
            res = await deciding
            if not before & set(_waiting(res)):
                t.applied_without_worker += 1
        else:
            res = await runner.decide(session, decisions)
        first = False
        codes += [d.code for d in res.diagnostics]
    t.completed = res.output == FINAL
    if not t.completed:
        t.error = f"ended {res.outcome.kind} with {res.output!r}"
    return codes


async def _kill_one(t: Trial, pool: Pool, began: float) -> None:
    if t.in_refund:  # the worker running the first refund, at a drawn moment of its body
        refunds: list[dict[str, Any]] = []
        while not refunds:
            await asyncio.sleep(0.02)
            refunds = [e for e in effects(pool.folder) if e["tool"] == "refund"]
        await asyncio.sleep(t.kill_at / KILL_WITHIN * t.tool_seconds * 0.9)
        live = [w for w in pool.live() if w.pid == refunds[0]["pid"]]
    else:
        await asyncio.sleep(max(0.0, t.kill_at - (time.monotonic() - began)))
        live = pool.live()
    if not live:
        return
    victim = random.Random(t.index).choice(live)
    victim.kill()
    t.killed.append(victim.pid)
    t.killed_at = time.monotonic() - began
    await pool.start()


async def _restart_server(t: Trial, server: Any, began: float) -> None:
    await asyncio.sleep(max(0.0, t.kill_at - (time.monotonic() - began)))
    server.kill()
    t.killed.append(-1)
    t.killed_at = time.monotonic() - began
    await asyncio.to_thread(server.restart)


async def run_trial(t: Trial, server: Any, root: Path) -> Trial:
    import seamkit_temporal  # lazy: the benchmark's only

    folder = root / f"trial-{t.index}"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"tool_seconds": t.tool_seconds}))
    queue, session = f"faults-{t.index}", f"trial-{t.index}"
    pool = Pool(server.address, queue, folder)
    began = time.monotonic()
    try:
        await pool.start(2)
        client = await seamkit_temporal.connect(server.address)
        runner = seamkit_temporal.TemporalRunner(client, queue)
        began = time.monotonic()
        if t.server_restart:
            killer = asyncio.ensure_future(_restart_server(t, server, began))
        else:
            killer = asyncio.ensure_future(_kill_one(t, pool, began))
        try:
            codes = await asyncio.wait_for(_drive(t, runner, pool, session, killer), TRIAL_SECONDS)
        except TimeoutError:
            t.hung, codes = True, []
        except Exception as exc:  # a run that failed: reported as the trial's violation
            t.error, codes = f"{type(exc).__name__}: {exc}", []
        t.seconds = time.monotonic() - began
        t.kill_landed = bool(t.killed) and t.killed_at < t.seconds
        killer.cancel()
        with contextlib.suppress(BaseException):
            await killer
        await _check(t, folder, session, codes)
        if t.completed:
            t.on_survivor = await _ended_on(client, session) not in t.killed
    finally:
        pool.kill_all()
    return t


async def _check(t: Trial, folder: Path, session: str, codes: list[str]) -> None:
    store = seamkit.SQLiteSessionStore(str(folder / "sessions.db"))
    loaded = await store.load(session)
    transcript = list(loaded.transcript) if loaded is not None else []
    results = {m.tool_call_id: m.text or "" for m in transcript if m.role == "tool"}
    refunds = [e for e in effects(folder) if e["tool"] == "refund"]
    per_call: dict[str, int] = {}
    for e in refunds:
        per_call[e["call"]] = per_call.get(e["call"], 0) + 1
    t.duplicate_once = sum(n - 1 for n in per_call.values())
    t.asked_twice = turns_asked_twice(folder)
    t.in_doubt = sum(IN_DOUBT_MARK in text for text in results.values())
    t.in_doubt_reported = min(t.in_doubt, codes.count("in_doubt"))
    t.lost = sum(
        1 for call in per_call if not results.get(call, "").startswith(("refunded", IN_DOUBT_MARK))
    )


async def _ended_on(client: Any, session: str) -> int:
    """The pid of the worker that completed the run's last workflow task
    (a worker's identity is ``PID@HOST``)."""
    import seamkit_temporal  # lazy: the benchmark's only

    handle = client.get_workflow_handle(seamkit_temporal.workflow_id(APP, session))
    history = await handle.fetch_history()
    identities = [
        e.workflow_task_completed_event_attributes.identity
        for e in history.events
        if e.HasField("workflow_task_completed_event_attributes")
    ]
    return int(identities[-1].partition("@")[0]) if identities else -1


def _draw(n: int) -> list[Trial]:
    rng = random.Random(SEED)
    return [
        Trial(
            index=i,
            kill_at=rng.uniform(0.0, KILL_WITHIN),
            tool_seconds=rng.uniform(0.2, 0.8),
            no_worker=i % NO_WORKER_EVERY == 2,
            in_refund=i % IN_REFUND_EVERY == 0,
        )
        for i in range(n)
    ]


async def _all(trials: list[Trial], server: Any, root: Path, restart: Trial) -> None:
    gate = asyncio.Semaphore(CONCURRENT)

    async def one(t: Trial) -> None:
        async with gate:
            await run_trial(t, server, root)
            mark = "ok" if not t.violations() else "; ".join(t.violations())
            print(f"  trial {t.index}: {t.seconds:.1f} s, killed {t.killed}: {mark}", flush=True)

    await asyncio.gather(*(one(t) for t in trials))
    await run_trial(restart, server, root)  # alone: it stops the server of every trial
    mark = "ok" if not restart.violations() else "; ".join(restart.violations())
    print(f"  server restart at {restart.kill_at:.1f} s: {restart.seconds:.1f} s: {mark}")


def _print_details(t: Trial, root: Path) -> None:
    folder = root / f"trial-{t.index}"
    print(f"--- trial {t.index} ({t}) ---")
    for name in ("effects.jsonl", "asks.jsonl"):
        path = folder / name
        print(f"{name}:\n{path.read_text() if path.exists() else '(none)'}")
    log = folder / "workers.log"
    if log.exists():
        print("workers.log (tail):\n" + log.read_text(errors="replace")[-3000:])


def run(n: int, *, quick: bool) -> dict[str, Any]:
    from tests.plugins.temporal_server import TemporalDevServer  # lazy: a dev dependency

    trials = _draw(n)
    restart = Trial(
        index=n,
        kill_at=random.Random(SEED + 1).uniform(0.5, 3.0),
        tool_seconds=0.5,
        no_worker=False,
        server_restart=True,
    )
    print(
        f"temporal_faults: {n} trials ({CONCURRENT} at a time) + 1 server restart; seed {SEED}; "
        f"a worker killed at [0, {KILL_WITHIN:g}) s (every {IN_REFUND_EVERY}th in a refund's "
        f"body); every {NO_WORKER_EVERY}th trial decides with no worker up; "
        f"python {sys.version.split()[0]}",
        flush=True,
    )
    root = Path(tempfile.mkdtemp(prefix="seamkit-bench-temporal-faults-"))
    (root / "server").mkdir()
    server = TemporalDevServer.start(root=root / "server")
    bad: list[Trial] = []
    try:
        asyncio.run(_all(trials, server, root, restart))
        bad = [t for t in [*trials, restart] if t.violations()]
        for t in bad:
            _print_details(t, root)
    finally:
        server.stop()
        if not bad:
            shutil.rmtree(root, ignore_errors=True)
    rows = _rows(trials, restart)
    print()
    print_rows(rows)
    if bad:
        raise RuntimeError(f"{len(bad)} fault trials broke a promise (details above; {root})")
    seconds = [t.seconds for t in trials]
    completed = sum(t.on_survivor for t in trials)
    figures = [
        figure(
            "completed",
            "trials whose run completed on a surviving worker",
            [completed],
            completed,
        ),
        figure("trials", "trials, over those completed", [n], completed, target=1.0),
        figure(
            "seconds_per_trial", "wall time of one trial's run", seconds, statistics.median(seconds)
        ),
    ]
    figures[0]["unit"] = figures[1]["unit"] = "trials"
    baselines = {
        "completed": "completed",
        "trials": "completed",
        "seconds_per_trial": "seconds_per_trial",
    }
    res = result(
        "temporal_faults",
        quick=quick,
        baseline="completed",
        figures=figures,
        baselines=baselines,
        seed=SEED,
        table=rows,
    )
    print()
    print_figures(figures, baselines)
    print(f"{res['benchmark']}: {verdict(res)}; every trial kept every promise")
    return res


def _rows(trials: list[Trial], restart: Trial) -> list[tuple[str, ...]]:
    def total(attr: str) -> int:
        return sum(int(getattr(t, attr)) for t in trials)

    landed = sum(t.kill_landed for t in trials)
    return [
        ("fault trials", "count"),
        ("trials (a worker SIGKILLed at a random moment, another started)", str(len(trials))),
        ("  kills that landed before the run completed", str(landed)),
        ("runs completed on a surviving worker", str(total("on_survivor"))),
        ("duplicate `once` effects", str(total("duplicate_once"))),
        ("model turns asked twice", str(total("asked_twice"))),
        ("`once` calls in doubt", str(total("in_doubt"))),
        ("  reported (InDoubt result and in_doubt diagnostic)", str(total("in_doubt_reported"))),
        ("refund effects with no result and no InDoubt", str(total("lost"))),
        ("decisions sent while no worker was up", str(total("sent_without_worker"))),
        ("  applied by a worker started later", str(total("applied_without_worker"))),
        (
            "dev server killed and restarted mid-run: run completed",
            "yes" if restart.completed else "NO",
        ),
        ("median seconds per trial", f"{statistics.median([t.seconds for t in trials]):.1f}"),
        ("longest trial, seconds", f"{max(t.seconds for t in trials):.1f}"),
    ]


def main(quick: bool = False) -> dict[str, Any]:
    return run(QUICK if quick else FULL, quick=quick)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
