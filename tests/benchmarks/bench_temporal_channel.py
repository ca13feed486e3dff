"""The live-event side channel of seamkit-temporal: delay from ``publish`` to
the caller's ``Inbox.events`` yielding the event, on loopback.

One process: an `Inbox` and a `Publisher` on one event loop, as a caller and
a worker would be (the HTTP hop is real: 127.0.0.1, keep-alive). Each round
publishes ``events`` `ToolOutputDelta` chunks and reads them back; the delay
of an event is the time from just before its ``publish`` to the moment the
reader got it. Three ways of publishing:

- **paced/thread**: from another thread (workflow code runs off the loop),
  one chunk every 2 ms, like a tool streaming its output;
- **paced/loop**: the same from the loop's own thread (an activity);
- **burst/thread**: every chunk at once from another thread (the worst
  queueing: they travel in a few batched POSTs).

Figures: p50 and p95 of each (ms, the median over rounds); the baseline is
the issue's budget, 250 ms, and each p95's target is 1.0 of it. The extra key
``baselines`` maps each figure to its baseline; ``delivered`` counts the
events that arrived against those published (all of them, or it is a
problem).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from seamkit.stream import ToolOutputDelta
from seamkit_temporal._channel import Inbox, Publisher

from tests.benchmarks._harness import figure, print_figures, result, verdict

BUDGET_MS = 250.0
FULL = {"rounds": 7, "events": 200}
QUICK = {"rounds": 2, "events": 20}
PACE = 0.002
VARIANTS = {
    "paced/thread": "publish from another thread, one chunk every 2 ms",
    "paced/loop": "publish from the loop's thread, one chunk every 2 ms",
    "burst/thread": "publish every chunk at once from another thread",
}


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[-1]


async def _round(
    inbox: Inbox, publisher: Publisher, variant: str, events: int, n: int
) -> tuple[list[float], int]:
    """The delays (ms) of one round's events, and how many arrived."""
    route = inbox.route(f"seamkit/bench/{variant}/{n}")
    started: list[float] = [0.0] * events
    delays: list[float] = []

    def publish(i: int) -> None:
        started[i] = time.perf_counter()
        publisher.publish(route, ToolOutputDelta("call_1", str(i), 1))

    async def read() -> None:
        async for event in inbox.events(route):
            assert isinstance(event, ToolOutputDelta)
            delays.append((time.perf_counter() - started[int(event.text)]) * 1e3)
            if len(delays) == events:
                return

    reader = asyncio.ensure_future(read())
    await asyncio.sleep(0)
    if variant == "paced/loop":
        for i in range(events):
            publish(i)
            await asyncio.sleep(PACE)
    else:
        paced = variant.startswith("paced")
        thread = threading.Thread(target=_publish_all, args=(publish, events, paced))
        thread.start()
        await asyncio.to_thread(thread.join)
    try:
        await asyncio.wait_for(reader, 10)
    except TimeoutError:
        inbox.discard(route)
    return delays, len(delays)


def _publish_all(publish: Callable[[int], None], events: int, paced: bool) -> None:
    for i in range(events):
        publish(i)
        if paced:
            time.sleep(PACE)


async def _measure(counts: dict[str, int]) -> tuple[dict[str, dict[str, list[float]]], Any]:
    rounds: dict[str, dict[str, list[float]]] = {v: {"p50": [], "p95": []} for v in VARIANTS}
    delivered = {v: [0, 0] for v in VARIANTS}
    async with Inbox() as inbox, Publisher() as publisher:
        await _round(inbox, publisher, "paced/loop", 5, -1)  # warm-up: connect, import
        for n in range(counts["rounds"]):
            order = list(VARIANTS)
            order = order[n % len(order) :] + order[: n % len(order)]
            for variant in order:
                delays, got = await _round(inbox, publisher, variant, counts["events"], n)
                delivered[variant][0] += got
                delivered[variant][1] += counts["events"]
                if len(delays) >= 2:
                    rounds[variant]["p50"].append(statistics.median(delays))
                    rounds[variant]["p95"].append(_p95(delays))
        await publisher.flush()
        dropped = publisher.dropped
    return rounds, {"delivered": delivered, "dropped": dropped}


def main(quick: bool = False) -> dict[str, Any]:
    counts = QUICK if quick else FULL
    print(
        f"temporal_channel: {counts['rounds']} rounds x {len(VARIANTS)} ways of publishing "
        f"{counts['events']} events through an Inbox on 127.0.0.1; python "
        f"{sys.version.split()[0]}"
    )
    rounds, tally = asyncio.run(_measure(counts))
    figures = [
        figure("budget", "the issue's budget: p95 <= 250 ms", [BUDGET_MS], BUDGET_MS, unit="ms")
    ]
    baselines = {"budget": "budget"}
    for variant, shown in VARIANTS.items():
        for stat in ("p50", "p95"):
            name = f"{stat}/{variant}"
            figures.append(
                figure(
                    name,
                    f"{stat} publish -> inbox yields: {shown}",
                    rounds[variant][stat],
                    BUDGET_MS,
                    unit="ms",
                    target=1.0 if stat == "p95" else None,
                )
            )
            baselines[name] = "budget"
    problems = [
        f"{variant}: {got} of {sent} events arrived"
        for variant, (got, sent) in tally["delivered"].items()
        if got != sent
    ]
    res = result(
        "temporal_channel",
        quick=quick,
        baseline="budget",
        figures=figures,
        baselines=baselines,
        delivered=tally["delivered"],
        dropped=tally["dropped"],
        problems=problems,
    )
    print_figures(figures, baselines)
    for line in problems:
        print(f"PROBLEM: {line}")
    print(f"{res['benchmark']}: {verdict(res)}")
    return res


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
