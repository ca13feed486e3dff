"""What a provider's errors say about a server's answer and an API key:
the server's own words, with secrets masked before they are cut short, and
where a key came from, never the key."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

import seamkit

__all__ = [
    "MESSAGE_LIMIT",
    "answered",
    "context_too_long",
    "error_object",
    "json_object",
    "key_origin",
    "key_refused",
    "parsed_object",
    "server_message",
    "shown",
    "status_failure",
]

MESSAGE_LIMIT = 500
"""The most characters of a server's message an error quotes."""

_VARIABLE = re.compile(r"\$\{(?:secret|env):([A-Za-z_][A-Za-z0-9_]*)")


def error_object(body: bytes) -> Mapping[str, object]:
    """The error object of an error body: its ``error`` mapping (OpenAI's and
    Anthropic's shape), else the body's own mapping (vLLM's older flat
    ``{"object": "error", "message": ...}``), else an empty one."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return {}
    if not isinstance(data, dict):
        return {}
    error = data.get("error")
    if isinstance(error, dict):
        return error
    return data


def server_message(body: bytes, secrets: Sequence[str] = ()) -> str:
    """The server's own words about an error: ``error.message`` (or a
    ``message``, ``detail`` or ``error`` text); else the start of the body.
    ``secrets`` are masked before the words are cut short, so no part of one
    shows."""
    error = error_object(body)
    for key in ("message", "detail", "error"):
        value = error.get(key)
        if isinstance(value, str) and value:
            return seamkit.redact(value, secrets)[:MESSAGE_LIMIT]
    text = seamkit.redact(body.decode("utf-8", "replace"), secrets).strip()
    return text[:MESSAGE_LIMIT] or "(no message)"


def shown(raw: str | bytes, secrets: Sequence[str] = (), limit: int = 200) -> str:
    """The start of a body that is not what was expected, quoted for an
    error, its ``secrets`` masked before it is cut to ``limit`` characters."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    return repr(seamkit.redact(text, secrets)[:limit])


_RAW_DECODE = json.JSONDecoder().raw_decode


def parsed_object(raw: str | bytes) -> dict[str, object] | None:
    """``raw`` parsed when it is one JSON object (whitespace around it
    allowed), else ``None``. A text that starts with ``{`` is read with
    ``JSONDecoder.raw_decode``, as ``json.loads`` reads it less its two
    whitespace scans and a call: about half its cost on a stream event."""
    data: object = None
    try:
        if isinstance(raw, str) and raw[:1] == "{":
            data, end = _RAW_DECODE(raw)
            if end != len(raw) and raw[end:].strip():
                return None  # more after the object
        else:
            data = json.loads(raw)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None  # RecursionError: nested deeper than Python's stack
    return data if isinstance(data, dict) else None


def json_object(
    raw: str | bytes, what: str, *, where: str, provider: str, secrets: Sequence[str] = ()
) -> dict[str, object]:
    """``raw`` parsed, when it is a JSON object (`parsed_object`); else a
    `seamkit.ModelError` saying that ``where`` sent ``what`` ("an answer",
    "a stream event") that is not one, quoting its start with ``secrets``
    masked (`shown`)."""
    data = parsed_object(raw)
    if data is None:
        raise seamkit.ModelError(
            f"{where} sent {what} that is not a JSON object: {shown(raw, secrets)}",
            provider=provider,
        )
    return data


def key_origin(key: seamkit.Secret[str] | None) -> str | None:
    """Where the API key came from, for an error message: the variables it was
    read from (``OPENAI_API_KEY``, ``MY_KEY`` for ``${secret:MY_KEY}``),
    never the value; ``None`` when there is no key."""
    if key is None:
        return None
    source = key.source
    if source is None:
        return "the api_key in the model's config"
    variables = _VARIABLE.findall(source) or [source]
    return f"the API key from {', '.join(variables)}"


def key_refused(
    status: int,
    said: str,
    *,
    where: str,
    model: str,
    key: str | None,
    attempts: int,
    provider: str,
    variable: str,
) -> seamkit.ModelError:
    """The error for a 401 or 403: the server wants a key and none was set
    (``key`` is ``None``; the hint names the environment ``variable`` the
    provider reads), or it refused the key from ``key`` (a `key_origin`).
    ``said`` is the server's words, already masked (`server_message`)."""
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    if key is None:
        return seamkit.ModelError(
            f"{where} wants an API key, and none was set ({status}{tries}: {said})",
            provider=provider,
            hint=f"set {variable}, or api_key: ${{secret:VAR}} in the model's config",
        )
    return seamkit.ModelError(
        f"{where} refused {key} ({status}{tries}: {said})",
        provider=provider,
        hint=f"check that the key is current and allowed to use model {model!r}",
    )


def status_failure(
    status: int,
    said: str,
    *,
    where: str,
    model: str,
    key: str | None,
    attempts: int,
    provider: str,
    variable: str,
    endpoint: str,
    root_hint: str,
) -> seamkit.ModelError | None:
    """The error for a final answer whose status says the same at every
    provider: a 401 or 403 (`key_refused`, ``variable`` the provider's key
    variable) or a 404 (no model ``model``, or no ``endpoint``; ``root_hint``
    says what the provider's base URL looks like); ``None`` for any other
    status, which is the provider's to word. ``said`` is the server's words,
    already masked (`server_message`)."""
    if status in (401, 403):
        return key_refused(
            status,
            said,
            where=where,
            model=model,
            key=key,
            attempts=attempts,
            provider=provider,
            variable=variable,
        )
    if status == 404:
        return seamkit.ModelError(
            f"{where} has no model {model!r} or no {endpoint} endpoint (404: {said})",
            provider=provider,
            hint=f"check the model's name, and that base_url is {root_hint}",
        )
    return None


def context_too_long(
    where: str, model: str, said: str, *, provider: str
) -> seamkit.ContextLengthExceeded:
    """The error for a request that does not fit the model's context window."""
    return seamkit.ContextLengthExceeded(
        f"{where}: the request does not fit model {model!r}'s context window ({said})",
        provider=provider,
        model=model,
    )


def answered(
    status: int, said: str, *, where: str, attempts: int, provider: str
) -> seamkit.ModelError:
    """The error for a final answer of ``status`` nothing more is known
    about: the status, how many attempts, and the server's words."""
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    return seamkit.ModelError(f"{where} answered {status}{tries}: {said}", provider=provider)
