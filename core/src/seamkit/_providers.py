"""What model providers that speak HTTP share, so each writes it once: the
retry policy of the official OpenAI and Anthropic clients (`retry_status`,
`retry_wait`), the text form of a request's documents (`render_documents`),
which every provider puts in its system text alike, and a base URL as it may
be shown (`shown_url`)."""

from __future__ import annotations

import email.utils
import json
import random
import time
from collections.abc import Mapping
from urllib.parse import urlsplit, urlunsplit

from ._types import Document

__all__ = ["render_documents", "retry_status", "retry_wait", "shown_url"]

_RETRY_STATUSES = frozenset({408, 409, 429})
_MAX_SERVER_WAIT = 60.0


def retry_status(status: int, headers: Mapping[str, str]) -> bool:
    """Whether an answer of ``status`` is worth asking again, as the official
    clients judge it: 408, 409, 429 and every 5xx (Anthropic's 529 too),
    unless the server's ``x-should-retry: true|false`` says otherwise."""
    override = headers.get("x-should-retry")
    if override == "true":
        return True
    if override == "false":
        return False
    return status in _RETRY_STATUSES or status >= 500


def _server_wait(headers: Mapping[str, str]) -> float | None:
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return float(millis) / 1000
        except ValueError:
            pass
    after = headers.get("retry-after")
    if after is None:
        return None
    try:
        return float(after)
    except ValueError:
        parsed = email.utils.parsedate_tz(after)
        if parsed is None:
            return None
        return float(email.utils.mktime_tz(parsed) - time.time())


def retry_wait(retry: int, headers: Mapping[str, str]) -> float:
    """Seconds to wait before retry number ``retry`` (0 for the first): the
    server's ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date)
    when it gives one of at most a minute, else ``min(0.5 * 2**retry, 8)``
    less up to a quarter of jitter."""
    wait = _server_wait(headers)
    if wait is not None and 0 <= wait <= _MAX_SERVER_WAIT:
        return wait
    return min(0.5 * 2.0**retry, 8.0) * (1 - 0.25 * random.random())


def render_documents(documents: tuple[Document, ...]) -> str:
    """A request's documents (``extra_context``) as one block of text:
    ``<documents>``, then per document ``<document id="...">``, a
    ``<metadata>{json}</metadata>`` line when it has metadata, its text and
    ``</document>``, then ``</documents>``, one per line."""
    parts = ["<documents>"]
    for doc in documents:
        parts.append(f'<document id="{_attribute(doc.id)}">')
        if doc.metadata:
            parts.append(f"<metadata>{json.dumps(doc.metadata, sort_keys=True)}</metadata>")
        parts.append(doc.text)
        parts.append("</document>")
    parts.append("</documents>")
    return "\n".join(parts)


def _attribute(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


def shown_url(url: str) -> str:
    """``url`` as an error, a log line or a file may show it: without its
    user, password, query and fragment, any of which may carry a key
    (``http://ann:KEY@host/v1?key=KEY`` is ``http://host/v1``)."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))
