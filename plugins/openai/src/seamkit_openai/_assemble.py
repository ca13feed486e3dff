"""From the server's answer to a `seamkit.ModelTurn`: `TurnAssembler` puts a
streamed answer together chunk by chunk; `turn_from_completion` reads a whole
one. Both give the same turn for the same answer. While a stream is fed, the
assembler hands back what each chunk adds: its text, and each tool call's
argument fragments as `seamkit.stream.ToolArgumentsDelta` (``index`` the
call's position in the order the calls began, ``id`` and ``name`` as far as
they are known), so the kernel can show a structured answer's partial value.

What servers send differs from OpenAI's own stream in ways reported in public
issues; the assembler accepts each (the replay tests hold a transcript of
every one, with its source):

- a chunk with empty ``choices`` (OpenAI's usage chunk, Azure's first chunk
  with ``prompt_filter_results``) and a ``delta`` that is missing or ``null``;
- usage on any chunk, with or without a choice (LiteLLM);
- tool-call fragments without ``index`` (Gemini's endpoint, Ollama,
  mistral.rs), a whole call in one fragment (Ollama), several calls all on
  index 0 (Ollama), and id and name repeated in every fragment (DeepSeek,
  Qwen): a fragment with an id not seen before opens a new call; id and name
  are set once; argument text is appended;
- ``refusal`` text (``message.refusal``, or ``delta.refusal`` pieces), which
  becomes the turn's text, with ``finish_reason="refusal"`` (how seamkit
  reports a refusal: a run with a declared output ends ``failed``);
- ``finish_reason`` spellings other than OpenAI's (``eos``, ``eos_token``,
  ``""``): all read as ``stop``.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import seamkit
from seamkit.stream import ToolArgumentsDelta
from seamkit_http import token_count

__all__ = [
    "FAILED_FINISHES",
    "REFUSAL",
    "Piece",
    "TurnAssembler",
    "is_filtered",
    "turn_from_completion",
    "usage_of",
]

FAILED_FINISHES = frozenset({"error", "abort", "network_error"})
"""Finish reasons that mean the server gave up on the answer (vLLM's ``abort``,
OpenRouter's ``error``): the turn fails."""

REFUSAL = "refusal"
"""The finish reason of a turn in which the model refused to answer."""

Piece = str | ToolArgumentsDelta
"""What one chunk adds that a stream yields: text, or a call's argument fragment."""

_FILTERED = frozenset({"content_filter", "sensitive"})


def _new_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def usage_of(data: object) -> seamkit.Usage | None:
    """The usage block of a chunk or completion, if it has one. Input tokens
    count the cached ones too (OpenAI's ``prompt_tokens`` does);
    ``cache_read_tokens`` is ``prompt_tokens_details.cached_tokens``, or
    Anthropic's ``cache_read_input_tokens`` that a proxy such as LiteLLM
    passes through, and ``cache_write_tokens`` its
    ``cache_creation_input_tokens`` (or ``prompt_tokens_details.cache_write_tokens``)."""
    if not isinstance(data, dict):
        return None
    prompt = token_count(data.get("prompt_tokens")) or token_count(data.get("input_tokens"))
    completion = token_count(data.get("completion_tokens")) or token_count(
        data.get("output_tokens")
    )
    details = data.get("prompt_tokens_details") or data.get("input_tokens_details")
    if not isinstance(details, dict):
        details = {}
    read = token_count(details.get("cached_tokens")) or token_count(
        data.get("cache_read_input_tokens")
    )
    written = token_count(data.get("cache_creation_input_tokens")) or token_count(
        details.get("cache_write_tokens")
    )
    return seamkit.Usage(
        input_tokens=prompt,
        output_tokens=completion,
        requests=1,
        cache_read_tokens=read,
        cache_write_tokens=written,
    )


class _Call:
    __slots__ = ("arguments", "id", "index", "name", "position")

    def __init__(self, id: str, index: int | None, position: int) -> None:
        self.id = id
        self.index = index
        self.position = position
        self.name = ""
        self.arguments: list[str] = []


def _arguments_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value)  # a server that sends the arguments as an object


class TurnAssembler:
    """Collects a streamed answer: `feed` each chunk's parsed JSON, yield what
    it returns (text deltas and argument fragments), then `finish` for the
    turn and `reason` for its finish reason. ``refused`` says whether any of
    the text was a refusal."""

    __slots__ = (
        "_by_id",
        "_by_index",
        "_calls",
        "_text",
        "chunks",
        "finish_reason",
        "refused",
        "usage",
    )

    def __init__(self) -> None:
        self._text: list[str] = []
        self.refused = False
        self._calls: list[_Call] = []
        self._by_index: dict[int, _Call] = {}
        self._by_id: dict[str, _Call] = {}
        self.finish_reason: str | None = None
        self.usage: seamkit.Usage | None = None
        self.chunks = 0

    def feed(self, chunk: dict[str, Any]) -> list[Piece]:
        """Take one chunk; return what it adds, in order: text (content or
        refusal) and tool-call argument fragments (none: ``[]``)."""
        self.chunks += 1
        usage = chunk.get("usage")
        if usage:
            self.usage = usage_of(usage)
        choices = chunk.get("choices")
        if not choices:
            return []
        added: list[Piece] = []
        for choice in choices:
            if choice.get("index", 0) != 0:
                continue  # only the first choice is the turn (n > 1 is not supported)
            delta = choice.get("delta") or {}
            text = delta.get("content")
            if text:
                self._text.append(text)
                added.append(text)
            refusal = delta.get("refusal")
            if refusal:
                self.refused = True
                self._text.append(refusal)
                added.append(refusal)
            fragments = delta.get("tool_calls")
            if fragments:
                for fragment in fragments:
                    piece = self._fragment(fragment)
                    if piece is not None:
                        added.append(piece)
            reason = choice.get("finish_reason")
            if reason is not None:
                self.finish_reason = reason
        return added

    def _fragment(self, fragment: dict[str, Any]) -> ToolArgumentsDelta | None:
        call_id = fragment.get("id") or ""
        function = fragment.get("function") or {}
        index = fragment.get("index")
        call: _Call | None
        if isinstance(index, int):
            call = self._by_index.get(index)
            if call is None or (call_id and call.id and call_id != call.id):
                call = self._open(call_id, index)
                self._by_index[index] = call
        elif call_id:
            call = self._by_id.get(call_id) or self._open(call_id, None)
        else:
            call = self._calls[-1] if self._calls else self._open("", None)
        if call_id and not call.id:
            call.id = call_id
            self._by_id[call_id] = call
        name = function.get("name")
        if name and not call.name:
            call.name = name
        arguments = _arguments_text(function.get("arguments"))
        if not arguments:
            return None
        call.arguments.append(arguments)
        return ToolArgumentsDelta(call.position, call.id or None, call.name or None, arguments)

    def _open(self, call_id: str, index: int | None) -> _Call:
        call = _Call(call_id, index, len(self._calls))
        self._calls.append(call)
        if call_id:
            self._by_id[call_id] = call
        return call

    @property
    def text_so_far(self) -> str:
        """The text received so far."""
        return "".join(self._text)

    @property
    def open_call(self) -> tuple[str, int] | None:
        """The name and argument length of the last call begun, if any."""
        if not self._calls:
            return None
        call = self._calls[-1]
        return call.name, sum(len(a) for a in call.arguments)

    @property
    def reason(self) -> str | None:
        """The turn's finish reason: the server's, or ``"refusal"`` when the
        model refused (unless the server gave up or filtered the answer)."""
        return _reason(self.finish_reason, refused=self.refused)

    def finish(self) -> seamkit.ModelTurn:
        """The turn the chunks fed so far make: calls in the order of their
        indexes when every call has one, else in the order they began."""
        calls = self._calls
        if all(c.index is not None for c in calls):
            calls = sorted(calls, key=lambda c: c.index or 0)
        return _turn(
            "".join(self._text),
            [(c.id, c.name, "".join(c.arguments)) for c in calls],
            self.usage,
        )


def _turn(
    text: str, calls: list[tuple[str, str, str]], usage: seamkit.Usage | None
) -> seamkit.ModelTurn:
    wire_calls = [
        seamkit.MessageToolCall(
            id=call_id or _new_id(),
            function=seamkit.FunctionCall(name=name, arguments=arguments or "{}"),
        )
        for call_id, name, arguments in calls
    ]
    content = text if text or not wire_calls else None
    message = seamkit.Message.assistant(content, wire_calls or None)
    return seamkit.ModelTurn(message=message, usage=usage or seamkit.Usage(requests=1))


def turn_from_completion(body: dict[str, Any]) -> tuple[seamkit.ModelTurn, str | None]:
    """The turn a whole (not streamed) completion holds, and its finish reason."""
    choices = body.get("choices") or []
    choice = next((c for c in choices if c.get("index", 0) == 0), None)
    if choice is None:
        return _turn("", [], usage_of(body.get("usage"))), None
    message = choice.get("message") or {}
    refusal = message.get("refusal") or ""
    text = (message.get("content") or "") + refusal
    calls = [
        (
            call.get("id") or "",
            (call.get("function") or {}).get("name") or "",
            _arguments_text((call.get("function") or {}).get("arguments")),
        )
        for call in message.get("tool_calls") or ()
    ]
    reason = _reason(choice.get("finish_reason"), refused=bool(refusal))
    return _turn(text, calls, usage_of(body.get("usage"))), reason


def _reason(reason: str | None, *, refused: bool) -> str | None:
    if refused and reason not in FAILED_FINISHES and not is_filtered(reason):
        return REFUSAL
    return reason


def is_filtered(reason: str | None) -> bool:
    """Whether ``reason`` says the provider's content filter stopped the answer."""
    return reason in _FILTERED
