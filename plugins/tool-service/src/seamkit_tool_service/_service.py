"""`DynamicToolService`: what a service author subclasses.

Implement ``async invoke(user, config, arguments)`` and return a value (a
string as it is, anything else as JSON) or an async iterator of chunks (each
sent as it comes). An ``invoke`` with a fourth parameter receives the call's
`ServiceCall` there (its idempotency key, to act once); which form a class
uses is read from its signature once. An exception becomes the error reply ``{type: <exception
class>, message: str(exc)}``; nothing a service raises leaves a caller
waiting. The same class serves over HTTP and NATS
(``seamkit tool-service serve module:Class``).
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, Literal

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

    ``async invoke(user, config, arguments)`` answers one call: ``user``
    from the agent's request, ``config`` the calling tool's config values,
    ``arguments`` the model's; it returns a value, or an async iterator of
    chunks. ``async invoke(user, config, arguments, call)`` also receives
    the call's `ServiceCall` (``call_id``, ``idempotency_key``,
    ``attempt``, and who called: ``caller``, ``user_verified``). Both forms type-check as overrides.
    """

    id: ClassVar[str] = ""
    description: ClassVar[str] = ""
    version: ClassVar[str] = "0.1.0"
    config_params: ClassVar[Sequence[ConfigParam]] = ()
    tools: ClassVar[Sequence[ServedTool]] = ()
    timeout_seconds: ClassVar[float] = 30.0
    trust_user_from: ClassVar[frozenset[str] | set[str]] = frozenset()
    """The callers (token ids, certificate subjects) whose ``user`` is
    taken as verified (`ServiceCall.user_verified`); from anyone else
    ``user`` is only what the agent says."""
    _takes_call: ClassVar[bool] = False
    """Whether the class's ``invoke`` takes the fourth parameter (read from
    its signature when the class is made)."""

    if TYPE_CHECKING:
        # either form of invoke overrides this (three parameters, or four)
        invoke: Callable[..., Awaitable[Any]]
    else:

        async def invoke(self, user, config, arguments):
            """Answer one call (see the class): implement it in a subclass."""
            raise NotImplementedError(f"{type(self).__name__} does not implement invoke()")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._takes_call = _wants_call(cls.invoke)

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
        self, data: bytes, headers: Mapping[str, str] | None = None, *, caller: str | None = None
    ) -> AsyncGenerator[bytes, None]:
        """The reply envelopes to the request envelope ``data``: one, or a
        stream ending with ``end_of_stream: true``; an error reply for a
        malformed request or an exception. ``caller`` is who the transport
        authenticated (see `ServiceCall.caller`)."""
        try:
            request = decode_request(data)
        except EnvelopeError as exc:
            yield encode_reply(_id_of(data), error=("BadRequest", exc.message))
            return
        call_id = request.id
        try:
            with continue_trace(headers):
                args: tuple[Any, ...] = (request.user, request.config, request.arguments)
                if self._takes_call:
                    verified = caller is not None and caller in self.trust_user_from
                    about = replace(request.call, caller=caller, user_verified=verified)
                    args = (*args, about)
                result = await self.invoke(*args)
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


def _wants_call(invoke: Callable[..., Any]) -> bool:
    """Whether ``invoke`` (as defined on a class, ``self`` first) takes a
    fourth positional argument: the call's `ServiceCall`."""
    try:
        params = list(inspect.signature(invoke).parameters.values())
    except (TypeError, ValueError):
        return False
    count = 0
    for param in params:
        if param.kind is param.VAR_POSITIONAL:
            return True
        if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            count += 1
    return count >= 5


def _id_of(data: bytes) -> str:
    """The ``id`` of a request that is otherwise malformed, when it has one."""
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return ""
    found = value.get("id") if isinstance(value, dict) else None
    return found if isinstance(found, str) else ""
