"""Tools that call a service: each is a `seamkit.Tool.from_schema` whose call
sends the envelope over the service's transport and turns what comes back
into the result the model sees.

The arguments are validated against the tool's schema before anything
crosses the wire. A streamed reply surfaces chunk by chunk (as
`ToolOutputDelta`) and is joined into the result. Every failure, the
service's own or the transport's, becomes ``Error: <type>: <message>``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from secrets import token_hex
from typing import Any
from urllib.parse import urlsplit

from seamkit import ActionContext, CallInfo, Redactor, Secret, Tool, ToolResult, secret_json
from seamkit.plugins import current_trace_headers, secret_texts

from ._config import Argument, NatsAuth, NatsTls, ServiceDescriptor, parameters_schema
from ._envelope import Reply, ServiceCall, decode_reply, encode_request
from ._errors import EnvelopeError, ToolServiceError
from ._http_client import HttpTransport
from ._nats_client import NatsTransport
from ._transport import Call, Dropped, Replies, Transport, too_much

__all__ = ["USER_PROPERTY", "Connections", "service_tool"]

USER_PROPERTY = "user"
"""The `ActionContext` property sent as the envelope's ``user``."""

log = logging.getLogger("seamkit_tool_service")

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_dumps_revealed = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), default=functools.partial(secret_json, reveal=True)
).encode
"""JSON with every `Secret` as its value: a tool's config values go on the wire."""


class Connections:
    """The transports of one agent, made when first used, one set per event
    loop (a connection belongs to the loop that opened it).

    The set of a loop is closed when the loop shuts down (``asyncio.run``
    and ``Agent.run_sync`` close their async generators then, a guard among
    them), or by `aclose` in that loop. A loop closed without that leaves
    its set behind until the next loop's first call, which drops it."""

    def __init__(self) -> None:
        self._by_loop: dict[asyncio.AbstractEventLoop, _Table] = {}
        self._last: tuple[weakref.ref[asyncio.AbstractEventLoop] | None, _Table | None] = (
            None,
            None,
        )
        self._retired = Dropped()

    @staticmethod
    def key(service: ServiceDescriptor) -> tuple[Any, ...]:
        """What tells transports apart: HTTP, or NATS on a server list with
        its credentials and TLS (services with other credentials do not
        share a connection)."""
        if service.transport != "nats":
            return ("http",)
        return ("nats", tuple(service.server_urls), service.auth, service.tls)

    def get(self, key: tuple[Any, ...]) -> Transport:
        """The transport ``key`` names, for the running loop."""
        loop = asyncio.get_running_loop()
        last, table = self._last
        if table is None or last is None or last() is not loop:
            table = self._table(loop)
        found = table.transports.get(key)
        if found is None:
            found = table.transports[key] = (
                NatsTransport(key[1], auth=key[2], tls=key[3])
                if key[0] == "nats"
                else HttpTransport()
            )
        return found

    def _table(self, loop: asyncio.AbstractEventLoop) -> _Table:
        table = self._by_loop.get(loop)
        if table is None:
            for ended in [other for other in self._by_loop if other.is_closed()]:
                self._retire(self._by_loop.pop(ended))  # its sockets go with the objects
            table = self._by_loop[loop] = _Table()
            table.guard = _started(self._guard(loop, table))
        self._last = (weakref.ref(loop), table)
        return table

    async def _guard(
        self, loop: asyncio.AbstractEventLoop, table: _Table
    ) -> AsyncGenerator[None, None]:
        """Suspended for the life of the loop: the loop closes it when it
        shuts down (or `aclose` does), and that closes the loop's transports."""
        try:
            yield
        finally:
            await self._close(loop, table)

    async def _close(self, loop: asyncio.AbstractEventLoop, table: _Table) -> None:
        if self._by_loop.get(loop) is table:
            del self._by_loop[loop]
        if self._last[1] is table:
            self._last = (None, None)
        self._retire(table)
        for transport in table.transports.values():
            try:
                await transport.aclose()
            except Exception as exc:  # a connection that broke on its own
                log.debug("closing a transport: %s: %s", type(exc).__name__, exc)

    def _retire(self, table: _Table) -> None:
        """Keep the counts of a table that goes away."""
        for transport in table.transports.values():
            self._retired.stray += transport.dropped.stray
            self._retired.duplicate += transport.dropped.duplicate
        table.guard = None

    def transport(self, service: ServiceDescriptor) -> Transport:
        """The transport that reaches ``service`` from the running loop."""
        return self.get(self.key(service))

    def nats(
        self, servers: Sequence[str], auth: NatsAuth | None = None, tls: NatsTls | None = None
    ) -> NatsTransport:
        """The NATS transport on ``servers`` (with ``auth`` and ``tls``) from
        the running loop."""
        found = self.get(("nats", tuple(servers), auth, tls))
        assert isinstance(found, NatsTransport)
        return found

    def dropped(self) -> dict[str, int]:
        """The replies its transports dropped: ``stray`` and ``duplicate``
        (those of loops that ended too)."""
        out = {"stray": self._retired.stray, "duplicate": self._retired.duplicate}
        for table in list(self._by_loop.values()):
            for transport in table.transports.values():
                out["stray"] += transport.dropped.stray
                out["duplicate"] += transport.dropped.duplicate
        return out

    async def aclose(self) -> None:
        """Close the transports of the running loop (those of loops that
        ended were closed when they did)."""
        table = self._by_loop.get(asyncio.get_running_loop())
        if table is not None:
            guard = table.guard
            if guard is None:
                await self._close(asyncio.get_running_loop(), table)
            else:
                await guard.aclose()


class _Table:
    """The transports of one loop and the guard that closes them."""

    __slots__ = ("guard", "transports")

    def __init__(self) -> None:
        self.transports: dict[tuple[Any, ...], Transport] = {}
        self.guard: AsyncGenerator[None, None] | None = None


def _started(guard: AsyncGenerator[None, None]) -> AsyncGenerator[None, None]:
    """``guard`` run to its first ``yield``, from synchronous code in a
    running loop: its first step is what tells the loop (through its async
    generator hooks) to close it at shutdown."""
    step = guard.asend(None)
    try:
        step.send(None)
    except StopIteration:
        return guard
    raise RuntimeError("the guard awaited before its first yield")  # pragma: no cover


def _failed(error: ToolServiceError | tuple[str, str], secrets: Redactor) -> ToolResult:
    kind, message = (
        (error.error_type, error.message) if isinstance(error, ToolServiceError) else error
    )
    return ToolResult.error(_scrub(f"Error: {kind}: {message}", secrets))


def _scrub(text: str, secrets: Redactor) -> str:
    """``text`` with every secret the call sent masked (a service may echo
    one); ``secrets`` is built once per tool, not per reply."""
    return secrets(text) if secrets else text


class _Budget:
    """What one call's replies may still take: messages (``max_stream_chunks``)
    and time (``max_stream_seconds``, from the call's start). The bytes
    (``max_reply_bytes``) are counted by the transport, which must stop
    reading past them."""

    __slots__ = ("chunks", "end", "service")

    def __init__(self, service: ServiceDescriptor, started: float) -> None:
        self.service = service
        self.chunks = 0
        seconds = service.max_stream_seconds
        self.end = None if seconds is None else started + seconds

    async def next(self, replies: Replies) -> bytes:
        """The next message of ``replies``, within the budget. Raises
        `ToolServiceError` (``BadReply``) past it."""
        service = self.service
        if self.end is None:
            data = await anext(replies)
        else:
            try:
                async with asyncio.timeout_at(self.end):
                    data = await anext(replies)
            except TimeoutError:
                seconds = service.max_stream_seconds or 0.0
                raise too_much(service, "max_stream_seconds", seconds) from None
        return data

    def count(self, *, last: bool) -> None:
        """Count one message (``last``: the one that ends the stream, which
        may come past ``max_stream_chunks``). Raises `ToolServiceError`
        (``BadReply``) past it."""
        self.chunks += 1
        limit = self.service.max_stream_chunks
        if limit is not None and self.chunks > limit + last:
            raise too_much(self.service, "max_stream_chunks", limit)


async def _next_reply(replies: Replies, call: Call, transport: Transport, budget: _Budget) -> Reply:
    """The next reply that is this call's (others are dropped and counted)."""
    strays = 0
    while True:
        try:
            data = await budget.next(replies)
        except StopAsyncIteration:
            raise ToolServiceError(
                "BadReply",
                f"tool service '{call.service.id}' "
                + (
                    f"answered with {strays} reply(s) whose id is not this call's"
                    if strays
                    else "ended its reply without end_of_stream"
                ),
                service=call.service.id,
            ) from None
        try:
            reply = decode_reply(data)
        except EnvelopeError as exc:
            raise EnvelopeError(
                f"tool service '{call.service.id}' sent a malformed reply: {exc.message}",
                service=call.service.id,
            ) from None
        own = reply.id == call.call_id
        budget.count(last=own and (reply.end_of_stream or reply.error is not None))
        if own:
            return reply
        strays += 1
        transport.dropped.stray += 1


async def _stream(
    first: Reply,
    replies: Replies,
    call: Call,
    transport: Transport,
    budget: _Budget,
    secrets: Redactor,
) -> AsyncIterator[str | ToolResult]:
    """The chunks of a streamed reply, ending in an error result if one comes."""
    try:
        if first.response:
            yield _scrub(first.response, secrets)
        while True:
            try:
                reply = await _next_reply(replies, call, transport, budget)
            except ToolServiceError as exc:
                yield _failed(exc, secrets)
                return
            if reply.error is not None:
                yield _failed(reply.error, secrets)
                return
            if reply.response:
                yield _scrub(reply.response, secrets)
            if reply.end_of_stream:
                return
    finally:
        await replies.aclose()


def _service_secrets(service: ServiceDescriptor) -> tuple[str, ...]:
    """What the descriptor holds that no one may see: its secrets (in the
    URL, headers, auth) and a password written plainly in the URL."""
    found = list(secret_texts(service))
    userinfo = urlsplit(service.url_text).password if service.url is not None else None
    if userinfo:
        found.append(userinfo)
    return tuple(found)


def service_tool(
    service: ServiceDescriptor,
    connections: Connections,
    *,
    name: str,
    description: str,
    arguments: Sequence[Argument],
    config: Mapping[str, Any],
    timeout_seconds: float | None = None,
) -> Tool:
    """A tool that calls ``service`` with ``config`` (the tool's config
    values) and the model's arguments, which ``arguments`` describe; the
    envelope carries the call's id, idempotency key and attempt (from its
    `seamkit.CallInfo`)."""
    config_text = _dumps_revealed(dict(config))
    config_secrets = tuple(secret_texts(config)) + _service_secrets(service)
    masker = Redactor(config_secrets)  # built once: a reply is masked, never the forms made again
    total = (
        service.timeout_seconds
        if timeout_seconds is None
        else min(timeout_seconds, service.timeout_seconds)  # a tool may lower it, not raise it
    )
    message_timeout = min(service.message_timeout, total)
    key = Connections.key(service)

    async def call(values: dict[str, Any], ctx: ActionContext, info: CallInfo) -> Any:
        user = ctx.get(USER_PROPERTY, "")
        if isinstance(user, Secret):
            user = user.get_secret_value()
        secrets = masker.extend(ctx.secret_texts)
        # random, not a counter: no service that saw one call's id can guess another's
        call_id = token_hex(16)
        about = ServiceCall(info.call_id, info.idempotency_key, info.attempt)
        payload = encode_request(call_id, str(user), config_text, _dumps(values), call=about)
        transport = connections.get(key)
        started = asyncio.get_running_loop().time()
        request = Call(
            service,
            call_id,
            payload,
            current_trace_headers(),
            started + total,
            total,
            message_timeout,
        )
        budget = _Budget(service, started)
        try:
            replies = await transport.exchange(request)
        except ToolServiceError as exc:
            return _failed(exc, secrets)
        try:
            first = await _next_reply(replies, request, transport, budget)
        except ToolServiceError as exc:
            await replies.aclose()
            return _failed(exc, secrets)
        except BaseException:
            # cancelled (or worse) while waiting: stop listening all the same,
            # or the inbox stays and its late replies go uncounted
            await asyncio.shield(replies.aclose())
            raise
        if first.error is not None or first.end_of_stream:
            await replies.aclose()
            if first.error is not None:
                return _failed(first.error, secrets)
            return _scrub(first.response, secrets)
        return _stream(first, replies, request, transport, budget, secrets)

    return Tool.from_schema(name, description, parameters_schema(arguments), call)
