"""`DynamicToolService`: what a service author subclasses.

Implement ``async invoke(user, config, arguments)`` and return a value (a
string as it is, anything else as JSON) or an async iterator of chunks (each
sent as it comes). An exception becomes the error reply ``{type: <exception
class>, message: str(exc)}``; nothing a service raises leaves a caller
waiting. The same class serves over HTTP and NATS
(``seamkit tool-service serve module:Class``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any, ClassVar, Literal

from seamkit.plugins import continue_trace

from ._config import ConfigParam, ServedTool, ServiceDescriptor
from ._envelope import decode_request, encode_reply
from ._errors import EnvelopeError

__all__ = ["DynamicToolService"]

log = logging.getLogger("seamkit_tool_service")


def _text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class DynamicToolService:
    """Base class of a tool service.

    Class attributes describe it: ``id`` (letters, digits, ``_`` and ``-``),
    ``description``, ``version`` (semver), ``config_params`` (what tools may
    or must set), ``tools`` (the tools it announces to agents that discover
    it) and ``timeout_seconds`` (the deadline it suggests to callers).
    """

    id: ClassVar[str] = ""
    description: ClassVar[str] = ""
    version: ClassVar[str] = "0.1.0"
    config_params: ClassVar[Sequence[ConfigParam]] = ()
    tools: ClassVar[Sequence[ServedTool]] = ()
    timeout_seconds: ClassVar[float] = 30.0

    async def invoke(self, user: str, config: dict[str, Any], arguments: dict[str, Any]) -> Any:
        """Answer one call: ``user`` from the agent's request, ``config`` the
        calling tool's config values, ``arguments`` the model's. Return a
        value, or an async iterator of chunks."""
        raise NotImplementedError(f"{type(self).__name__} does not implement invoke()")

    async def setup(self) -> None:
        """Called once in each worker before it takes requests."""

    async def teardown(self) -> None:
        """Called once in each worker after its last request."""

    def descriptor(
        self,
        transport: Literal["http", "nats"],
        *,
        url: str | None = None,
        subject: str | None = None,
        servers: Sequence[str] = (),
    ) -> ServiceDescriptor:
        """The descriptor of this service as served on ``transport``.
        Raises `pydantic.ValidationError` for a malformed class attribute."""
        return ServiceDescriptor(
            id=self.id,
            transport=transport,
            url=url,
            subject=subject,
            servers=list(servers),
            config_params=list(self.config_params),
            timeout_seconds=self.timeout_seconds,
            description=self.description,
            tools=list(self.tools),
        )

    async def replies(
        self, data: bytes, headers: Mapping[str, str] | None = None
    ) -> AsyncGenerator[bytes, None]:
        """The reply envelopes to the request envelope ``data``: one, or a
        stream ending with ``end_of_stream: true``; an error reply for a
        malformed request or an exception."""
        try:
            request = decode_request(data)
        except EnvelopeError as exc:
            yield encode_reply(_id_of(data), error=("BadRequest", exc.message))
            return
        call_id = request.id
        try:
            with continue_trace(headers):
                result = await self.invoke(request.user, request.config, request.arguments)
                if not hasattr(result, "__aiter__"):
                    yield encode_reply(call_id, _text(result))
                    return
                async for chunk in result:
                    yield encode_reply(call_id, _text(chunk), end_of_stream=False)
        except Exception as exc:
            log.warning("%s: invoke raised %s: %s", self.id, type(exc).__name__, exc)
            yield encode_reply(call_id, error=(type(exc).__name__, str(exc)))
            return
        yield encode_reply(call_id, "")


def _id_of(data: bytes) -> str:
    """The ``id`` of a request that is otherwise malformed, when it has one."""
    try:
        value = json.loads(data)
    except ValueError:
        return ""
    found = value.get("id") if isinstance(value, dict) else None
    return found if isinstance(found, str) else ""
