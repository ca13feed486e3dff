"""A Temporal worker of ``bench_temporal``, in a process of its own:
``python -m tests.benchmarks._temporal_worker VARIANT ADDRESS TASK_QUEUE``.

VARIANT is ``floor`` (`_temporal_floor`), ``pydantic_ai`` or
``pydantic_ai_durability`` (`_temporal_pai`, which needs pydantic-ai in this
interpreter's environment), ``seamkit`` or ``seamkit_none`` (`seamkit_temporal.serve`
for ``bench_temporal.build_agent``'s agent, its tool ``effects: once``, a regular
activity, or ``none``, a local activity; what ``seamkit temporal worker`` does
for an app). The worker serves TASK_QUEUE until SIGTERM or
SIGINT; the benchmark knows it is up when the task queue has pollers.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from typing import TYPE_CHECKING

from temporalio.client import Client
from temporalio.worker import Worker

if TYPE_CHECKING:
    from seamkit import Effects

VARIANTS = ("floor", "pydantic_ai", "pydantic_ai_durability", "seamkit", "seamkit_none")
SEAMKIT: dict[str, Effects] = {"seamkit": "once", "seamkit_none": "none"}
"""The seamkit variants: their tool's effects."""


async def serve(variant: str, address: str, task_queue: str) -> None:
    if variant in SEAMKIT:
        await _serve_seamkit(SEAMKIT[variant], address, task_queue)
        return
    if variant == "floor":
        from tests.benchmarks import _temporal_floor as floor  # lazy: the variant's own code

        client = await Client.connect(address)
        worker = Worker(
            client,
            task_queue=task_queue,
            workflows=[floor.FloorWorkflow],
            activities=[floor.model, floor.add],
        )
    else:
        # lazy: pydantic-ai is in the benchmark's environment only
        from pydantic_ai.durable_exec.temporal import PydanticAIPlugin

        from tests.benchmarks import _temporal_pai as pai  # lazy: imports pydantic-ai

        client = await Client.connect(address, plugins=[PydanticAIPlugin()])
        flow = pai.TemporalAgentWorkflow if variant == "pydantic_ai" else pai.DurabilityWorkflow
        worker = Worker(client, task_queue=task_queue, workflows=[flow])
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with worker:
        await stop.wait()


async def _serve_seamkit(effects: Effects, address: str, task_queue: str) -> None:
    """``seamkit_temporal.serve`` for the benchmark's agent until SIGTERM or SIGINT."""
    import seamkit_temporal  # lazy: the variant's own code

    from tests.benchmarks.bench_temporal import build_agent  # lazy: imports seamkit

    client = await seamkit_temporal.connect(address)
    serving = asyncio.ensure_future(
        seamkit_temporal.serve(build_agent(effects), client, task_queue)
    )
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, serving.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        await serving


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[0] not in VARIANTS:
        print(
            f"usage: _temporal_worker {{{'|'.join(VARIANTS)}}} ADDRESS TASK_QUEUE", file=sys.stderr
        )
        return 2
    asyncio.run(serve(*argv))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
