"""The NATS transport, service side: one worker process serving a
`DynamicToolService` as a NATS micro service (``$SRV`` discovery, the
descriptor under metadata ``seamkit.descriptor``), its endpoint in a queue
group so that many workers on many machines share the requests.

Each request is answered in its own task, so a slow call never holds up the
next. Stopping unsubscribes first, lets the calls in flight finish (up to
``drain_seconds``), then flushes and closes the connection.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ._discovery import DESCRIPTOR_KEY
from ._nats_client import connect
from ._service import DynamicToolService

if TYPE_CHECKING:
    from nats.micro.request import Request

__all__ = ["QUEUE_GROUP", "serve_nats"]

QUEUE_GROUP = "seamkit"
"""The queue group every worker of a service joins."""

log = logging.getLogger("seamkit_tool_service")


async def serve_nats(
    service: DynamicToolService,
    *,
    servers: Sequence[str],
    subject: str,
    stop: asyncio.Event,
    drain_seconds: float = 30.0,
    ready: Callable[[], None] | None = None,
) -> None:
    """Serve ``service`` on ``subject`` until ``stop`` is set."""
    from nats.micro import add_service  # lazy: the [nats] extra

    descriptor = service.descriptor("nats", subject=subject, servers=servers)
    client = await connect(servers, name=f"seamkit-tool-service {service.id}")
    await service.setup()
    tasks: set[asyncio.Task[None]] = set()

    async def answer(request: Request) -> None:
        try:
            async for reply in service.replies(request.data, request.headers):
                await request.respond(reply)
        except Exception as exc:  # the connection went away mid-reply
            log.warning("%s: could not reply: %s: %s", service.id, type(exc).__name__, exc)

    async def handle(request: Request) -> None:
        task = asyncio.create_task(answer(request))
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    try:
        micro = await add_service(
            client,
            name=service.id,
            version=service.version,
            description=service.description or None,
            metadata={DESCRIPTOR_KEY: descriptor.model_dump_json(exclude={"servers"})},
        )
        await micro.add_endpoint(
            name="invoke", subject=subject, handler=handle, queue_group=QUEUE_GROUP
        )
        await client.flush()
        if ready is not None:
            ready()
        await stop.wait()
        await micro.stop()
        if tasks:
            await asyncio.wait(set(tasks), timeout=drain_seconds)
        await client.flush()
    finally:
        await client.close()
        await service.teardown()
