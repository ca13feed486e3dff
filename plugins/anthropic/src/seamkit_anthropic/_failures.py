"""What a failed answer means: whether to retry it, how long to wait, and
the `seamkit.ModelError` a user reads when retrying is over.

The retry policy is the official client's (``anthropic-sdk-python``,
``_base_client.py``: ``_should_retry``, ``_parse_retry_after_header``,
``_calculate_retry_timeout``), which the OpenAI client shares and seamkit
writes once (`seamkit.plugins.retry_status`, `seamkit.plugins.retry_wait`):
408, 409, 429 and 5xx answers (529, "overloaded", included) and lost
connections are retried, an ``x-should-retry`` header overrides, and the wait
is the server's ``retry-after-ms`` or ``retry-after`` when that is at most a
minute, else exponential with jitter. Only an answer that has not begun is
retried.

Anthropic's error body is ``{"type": "error", "error": {"type", "message"},
"request_id"}``; the same object arrives as an ``error`` event inside a
stream that began with a 200.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import seamkit
from seamkit_http import answered, context_too_long, error_object, server_message, status_failure

__all__ = ["answer_failure", "failure"]

_CONTEXT_WORDS = re.compile(
    r"prompt is too long|exceeds? (the )?context (limit|window)|context[ _-]?(length|window)|"
    r"maximum context|ContextWindowExceeded|too many tokens",
    re.IGNORECASE,
)
_PROVIDER = "anthropic"


def _error_type(body: bytes) -> str:
    value = error_object(body).get("type")
    return value if isinstance(value, str) else ""


def answer_failure(
    error: object, *, where: str, model: str, secrets: Sequence[str]
) -> seamkit.ModelError:
    """The error for an ``error`` event inside a stream that began with a
    200 (``overloaded_error``, say), or an error object in a 200 body. It is
    never retried: part of the answer may already be out."""
    if error is None:
        error = {"message": "(the error event has no error object)"}
    body = json.dumps({"type": "error", "error": error}).encode()
    said = server_message(body, secrets)
    if _CONTEXT_WORDS.search(said):
        return context_too_long(where, model, said, provider=_PROVIDER)
    kind = _error_type(body)
    hint = "the API was busy; run again" if kind in ("overloaded_error", "api_error") else None
    label = f" ({kind})" if kind else ""
    return seamkit.ModelError(
        f"{where} reported an error in its answer{label}: {said}", provider=_PROVIDER, hint=hint
    )


def failure(
    status: int,
    body: bytes,
    *,
    where: str,
    model: str,
    key: str | None,
    attempts: int,
    secrets: Sequence[str],
) -> seamkit.ModelError:
    """The error for a final answer of ``status``: ``where`` names the provider
    and base URL, ``key`` where the API key came from (never the key), or
    ``None`` when no key was set."""
    said = server_message(body, secrets)
    known = status_failure(
        status,
        said,
        where=where,
        model=model,
        key=key,
        attempts=attempts,
        provider=_PROVIDER,
        variable="ANTHROPIC_API_KEY",
        endpoint="/v1/messages",
        root_hint="the API's root",
    )
    if known is not None:
        return known
    if status == 413:
        return seamkit.ModelError(
            f"{where} answered 413: the request is too large to send ({said})",
            provider=_PROVIDER,
            hint="the Messages API takes at most 32 MB per request; send fewer or smaller "
            "images and documents",
        )
    if status in (400, 422) and _CONTEXT_WORDS.search(said):
        return context_too_long(where, model, said, provider=_PROVIDER)
    return answered(status, said, where=where, attempts=attempts, provider=_PROVIDER)
