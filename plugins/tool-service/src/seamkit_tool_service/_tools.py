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
import itertools
import json
import secrets
import weakref
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from seamkit import ActionContext, Secret, Tool, ToolResult, redact
from seamkit.plugins import secret_texts

from ._config import Argument, ServiceDescriptor, parameters_schema
from ._envelope import Reply, decode_reply, encode_request
from ._errors import EnvelopeError, ToolServiceError
from ._http_client import HttpTransport
from ._nats_client import NatsTransport
from ._trace import outgoing
from ._transport import Call, Replies, Transport

__all__ = ["USER_PROPERTY", "Connections", "service_tool"]

USER_PROPERTY = "user"
"""The `ActionContext` property sent as the envelope's ``user``."""

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_prefix = secrets.token_hex(4)
_counter = itertools.count(1)


def _plain(value: object) -> object:
    """``value`` with every `Secret` revealed (config values go on the wire)."""
    if isinstance(value, Secret):
        return value.get_secret_value()
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


class Connections:
    """The transports of one agent, made when first used, one set per event
    loop (a connection belongs to the loop that opened it)."""

    def __init__(self) -> None:
        self._by_loop: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[tuple[str, ...], Transport]
        ] = weakref.WeakKeyDictionary()
        self._last: tuple[asyncio.AbstractEventLoop | None, dict[tuple[str, ...], Transport]] = (
            None,
            {},
        )

    @staticmethod
    def key(service: ServiceDescriptor) -> tuple[str, ...]:
        """What tells transports apart: HTTP, or NATS on a server list."""
        return ("nats", *service.servers) if service.transport == "nats" else ("http",)

    def get(self, key: tuple[str, ...]) -> Transport:
        """The transport ``key`` names, for the running loop."""
        loop = asyncio.get_running_loop()
        last_loop, table = self._last
        if last_loop is not loop:
            table = self._by_loop.get(loop) or self._by_loop.setdefault(loop, {})
            self._last = (loop, table)
        found = table.get(key)
        if found is None:
            found = table[key] = NatsTransport(key[1:]) if key[0] == "nats" else HttpTransport()
        return found

    def transport(self, service: ServiceDescriptor) -> Transport:
        """The transport that reaches ``service`` from the running loop."""
        return self.get(self.key(service))

    def nats(self, servers: Sequence[str]) -> NatsTransport:
        """The NATS transport on ``servers`` from the running loop."""
        found = self.get(("nats", *servers))
        assert isinstance(found, NatsTransport)
        return found

    def dropped(self) -> dict[str, int]:
        """The replies its transports dropped: ``stray`` and ``duplicate``."""
        out = {"stray": 0, "duplicate": 0}
        for table in list(self._by_loop.values()):
            for transport in table.values():
                out["stray"] += transport.dropped.stray
                out["duplicate"] += transport.dropped.duplicate
        return out

    async def aclose(self) -> None:
        """Close the transports of the running loop (those of loops that
        ended went with them)."""
        loop = asyncio.get_running_loop()
        table = self._by_loop.pop(loop, {})
        if self._last[0] is loop:
            self._last = (None, {})
        for transport in table.values():
            await transport.aclose()


def _failed(error: ToolServiceError | tuple[str, str], secrets: Sequence[str]) -> ToolResult:
    kind, message = (
        (error.error_type, error.message) if isinstance(error, ToolServiceError) else error
    )
    return ToolResult.error(_scrub(f"Error: {kind}: {message}", secrets))


def _scrub(text: str, secrets: Sequence[str]) -> str:
    """``text`` with every secret the call sent masked (a service may echo one)."""
    return redact(text, secrets) if secrets else text


async def _next_reply(replies: Replies, call: Call, transport: Transport) -> Reply:
    """The next reply that is this call's (others are dropped and counted)."""
    strays = 0
    while True:
        try:
            data = await anext(replies)
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
        if reply.id == call.call_id:
            return reply
        strays += 1
        transport.dropped.stray += 1


async def _stream(
    first: Reply,
    replies: Replies,
    call: Call,
    transport: Transport,
    secrets: Sequence[str],
) -> AsyncIterator[str | ToolResult]:
    """The chunks of a streamed reply, ending in an error result if one comes."""
    try:
        if first.response:
            yield _scrub(first.response, secrets)
        while True:
            try:
                reply = await _next_reply(replies, call, transport)
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
    values) and the model's arguments, which ``arguments`` describe."""
    config_text = _dumps(_plain(config))
    config_secrets = tuple(secret_texts(config))
    total = timeout_seconds or service.timeout_seconds
    message_timeout = min(service.message_timeout, total)
    key = Connections.key(service)

    async def call(values: dict[str, Any], ctx: ActionContext) -> Any:
        user = ctx.get(USER_PROPERTY, "")
        if isinstance(user, Secret):
            user = user.get_secret_value()
        secrets = config_secrets + ctx.secret_texts if ctx else config_secrets
        call_id = f"{_prefix}{next(_counter):x}"
        payload = encode_request(call_id, str(user), config_text, _dumps(values))
        transport = connections.get(key)
        started = asyncio.get_running_loop().time()
        request = Call(
            service, call_id, payload, outgoing(), started + total, total, message_timeout
        )
        try:
            replies = await transport.exchange(request)
        except ToolServiceError as exc:
            return _failed(exc, secrets)
        try:
            first = await _next_reply(replies, request, transport)
        except ToolServiceError as exc:
            await replies.aclose()
            return _failed(exc, secrets)
        if first.error is not None or first.end_of_stream:
            await replies.aclose()
            if first.error is not None:
                return _failed(first.error, secrets)
            return _scrub(first.response, secrets)
        return _stream(first, replies, request, transport, secrets)

    return Tool.from_schema(name, description, parameters_schema(arguments), call)
