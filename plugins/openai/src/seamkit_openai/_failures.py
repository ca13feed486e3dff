"""What a failed answer means: whether to retry it, how long to wait, and
the `seamkit.ModelError` a user reads when retrying is over.

The retry policy is the official client's: 408, 409, 429 and 5xx answers and
lost connections are retried (an ``x-should-retry`` header overrides), after
``retry-after-ms`` or ``retry-after`` when the server gives one of at most a
minute, else after ``min(0.5 * 2**n, 8)`` seconds less up to a quarter of
jitter. One difference: a 429 whose code is ``insufficient_quota`` is not
retried, as no wait will fix it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

import seamkit
from seamkit.plugins import retry_status
from seamkit_http import answered, context_too_long, error_object, server_message, status_failure

__all__ = ["answer_failure", "failure", "should_retry"]

_CONTEXT_CODES = frozenset(
    {"context_length_exceeded", "exceed_context_size_error", "string_above_max_length"}
)
_CONTEXT_WORDS = re.compile(
    r"context[ _-]?(length|window)|maximum context|ContextWindowExceeded|"
    r"prompt is too long|too many tokens|exceeds? the (model'?s? )?(maximum )?context",
    re.IGNORECASE,
)


def _code(body: bytes) -> str:
    error = error_object(body)
    return " ".join(str(error.get(k) or "") for k in ("code", "type"))


def _context_exceeded(body: bytes, said: str) -> bool:
    return bool(set(_code(body).split()) & _CONTEXT_CODES or _CONTEXT_WORDS.search(said))


def answer_failure(
    error: object, *, where: str, model: str, secrets: Sequence[str]
) -> seamkit.ModelError:
    """The error for an ``{"error": ...}`` in a 200 answer: a stream event
    (vLLM, OpenRouter send one) or a whole body."""
    body = json.dumps({"error": error}).encode()
    said = server_message(body, secrets)
    if _context_exceeded(body, said):
        return context_too_long(where, model, said, provider="openai")
    return seamkit.ModelError(f"{where} reported an error in its answer: {said}", provider="openai")


def should_retry(status: int, headers: Mapping[str, str], body: bytes) -> bool:
    """Whether an answer with ``status`` is worth asking again: the official
    client's rule (`seamkit.plugins.retry_status`), less a 429 for an
    exhausted quota."""
    if status == 429 and "insufficient_quota" in _code(body) and "x-should-retry" not in headers:
        return False
    return retry_status(status, headers)


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
        provider="openai",
        variable="OPENAI_API_KEY",
        endpoint="chat-completions",
        root_hint="the API's root (most end in /v1)",
    )
    if known is not None:
        return known
    if status in (400, 413, 422) and _context_exceeded(body, said):
        return context_too_long(where, model, said, provider="openai")
    return answered(status, said, where=where, attempts=attempts, provider="openai")
