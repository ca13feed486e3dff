"""A caller's trace context (W3C ``traceparent`` and ``tracestate`` request
headers), continued by the run a request starts, so that one trace spans the
caller, the agent and what the agent calls. Without OpenTelemetry installed
this is a no-op, and nothing of it is imported."""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator, Mapping

__all__ = ["carried", "incoming"]

# the API itself: other OpenTelemetry packages share the "opentelemetry" namespace
_OTEL = importlib.util.find_spec("opentelemetry.propagate") is not None
_HEADERS = ("traceparent", "tracestate")


def carried(headers: Mapping[str, str]) -> dict[str, str]:
    """The trace-context headers among a request's ``headers`` (empty when
    it has none); what `incoming` takes."""
    return {name: value for name in _HEADERS if (value := headers.get(name)) is not None}


@contextlib.contextmanager
def incoming(headers: Mapping[str, str] | None) -> Iterator[None]:
    """Run the body in the trace context ``headers`` carry, if any."""
    if not _OTEL or not headers or "traceparent" not in headers:
        yield
        return
    from opentelemetry.context import attach, detach, get_current  # lazy: only with OpenTelemetry
    from opentelemetry.propagate import extract

    token = attach(extract(dict(headers), context=get_current()))  # keeps the baggage
    try:
        yield
    finally:
        detach(token)
