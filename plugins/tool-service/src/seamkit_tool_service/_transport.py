"""What the client side of every transport shares: the `Transport` protocol,
the per-call `Inbox` that replies are routed into, and the count of replies
dropped because no call was waiting for them."""

from __future__ import annotations

import asyncio
from collections import OrderedDict, deque
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from ._config import ServiceDescriptor
from ._errors import ToolServiceError

__all__ = [
    "NO_RESPONDERS",
    "OVERFLOW",
    "Call",
    "Dropped",
    "Inbox",
    "Replies",
    "Transport",
    "timed_out",
    "too_much",
]

NO_RESPONDERS = b"\x00no-responders"
"""Put into an inbox when NATS says no worker listens on the subject."""
OVERFLOW = b"\x00overflow"
"""Put into an inbox (instead of what it held) when a call's replies pass
its service's ``max_reply_bytes``."""


def too_much(service: ServiceDescriptor, limit: str, value: float) -> ToolServiceError:
    """The error of a call whose replies passed the service's ``limit``."""
    what = {
        "max_reply_bytes": "more than max_reply_bytes={} bytes",
        "max_stream_chunks": "more than max_stream_chunks={} chunks",
        "max_stream_seconds": "for more than max_stream_seconds={:g}s",
    }[limit].format(value)
    verb = "streamed" if limit == "max_stream_seconds" else "sent"
    return ToolServiceError(
        "BadReply",
        f"tool service '{service.id}' {verb} {what}; the call was ended",
        service=service.id,
        hint=f"raise {limit} of the service if its replies are meant to be that large",
    )


@dataclass(slots=True)
class Call:
    """One request on its way (read-only once made): to which service, its id
    and encoded envelope, the headers (trace context), and its time limits:
    ``deadline`` in loop time (``timeout`` seconds after it started) and the
    longest wait for each message."""

    service: ServiceDescriptor
    call_id: str
    payload: bytes
    headers: Mapping[str, str]
    deadline: float
    timeout: float
    message_timeout: float

    def timed_out(self, *, overall: bool) -> ToolServiceError:
        """The error of a call whose reply (or next message) did not come."""
        return timed_out(
            self.service, self.timeout if overall else self.message_timeout, overall=overall
        )


@dataclass(slots=True)
class Dropped:
    """Replies dropped instead of delivered: ``stray`` ones no call asked for
    (or whose envelope ``id`` is not their call's), ``duplicate`` ones for a
    call that had already ended."""

    stray: int = 0
    duplicate: int = 0
    _recent: OrderedDict[str, None] = field(default_factory=OrderedDict, repr=False)

    def ended(self, call_id: str) -> None:
        """Remember that ``call_id`` ended (the last 4,096 are remembered)."""
        self._recent[call_id] = None
        if len(self._recent) > 4096:
            self._recent.popitem(last=False)

    def unmatched(self, call_id: str) -> None:
        """Count a reply for ``call_id``, which no call waits for."""
        if call_id in self._recent:
            self.duplicate += 1
        else:
            self.stray += 1


class Inbox:
    """The replies of one call, in order, with a wait that times out.

    With a ``limit``, the bytes it takes are bounded: once the replies put
    into it pass ``limit`` bytes (all together), what it holds is dropped for
    one `OVERFLOW`, and so is every reply after it."""

    __slots__ = ("_items", "_limit", "_received", "_waiter", "overflowed")

    def __init__(self, limit: int | None = None) -> None:
        self._items: deque[bytes] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._limit = limit
        self._received = 0
        self.overflowed = 0
        """How many replies were dropped because the limit was passed."""

    def put(self, item: bytes) -> None:
        """Deliver one reply (called by the transport's receiver)."""
        if self.overflowed:
            self.overflowed += 1
            return
        self._received += len(item)
        if self._limit is not None and self._received > self._limit:
            self.overflowed = len(self._items) + 1
            self._items.clear()
            item = OVERFLOW
        self._items.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def __len__(self) -> int:
        """How many replies wait to be taken."""
        return len(self._items)

    async def get(self, timeout: float) -> bytes:
        """The next reply; raises `TimeoutError` after ``timeout`` seconds."""
        if not self._items:
            loop = asyncio.get_running_loop()
            waiter = self._waiter = loop.create_future()
            timer = loop.call_later(timeout, _expire, waiter)
            try:
                await waiter
            finally:
                timer.cancel()
                self._waiter = None
            if not self._items:
                raise TimeoutError
        return self._items.popleft()


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def timed_out(service: ServiceDescriptor, waited: float, *, overall: bool) -> ToolServiceError:
    """The error of a call whose reply (or next message) did not come."""
    if overall:
        message = f"tool service '{service.id}' did not finish within {waited:g}s"
    else:
        message = f"tool service '{service.id}' sent nothing for {waited:g}s"
    return ToolServiceError(
        "Timeout",
        message,
        service=service.id,
        hint="raise timeout_seconds (or message_timeout_seconds for streams), or check "
        "that the service is running",
    )


class Replies(Protocol):
    """The raw reply messages of one call, in order: ``await anext(replies)``
    until the caller has what it needs, then ``await replies.aclose()``."""

    def __anext__(self) -> Awaitable[bytes]:
        """The next message. Raises `ToolServiceError` for a time-out or an
        unreachable service, `StopAsyncIteration` when no more can come."""
        ...

    async def aclose(self) -> None:
        """Stop listening for this call's replies."""
        ...


class Transport(Protocol):
    """How a client reaches services: sends one request and gives the raw
    reply messages for it."""

    dropped: Dropped

    async def exchange(self, call: Call) -> Replies:
        """Send the call's request. Raises `ToolServiceError` for a service
        that cannot be reached."""
        ...

    async def aclose(self) -> None:
        """Close the connections (idempotent)."""
        ...
