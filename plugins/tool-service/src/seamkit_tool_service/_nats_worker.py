"""The NATS transport, service side: one worker process serving a
`DynamicToolService` as a NATS micro service (``$SRV`` discovery, the
descriptor under metadata ``seamkit.descriptor``), its endpoint in a queue
group so that many workers on many machines share the requests.

Each request is answered in its own task, so a slow call never holds up the
next. Stopping drains the endpoint's subscription (NATS sends it no more
requests, and those already on their way are still taken), lets the calls in
flight finish (up to ``drain_seconds``; any left then are cancelled), stops
announcing, then flushes and closes the connection.

This module is imported only to serve over NATS: it needs nats-py.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence

from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.micro.service import (
    EndpointInfo,
    EndpointStats,
    Service,
    ServiceConfig,
    ServiceInfo,
    ServiceStats,
)

from ._config import NatsAuth, NatsTls
from ._discovery import DESCRIPTOR_KEY
from ._nats_client import connect
from ._service import DynamicToolService

__all__ = ["QUEUE_GROUP", "serve_nats"]

QUEUE_GROUP = "seamkit"
"""The queue group every worker of a service joins."""

ENDPOINT = "invoke"
"""The name of the one endpoint, as ``$SRV.INFO`` lists it."""

log = logging.getLogger("seamkit_tool_service")


class _Announced(Service):
    """A micro service answering ``$SRV`` PING, INFO and STATS, whose one
    endpoint is a subscription the worker makes itself: nats.micro's own
    endpoints only unsubscribe when stopped, and nats-py then drops the
    requests already on their way; this one is drained."""

    def __init__(self, client: Client, config: ServiceConfig, endpoint: EndpointInfo) -> None:
        super().__init__(client, config)
        self.endpoint = endpoint
        self.requests = 0
        self.errors = 0
        self.last_error: str | None = None
        self.processing_ns = 0

    def info(self) -> ServiceInfo:
        info = super().info()
        info.endpoints = [self.endpoint]
        return info

    def stats(self) -> ServiceStats:
        stats = super().stats()
        stats.endpoints = [
            EndpointStats(
                name=self.endpoint.name,
                subject=self.endpoint.subject,
                queue_group=self.endpoint.queue_group,
                num_requests=self.requests,
                num_errors=self.errors,
                processing_time=self.processing_ns,
                average_processing_time=self.processing_ns // max(1, self.requests),
                last_error=self.last_error,
            )
        ]
        return stats


async def serve_nats(
    service: DynamicToolService,
    *,
    servers: Sequence[str],
    subject: str,
    stop: asyncio.Event,
    drain_seconds: float = 30.0,
    ready: Callable[[], None] | None = None,
    auth: NatsAuth | None = None,
    tls: NatsTls | None = None,
) -> None:
    """Serve ``service`` on ``subject`` until ``stop`` is set, connected
    with ``auth`` and ``tls``. Raises `ToolServiceError` when no NATS server
    on ``servers`` can be reached or the server refuses the credentials."""
    descriptor = service.descriptor("nats", subject=subject, servers=servers)
    client = await connect(servers, name=f"seamkit-tool-service {service.id}", auth=auth, tls=tls)
    try:
        await service.setup()
    except BaseException:
        await client.close()
        raise
    micro = _Announced(
        client,
        ServiceConfig(
            name=service.id,
            version=service.version,
            description=service.description or None,
            metadata={DESCRIPTOR_KEY: descriptor.model_dump_json(exclude={"servers"})},
        ),
        EndpointInfo(name=ENDPOINT, subject=subject, queue_group=QUEUE_GROUP),
    )
    tasks: set[asyncio.Task[None]] = set()

    async def answer(msg: Msg) -> None:
        started = time.perf_counter_ns()
        try:
            async for reply in service.replies(msg.data, msg.headers):
                await msg.respond(reply)
        except Exception as exc:  # the connection went away mid-reply
            micro.errors += 1
            micro.last_error = f"{type(exc).__name__}: {exc}"
            log.warning("%s: could not reply: %s: %s", service.id, type(exc).__name__, exc)
        finally:
            micro.processing_ns += time.perf_counter_ns() - started

    async def handle(msg: Msg) -> None:
        micro.requests += 1
        task = asyncio.create_task(answer(msg))
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    loop = asyncio.get_running_loop()
    try:
        await micro.start()
        subscription = await client.subscribe(subject, queue=QUEUE_GROUP, cb=handle)
        await client.flush()
        if ready is not None:
            ready()
        await stop.wait()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout_at(loop.time() + drain_seconds):
                # no more requests; those on their way become tasks first
                await subscription.drain()  # type: ignore[no-untyped-call]  # untyped in nats-py
                await micro.stop()
                if tasks:
                    await asyncio.wait(set(tasks))
        try:
            await client.flush(timeout=5)
        except Exception as exc:  # the replies sent may be lost with it
            log.warning("%s: could not flush: %s: %s", service.id, type(exc).__name__, exc)
    finally:
        left = set(tasks)
        for task in left:  # past the drain time (or stopped by an error)
            task.cancel()
        if left:
            await asyncio.wait(left)
        try:
            await client.close()
        finally:
            await service.teardown()
