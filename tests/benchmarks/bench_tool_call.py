"""Tool-call overhead: ``await tool.call(args, ctx)`` against calling the function.

Target (from the issue): the kernel's overhead on one call of a three-argument
sync tool without a time-out (validation, injection, serialisation), against
calling the function directly in the same run, is at most 15 µs added.

The subject is a plain function of three model arguments and one injected
parameter, returning a dict (so the result is written as JSON)::

    def lookup(a: int, b: str, c: float, _user: str) -> dict: ...
    lookup_tool = seamkit.tool(lookup)   # _user <- ActionContext property "user"

Everything runs inside ONE event loop (one ``asyncio.run``); the variants are:

- ``direct`` (the baseline): ``fn(a=1, b="x", c=2.5, _user="u1")``, the plain
  function called directly, nothing else;
- ``call``: ``await tool.call(args, ctx)`` with ``args = {"a": 1, "b": "x", "c": 2.5}``
  (the model's arguments, as the agent has them after parsing the JSON) and
  ``ctx = seamkit.ActionContext(user="u1")``;
- ``added``: ``call`` minus ``direct``, per round (the two samples of one round
  are paired): the overhead itself, which carries the target.

Reported beside them without a target, so the reader sees where the time goes:
``tool.validate(args)`` alone, ``await tool.invoke(values, ctx)`` alone (on values
``validate`` already produced: injection, the call, serialisation), the same
function returning a plain ``str`` (no JSON) and an ``async def`` version, each
of the last two with its own direct baseline and its own ``added`` figure.

The figure is microseconds per call: a sample's wall time over its number of
calls. One warm-up round is discarded, then rounds interleave every variant,
rotating their order each round; a figure is the median of the rounds (the min
is kept too). Garbage collection stays on, as in a real run.

The harness' targets are ratios, so the absolute target is expressed as one: the
ratio of the ``added`` figure is taken against the 15 µs budget (extra key
``added_target_us``) with target 1.0, so ``met`` (and ``all_met``) says
``added <= 15 µs``. Every other ratio is to a measured direct call; the extra key
``baselines`` maps every figure to what its ratio is taken against (a figure's
name, or ``"added_target_us"``), and ``added_us`` repeats the added median.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from importlib import metadata
from typing import Any

import seamkit

from tests.benchmarks._harness import figure, print_rows, result

FULL_REPEATS = 15
QUICK_REPEATS = 2
WARMUP_ROUNDS = 1
ADDED_TARGET_US = 15.0

# Calls per sample: direct calls are ~30x cheaper, so they get more of them.
FULL_CALLS = {"direct": 200_000, "tool": 20_000}
QUICK_CALLS = {"direct": 200, "tool": 20}

ARGS: dict[str, Any] = {"a": 1, "b": "x", "c": 2.5}
USER = "u1"


# --- the functions ----------------------------------------------------------------


def lookup(a: int, b: str, c: float, _user: str) -> dict[str, Any]:
    """Look something up (returns a dict: the tool's result is its JSON)."""
    return {"a": a, "b": b, "c": c, "user": _user}


def lookup_str(a: int, b: str, c: float, _user: str) -> str:
    """Look something up (returns a str: the tool's result is the str itself)."""
    return f"a={a} b={b} c={c} user={_user}"


async def lookup_async(a: int, b: str, c: float, _user: str) -> dict[str, Any]:
    """Look something up, ``async def`` (returns a dict)."""
    return {"a": a, "b": b, "c": c, "user": _user}


# --- the timed loops ----------------------------------------------------------------
# Each returns the wall time of ``reps`` calls written as a user writes them.

perf_counter = time.perf_counter


async def _direct(fn: Callable[..., Any], reps: int) -> float:
    start = perf_counter()
    for _ in range(reps):
        fn(a=1, b="x", c=2.5, _user="u1")
    return perf_counter() - start


async def _direct_async(fn: Callable[..., Any], reps: int) -> float:
    start = perf_counter()
    for _ in range(reps):
        await fn(a=1, b="x", c=2.5, _user="u1")
    return perf_counter() - start


async def _call(tool: seamkit.Tool, args: dict[str, Any], ctx: Any, reps: int) -> float:
    start = perf_counter()
    for _ in range(reps):
        await tool.call(args, ctx)
    return perf_counter() - start


async def _validate(tool: seamkit.Tool, args: dict[str, Any], reps: int) -> float:
    start = perf_counter()
    for _ in range(reps):
        tool.validate(args)
    return perf_counter() - start


async def _invoke(tool: seamkit.Tool, values: dict[str, Any], ctx: Any, reps: int) -> float:
    start = perf_counter()
    for _ in range(reps):
        await tool.invoke(values, ctx)
    return perf_counter() - start


# --- the variants -------------------------------------------------------------------

# name -> (command shown, calls key, what its ratio is taken against)
VARIANTS: dict[str, tuple[str, str, str]] = {
    "direct": ('fn(a=1, b="x", c=2.5, _user="u1")', "direct", "direct"),
    "call": ("await tool.call(args, ctx)", "tool", "direct"),
    "validate": ("tool.validate(args)", "tool", "direct"),
    "invoke": ("await tool.invoke(values, ctx)  # values = tool.validate(args)", "tool", "direct"),
    "direct_str": (
        'fn_str(a=1, b="x", c=2.5, _user="u1")  # returns a str',
        "direct",
        "direct_str",
    ),
    "call_str": ("await tool_str.call(args, ctx)  # returns a str: no JSON", "tool", "direct_str"),
    "direct_async": (
        'await fn_async(a=1, b="x", c=2.5, _user="u1")  # async def',
        "direct",
        "direct_async",
    ),
    "call_async": ("await tool_async.call(args, ctx)  # async def", "tool", "direct_async"),
}
# added figure -> (command shown, the call figure, its direct baseline, target)
ADDED: dict[str, tuple[str, str, str, float | None]] = {
    "added": ("added by tool.call: call - direct", "call", "direct", 1.0),
    "added_str": ("added by tool_str.call: call_str - direct_str", "call_str", "direct_str", None),
    "added_async": (
        "added by tool_async.call: call_async - direct_async",
        "call_async",
        "direct_async",
        None,
    ),
}
BASELINE = "direct"
ORDER = (
    "direct",
    "call",
    "added",
    "validate",
    "invoke",
    "direct_str",
    "call_str",
    "added_str",
    "direct_async",
    "call_async",
    "added_async",
)


class _Setup:
    """The tools, the context, the arguments, and a runner per variant."""

    def __init__(self) -> None:
        self.ctx = seamkit.ActionContext(user=USER)
        self.args = dict(ARGS)
        self.tool = seamkit.tool(lookup)
        self.tool_str = seamkit.tool(lookup_str)
        self.tool_async = seamkit.tool(lookup_async)
        self.values = self.tool.validate(self.args)

    def runner(self, variant: str) -> Callable[[int], Awaitable[float]]:
        ctx, args = self.ctx, self.args
        runners: dict[str, Callable[[int], Awaitable[float]]] = {
            "direct": lambda reps: _direct(lookup, reps),
            "call": lambda reps: _call(self.tool, args, ctx, reps),
            "validate": lambda reps: _validate(self.tool, args, reps),
            "invoke": lambda reps: _invoke(self.tool, self.values, ctx, reps),
            "direct_str": lambda reps: _direct(lookup_str, reps),
            "call_str": lambda reps: _call(self.tool_str, args, ctx, reps),
            "direct_async": lambda reps: _direct_async(lookup_async, reps),
            "call_async": lambda reps: _call(self.tool_async, args, ctx, reps),
        }
        return runners[variant]

    async def check(self) -> None:
        """Every variant does what it claims: same arguments, injection, a good result."""
        expected = {"a": 1, "b": "x", "c": 2.5}
        if self.values != expected or self.tool.injected != {"_user": "user"}:
            raise RuntimeError(f"unexpected validation: {self.values!r}, {self.tool.injected!r}")
        direct = lookup(a=1, b="x", c=2.5, _user=USER)
        cases = (
            (await self.tool.call(self.args, self.ctx), json.dumps(direct)),
            (await self.tool.invoke(self.values, self.ctx), json.dumps(direct)),
            (
                await self.tool_str.call(self.args, self.ctx),
                lookup_str(a=1, b="x", c=2.5, _user=USER),
            ),
            (
                await self.tool_async.call(self.args, self.ctx),
                json.dumps(await lookup_async(a=1, b="x", c=2.5, _user=USER)),
            ),
        )
        for res, want in cases:
            got = res.content
            same = json.loads(got) == json.loads(want) if got.startswith("{") else got == want
            if res.is_error or not same:
                raise RuntimeError(f"tool result {res!r}, expected content {want!r}")
        for tool in (self.tool, self.tool_str, self.tool_async):
            if tool.timeout_seconds is not None:
                raise RuntimeError(f"{tool!r} has a time-out")


async def _measure(calls: dict[str, int], rounds: int) -> dict[str, list[float]]:
    """Samples (µs per call) of every variant."""
    setup = _Setup()
    await setup.check()
    names = tuple(VARIANTS)
    runners = {v: setup.runner(v) for v in names}
    gc.collect()
    samples: dict[str, list[float]] = {v: [] for v in names}
    for i in range(WARMUP_ROUNDS + rounds):
        shift = i % len(names)
        for variant in names[shift:] + names[:shift]:
            reps = calls[VARIANTS[variant][1]]
            per_call = await runners[variant](reps) / reps * 1e6
            if i >= WARMUP_ROUNDS:
                samples[variant].append(per_call)
    return samples


# --- reporting ----------------------------------------------------------------------


def _us(value: float) -> str:
    return f"{value * 1e3:.0f} ns" if value < 1 else f"{value:.3g} µs"


def _print(res: dict[str, Any]) -> None:
    by_name = {f["name"]: f for f in res["figures"]}
    header = ("figure", "command", "median", "min", "ratio", "to", "target", "met")
    rows = [header]
    for name in ORDER:
        f = by_name[name]
        against = res["baselines"][name]
        rows.append(
            (
                name,
                f["command"],
                _us(f["median"]),
                _us(f["min"]),
                "1.00x (baseline)" if name == against else f"{f['ratio']:.2f}x",
                "15 µs budget" if against == "added_target_us" else against,
                "-" if f["target"] is None else f"<= {res['added_target_us']:g} µs",
                "-" if f["met"] is None else ("met" if f["met"] else "NOT MET"),
            )
        )
    print_rows(rows)
    print(
        f"per call, median of {res['rounds']} rounds; ratios are to the direct call "
        "(the baseline) of the same function, the added figures' to the 15 µs budget"
    )
    added = by_name["added"]
    verdict = "met" if added["met"] else "NOT MET"
    print(
        f"{res['benchmark']}: tool.call adds {_us(added['median'])} per call "
        f"(min {_us(added['min'])}), target <= {res['added_target_us']:g} µs: {verdict}"
    )


def main(quick: bool = False) -> dict[str, Any]:
    rounds = QUICK_REPEATS if quick else FULL_REPEATS
    calls = QUICK_CALLS if quick else FULL_CALLS
    print(
        f"tool call: {WARMUP_ROUNDS} warm-up + {rounds} rounds of {len(VARIANTS)} variants "
        "in one event loop; calls per sample: " + ", ".join(f"{k} {v}" for k, v in calls.items())
    )
    pydantic = metadata.version("pydantic")
    print(f"python {sys.version.split()[0]}, pydantic {pydantic}, {os.cpu_count()} cpus")

    samples = asyncio.run(_measure(calls, rounds))
    for name, (_shown, call, direct, _target) in ADDED.items():
        samples[name] = [s - d for s, d in zip(samples[call], samples[direct], strict=True)]

    figures: dict[str, dict[str, Any]] = {}
    baselines: dict[str, str] = {}
    for name, (shown, _calls, against) in VARIANTS.items():
        base = statistics.median(samples[against])
        figures[name] = figure(name, shown, samples[name], base, unit="µs")
        baselines[name] = against
    for name, (shown, *_, target) in ADDED.items():
        figures[name] = figure(
            name, shown, samples[name], ADDED_TARGET_US, unit="µs", target=target
        )
        baselines[name] = "added_target_us"

    res = result(
        "tool_call",
        quick=quick,
        baseline=BASELINE,
        figures=[figures[name] for name in ORDER],
        baselines=baselines,
        added_us=figures["added"]["median"],
        added_target_us=ADDED_TARGET_US,
        per="call",
        rounds=rounds,
        calls_per_sample=dict(calls),
        pydantic=pydantic,
        executable=sys.executable,
    )
    _print(res)
    return res


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
