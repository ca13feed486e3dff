"""The live-event side channel: a run's events go from the workers straight
to the caller, never through Temporal's history.

- `Route`: where one run's events go (the caller's ingest URL, a per-run
  token, the workflow id). JSON-safe: it travels in the workflow's input.
- `Inbox` (the caller's side): serves the ingest endpoint on 127.0.0.1 and
  a free port, hands out a `Route` per run and yields each run's events as
  they arrive.
- `Publisher` (the worker's side, one per worker process): ``publish(route,
  event)`` from any thread, never blocking and never raising; what queued up
  for a route leaves in one POST.

On the wire a POST to ``route.url`` carries ``Authorization: Bearer
<token>`` and ``{"events": [{"source", "seq", "event"}, ...]}``, each
``event`` a `seamkit_temporal._codec` envelope. ``seq`` counts up per
``source`` (the workflow, an activity attempt, a publisher): the inbox keeps
the highest it accepted per source and drops what is not above it, so a
batch sent twice, or the events a retried workflow task emits again with
the same numbers, are shown once. A caller that cannot be reached is not an
error for the run: the publisher drops (and counts) what it cannot deliver.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import hmac
import itertools
import json
import logging
import os
import secrets
import threading
import time
import urllib.parse
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, cast

import h11
import httpx
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from seamkit import Output, SeamkitError
from seamkit.plugins import listening_socket
from seamkit.stream import ObservedEvent, RunFinished

from ._codec import EventEnvelope, describe, encode_event, unwrap

__all__ = ["DEFAULT_MAX_BODY", "Inbox", "Publisher", "Route"]

log = logging.getLogger(__name__)

DEFAULT_MAX_BODY = 4 * 1024 * 1024
"""The largest POST body an inbox takes (bytes). A `RunFinished` carries the
run's whole transcript; Temporal's own payload limit (2 MB) bounds the
result the workflow returns, so 4 MiB leaves room for its JSON."""

PATH_PREFIX = "/seamkit/runs/"


class Route(BaseModel):
    """Where one run's live events go: POST ``url`` with ``token``.

    ``token`` is 32 random bytes in hex, made per run by the `Inbox`; it is
    kept out of ``repr`` (and so out of logs)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str
    token: str = Field(repr=False, min_length=64)
    workflow_id: str


class _Item(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str = Field(min_length=1, max_length=512)
    seq: int = Field(ge=1)
    event: EventEnvelope


class _Batch(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    events: list[_Item]


_BATCH = TypeAdapter(_Batch)

_END = object()
"""Put in a route's queue: no more events (the route was discarded or the inbox closed)."""


@dataclass
class _Inlet:
    """One route as the inbox keeps it: its token, its queue of events, the
    highest ``seq`` accepted per source."""

    route: Route
    queue: asyncio.Queue[object] = field(default_factory=asyncio.Queue)
    seen: dict[str, int] = field(default_factory=dict)
    finished: bool = False
    consumed: bool = False


class _Refused(SeamkitError):
    """A request the inbox refuses: the status it answers, and why."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class Inbox:
    """The caller's ingest endpoint for the live events of its runs.

    ``async with Inbox() as inbox``: serves HTTP/1.1 on ``host`` (127.0.0.1)
    and ``port`` (0: a free one); ``inbox.route(workflow_id)`` makes the
    `Route` a run's workers post to; ``inbox.events(route)`` yields its
    events in arrival order (duplicates dropped), up to and including
    `RunFinished`, or until the route is discarded or the inbox closes.

    A request with no or a wrong token, for a route the inbox does not hold,
    with a body over ``max_body`` bytes, or whose body is not a batch of
    events is refused (401, 403, 404, 413, 400) and counted in ``refused``;
    it never stops the inbox. ``output`` (the runs' declared output) turns a
    `RunFinished`'s output back into the declared type. Events wait for
    their reader up to ``max_buffered`` per route (beyond, a batch is refused
    with 503: the publisher drops it).
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        max_body: int = DEFAULT_MAX_BODY,
        max_buffered: int = 100_000,
        output: Output[Any] | None = None,
        idle_timeout: float = 60.0,
    ) -> None:
        self.host = host
        self.port = port
        self.max_body = max_body
        self.max_buffered = max_buffered
        self.output = output
        self.idle_timeout = idle_timeout
        self.refused = 0
        """Requests refused so far."""
        self.duplicates = 0
        """Events dropped because their ``seq`` was seen already."""
        self._inlets: dict[str, _Inlet] = {}
        self._server: asyncio.Server | None = None
        self._connections: dict[asyncio.Task[None], asyncio.StreamWriter] = {}

    @property
    def base_url(self) -> str:
        """``http://host:port`` of the endpoint (once entered)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def __aenter__(self) -> Inbox:
        sock = listening_socket(self.host, self.port, backlog=256)
        self.port = sock.getsockname()[1]
        self._server = await asyncio.start_server(self._connection, sock=sock)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop serving; every reader of `events` ends."""
        if self._server is not None:
            self._server.close()
            for writer in list(self._connections.values()):
                writer.transport.abort()  # its handler reads the end and returns
            await asyncio.gather(*self._connections, return_exceptions=True)
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None
        for inlet in self._inlets.values():
            inlet.queue.put_nowait(_END)
        self._inlets.clear()

    def route(self, workflow_id: str) -> Route:
        """A new `Route` for the run of ``workflow_id`` (a fresh token);
        `ValueError` when that workflow has a route still open here."""
        if self._server is None:
            raise RuntimeError("Inbox.route: enter the inbox first (async with Inbox() as inbox)")
        if workflow_id in self._inlets:
            raise ValueError(
                f"workflow {workflow_id!r} has an open route already; "
                "discard it (or read its events to the end) before routing another run"
            )
        url = self.base_url + PATH_PREFIX + urllib.parse.quote(workflow_id, safe="")
        route = Route(url=url, token=secrets.token_hex(32), workflow_id=workflow_id)
        self._inlets[workflow_id] = _Inlet(route)
        return route

    def discard(self, route: Route) -> None:
        """Close ``route``: its reader ends, later posts to it are refused."""
        inlet = self._inlets.get(route.workflow_id)
        if inlet is not None and inlet.route == route:
            del self._inlets[route.workflow_id]
            inlet.queue.put_nowait(_END)

    async def events(self, route: Route) -> AsyncIterator[ObservedEvent]:
        """The events of ``route``'s run, as they arrive (one reader per
        route); ends after `RunFinished`, or when the route is discarded or
        the inbox closes. Leaving the loop early discards the route."""
        inlet = self._inlets.get(route.workflow_id)
        if inlet is None or inlet.route != route:
            raise ValueError(f"no open route for workflow {route.workflow_id!r} in this inbox")
        if inlet.consumed:
            raise ValueError(f"the events of workflow {route.workflow_id!r} have a reader already")
        inlet.consumed = True
        try:
            while True:
                item = await inlet.queue.get()
                if item is _END:
                    return
                event = cast(ObservedEvent, item)
                yield event
                if isinstance(event, RunFinished):
                    return
        finally:
            self.discard(route)

    # --- HTTP ---------------------------------------------------------------------------

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections[task] = writer
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=16 * 1024)
        try:
            while True:
                keep = await self._exchange(conn, reader, writer)
                if not keep or conn.our_state is not h11.DONE:
                    break
                conn.start_next_cycle()
        except (OSError, h11.ProtocolError, TimeoutError, asyncio.IncompleteReadError):
            pass  # a client gone, or one that does not speak HTTP: drop the connection
        finally:
            self._connections.pop(task, None)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _next(self, conn: h11.Connection, reader: asyncio.StreamReader) -> object:
        while True:
            event = conn.next_event()
            if event is not h11.NEED_DATA:
                return event
            data = await asyncio.wait_for(reader.read(65536), self.idle_timeout)
            conn.receive_data(data)

    async def _exchange(
        self, conn: h11.Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        """Read one request, answer it; whether the connection may serve another."""
        try:
            request = await self._next(conn, reader)
        except h11.RemoteProtocolError:
            self.refused += 1
            await self._respond(conn, writer, 400, "not HTTP/1.1")
            return False
        if isinstance(request, h11.ConnectionClosed):
            return False
        assert isinstance(request, h11.Request)
        try:
            inlet = self._admit(request)
            body = await self._body(conn, reader, request)
            self._ingest(inlet, body)
        except _Refused as refusal:
            self.refused += 1
            log.debug("inbox: refused a post (%s): %s", refusal.status, refusal.reason)
            await self._respond(conn, writer, refusal.status, refusal.reason)
            return conn.their_state is h11.DONE
        await self._respond(conn, writer, 204, "")
        return True

    def _admit(self, request: h11.Request) -> _Inlet:
        """The route a request posts to, once its method, path and token are right."""
        if request.method != b"POST":
            raise _Refused(405, "only POST")
        target = request.target.decode("ascii", "replace")
        if not target.startswith(PATH_PREFIX):
            raise _Refused(404, "not found")
        workflow_id = urllib.parse.unquote(target.removeprefix(PATH_PREFIX))
        inlet = self._inlets.get(workflow_id)
        if inlet is None:
            raise _Refused(404, "no open route for this workflow")
        headers = dict(request.headers)
        given = headers.get(b"authorization", b"")
        if not given.startswith(b"Bearer "):
            raise _Refused(401, "a bearer token is required")
        if not hmac.compare_digest(given.removeprefix(b"Bearer "), inlet.route.token.encode()):
            raise _Refused(403, "wrong token for this route")
        length = headers.get(b"content-length")
        if length is not None and int(length) > self.max_body:
            raise _Refused(413, f"body over {self.max_body} bytes")
        return inlet

    async def _body(
        self, conn: h11.Connection, reader: asyncio.StreamReader, request: h11.Request
    ) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            event = await self._next(conn, reader)
            if isinstance(event, h11.Data):
                size += len(event.data)
                if size > self.max_body:
                    raise _Refused(413, f"body over {self.max_body} bytes")
                chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                return b"".join(chunks)
            else:
                raise _Refused(400, "the request ended early")

    def _ingest(self, inlet: _Inlet, body: bytes) -> None:
        try:
            batch = _BATCH.validate_json(body)
        except ValidationError as exc:
            raise _Refused(400, describe(exc)) from None
        if inlet.queue.qsize() + len(batch.events) > self.max_buffered:
            raise _Refused(503, "too many events wait for their reader")
        if self._inlets.get(inlet.route.workflow_id) is not inlet:
            raise _Refused(404, "no open route for this workflow")  # discarded while reading
        events: list[ObservedEvent] = []
        seen = dict(inlet.seen)
        for item in batch.events:
            if item.seq <= seen.get(item.source, 0):
                self.duplicates += 1
                continue
            seen[item.source] = item.seq
            try:
                events.append(unwrap(item.event, self.output))
            except ValueError as exc:
                raise _Refused(400, str(exc)) from None
        inlet.seen = seen
        for event in events:
            if inlet.finished:
                break
            inlet.queue.put_nowait(event)
            inlet.finished = isinstance(event, RunFinished)

    async def _respond(
        self, conn: h11.Connection, writer: asyncio.StreamWriter, status: int, text: str
    ) -> None:
        body = text.encode()
        headers = [(b"content-length", str(len(body)).encode())]
        if body:
            headers.append((b"content-type", b"text/plain; charset=utf-8"))
        if status >= 400 and conn.their_state is not h11.DONE:
            headers.append((b"connection", b"close"))
        try:
            data = conn.send(h11.Response(status_code=status, headers=headers))
            data = (data or b"") + (conn.send(h11.Data(data=body)) or b"") if body else data or b""
            data += conn.send(h11.EndOfMessage()) or b""
        except h11.LocalProtocolError:
            return
        writer.write(data)
        await writer.drain()


# --- the worker's side ------------------------------------------------------------------


@dataclass
class _Lane:
    """The events queued for one route, and the task that posts them."""

    route: Route
    items: list[tuple[str, int, ObservedEvent]] = field(default_factory=list)
    task: asyncio.Task[None] | None = None
    dead_until: float = 0.0


class Publisher:
    """Sends live events to the callers' inboxes (one per worker process).

    ``async with Publisher() as publisher`` on the worker's event loop; then
    ``publisher.publish(route, event)`` from any thread (workflow code runs
    in other threads than the loop) hands the event to a task on that loop
    and returns at once; it never raises. What queued up for a route while
    its last POST was out leaves in the next one, so a burst travels in few
    requests and a lone event at once. One `httpx.AsyncClient` with
    keep-alive sends them all.

    A route whose caller cannot be reached (or refuses) drops its events for
    ``retry_after`` seconds, then tries again; at most ``max_queued`` events
    wait in all: beyond, new ones are dropped. ``dropped`` and ``sent``
    count events. ``aclose`` sends what is queued, for up to ``flush_timeout``
    seconds.
    """

    def __init__(
        self,
        *,
        max_queued: int = 10_000,
        max_body: int = DEFAULT_MAX_BODY,
        timeout: float = 5.0,
        retry_after: float = 2.0,
        flush_timeout: float = 2.0,
    ) -> None:
        self.max_queued = max_queued
        self.max_body = max_body
        self.timeout = timeout
        self.retry_after = retry_after
        self.flush_timeout = flush_timeout
        self.source = f"publisher-{os.getpid()}-{secrets.token_hex(4)}"
        """The ``source`` of events published without one."""
        self.dropped = 0
        """Events not delivered: the caller could not be reached or refused
        them, the queue was full, the publisher closed, or one did not encode."""
        self.sent = 0
        """Events the inboxes accepted."""
        self._inbound: collections.deque[tuple[Route, str | None, int | None, ObservedEvent]] = (
            collections.deque()
        )
        self._woken = False
        self._closed = True
        self._seq = itertools.count(1)
        self._lanes: dict[tuple[str, str, str], _Lane] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._client: httpx.AsyncClient | None = None

    async def __aenter__(self) -> Publisher:
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(self.timeout, connect=min(self.timeout, 1.0)),
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=16),
            trust_env=False,  # a proxy from the environment must not see the caller's loopback
        )
        self._closed = False
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def publish(
        self,
        route: Route,
        event: ObservedEvent,
        *,
        source: str | None = None,
        seq: int | None = None,
    ) -> None:
        """Queue ``event`` for ``route`` and return (any thread; never
        raises, never waits). ``source`` and ``seq`` number the event for
        the inbox's duplicate check (``seq`` counting up from 1 per source);
        without them, the publisher's own source and a counter of its own."""
        try:
            if self._closed or self._loop is None:
                self.dropped += 1
                return
            if len(self._inbound) >= self.max_queued:
                self.dropped += 1
                return
            self._inbound.append((route, source, seq, event))
            if not self._woken:
                self._woken = True
                if threading.get_ident() == self._loop_thread:
                    self._loop.call_soon(self._wake)
                else:
                    self._loop.call_soon_threadsafe(self._wake)
        except Exception:  # a closed loop, say: the run must not notice
            self._woken = False
            self.dropped += 1

    def _wake(self) -> None:
        """On the loop: move what was published to its route's lane, start
        the lanes that are idle."""
        self._woken = False
        now = time.monotonic()
        while self._inbound:
            route, source, seq, event = self._inbound.popleft()
            key = (route.url, route.token, route.workflow_id)
            lane = self._lanes.get(key)
            if lane is None:
                lane = self._lanes[key] = _Lane(route)
            if lane.dead_until > now:
                self.dropped += 1
                continue
            lane.items.append((source or self.source, seq or next(self._seq), event))
            if lane.task is None:
                lane.task = asyncio.ensure_future(self._drain(key, lane))

    async def _drain(self, key: tuple[str, str, str], lane: _Lane) -> None:
        """Post the lane's events until none are left, one request at a time."""
        try:
            while lane.items:
                items, lane.items = lane.items, []
                if lane.dead_until > time.monotonic():
                    self.dropped += len(items)
                    continue
                for body, count in self._bodies(items):
                    if lane.dead_until > time.monotonic():
                        self.dropped += count
                    elif await self._post(lane, body):
                        self.sent += count
                    else:
                        self.dropped += count
                        lane.dead_until = time.monotonic() + self.retry_after
        except Exception:  # never let a bug in sending reach the loop's handler
            self.dropped += len(lane.items)
            lane.items = []
            log.exception("publisher: sending events for %s failed", lane.route.workflow_id)
        finally:
            lane.task = None
            if lane.dead_until <= time.monotonic() and self._lanes.get(key) is lane:
                del self._lanes[key]

    def _bodies(self, items: list[tuple[str, int, ObservedEvent]]) -> list[tuple[bytes, int]]:
        """The POST bodies of ``items`` (each under ``max_body``), with how
        many events each carries; an event that does not encode or fit is
        dropped."""
        limit = self.max_body - 64
        out: list[tuple[bytes, int]] = []
        parts: list[bytes] = []
        size = 0
        for source, seq, event in items:
            try:
                encoded = encode_event(event)
            except Exception:
                self.dropped += 1
                log.warning("publisher: a %s event does not encode", type(event).__name__)
                continue
            part = b'{"source":%s,"seq":%d,"event":%s}' % (_json_str(source), seq, encoded)
            if len(part) > limit:
                self.dropped += 1
                log.warning("publisher: a %s event is over the body limit", type(event).__name__)
                continue
            if parts and size + len(part) + 1 > limit:
                out.append((_batch(parts), len(parts)))
                parts, size = [], 0
            parts.append(part)
            size += len(part) + 1
        if parts:
            out.append((_batch(parts), len(parts)))
        return out

    async def _post(self, lane: _Lane, body: bytes) -> bool:
        """Whether the inbox accepted ``body``."""
        assert self._client is not None
        try:
            response = await self._client.post(
                lane.route.url,
                content=body,
                headers={
                    "authorization": f"Bearer {lane.route.token}",
                    "content-type": "application/json",
                },
            )
        except (httpx.HTTPError, OSError) as exc:
            log.debug(
                "publisher: the caller of %s is unreachable (%s)",
                lane.route.workflow_id,
                type(exc).__name__,
            )
            return False
        if response.status_code != 204:
            log.debug(
                "publisher: the caller of %s refused events (%s)",
                lane.route.workflow_id,
                response.status_code,
            )
            return False
        return True

    async def flush(self, timeout: float | None = None) -> None:
        """Wait until what was published so far was sent (or dropped), for
        up to ``timeout`` seconds (``flush_timeout`` when ``None``)."""
        if self._loop is None:
            return
        self._wake()
        tasks = [lane.task for lane in self._lanes.values() if lane.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=self.flush_timeout if timeout is None else timeout)

    async def aclose(self) -> None:
        """Send what is queued (for up to ``flush_timeout`` seconds), then
        stop; later publishes are dropped."""
        if self._closed:
            return
        await self.flush()
        self._closed = True
        for lane in list(self._lanes.values()):
            if lane.task is not None:
                lane.task.cancel()
                self.dropped += len(lane.items)
        tasks = [lane.task for lane in self._lanes.values() if lane.task is not None]
        await asyncio.gather(*tasks, return_exceptions=True)
        self._lanes.clear()
        self.dropped += len(self._inbound)
        self._inbound.clear()
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def _json_str(text: str) -> bytes:
    return json.dumps(text).encode()


def _batch(parts: list[bytes]) -> bytes:
    return b'{"events":[' + b",".join(parts) + b"]}"
