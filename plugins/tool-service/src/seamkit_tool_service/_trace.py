"""Trace context in transport headers (W3C ``traceparent``), never in the
envelope: injected on the client from the current OpenTelemetry context,
extracted on the service around ``invoke``. Without OpenTelemetry installed
both are no-ops, and nothing is imported."""

from __future__ import annotations

import contextlib
import functools
import importlib.util
from collections.abc import Iterator, Mapping

__all__ = ["incoming", "outgoing"]

# the API itself: other OpenTelemetry packages share the "opentelemetry" namespace
_OTEL = importlib.util.find_spec("opentelemetry.propagate") is not None


_NONE: dict[str, str] = {}


def outgoing() -> dict[str, str]:
    """The headers that carry the current trace context (empty, and not to be
    changed, when there is no current span)."""
    if not _OTEL:
        return _NONE
    api = _otel()
    if not api.current_span().get_span_context().is_valid:
        return _NONE
    carrier: dict[str, str] = {}
    api.inject(carrier)
    return carrier


@contextlib.contextmanager
def incoming(headers: Mapping[str, str] | None) -> Iterator[None]:
    """Run the body in the trace context ``headers`` carry, if any."""
    if not _OTEL or not headers or "traceparent" not in headers:
        yield
        return
    from opentelemetry.context import attach, detach  # lazy: see above
    from opentelemetry.propagate import extract

    token = attach(extract(dict(headers)))
    try:
        yield
    finally:
        detach(token)


class _Api:
    """The OpenTelemetry functions used here, imported once."""

    def __init__(self) -> None:
        from opentelemetry.propagate import inject  # lazy: only with OpenTelemetry installed
        from opentelemetry.trace import get_current_span

        self.inject = inject
        self.current_span = get_current_span


@functools.cache
def _otel() -> _Api:
    return _Api()
