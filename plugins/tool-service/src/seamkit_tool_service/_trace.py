"""Trace context in transport headers (W3C ``traceparent``), never in the
envelope: injected on the client from the current OpenTelemetry context,
extracted on the service around ``invoke``. Without OpenTelemetry installed
both are no-ops, and nothing is imported."""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator, Mapping

__all__ = ["incoming", "outgoing"]

_OTEL = importlib.util.find_spec("opentelemetry") is not None


def outgoing() -> dict[str, str]:
    """The headers that carry the current trace context (empty without one)."""
    if not _OTEL:
        return {}
    from opentelemetry.propagate import inject  # lazy: only when OpenTelemetry is installed

    carrier: dict[str, str] = {}
    inject(carrier)
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
