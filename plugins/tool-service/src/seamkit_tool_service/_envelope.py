"""The wire envelope, JSON on every transport.

A request is ``{id, user, config, arguments, call_id, idempotency_key,
attempt}``, ``config`` and ``arguments`` being JSON-encoded strings (as in
the reference); ``id`` matches replies to this request, while ``call_id``,
``idempotency_key`` and ``attempt`` tell the service about the tool call
(`ServiceCall`): a call run again after a crash is a new request with a new
``id`` and the same ``idempotency_key``. A request without them (from an
older caller) is read with empty ones. A reply is ``{id, error: {type,
message} | null, response, end_of_stream}``. A streamed reply is several
replies with one id, the last with ``end_of_stream: true``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ._errors import EnvelopeError

__all__ = [
    "Reply",
    "Request",
    "ServiceCall",
    "decode_reply",
    "decode_request",
    "encode_reply",
    "encode_request",
]

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_loads = json.loads


@dataclass(frozen=True, slots=True)
class ServiceCall:
    """What a service learns about the tool call it answers, beside its
    user, config and arguments (a ``DynamicToolService.invoke`` that takes a
    fourth parameter receives it).

    ``call_id`` is the model's id of the tool call; ``idempotency_key`` is
    the key the agent made for the call and journaled before sending it: a
    call sent again after a crash (a tool whose ``effects`` are
    ``idempotent``) carries the same key, with ``attempt`` 2 or more, so the
    service can act once per key. Both are empty when the caller did not
    send them (an older seamkit).

    ``caller`` is who the transport authenticated (never the envelope):
    over HTTP the id of the bearer token (``--token-env ID=VAR``) or the
    subject of the client certificate, ``None`` when the service takes
    anyone. ``user_verified`` is true only when that caller is one the
    service trusts to assert users (``DynamicToolService.trust_user_from``);
    otherwise ``user`` is only what the agent says. Trust these two, not
    ``user``.
    """

    call_id: str = ""
    idempotency_key: str = ""
    attempt: int = 1
    caller: str | None = None
    user_verified: bool = False


@dataclass(frozen=True, slots=True)
class Request:
    """A request as a service receives it, ``config`` and ``arguments``
    decoded, and what the envelope says about the tool call."""

    id: str
    user: str
    config: dict[str, Any]
    arguments: dict[str, Any]
    call: ServiceCall = ServiceCall()


@dataclass(slots=True)
class Reply:
    """One reply message: a chunk of the response, or the error, and whether
    it is the last."""

    id: str
    response: str
    error: tuple[str, str] | None
    end_of_stream: bool


def encode_request(
    call_id: str, user: str, config: str, arguments: str, *, call: ServiceCall | None = None
) -> bytes:
    """A request envelope with the id ``call_id`` (which replies carry);
    ``config`` and ``arguments`` are JSON texts already. ``call`` adds the
    tool call's ``call_id``, ``idempotency_key`` and ``attempt``."""
    envelope: dict[str, Any] = {
        "id": call_id,
        "user": user,
        "config": config,
        "arguments": arguments,
    }
    if call is not None:
        envelope["call_id"] = call.call_id
        envelope["idempotency_key"] = call.idempotency_key
        envelope["attempt"] = call.attempt
    return _dumps(envelope).encode()


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
    except RecursionError:
        raise EnvelopeError(f"the {what} is nested too deeply") from None
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


MAX_DEPTH = 64
"""How deeply a request's config and arguments may nest (objects and arrays)."""


def _depth(value: Any) -> int:
    """How deeply ``value`` nests (a scalar: 0), without recursion."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, level = todo.pop()
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        )
        if children is None:
            continue
        deepest = max(deepest, level)
        todo.extend((child, level + 1) for child in children)
    return deepest


def decode_request(data: bytes | str) -> Request:
    """The request in ``data``. Raises `EnvelopeError` when it is malformed
    (config or arguments nested deeper than `MAX_DEPTH` among it)."""
    envelope = _object(data, "request")
    call_id = _text(envelope, "id", "request")
    user = _text(envelope, "user", "request", default="")
    parts: list[dict[str, Any]] = []
    for field in ("config", "arguments"):
        text = _text(envelope, field, "request", default="{}")
        value = _object(text, f"request's '{field}'") if text else {}
        if _depth(value) > MAX_DEPTH:
            raise EnvelopeError(f"the request's '{field}' nests deeper than {MAX_DEPTH} levels")
        parts.append(value)
    attempt = envelope.get("attempt", 1)
    if type(attempt) is not int or attempt < 1:
        raise EnvelopeError(f"the request's 'attempt' is {attempt!r}, not a whole number >= 1")
    call = ServiceCall(
        _text(envelope, "call_id", "request", default=""),
        _text(envelope, "idempotency_key", "request", default=""),
        attempt,
    )
    return Request(call_id, user, parts[0], parts[1], call)
