"""`AnthropicModel`: the `seamkit.Model` that asks Anthropic's Messages API
(``POST {base_url}/v1/messages``), streamed over server-sent events or whole,
with the official client's retries, on one pooled httpx transport per event
loop."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncGenerator
from importlib.metadata import version

import seamkit
from seamkit.plugins import shown_url
from seamkit.stream import ToolArgumentsDelta
from seamkit_http import (
    Endpoint,
    EventDecoder,
    ServerEvent,
    as_streamed,
    body_chunks,
    cut_off,
    is_event_stream,
    json_object,
    key_origin,
    parsed_object,
    stream_progress,
)

from ._assemble import BrokenAnswer, Piece, TurnAssembler, turn_from_message
from ._config import AnthropicConfig
from ._failures import answer_failure, failure
from ._wire import request_body

__all__ = ["LONG_MAX_TOKENS", "AnthropicModel", "messages_url"]

log = logging.getLogger("seamkit.anthropic")

LONG_MAX_TOKENS = 21_333
"""Above this token limit a whole answer may take more than ten minutes (the
official client's estimate: an hour per 128,000 tokens), which networks drop;
`AnthropicModel.complete` then streams the answer and returns its turn."""

_DRAIN_SECONDS = 1.0
"""How long the end of a body after ``message_stop`` may take before the
connection is dropped instead of reused."""

_PROVIDER = "anthropic"

_UNREADABLE = (BrokenAnswer, TypeError, ValueError, AttributeError, KeyError, OverflowError)
"""What reading an answer that breaks the protocol raises: the assembler's
own `BrokenAnswer`, and what a field of a type it did not foresee may raise
(a `pydantic.ValidationError` is a `ValueError`)."""


def messages_url(base_url: str) -> str:
    """The Messages endpoint under ``base_url``: ``{base_url}/v1/messages``, and
    a base URL that already ends in ``/v1`` is taken as meant."""
    base = base_url.rstrip("/")
    if base.endswith("/v1"):
        base = base[: -len("/v1")]
    return f"{base}/v1/messages"


class AnthropicModel:
    """A Claude model behind Anthropic's ``/v1/messages``.

    ``complete`` asks for the whole answer; ``stream`` yields its text and its
    tool calls' argument fragments as they arrive, then the
    `seamkit.ModelTurn`. Both give the same turn for the same answer.
    Failures raise `seamkit.ModelError` (`seamkit.ContextLengthExceeded` for
    a request too long for the model), never with the API key in them. Use
    ``async with`` (or `aclose`) to close its connections; an agent built
    from a manifest closes them with itself.

    ``output_modes`` says which structured-output modes it serves: ``tool``
    and ``prompted``, and ``native`` when the config says
    ``native_output: true``.
    """

    def __init__(self, config: AnthropicConfig) -> None:
        self.config = config.resolved()
        self.output_modes: frozenset[str] = frozenset(
            {"tool", "prompted", "native"} if self.config.native_output else {"tool", "prompted"}
        )
        base_url = (self.config.base_url or "").rstrip("/")
        self.url = messages_url(base_url)
        self.where = f"anthropic provider at {shown_url(base_url)}"
        self._secrets = seamkit.plugins.secret_texts(self.config)
        self._endpoint = Endpoint(
            self.url,
            headers=self._make_headers(),
            more_headers=self.config.headers,
            settings=self.config,
            where=self.where,
            provider=_PROVIDER,
            secrets=self._secrets,
            log=log,
            failure=functools.partial(
                failure,
                where=self.where,
                model=self.config.name,
                key=key_origin(self.config.api_key),
                secrets=self._secrets,
            ),
        )

    def _make_headers(self) -> dict[str, str]:
        config = self.config
        headers = {
            "content-type": "application/json",
            "accept": "application/json",
            "anthropic-version": config.api_version,
            "user-agent": f"seamkit-anthropic/{version('seamkit-anthropic')}",
        }
        if config.api_key is not None:
            headers["x-api-key"] = config.api_key.get_secret_value()
        return headers

    def __repr__(self) -> str:
        base_url = shown_url(self.config.base_url or "")
        return f"AnthropicModel({self.config.name!r}, base_url={base_url!r})"

    async def aclose(self) -> None:
        """Close the pooled connections."""
        await self._endpoint.aclose()

    async def __aenter__(self) -> AnthropicModel:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def complete(self, request: seamkit.ModelRequest) -> seamkit.ModelTurn:
        """The whole answer to ``request``, as one turn. With a token limit
        above `LONG_MAX_TOKENS` the answer is streamed and its turn returned,
        as a whole answer that long could outlast the network's patience."""
        long = (request.max_tokens or self.config.max_tokens) > LONG_MAX_TOKENS
        async with contextlib.aclosing(self._exchange(request, stream=long)) as items:
            async for item in items:
                if isinstance(item, seamkit.ModelTurn):
                    return item
        raise seamkit.ModelError(f"{self.where}: the answer ended without a turn")

    def _whole(self, raw: bytes) -> seamkit.ModelTurn:
        """The turn of a whole answer's body."""
        data = self._object(raw, "an answer")
        try:
            return turn_from_message(data)
        except _UNREADABLE as exc:
            raise self._broken(exc) from None

    def _assembled(self, assembler: TurnAssembler) -> seamkit.ModelTurn:
        """The turn ``assembler`` put together from a whole stream."""
        try:
            return assembler.finish()
        except _UNREADABLE as exc:
            raise self._broken(exc) from None

    def _broken(self, exc: Exception) -> seamkit.ModelError:
        """The error for an answer that breaks the protocol (what reading it
        raised, masked). Callers catch `_UNREADABLE` with ``try`` rather than a
        context manager: that runs once per event, and costs nothing when
        nothing is raised."""
        said = seamkit.redact(str(exc), self._secrets).splitlines()
        return seamkit.ModelError(
            f"{self.where} sent an answer that breaks the Messages API's protocol: "
            f"{(said[0] if said else type(exc).__name__)[:300]}",
            provider=_PROVIDER,
            hint="check that base_url is an Anthropic Messages API (or a proxy that "
            "speaks it faithfully)",
        )

    def _object(self, raw: str | bytes, what: str) -> dict[str, object]:
        """``raw`` as a JSON object; an error when it is not one, or when it
        is Anthropic's error object."""
        data = json_object(raw, what, where=self.where, provider=_PROVIDER, secrets=self._secrets)
        if data.get("type") == "error" or isinstance(data.get("error"), dict):
            raise answer_failure(
                data.get("error"), where=self.where, model=self.config.name, secrets=self._secrets
            )
        return data

    def stream(
        self, request: seamkit.ModelRequest
    ) -> AsyncGenerator[str | ToolArgumentsDelta | seamkit.ModelTurn, None]:
        """The answer's text and its tool calls' argument fragments
        (`seamkit.stream.ToolArgumentsDelta`) as they arrive, then the turn.
        Thinking is kept in the turn, never yielded."""
        return self._exchange(request, stream=True)

    async def _exchange(
        self, request: seamkit.ModelRequest, *, stream: bool
    ) -> AsyncGenerator[str | ToolArgumentsDelta | seamkit.ModelTurn, None]:
        """Ask for ``request``'s answer, streamed or whole, and yield what it
        adds as it arrives, then its turn, whichever form the server chose
        (a server may stream unasked, or ignore ``stream: true``).

        A stream's events are read here, in one loop (an async generator
        between them and the caller would cost more than the loop's work):
        each is fed to a `TurnAssembler` up to ``message_stop``; an ``error``
        event, or an end before ``message_stop``, raises."""
        import httpx  # lazy: loaded with the client

        body = request_body(request, self.config, stream=stream)
        async with self._endpoint.post(body) as response:
            if not is_event_stream(response):
                try:
                    raw = await response.aread()
                except httpx.RequestError as exc:  # cut, or a body that does not decode
                    raise self._cut(None, exc) from None
                for item in as_streamed(self._finished(self._whole(raw), request)):
                    yield item
                return
            assembler = TurnAssembler()
            chunks = body_chunks(response)
            decoder = EventDecoder()
            try:
                async for chunk in chunks:
                    for event in decoder.feed(chunk):
                        for piece in self._take(event, assembler):
                            yield piece
                        if assembler.stopped:
                            break
                    if assembler.stopped:
                        break
            except httpx.RequestError as exc:  # cut, or a body that does not decode
                raise self._cut(assembler, exc) from None
            if not assembler.stopped:
                raise self._cut(assembler, None)
            # read the body's end, so the connection goes back to the pool
            with contextlib.suppress(httpx.RequestError, TimeoutError):
                async with asyncio.timeout(_DRAIN_SECONDS):
                    async for _ in chunks:
                        pass
        yield self._finished(self._assembled(assembler), request)

    def _take(self, event: ServerEvent, assembler: TurnAssembler) -> list[Piece]:
        """Feed ``event`` to ``assembler``; what it adds. An ``error`` event
        raises its error; one that breaks the protocol, `_broken`'s."""
        if not event.data:
            return []
        data = parsed_object(event.data)
        if data is None:  # the error says what it is
            data = json_object(
                event.data,
                "a stream event",
                where=self.where,
                provider=_PROVIDER,
                secrets=self._secrets,
            )
        kind = data.get("type")
        kind = kind if isinstance(kind, str) else event.event
        if kind == "error" or event.event == "error":
            raise answer_failure(
                data.get("error"), where=self.where, model=self.config.name, secrets=self._secrets
            )
        try:
            return assembler.feed(kind, data)
        except _UNREADABLE as exc:
            raise self._broken(exc) from None

    def _cut(self, assembler: TurnAssembler | None, exc: Exception | None) -> seamkit.ModelError:
        """The error for an answer that stopped before its end."""
        progress = None
        if assembler is not None:
            progress = stream_progress(
                assembler.events, "events", assembler.open_call, assembler.text_so_far
            )
        return cut_off(
            exc,
            where=self.where,
            model=self.config.name,
            end="message_stop",
            progress=progress,
            timeout_seconds=self.config.timeout_seconds,
            secrets=self._secrets,
            provider=_PROVIDER,
        )

    def _finished(
        self, turn: seamkit.ModelTurn, request: seamkit.ModelRequest
    ) -> seamkit.ModelTurn:
        """``turn``, unless its finish reason says it is not an answer.

        A turn that stopped at the token limit (``max_tokens`` or
        ``model_context_window_exceeded``) with a tool call in it is an error:
        a finished call ends with ``stop_reason`` ``tool_use``, so any call in
        such a turn may be cut short, whether or not its arguments parse (a
        whole answer's ``input`` is always an object; a stream cut before any
        fragment gives ``{}``), and a tool must not run on them. The run's own
        output tool is the exception: it is an answer, which the run
        validates (and tells the model when it does not)."""
        reason = turn.finish_reason
        if reason == "pause_turn":
            raise seamkit.ModelError(
                f"{self.where}: the API paused a server-tool turn (stop_reason 'pause_turn'); "
                "seamkit does not continue it",
                provider=_PROVIDER,
                hint="server tools that run long are not supported; leave them out of the request",
            )
        if reason == "length":
            output = request.output
            answer = output.name if output is not None and output.mode == "tool" else None
            for call in turn.message.tool_calls or ():
                if call.function.name != answer:
                    raise seamkit.ModelError(
                        f"{self.where}: the answer hit the token limit in the middle of "
                        f"tool call {call.function.name!r}, whose arguments may be cut short",
                        provider=_PROVIDER,
                        hint="raise the request's max_tokens",
                    )
            log.info("%s: the answer stopped at the token limit", self.where)
        return turn
