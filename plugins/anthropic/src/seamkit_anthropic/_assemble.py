"""From the Messages API's answer to a `seamkit.ModelTurn`: `TurnAssembler`
puts a streamed answer together event by event; `turn_from_message` reads a
whole one. Both build the same turn for the same answer (a property test
holds them to it).

The turn:

- its text is every ``text`` block joined (citations are left out);
- its tool calls are the ``tool_use`` blocks in block order, each call's
  arguments ``json.dumps`` of its input, so a streamed ``partial_json`` and a
  whole ``input`` object give the same text (arguments cut off by the token
  limit stay as they came, and the finish reason judges them);
- every other block (``thinking``, ``redacted_thinking``, ``server_tool_use``
  and whatever comes later) is kept verbatim as a content part, so the next
  request can send it back unchanged. The content then keeps the answer's
  block order: each block a part in its place, a text block as a ``text``
  part and a ``tool_use`` block as a stand-in ``{"type": "tool_use", "id"}``
  that the request fills from the call (the API wants a turn with thinking
  sent back exactly as it came, interleaved thinking included). The content
  stays a plain string when there are no such blocks;
- its usage counts every input token, read from the cache or written to it
  included, with the cache's share in ``cache_read_tokens`` and
  ``cache_write_tokens``;
- its finish reason is the stop reason in OpenAI's words (the kernel's):
  ``end_turn`` and ``stop_sequence`` are ``stop``, ``tool_use`` is
  ``tool_calls``, ``max_tokens`` and ``model_context_window_exceeded`` are
  ``length``, ``refusal`` is ``refusal``; others stay as they are.

While a stream is fed, the assembler hands back what each event adds: text
deltas (``str``) and tool-call argument fragments
(`seamkit.stream.ToolArgumentsDelta`, ``index`` the call's position among the
tool calls). Thinking is never handed back: it is not the answer.

An answer that breaks the protocol (a delta for a block that never started, a
block started twice, a second ``message_start``, a delta of the wrong kind
for its block, a ``tool_use`` without an id or a name, a field of the wrong
type) raises `BrokenAnswer`; the model turns it into a `seamkit.ModelError`.
A usage count that is not a non-negative whole number counts as 0.
"""

from __future__ import annotations

import json
from typing import Any

import seamkit
from seamkit.stream import ToolArgumentsDelta
from seamkit_http import token_count

__all__ = [
    "REFUSAL",
    "REFUSED_TEXT",
    "BrokenAnswer",
    "Piece",
    "TurnAssembler",
    "finish_reason",
    "turn_from_message",
    "usage_of",
]

REFUSAL = "refusal"
"""The finish reason of a turn in which the model refused to answer."""

REFUSED_TEXT = "the model refused to answer"
"""A refusal's text when the answer has none and no explanation."""


class BrokenAnswer(seamkit.ModelError):
    """Raised while reading an answer that breaks the Messages API's protocol,
    saying what is wrong; the model reports it as a `seamkit.ModelError`
    naming the server."""


Piece = str | ToolArgumentsDelta
"""What one event adds that a stream yields: text, or a call's argument fragment."""

_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": REFUSAL,
}


def finish_reason(stop_reason: str | None) -> str | None:
    """``stop_reason`` in the kernel's (OpenAI's) words; one it does not know
    stays as it is."""
    if stop_reason is None:
        return None
    return _REASONS.get(stop_reason, stop_reason)


def _text(value: object, what: str) -> str:
    """``value`` when it is a string (``None`` is empty); else `BrokenAnswer`."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BrokenAnswer(f"{what} is a {type(value).__name__}, not a string")
    return value


def _object(value: object, what: str) -> dict[str, Any]:
    """``value`` when it is a JSON object (``None`` is empty); else `BrokenAnswer`."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BrokenAnswer(f"{what} is a {type(value).__name__}, not an object")
    return value


def _check_call(block: dict[str, Any]) -> None:
    """A ``tool_use`` block must name its call and its tool: the kernel
    answers the call by its id, and runs the tool by its name."""
    for key in ("id", "name"):
        if not _text(block.get(key), f"a tool_use block's {key}"):
            raise BrokenAnswer(f"a tool_use block has no {key}")


def usage_of(usage: object) -> seamkit.Usage | None:
    """A ``usage`` object as a `seamkit.Usage`: ``input_tokens`` counts all
    input (plain, written to the cache, read from it)."""
    if not isinstance(usage, dict):
        return None
    read = token_count(usage.get("cache_read_input_tokens"))
    written = token_count(usage.get("cache_creation_input_tokens"))
    return seamkit.Usage(
        input_tokens=token_count(usage.get("input_tokens")) + read + written,
        output_tokens=token_count(usage.get("output_tokens")),
        requests=1,
        cache_read_tokens=read,
        cache_write_tokens=written,
    )


def _canonical(arguments: str) -> str:
    """A call's argument text as ``json.dumps`` writes it; an empty text is
    ``{}``, and a text that does not parse (cut off) stays as it is."""
    if not arguments.strip():
        return "{}"
    try:
        return json.dumps(json.loads(arguments))
    except (ValueError, RecursionError):  # cut off, or nested past Python's stack
        return arguments


def _opaque(block: dict[str, Any]) -> dict[str, Any]:
    """A non-text, non-tool block as the content part that keeps it: a
    thinking block with its keys in one order (the stream adds the signature
    last), any other as it is."""
    if block.get("type") == "thinking":
        part = {"type": "thinking", "thinking": block.get("thinking") or ""}
        rest = {k: v for k, v in block.items() if k not in ("type", "thinking", "signature")}
        part.update(rest)
        if block.get("signature") is not None:
            part["signature"] = block["signature"]
        return part
    return dict(block)


def _turn(
    blocks: list[dict[str, Any]],
    stop_reason: object,
    stop_details: object,
    usage: seamkit.Usage | None,
) -> seamkit.ModelTurn:
    """The turn ``blocks`` make: ``tool_use`` blocks carry ``arguments`` (the
    raw argument text) in place of ``input``."""
    texts: list[str] = []
    parts: list[dict[str, Any]] = []  # every block in order, calls as stand-ins
    opaque = False
    calls: list[seamkit.MessageToolCall] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "text":
            text = _text(block.get("text"), "a text block's text")
            texts.append(text)
            if text:
                parts.append({"type": "text", "text": text})
        elif kind == "tool_use":
            _check_call(block)
            calls.append(
                seamkit.MessageToolCall(
                    id=block["id"],
                    function=seamkit.FunctionCall(
                        name=block["name"], arguments=_canonical(block["arguments"])
                    ),
                )
            )
            parts.append({"type": "tool_use", "id": block["id"]})
        else:
            parts.append(_opaque(block))
            opaque = True
    text = "".join(texts)
    reason = finish_reason(_text(stop_reason, "the stop_reason") if stop_reason else None)
    if reason == REFUSAL and not text:
        explanation = stop_details.get("explanation") if isinstance(stop_details, dict) else None
        text = explanation if isinstance(explanation, str) and explanation else REFUSED_TEXT
        parts.append({"type": "text", "text": text})
    plain = text if text or not calls else None
    content: str | list[dict[str, Any]] | None = parts if opaque else plain
    message = seamkit.Message(role="assistant", content=content, tool_calls=tuple(calls) or None)
    return seamkit.ModelTurn(
        message=message, usage=usage or seamkit.Usage(requests=1), finish_reason=reason
    )


def turn_from_message(body: dict[str, object]) -> seamkit.ModelTurn:
    """The turn a whole (not streamed) message holds."""
    blocks: list[dict[str, Any]] = []
    content = body.get("content")
    if content is not None and not isinstance(content, list):
        raise BrokenAnswer(f"the message's content is a {type(content).__name__}, not a list")
    for block in content or ():
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_use":
            value = block.get("input")
            arguments = value if isinstance(value, str) else json.dumps(value or {})
            blocks.append({**block, "arguments": arguments})
        else:
            blocks.append(block)
    return _turn(
        blocks, body.get("stop_reason"), body.get("stop_details"), usage_of(body.get("usage"))
    )


_DELTA_INTO = {
    "text_delta": "text",
    "thinking_delta": "thinking",
    "signature_delta": "thinking",
    "input_json_delta": "json",
}
"""Which block a delta may go into (``json``: any block but these)."""

_NOT_JSON = frozenset({"text", "thinking", "redacted_thinking"})


class _Block:
    """A block being streamed: its start's ``data``, the ``pieces`` its
    deltas brought (a text block's ``text_delta`` texts, or any other
    block's ``input_json_delta`` fragments: a block gets one kind or none),
    and its ``position`` among the tool calls, for a ``tool_use`` block."""

    __slots__ = ("data", "pieces", "position")

    def __init__(self, data: dict[str, Any], position: int | None) -> None:
        self.data = data
        self.pieces: list[str] = []
        self.position = position

    @property
    def text(self) -> str:
        """A text block's text so far (its start's, then its deltas')."""
        return (self.data.get("text") or "") + "".join(self.pieces)

    def finished(self) -> dict[str, Any]:
        data = self.data
        kind = data.get("type")
        if kind == "text":
            return {**data, "text": self.text} if self.pieces else data
        if kind == "tool_use":
            value = data.get("input")
            if not self.pieces and value:  # the input came whole in the start
                text = value if isinstance(value, str) else json.dumps(value)
                return {**data, "arguments": text}
            return {**data, "arguments": "".join(self.pieces)}
        if self.pieces:  # a server tool's input, streamed like a call's
            text = "".join(self.pieces)
            try:
                return {**data, "input": json.loads(text)}
            except (ValueError, RecursionError):
                return {**data, "input": text}
        return data


class TurnAssembler:
    """Collects a streamed answer: `feed` each event's type and parsed data,
    yield what it returns, then `finish` for the turn. ``stopped`` says
    whether ``message_stop`` arrived; an ``error`` event is the caller's to
    handle (it is not fed)."""

    __slots__ = (
        "_blocks",
        "_calls",
        "_started",
        "_usage",
        "events",
        "stop_details",
        "stop_reason",
        "stopped",
    )

    def __init__(self) -> None:
        self._blocks: dict[int, _Block] = {}
        self._calls = 0
        self._started = False
        self._usage: dict[str, Any] = {}
        self.stop_reason: str | None = None
        self.stop_details: Any = None
        self.stopped = False
        self.events = 0

    def feed(self, kind: str, data: dict[str, object]) -> list[Piece]:
        """Take one event; return what it adds (text or an argument fragment),
        or ``[]``. Events it does not know (and ``ping``) are skipped."""
        self.events += 1
        if kind == "content_block_delta":
            return self._delta(data)
        if kind == "content_block_start":
            return self._start(data)
        if kind == "content_block_stop":
            return self._stop(data)
        if kind == "message_start":
            if self._started:
                raise BrokenAnswer("a second message_start")
            self._started = True
            message = _object(data.get("message"), "message_start's message")
            usage = message.get("usage")
            if isinstance(usage, dict):  # a message_delta's counts (sent first) win
                self._usage = {**usage, **self._usage}
        elif kind == "message_delta":
            delta = _object(data.get("delta"), "a message_delta's delta")
            if "stop_reason" in delta:
                self.stop_reason = _text(delta.get("stop_reason"), "the stop_reason") or None
            if delta.get("stop_details") is not None:
                self.stop_details = delta["stop_details"]
            usage = data.get("usage")
            if isinstance(usage, dict):  # cumulative: what is given replaces
                self._usage.update({k: v for k, v in usage.items() if v is not None})
        elif kind == "message_stop":
            self.stopped = True
        return []

    def _start(self, data: dict[str, object]) -> list[Piece]:
        index = data.get("index")
        block = data.get("content_block")
        if not isinstance(index, int) or not isinstance(block, dict):
            return []
        if index in self._blocks:
            raise BrokenAnswer(f"content_block_start for block {index}, which already started")
        position = None
        kind = block.get("type")
        if not isinstance(kind, str):
            raise BrokenAnswer(f"block {index} has no type")
        if kind == "tool_use":
            _check_call(block)
            position = self._calls
            self._calls += 1
        self._blocks[index] = _Block(dict(block), position)
        text = _text(block.get("text"), "a text block's text") if kind == "text" else ""
        return [text] if text else []  # a start with text in it

    def _stop(self, data: dict[str, object]) -> list[Piece]:
        """A call whose input came whole in its start (no ``input_json_delta``,
        as some proxies send it) hands its arguments over as one fragment."""
        index = data.get("index")
        block = self._blocks.get(index) if isinstance(index, int) else None
        if block is None or block.position is None or block.pieces:
            return []
        value = block.data.get("input")
        if not value:
            return []
        text = value if isinstance(value, str) else json.dumps(value)
        block.pieces.append(text)
        return [
            ToolArgumentsDelta(block.position, block.data.get("id"), block.data.get("name"), text)
        ]

    def _delta(self, data: dict[str, object]) -> list[Piece]:
        index = data.get("index")
        block = self._blocks.get(index) if isinstance(index, int) else None
        delta = data.get("delta")
        if type(delta) is not dict:
            delta = _object(delta, "a content_block_delta's delta")
        if block is None:
            raise BrokenAnswer(f"content_block_delta for block {index!r}, which never started")
        kind = delta.get("type")
        into = block.data["type"]
        if kind == "text_delta" and into == "text":  # the common case, first
            text = delta.get("text")
            if type(text) is not str:
                text = _text(text, "a text_delta's text")
            if not text:
                return []
            block.pieces.append(text)
            return [text]
        wanted = _DELTA_INTO.get(kind) if isinstance(kind, str) else None
        if wanted is not None and (into in _NOT_JSON if wanted == "json" else into != wanted):
            raise BrokenAnswer(f"a {kind} for block {index}, a {into} block")
        if kind == "input_json_delta":
            piece = _text(delta.get("partial_json"), "an input_json_delta's partial_json")
            if not piece:
                return []
            block.pieces.append(piece)
            if block.position is None:
                return []
            return [
                ToolArgumentsDelta(
                    block.position, block.data.get("id"), block.data.get("name"), piece
                )
            ]
        if kind == "thinking_delta":
            block.data["thinking"] = _text(block.data.get("thinking"), "a thinking block") + _text(
                delta.get("thinking"), "a thinking_delta's thinking"
            )
        elif kind == "signature_delta":
            block.data["signature"] = _text(delta.get("signature"), "a signature_delta's signature")
        return []  # citations_delta and the unknown: nothing to add

    @property
    def text_so_far(self) -> str:
        """The text received so far."""
        return "".join(
            b.text for _, b in sorted(self._blocks.items()) if b.data.get("type") == "text"
        )

    @property
    def open_call(self) -> tuple[str, int] | None:
        """The name and argument length of the last call begun, if any."""
        calls = [b for _, b in sorted(self._blocks.items()) if b.position is not None]
        if not calls:
            return None
        call = calls[-1]
        return str(call.data.get("name") or ""), sum(len(p) for p in call.pieces)

    @property
    def reason(self) -> str | None:
        """The turn's finish reason (`finish_reason` of the stop reason)."""
        return finish_reason(self.stop_reason)

    def finish(self) -> seamkit.ModelTurn:
        """The turn the events fed so far make."""
        blocks = [b.finished() for _, b in sorted(self._blocks.items())]
        return _turn(blocks, self.stop_reason, self.stop_details, usage_of(self._usage or None))
