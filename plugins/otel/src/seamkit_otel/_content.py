"""Message content in the shape the GenAI conventions give
``gen_ai.input.messages``, ``gen_ai.output.messages`` and
``gen_ai.system_instructions``: a JSON list of ``{role, parts}`` messages,
each part ``text``, ``tool_call`` or ``tool_call_response``. Recorded only
when content capture is on, and always through the run's redactor."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from pydantic_core import to_jsonable_python
from seamkit import Message, ModelRequest, Redactor, ToolCall, secret_json

__all__ = [
    "arguments_json",
    "final_output",
    "input_messages",
    "output_messages",
    "system_instructions",
    "to_json",
    "value_json",
]


_FINISH_REASONS = {"tool_calls": "tool_call", "function_call": "tool_call"}
"""Providers' finish reasons that the conventions' output messages spell
otherwise (``stop``, ``length``, ``content_filter``, ``tool_call``, ``error``)."""


def to_json(value: object) -> str:
    """``value`` as compact JSON; a `seamkit.Secret` is written ``***`` and
    anything else JSON cannot write as its ``str``."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_fallback)


def _fallback(value: object) -> object:
    try:
        return secret_json(value)  # a Secret: ***
    except TypeError:
        return str(value)


def _parsed(arguments: str) -> object:
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


def _parts(message: Message) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    content = message.content
    if isinstance(content, str) and content:
        key = "response" if message.role == "tool" else "content"
        kind = "tool_call_response" if message.role == "tool" else "text"
        part: dict[str, Any] = {"type": kind, key: content}
        if message.role == "tool":
            part["id"] = message.tool_call_id or ""
        parts.append(part)
    elif isinstance(content, list):
        for piece in content:
            if piece.get("type") == "text":
                parts.append({"type": "text", "content": piece.get("text", "")})
            else:
                parts.append({"type": str(piece.get("type", "unknown")), "content": piece})
    for call in message.tool_calls or ():
        parts.append(
            {
                "type": "tool_call",
                "id": call.id,
                "name": call.function.name,
                "arguments": _parsed(call.function.arguments),
            }
        )
    return parts


def _messages(messages: Iterable[Message]) -> list[dict[str, Any]]:
    return [{"role": m.role, "parts": _parts(m)} for m in messages if m.role != "system"]


def input_messages(request: ModelRequest, redact: Redactor) -> str:
    """``gen_ai.input.messages`` of a model request (system messages go to
    ``gen_ai.system_instructions``)."""
    return redact(to_json(_messages(request.messages)))


def system_instructions(request: ModelRequest, redact: Redactor) -> str | None:
    """``gen_ai.system_instructions``: the preamble and the system messages,
    or ``None`` when there are none."""
    texts = [request.preamble] if request.preamble else []
    texts += [
        m.content for m in request.messages if m.role == "system" and isinstance(m.content, str)
    ]
    if not texts:
        return None
    return redact(to_json([{"type": "text", "content": text} for text in texts]))


def output_messages(message: Message, finish_reason: str | None, redact: Redactor) -> str:
    """``gen_ai.output.messages`` of a model turn."""
    reason = _FINISH_REASONS.get(finish_reason or "stop", finish_reason)
    out = {"role": message.role, "parts": _parts(message), "finish_reason": reason}
    return redact(to_json([out]))


def arguments_json(call: ToolCall, redact: Redactor) -> str:
    """``gen_ai.tool.call.arguments`` of a tool call."""
    return redact(to_json(call.arguments))


def final_output(text: str, redact: Redactor) -> str:
    """``gen_ai.output.messages`` of a run's final output (its agent span)."""
    return redact(to_json([{"role": "assistant", "parts": [{"type": "text", "content": text}]}]))


def value_json(value: object) -> str:
    """A structured run's validated value as JSON (a model, a dataclass, a
    TypedDict's dict, a scalar or list: by alias, as `seamkit.Output.dump`
    writes it), not its ``repr``."""
    return to_json(to_jsonable_python(value, by_alias=True, fallback=repr))
