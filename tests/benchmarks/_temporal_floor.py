"""The Temporal floor of ``bench_temporal``: W(0, 8) as a hand-written workflow.

A workflow of the official SDK, nothing else: one ``model`` activity, then the
8 ``add`` calls it asked for as 8 activities in parallel, then a second
``model`` activity that answers ``"done"``. What any framework that makes model
turns and tool bodies activities cannot go below on the same server. Sandboxed
(the SDK's default, as pydantic-ai's and seamkit's workflows are) and run by
``_temporal_worker`` in a process of its own.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import activity, workflow

K = 8
ANSWER = "done"
WORKFLOW = "FloorWorkflow"
TIMEOUT = timedelta(seconds=60)  # pydantic-ai's default start_to_close_timeout


@activity.defn(name="model")
async def model(turn: int) -> list[list[int]]:
    """The scripted model: K ``add(a, b)`` calls on the first turn, none after."""
    return [[i, 1] for i in range(K)] if turn == 0 else []


@activity.defn(name="add")
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@workflow.defn(name=WORKFLOW)
class FloorWorkflow:
    @workflow.run
    async def run(self, prompt: str) -> str:
        calls = await workflow.execute_activity(model, 0, start_to_close_timeout=TIMEOUT)
        await asyncio.gather(
            *(
                workflow.execute_activity(add, args=call, start_to_close_timeout=TIMEOUT)
                for call in calls
            )
        )
        await workflow.execute_activity(model, 1, start_to_close_timeout=TIMEOUT)
        return ANSWER
