"""Dispatch overhead (issue 2): the dispatcher against raw pluggy and a plain loop.

For every seam that a run dispatches per turn or per tool call (all but
``on_completion``, once per run) and N in 1, 10, 100, the SAME N hook objects (N
distinct instances, each with a pass-through ``@seamkit.hookimpl`` returning
``None`` at every event) are called with realistic arguments three ways, each as a
user's code calls it (the loops are compiled from source with the event spelled
literally, so nothing is hoisted that a user would not hoist):

- ``seamkit``: ``await d.dispatch(HookEvent.X, ctx, ...)`` on a ``Dispatcher(hooks=...)``,
  awaited inside a running event loop (the whole benchmark runs in one loop);
- ``pluggy`` (the baseline): ``pm.hook.x(ctx=ctx, ...)`` called plainly (the seamkit
  hookspecs are not ``firstresult``), the hook objects registered on a fresh
  ``pluggy.PluginManager("seamkit")``;
- ``plain``: ``for h in hooks: h.x(ctx, ...)``.

Reported beside them without a target: the dispatcher over ``async def`` hookimpls,
over async hookimpls with ``timeout_seconds`` (``asyncio.wait_for``), and over sync
hookimpls with ``timeout_seconds`` (run in a worker thread, ``asyncio.to_thread``).

The figure is nanoseconds per hookimpl per event: a sample's wall time over its
number of events and over N. Per configuration, one warm-up round is discarded,
then rounds interleave every variant, rotating their order each round; the figure
is the median of the rounds (the min is kept too), the ratio is its median over
raw pluggy's median at the same event and N, in the same run.

Targets: at most 1.5x raw pluggy for the first-non-Continue events, at most 2x for
chain and accumulate.

The result follows the harness' format; since every figure has its own baseline
(pluggy at its event and N), ``baseline`` names the first of them and the extra key
``baselines`` maps every figure to the one its ratio is taken against.
"""

from __future__ import annotations

import asyncio
import gc
import os
import statistics
import sys
import time
from collections.abc import Callable
from importlib import metadata
from typing import Any

import pluggy
import seamkit
from seamkit import (
    HookEvent,
    Message,
    MessageToolCall,
    ModelRequest,
    ModelTurn,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
    hookspecs,
)
from seamkit._engine._dispatch import Dispatcher
from seamkit._events import EVENTS, Composition
from seamkit.testing import make_context

from tests.benchmarks._harness import figure, print_rows, result, verdict

FULL_REPEATS = 7
QUICK_REPEATS = 2
WARMUP_ROUNDS = 1
HOOK_COUNTS = (1, 10, 100)
TIMEOUT_SECONDS = 30.0  # never reached: the figure is the cost of the guard

# Hookimpl calls per sample (events per sample = calls // N, at least 1).
FULL_CALLS = {"inline": 40_000, "async_timeout": 2_000, "thread": 300}
QUICK_CALLS = {"inline": 100, "async_timeout": 10, "thread": 4}

TARGETS = {Composition.FIRST: 1.5, Composition.CHAIN: 2.0, Composition.ACCUMULATE: 2.0}

# The seams measured, in the order a run meets them; on_completion (mode "all",
# once per run) is left out.
MEASURED = (
    HookEvent.ON_REQUEST_START,
    HookEvent.ON_PRE_LLM,
    HookEvent.ON_MODEL_TURN_FINISHED,
    HookEvent.ON_INVALID_TOOL_CALL,
    HookEvent.ON_PRE_TOOL_USE,
    HookEvent.ON_POST_TOOL_USE,
    HookEvent.ON_ITERATION_END,
)


# --- the hook objects: pass-through at every measured event ---------------------


class SyncHook:
    """Sync hookimpls that return ``None`` (Continue) at every event."""

    @seamkit.hookimpl
    def on_request_start(self, ctx: Any, messages: Any) -> Any:
        return None

    @seamkit.hookimpl
    def on_pre_llm(self, ctx: Any, request: Any) -> Any:
        return None

    @seamkit.hookimpl
    def on_model_turn_finished(self, ctx: Any, turn: Any) -> Any:
        return None

    @seamkit.hookimpl
    def on_invalid_tool_call(self, ctx: Any, call: Any, error: Any, available_tools: Any) -> Any:
        return None

    @seamkit.hookimpl
    def on_pre_tool_use(self, ctx: Any, call: Any) -> Any:
        return None

    @seamkit.hookimpl
    def on_post_tool_use(self, ctx: Any, call: Any, result: Any) -> Any:
        return None

    @seamkit.hookimpl
    def on_iteration_end(self, ctx: Any, messages: Any) -> Any:
        return None


class AsyncHook:
    """``async def`` hookimpls that return ``None`` (Continue) at every event."""

    @seamkit.hookimpl
    async def on_request_start(self, ctx: Any, messages: Any) -> Any:
        return None

    @seamkit.hookimpl
    async def on_pre_llm(self, ctx: Any, request: Any) -> Any:
        return None

    @seamkit.hookimpl
    async def on_model_turn_finished(self, ctx: Any, turn: Any) -> Any:
        return None

    @seamkit.hookimpl
    async def on_invalid_tool_call(
        self, ctx: Any, call: Any, error: Any, available_tools: Any
    ) -> Any:
        return None

    @seamkit.hookimpl
    async def on_pre_tool_use(self, ctx: Any, call: Any) -> Any:
        return None

    @seamkit.hookimpl
    async def on_post_tool_use(self, ctx: Any, call: Any, result: Any) -> Any:
        return None

    @seamkit.hookimpl
    async def on_iteration_end(self, ctx: Any, messages: Any) -> Any:
        return None


class SyncTimeoutHook(SyncHook):
    """Sync hookimpls with a time-out: the dispatcher runs each in a worker thread."""

    timeout_seconds = TIMEOUT_SECONDS


class AsyncTimeoutHook(AsyncHook):
    """Async hookimpls with a time-out: the dispatcher wraps each in ``asyncio.wait_for``."""

    timeout_seconds = TIMEOUT_SECONDS


# --- realistic arguments ---------------------------------------------------------


def _arguments() -> dict[str, Any]:
    """One value per hookspec argument name (``ctx`` included), as a run passes them."""
    wire_call = MessageToolCall.model_validate(
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "search_docs", "arguments": '{"query": "refund policy"}'},
        }
    )
    messages = (
        Message.system("You are a helpful support agent."),
        Message.user("What is the refund policy for annual plans?"),
        Message.assistant(tool_calls=[wire_call]),
        Message.tool("call_1", "Annual plans are refundable within 30 days."),
    )
    call = ToolCall.from_message(wire_call)
    tools = (
        ToolSpec(name="search_docs", description="Search the documentation."),
        ToolSpec(name="open_ticket", description="Open a support ticket."),
    )
    return {
        "ctx": make_context(),
        "messages": messages,
        "request": ModelRequest(messages=messages, tools=tools, temperature=0.2),
        "turn": ModelTurn(
            message=Message.assistant("Annual plans are refundable within 30 days."),
            usage=Usage(input_tokens=812, output_tokens=24, requests=1),
        ),
        "call": call,
        "result": ToolResult(
            call_id="call_1", content="Annual plans are refundable within 30 days."
        ),
        "error": "unknown tool 'search_doc'",
        "available_tools": tuple(t.name for t in tools),
    }


# --- the timed loops, compiled per event so the call reads as a user writes it ----

_SEAMKIT_LOOP = """
async def loop(d, reps, {params}):
    start = perf_counter()
    for _ in range(reps):
        await d.dispatch(HookEvent.{member}, {params})
    return perf_counter() - start
"""

_PLUGGY_LOOP = """
def loop(pm, reps, {params}):
    start = perf_counter()
    for _ in range(reps):
        pm.hook.{event}({kwargs})
    return perf_counter() - start
"""

_PLAIN_LOOP = """
def loop(hooks, reps, {params}):
    start = perf_counter()
    for _ in range(reps):
        for h in hooks:
            h.{event}({params})
    return perf_counter() - start
"""


def _compile(template: str, event: HookEvent) -> Callable[..., Any]:
    names = EVENTS[event].args
    source = template.format(
        params=", ".join(names),
        kwargs=", ".join(f"{n}={n}" for n in names),
        event=event.value,
        member=event.name,
    )
    namespace: dict[str, Any] = {"perf_counter": time.perf_counter, "HookEvent": HookEvent}
    exec(compile(source, f"<bench_dispatch {event.value}>", "exec"), namespace)
    loop: Callable[..., Any] = namespace["loop"]
    return loop


def _shown(event: HookEvent) -> dict[str, str]:
    """The call each variant times, as shown in the table."""
    names = EVENTS[event].args
    params = ", ".join(names)
    kwargs = ", ".join(f"{n}={n}" for n in names)
    dispatch = f"await d.dispatch(HookEvent.{event.name}, {params})"
    return {
        "plain": f"for h in hooks: h.{event.value}({params})",
        "pluggy": f"pm.hook.{event.value}({kwargs})",
        "seamkit": dispatch,
        "async": f"{dispatch}  # async def hookimpls",
        "async_timeout": f"{dispatch}  # async def hookimpls, timeout_seconds",
        "thread": f"{dispatch}  # sync hookimpls, timeout_seconds (worker thread)",
    }


# --- measuring -------------------------------------------------------------------

VARIANTS = ("plain", "pluggy", "seamkit", "async", "async_timeout", "thread")
_CALLS_KEY = {"async_timeout": "async_timeout", "thread": "thread"}  # else "inline"


class _Setup:
    """The N hook objects and what calls them: a plugin manager and four dispatchers."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.hooks = [SyncHook() for _ in range(n)]
        self.pm = pluggy.PluginManager("seamkit")
        self.pm.add_hookspecs(hookspecs)
        for hook in self.hooks:
            self.pm.register(hook)
        self.dispatchers = {
            "seamkit": Dispatcher(hooks=self.hooks),  # the same objects as pluggy's
            "async": Dispatcher(hooks=[AsyncHook() for _ in range(n)]),
            "async_timeout": Dispatcher(hooks=[AsyncTimeoutHook() for _ in range(n)]),
            "thread": Dispatcher(hooks=[SyncTimeoutHook() for _ in range(n)]),
        }

    async def check(self, event: HookEvent, args: tuple[Any, ...]) -> None:
        """Every variant has the n hookimpls at ``event`` and comes out with Continue."""
        caller = getattr(self.pm.hook, event.value)
        kwargs = dict(zip(EVENTS[event].args, args, strict=True))
        # pluggy leaves the Nones out of its results
        if len(caller.get_hookimpls()) != self.n or caller(**kwargs) != []:
            raise RuntimeError(f"raw pluggy does not run the {self.n} hookimpls at {event}")
        for variant, d in self.dispatchers.items():
            flow = (await d.dispatch(event, *args)).flow
            if len(d.hooks_at(event)) != self.n or type(flow) is not seamkit.flow.Continue:
                raise RuntimeError(f"{variant}: not {self.n} pass-through hooks at {event}")


async def _measure_one(
    setup: _Setup, event: HookEvent, args: tuple[Any, ...], calls: dict[str, int], rounds: int
) -> dict[str, list[float]]:
    """Samples (ns per hookimpl per event) of every variant at ``event``."""
    await setup.check(event, args)
    n = setup.n
    seamkit_loop = _compile(_SEAMKIT_LOOP, event)
    pluggy_loop = _compile(_PLUGGY_LOOP, event)
    plain_loop = _compile(_PLAIN_LOOP, event)

    async def run(variant: str) -> float:
        reps = max(1, calls[_CALLS_KEY.get(variant, "inline")] // n)
        if variant == "plain":
            elapsed = plain_loop(setup.hooks, reps, *args)
        elif variant == "pluggy":
            elapsed = pluggy_loop(setup.pm, reps, *args)
        else:
            elapsed = await seamkit_loop(setup.dispatchers[variant], reps, *args)
        return float(elapsed) / reps / n * 1e9

    gc.collect()  # once per configuration: leftovers of the previous one cost it nothing
    samples: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for i in range(WARMUP_ROUNDS + rounds):
        shift = i % len(VARIANTS)
        for variant in VARIANTS[shift:] + VARIANTS[:shift]:
            per_call = await run(variant)
            if i >= WARMUP_ROUNDS:
                samples[variant].append(per_call)
    return samples


async def _measure_all(
    calls: dict[str, int], rounds: int
) -> dict[tuple[HookEvent, int], dict[str, list[float]]]:
    values = _arguments()
    out: dict[tuple[HookEvent, int], dict[str, list[float]]] = {}
    for n in HOOK_COUNTS:
        setup = _Setup(n)
        for event in MEASURED:
            args = tuple(values[name] for name in EVENTS[event].args)
            out[event, n] = await _measure_one(setup, event, args, calls, rounds)
    return {(e, n): out[e, n] for e in MEASURED for n in HOOK_COUNTS}


# --- reporting -------------------------------------------------------------------


def _name(event: HookEvent, n: int, variant: str) -> str:
    return f"{event.value}/N={n}/{variant}"


def _ns(value: float) -> str:
    if value < 1e3:
        return f"{value:.0f} ns"
    return f"{value / 1e3:.3g} µs" if value < 1e6 else f"{value / 1e6:.3g} ms"


def _print(res: dict[str, Any]) -> None:
    by_name = {f["name"]: f for f in res["figures"]}
    header = (
        "event",
        "mode",
        "N",
        "plain loop",
        "raw pluggy (baseline)",
        "seamkit",
        "ratio",
        "target",
        "met",
        "async",
        "ratio",
        "async+timeout",
        "ratio",
        "sync+timeout (thread)",
        "ratio",
    )
    rows = [header]
    for event in MEASURED:
        mode = EVENTS[event].composition
        for n in HOOK_COUNTS:
            f = {v: by_name[_name(event, n, v)] for v in VARIANTS}
            s = f["seamkit"]
            rows.append(
                (
                    event.value,
                    str(mode),
                    str(n),
                    _ns(f["plain"]["median"]),
                    _ns(f["pluggy"]["median"]),
                    _ns(s["median"]),
                    f"{s['ratio']:.2f}x",
                    f"<= {s['target']:g}x",
                    "met" if s["met"] else "NOT MET",
                    _ns(f["async"]["median"]),
                    f"{f['async']['ratio']:.2f}x",
                    _ns(f["async_timeout"]["median"]),
                    f"{f['async_timeout']['ratio']:.1f}x",
                    _ns(f["thread"]["median"]),
                    f"{f['thread']['ratio']:.0f}x",
                )
            )
    print_rows(rows)
    n_samples = res["figures"][0]["n"]
    print(
        "per hookimpl per event, median of "
        f"{n_samples} rounds; every ratio is to raw pluggy (the baseline) at the same "
        "event and N"
    )
    print(f"{res['benchmark']}: {verdict(res)}")


def main(quick: bool = False) -> dict[str, Any]:
    rounds = QUICK_REPEATS if quick else FULL_REPEATS
    calls = QUICK_CALLS if quick else FULL_CALLS
    print(
        f"dispatch: {len(MEASURED)} events x N in {HOOK_COUNTS}, {WARMUP_ROUNDS} warm-up + "
        f"{rounds} rounds of {len(VARIANTS)} variants; hookimpl calls per sample: "
        + ", ".join(f"{k} {v}" for k, v in calls.items())
    )
    print(f"python {sys.version.split()[0]}, pluggy {pluggy.__version__}, {os.cpu_count()} cpus")

    samples = asyncio.run(_measure_all(calls, rounds))

    figures: list[dict[str, Any]] = []
    baselines: dict[str, str] = {}
    for (event, n), by_variant in samples.items():
        shown = _shown(event)
        base_name = _name(event, n, "pluggy")
        base = statistics.median(by_variant["pluggy"])
        for variant in VARIANTS:
            target = TARGETS[EVENTS[event].composition] if variant == "seamkit" else None
            name = _name(event, n, variant)
            figures.append(
                figure(name, shown[variant], by_variant[variant], base, unit="ns", target=target)
            )
            baselines[name] = base_name
    res = result(
        "dispatch",
        quick=quick,
        baseline=_name(MEASURED[0], HOOK_COUNTS[0], "pluggy"),
        figures=figures,
        baselines=baselines,
        per="hookimpl per event",
        rounds=rounds,
        calls_per_sample=dict(calls),
        hook_counts=list(HOOK_COUNTS),
        pluggy=metadata.version("pluggy"),
        executable=sys.executable,
    )
    _print(res)
    return res


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
