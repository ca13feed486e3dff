"""A worker: serves an app's runs from a Temporal task queue.

`connect` opens a client with the data converter seamkit's workflow and
activities need; `serve` runs a worker for an agent until it is cancelled
(`seamkit temporal worker` is that, in one or more processes).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import timedelta

import seamkit
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from ._activities import ACTIVITIES
from ._channel import Publisher
from ._served import PASSTHROUGH, serve_agent, set_publisher
from ._workflow import SeamkitRun

__all__ = ["STICKY_SECONDS", "connect", "passthrough", "serve"]

STICKY_SECONDS = 3.0
"""How long a run's next workflow task waits for the worker that ran its
last one before any worker takes it (after that worker died, say)."""


async def connect(address: str, namespace: str = "default") -> Client:
    """A Temporal client for seamkit runs (pydantic payloads)."""
    return await Client.connect(
        address, namespace=namespace, data_converter=pydantic_data_converter
    )


def passthrough() -> tuple[str, ...]:
    """The modules a workflow sandbox passes through: seamkit, this plugin
    and every seamkit plugin loaded (the agent's hooks, tools and model are
    their objects)."""
    loaded = {name.partition(".")[0] for name in list(sys.modules) if name.startswith("seamkit_")}
    return tuple(sorted({*PASSTHROUGH, *loaded}))


async def serve(
    agent: seamkit.Agent,
    client: Client,
    task_queue: str = "seamkit",
    *,
    ready: Callable[[], None] | None = None,
) -> None:
    """Serve ``agent``'s runs from ``task_queue`` until cancelled."""
    serve_agent(agent)
    # Every module passes through: the kernel and the plugins' objects are the
    # worker's own (built before the worker starts), and what they import
    # lazily (jsonschema for an approval rule, say) must be the same module.
    restrictions = SandboxRestrictions.default.with_passthrough_all_modules()
    async with Publisher() as publisher:
        set_publisher(publisher)
        try:
            worker = Worker(
                client,
                task_queue=task_queue,
                workflows=[SeamkitRun],
                activities=list(ACTIVITIES),
                workflow_runner=SandboxedWorkflowRunner(restrictions=restrictions),
                sticky_queue_schedule_to_start_timeout=timedelta(seconds=STICKY_SECONDS),
                graceful_shutdown_timeout=timedelta(seconds=5),
            )
            async with worker:
                if ready is not None:
                    ready()
                await _forever()
        finally:
            set_publisher(None)


async def _forever() -> None:
    import asyncio  # lazy: only a worker waits

    await asyncio.Event().wait()
