"""`OpenAIModel`: the `seamkit.Model` that asks a chat-completions server,
streamed over server-sent events or whole, with retries, on one pooled
httpx transport per event loop (`seamkit_http.Endpoint`)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
from collections.abc import AsyncIterator
from importlib.metadata import version
from typing import Any

import httpx
import seamkit
from seamkit.plugins import shown_url
from seamkit.stream import ToolArgumentsDelta
from seamkit_http import (
    Endpoint,
    as_streamed,
    cut_off,
    is_event_stream,
    json_object,
    key_origin,
    server_events,
    stream_progress,
)

from ._assemble import FAILED_FINISHES, TurnAssembler, is_filtered, turn_from_completion
from ._config import OpenAIConfig
from ._failures import answer_failure, failure, should_retry
from ._wire import request_body

__all__ = ["OpenAIModel"]

log = logging.getLogger("seamkit.openai")

_DRAIN_SECONDS = 1.0
"""How long the end of a body after ``[DONE]`` may take before the connection
is dropped instead of reused."""


_ALL_MODES = frozenset({"native", "tool", "prompted"})
"""The structured-output modes the provider serves."""


class OpenAIModel:
    """A chat model behind an OpenAI-compatible ``/chat/completions``.

    ``complete`` asks for the whole answer; ``stream`` yields its text as it
    arrives, then the `seamkit.ModelTurn`. Failures raise `seamkit.ModelError`
    (`seamkit.ContextLengthExceeded` for a request too long for the model),
    never with the API key in them. Use ``async with`` (or `aclose`) to close
    its connections; an agent built from a manifest closes them with itself.

    ``output_modes`` says which structured-output modes it serves: ``native``
    (``response_format`` with a JSON Schema; left out when the config says
    ``native_output: false``), ``tool`` and ``prompted``.
    """

    def __init__(self, config: OpenAIConfig) -> None:
        self.config = config.resolved()
        base_url = (self.config.base_url or "").rstrip("/")
        self.url = f"{base_url}/chat/completions"
        self.where = f"openai provider at {shown_url(base_url)}"
        self._secrets = seamkit.plugins.secret_texts(self.config)
        self._endpoint = Endpoint(
            self.url,
            headers=self._make_headers(),
            more_headers=self.config.headers,
            settings=self.config,
            where=self.where,
            provider="openai",
            secrets=self._secrets,
            log=log,
            failure=functools.partial(
                failure,
                where=self.where,
                model=self.config.name,
                key=key_origin(self.config.api_key),
                secrets=self._secrets,
            ),
            should_retry=should_retry,
        )
        self.output_modes: frozenset[str] = (
            _ALL_MODES if self.config.native_output else _ALL_MODES - {"native"}
        )

    def _make_headers(self) -> dict[str, str]:
        config = self.config
        headers = {
            "content-type": "application/json",
            "accept": "application/json",
            "user-agent": f"seamkit-openai/{version('seamkit-openai')}",
        }
        if config.api_key is not None:
            headers["authorization"] = f"Bearer {config.api_key.get_secret_value()}"
        if config.organization:
            headers["openai-organization"] = config.organization
        if config.project:
            headers["openai-project"] = config.project
        return headers

    def __repr__(self) -> str:
        base_url = shown_url(self.config.base_url or "")
        return f"OpenAIModel({self.config.name!r}, base_url={base_url!r})"

    async def aclose(self) -> None:
        """Close the pooled connections."""
        await self._endpoint.aclose()

    async def __aenter__(self) -> OpenAIModel:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def complete(self, request: seamkit.ModelRequest) -> seamkit.ModelTurn:
        """The whole answer to ``request``, as one turn."""
        body = request_body(request, self.config, stream=False)
        async with self._endpoint.post(body) as response:
            raw = await self._body(response)
        return self._whole(raw, request)

    async def _body(self, response: httpx.Response) -> bytes:
        """A whole answer's body; an error when it is cut, or does not decode."""
        try:
            return await response.aread()
        except httpx.RequestError as exc:
            raise self._cut(None, exc) from None

    def _whole(self, raw: bytes, request: seamkit.ModelRequest) -> seamkit.ModelTurn:
        turn, reason = turn_from_completion(self._object(raw, "an answer"))
        return self._finished(turn, reason, request)

    def _object(self, raw: str | bytes, what: str) -> dict[str, Any]:
        """``raw`` as a JSON object; an error when it is not one, or when it
        is an ``{"error": ...}`` (vLLM and OpenRouter send one after a 200)."""
        data = json_object(raw, what, where=self.where, provider="openai", secrets=self._secrets)
        if data.get("error"):
            raise answer_failure(
                data["error"], where=self.where, model=self.config.name, secrets=self._secrets
            )
        return data

    async def stream(
        self, request: seamkit.ModelRequest
    ) -> AsyncIterator[str | ToolArgumentsDelta | seamkit.ModelTurn]:
        """The answer's text (content and refusal) and its tool calls' argument
        fragments (`seamkit.stream.ToolArgumentsDelta`) as they arrive, then
        the turn."""
        body = request_body(request, self.config, stream=True)
        async with self._endpoint.post(body) as response:
            if not is_event_stream(response):
                raw = await self._body(response)  # a server that ignored stream: true
                for item in as_streamed(self._whole(raw, request)):
                    yield item
                return
            assembler = TurnAssembler()
            done = False
            events = server_events(response)
            try:
                async for event in events:
                    data = event.data
                    if data == "[DONE]":
                        done = True
                        break
                    if not data:
                        continue
                    chunk = self._object(data, "a stream event")
                    for piece in assembler.feed(chunk):
                        yield piece
            except httpx.RequestError as exc:  # cut, or a body that does not decode
                raise self._cut(assembler, exc) from None
            if not done and assembler.finish_reason is None:
                raise self._cut(assembler, None)
            if done:  # read the body's end, so the connection goes back to the pool
                with contextlib.suppress(httpx.RequestError, TimeoutError):
                    async with asyncio.timeout(_DRAIN_SECONDS):
                        async for _ in events:
                            pass
        yield self._finished(assembler.finish(), assembler.reason, request)

    def _cut(
        self, assembler: TurnAssembler | None, exc: httpx.RequestError | None
    ) -> seamkit.ModelError:
        """The error for an answer that stopped before its end."""
        progress = None
        if assembler is not None:
            progress = stream_progress(
                assembler.chunks, "chunks", assembler.open_call, assembler.text_so_far
            )
        return cut_off(
            exc,
            where=self.where,
            model=self.config.name,
            end="[DONE]",
            progress=progress,
            timeout_seconds=self.config.timeout_seconds,
            secrets=self._secrets,
            provider="openai",
        )

    def _finished(
        self, turn: seamkit.ModelTurn, reason: str | None, request: seamkit.ModelRequest
    ) -> seamkit.ModelTurn:
        """``turn``, unless its finish reason says it is not an answer. A turn
        cut at the token limit in the middle of the run's output tool is an
        answer: the run tells the model it did not validate."""
        if reason in FAILED_FINISHES:
            raise seamkit.ModelError(
                f"{self.where} gave up on the answer (finish_reason {reason!r})",
                provider="openai",
            )
        if is_filtered(reason):
            raise seamkit.ModelError(
                f"{self.where}: the provider's content filter stopped the answer "
                f"(finish_reason {reason!r})",
                provider="openai",
            )
        if reason == "length":
            output = request.output
            answer = output.name if output is not None and output.mode == "tool" else None
            for call in turn.message.tool_calls or ():
                if call.function.name == answer:
                    continue
                try:
                    json.loads(call.function.arguments)
                except (ValueError, RecursionError):
                    raise seamkit.ModelError(
                        f"{self.where}: the answer hit the token limit in the middle of "
                        f"tool call {call.function.name!r}'s arguments",
                        provider="openai",
                        hint="raise the request's max_tokens",
                    ) from None
            log.info("%s: the answer stopped at the token limit", self.where)
        return turn if reason is None else turn.model_copy(update={"finish_reason": reason})
