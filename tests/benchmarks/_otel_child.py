"""The child process of ``bench_otel``'s environment figures.

``python -m tests.benchmarks._otel_child WARMUP SAMPLES RUNS`` (cwd the
repository root) builds the W(0, 8) agent of ``bench_per_run`` with the
DEFAULT registry (``plugin_hooks=True``: every installed plugin, as a user
gets them, subject to this process's ``SEAMKIT_*`` and ``OTEL_*``
environment), checks that it answers ``"done"``, makes WARMUP runs, then
SAMPLES samples of RUNS runs each, and prints one JSON line: the µs per run
of every sample and their median, what the registry says of the ``otel``
plugin (its hookimpls, or ``null`` when it was not loaded), how many run
observers the agent has, and whether OpenTelemetry was imported.

It imports neither OpenTelemetry nor the benchmark harness: the process is
what an application that builds an agent in code looks like.
"""

from __future__ import annotations

import asyncio
import gc
import json
import statistics
import sys
import time
from typing import Any

from seamkit import Agent
from seamkit.plugins import get_registry

from tests.benchmarks.bench_per_run import ADD, ANSWER, USER_TEXT, FakeModel

K = 8


async def measure(warmup: int, samples: int, runs: int) -> dict[str, Any]:
    registry = get_registry()
    agent = Agent(model=FakeModel(K), tools=[ADD], settings={"tool_concurrency": 1})
    out = (await agent.run(USER_TEXT)).output
    if out != ANSWER:
        raise RuntimeError(f"the agent answered {out!r}, not {ANSWER!r}")
    for _ in range(warmup):
        await agent.run(USER_TEXT)
    gc.collect()
    gc.freeze()
    per_run: list[float] = []
    try:
        for _ in range(samples):
            start = time.perf_counter()
            for _ in range(runs):
                await agent.run(USER_TEXT)
            per_run.append((time.perf_counter() - start) / runs * 1e6)
    finally:
        gc.unfreeze()
    info = registry.plugins.get("otel")
    return {
        "us_per_run": per_run,
        "median_us": statistics.median(per_run),
        "otel_loaded": info is not None,
        "otel_hookimpls": None if info is None else list(info.hookimpls),
        "otel_error": None if info is None else info.error,
        "observers": len(agent.observers),
        "opentelemetry_imported": "opentelemetry" in sys.modules,
    }


def main(argv: list[str]) -> None:
    warmup, samples, runs = (int(a) for a in argv)
    print(json.dumps(asyncio.run(measure(warmup, samples, runs))))


if __name__ == "__main__":
    main(sys.argv[1:])
