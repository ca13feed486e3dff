"""The wire envelope, JSON on every transport.

A request is ``{id, user, config, arguments}``, ``config`` and ``arguments``
being JSON-encoded strings (as in the reference); a reply is ``{id, error:
{type, message} | null, response, end_of_stream}``. A streamed reply is
several replies with one id, the last with ``end_of_stream: true``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ._errors import EnvelopeError

__all__ = [
    "Reply",
    "Request",
    "decode_reply",
    "decode_request",
    "encode_reply",
    "encode_request",
]

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_loads = json.loads


@dataclass(frozen=True, slots=True)
class Request:
    """A request as a service receives it, ``config`` and ``arguments`` decoded."""

    id: str
    user: str
    config: dict[str, Any]
    arguments: dict[str, Any]


@dataclass(slots=True)
class Reply:
    """One reply message: a chunk of the response, or the error, and whether
    it is the last."""

    id: str
    response: str
    error: tuple[str, str] | None
    end_of_stream: bool


def encode_request(call_id: str, user: str, config: str, arguments: str) -> bytes:
    """A request envelope; ``config`` and ``arguments`` are JSON texts already."""
    return _dumps({"id": call_id, "user": user, "config": config, "arguments": arguments}).encode()


def encode_reply(
    call_id: str,
    response: str = "",
    *,
    error: tuple[str, str] | None = None,
    end_of_stream: bool = True,
) -> bytes:
    """A reply envelope (``error`` is ``(type, message)``)."""
    return _dumps(
        {
            "id": call_id,
            "error": None if error is None else {"type": error[0], "message": error[1]},
            "response": response,
            "end_of_stream": end_of_stream,
        }
    ).encode()


def _object(data: bytes | str, what: str) -> dict[str, Any]:
    try:
        value = _loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        preview = bytes(data[:60]) if isinstance(data, bytes) else data[:60].encode()
        raise EnvelopeError(f"the {what} is not JSON ({exc}): {preview!r}") from None
    if not isinstance(value, dict):
        raise EnvelopeError(f"the {what} is a JSON {type(value).__name__}, not an object")
    return value


def _text(envelope: dict[str, Any], field: str, what: str, *, default: str | None = None) -> str:
    value = envelope.get(field, default)
    if not isinstance(value, str):
        raise EnvelopeError(
            f"the {what} has no '{field}'"
            if value is None
            else f"the {what}'s '{field}' is a {type(value).__name__}, not a string"
        )
    return value


def decode_reply(data: bytes | str) -> Reply:
    """The reply in ``data``. Raises `EnvelopeError` for malformed JSON, a
    missing ``id`` or a field of the wrong type."""
    envelope = _object(data, "reply")
    call_id = _text(envelope, "id", "reply")
    error = envelope.get("error")
    problem: tuple[str, str] | None = None
    if error is not None:
        if not isinstance(error, dict):
            raise EnvelopeError("the reply's 'error' is not an object {type, message}")
        problem = (str(error.get("type") or "Error"), str(error.get("message") or ""))
    response = envelope.get("response")
    if response is None:
        response = ""
    elif not isinstance(response, str):
        response = _dumps(response)  # a service that sent JSON, not text
    return Reply(call_id, response, problem, bool(envelope.get("end_of_stream", True)))


def decode_request(data: bytes | str) -> Request:
    """The request in ``data``. Raises `EnvelopeError` when it is malformed."""
    envelope = _object(data, "request")
    call_id = _text(envelope, "id", "request")
    user = _text(envelope, "user", "request", default="")
    parts: list[dict[str, Any]] = []
    for field in ("config", "arguments"):
        text = _text(envelope, field, "request", default="{}")
        value = _object(text, f"request's '{field}'") if text else {}
        parts.append(value)
    return Request(call_id, user, parts[0], parts[1])
