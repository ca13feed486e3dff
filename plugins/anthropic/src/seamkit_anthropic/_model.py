"""`AnthropicModel`: the `seamkit.Model` that asks Anthropic's Messages API
(``POST {base_url}/v1/messages``), streamed over server-sent events or whole,
with the official client's retries, on one pooled httpx client per event
loop."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

import seamkit
from seamkit.plugins import retry_status, retry_wait
from seamkit.stream import ToolArgumentsDelta

from ._assemble import Piece, TurnAssembler, turn_from_message
from ._config import AnthropicConfig, key_origin
from ._failures import answer_failure, failure
from ._wire import request_body

if TYPE_CHECKING:
    import httpx

__all__ = ["LONG_MAX_TOKENS", "AnthropicModel", "messages_url"]

log = logging.getLogger("seamkit.anthropic")

LONG_MAX_TOKENS = 21_333
"""Above this token limit a whole answer may take more than ten minutes (the
official client's estimate: an hour per 128,000 tokens), which networks drop;
`AnthropicModel.complete` then streams the answer and returns its turn."""

_DRAIN_SECONDS = 1.0
"""How long the end of a body after ``message_stop`` may take before the
connection is dropped instead of reused."""

_ON_THE_WIRE = functools.partial(seamkit.secret_json, reveal=True)
"""What ``json`` cannot write: a `Secret` goes on the wire as its value."""

_PROVIDER = "anthropic"


def _is_stream(response: httpx.Response) -> bool:
    kind: str = response.headers.get("content-type", "")
    return kind.startswith("text/event-stream")


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
        self.where = f"anthropic provider at {base_url}"
        self._tls = not base_url.startswith("http://")
        self._secrets = seamkit.plugins.secret_texts(self.config)
        self._headers = self._make_headers()
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

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
        for name, value in config.headers.items():
            plain = value.get_secret_value() if isinstance(value, seamkit.Secret) else value
            headers[name.lower()] = plain
        return headers

    def __repr__(self) -> str:
        return f"AnthropicModel({self.config.name!r}, base_url={self.config.base_url!r})"

    def _http(self) -> httpx.AsyncClient:
        import httpx  # lazy: the plugin imports without httpx until a model asks

        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            config = self.config
            self._client = httpx.AsyncClient(
                headers=self._headers,
                timeout=httpx.Timeout(
                    config.timeout_seconds,
                    connect=config.connect_timeout_seconds,
                    pool=config.timeout_seconds,
                ),
                limits=httpx.Limits(
                    max_connections=config.max_connections,
                    max_keepalive_connections=min(100, config.max_connections),
                ),
                # A plain-HTTP server (a local LiteLLM proxy) needs no TLS: no
                # certificate store to load, and no redirect to follow to a
                # host whose certificate would go unchecked.
                verify=self._tls,
                follow_redirects=self._tls,
            )
            self._loop = loop
        return self._client

    async def aclose(self) -> None:
        """Close the pooled connections."""
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    async def __aenter__(self) -> AnthropicModel:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @asynccontextmanager
    async def _answer(self, body: dict[str, Any]) -> AsyncIterator[httpx.Response]:
        """The server's 2xx answer to ``body``, its body not yet read; retried
        as the policy says, else a `seamkit.ModelError`."""
        import httpx  # lazy: loaded with the client

        client = self._http()
        content = json.dumps(body, default=_ON_THE_WIRE).encode()
        retries = self.config.max_retries
        attempt = 0
        while True:
            attempt += 1
            request = client.build_request("POST", self.url, content=content)
            try:
                response = await client.send(request, stream=True)
            except httpx.TransportError as exc:
                if attempt <= retries:
                    await self._pause(attempt, None, f"{type(exc).__name__}: {exc}")
                    continue
                raise self._unreachable(exc, attempt) from None
            if response.is_success:
                try:
                    yield response
                finally:
                    await response.aclose()
                return
            try:
                raw = await response.aread()
            except httpx.TransportError:
                raw = b""
            finally:
                await response.aclose()
            if attempt <= retries and retry_status(response.status_code, response.headers):
                await self._pause(attempt, response, f"HTTP {response.status_code}")
                continue
            raise failure(
                response.status_code,
                raw,
                where=self.where,
                model=self.config.name,
                key=key_origin(self.config.api_key),
                attempts=attempt,
                secrets=self._secrets,
            )

    async def _pause(self, attempt: int, response: httpx.Response | None, why: str) -> None:
        wait = retry_wait(attempt - 1, response.headers if response is not None else {})
        log.warning(
            "%s: %s; retry %d of %d in %.2fs",
            self.where,
            seamkit.redact(why, self._secrets),
            attempt,
            self.config.max_retries,
            wait,
        )
        await asyncio.sleep(wait)

    def _unreachable(self, exc: Exception, attempts: int) -> seamkit.ModelError:
        import httpx  # lazy: loaded with the client

        tries = f" after {attempts} attempts" if attempts > 1 else ""
        if isinstance(exc, httpx.ConnectTimeout):
            said = f"no connection within {self.config.connect_timeout_seconds:g}s"
        elif isinstance(exc, httpx.TimeoutException):
            said = f"no answer within {self.config.timeout_seconds:g}s"
        else:
            said = f"{type(exc).__name__}: {exc}"
        return seamkit.ModelError(
            seamkit.redact(f"cannot reach {self.where}{tries}: {said}", self._secrets),
            provider=_PROVIDER,
            hint="check base_url and that the server is running",
        )

    async def complete(self, request: seamkit.ModelRequest) -> seamkit.ModelTurn:
        """The whole answer to ``request``, as one turn. With a token limit
        above `LONG_MAX_TOKENS` the answer is streamed and its turn returned,
        as a whole answer that long could outlast the network's patience."""
        if (request.max_tokens or self.config.max_tokens) > LONG_MAX_TOKENS:
            async with contextlib.aclosing(self.stream(request)) as items:
                async for item in items:
                    if isinstance(item, seamkit.ModelTurn):
                        return item
            raise seamkit.ModelError(f"{self.where}: the stream ended without a turn")
        import httpx  # lazy: loaded with the client

        body = request_body(request, self.config, stream=False)
        async with self._answer(body) as response:
            if _is_stream(response):  # a server that streams unasked
                assembler = TurnAssembler()
                async for _ in self._events(response, assembler):
                    pass
                return self._finished(assembler.finish(), request)
            try:
                raw = await response.aread()
            except httpx.TransportError as exc:
                raise self._cut(None, exc) from None
        return self._finished(turn_from_message(self._object(raw, "an answer")), request)

    def _object(self, raw: str | bytes, what: str) -> dict[str, Any]:
        """``raw`` as a JSON object; an error when it is not one, or when it
        is Anthropic's error object."""
        try:
            data = json.loads(raw)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise seamkit.ModelError(
                f"{self.where} sent {what} that is not a JSON object: {raw[:200]!r}",
                provider=_PROVIDER,
            )
        if data.get("type") == "error" or isinstance(data.get("error"), dict):
            raise answer_failure(
                data.get("error"), where=self.where, model=self.config.name, secrets=self._secrets
            )
        return data

    async def stream(
        self, request: seamkit.ModelRequest
    ) -> AsyncGenerator[str | ToolArgumentsDelta | seamkit.ModelTurn, None]:
        """The answer's text and its tool calls' argument fragments
        (`seamkit.stream.ToolArgumentsDelta`) as they arrive, then the turn.
        Thinking is kept in the turn, never yielded."""
        body = request_body(request, self.config, stream=True)
        async with self._answer(body) as response:
            if not _is_stream(response):
                raw = await response.aread()  # a server that ignored stream: true
                turn = self._finished(turn_from_message(self._object(raw, "an answer")), request)
                if turn.message.text:
                    yield turn.message.text
                for index, call in enumerate(turn.message.tool_calls or ()):
                    name, arguments = call.function.name, call.function.arguments
                    yield ToolArgumentsDelta(index, call.id, name, arguments)
                yield turn
                return
            assembler = TurnAssembler()
            async for piece in self._events(response, assembler):
                yield piece
        yield self._finished(assembler.finish(), request)

    async def _events(
        self, response: httpx.Response, assembler: TurnAssembler
    ) -> AsyncIterator[Piece]:
        """Feed ``response``'s events to ``assembler``, yielding what each
        adds, up to ``message_stop``; an ``error`` event, or an end before
        ``message_stop``, raises."""
        import httpx  # lazy: loaded with the client
        from httpx_sse import EventSource  # lazy: loaded with the client

        events = EventSource(response).aiter_sse()
        try:
            async for event in events:
                if not event.data:
                    continue
                data = self._object_event(event.data)
                kind = data.get("type")
                kind = kind if isinstance(kind, str) else event.event
                if kind == "error" or event.event == "error":
                    raise answer_failure(
                        data.get("error"),
                        where=self.where,
                        model=self.config.name,
                        secrets=self._secrets,
                    )
                for piece in assembler.feed(kind, data):
                    yield piece
                if assembler.stopped:
                    break
        except httpx.TransportError as exc:
            raise self._cut(assembler, exc) from None
        if not assembler.stopped:
            raise self._cut(assembler, None)
        # read the body's end, so the connection goes back to the pool
        with contextlib.suppress(httpx.TransportError, TimeoutError):
            async with asyncio.timeout(_DRAIN_SECONDS):
                async for _ in events:
                    pass

    def _object_event(self, raw: str) -> dict[str, Any]:
        try:
            data = json.loads(raw)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise seamkit.ModelError(
                f"{self.where} sent a stream event that is not a JSON object: {raw[:200]!r}",
                provider=_PROVIDER,
            )
        return data

    def _cut(self, assembler: TurnAssembler | None, exc: Exception | None) -> seamkit.ModelError:
        """The error for an answer that stopped before its end."""
        if assembler is None:
            where_cut = "while its body was read"
        else:
            call = assembler.open_call
            text = assembler.text_so_far
            if call is not None:
                name, length = call
                where_cut = (
                    f"in the middle of tool call {name or '(unnamed)'!r} "
                    f"({length} characters of arguments so far)"
                )
            elif text:
                where_cut = f"in the middle of the text ({len(text)} characters so far)"
            else:
                where_cut = "before any of the answer"
            where_cut = f"after {assembler.events} events, {where_cut}"
        cause = f": {type(exc).__name__}: {exc}" if exc is not None else ""
        return seamkit.ModelError(
            seamkit.redact(
                f"the answer from {self.where} (model {self.config.name!r}) was cut off "
                f"before message_stop {where_cut}{cause}",
                self._secrets,
            ),
            provider=_PROVIDER,
            hint="the server or the network dropped the stream; run again",
        )

    def _finished(
        self, turn: seamkit.ModelTurn, request: seamkit.ModelRequest
    ) -> seamkit.ModelTurn:
        """``turn``, unless its finish reason says it is not an answer. A turn
        cut at the token limit in the middle of the run's output tool is an
        answer: the run tells the model it did not validate."""
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
                if call.function.name == answer:
                    continue
                try:
                    json.loads(call.function.arguments)
                except ValueError:
                    raise seamkit.ModelError(
                        f"{self.where}: the answer hit the token limit in the middle of "
                        f"tool call {call.function.name!r}'s arguments",
                        provider=_PROVIDER,
                        hint="raise the request's max_tokens",
                    ) from None
            log.info("%s: the answer stopped at the token limit", self.where)
        return turn
