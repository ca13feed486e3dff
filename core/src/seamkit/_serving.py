"""What plugins that serve over the network share: a listening socket with
``TCP_NODELAY`` on, and the W3C trace context (``traceparent``,
``tracestate``, ``baggage``) carried in and out of request headers.

OpenTelemetry is optional: without it the trace-context helpers do nothing,
and nothing of it is imported until a helper is first used.
"""

from __future__ import annotations

import contextlib
import functools
import socket
from collections.abc import Iterator, Mapping

from ._errors import SeamkitError

__all__ = [
    "TRACE_HEADERS",
    "continue_trace",
    "current_trace_headers",
    "listening_socket",
    "trace_headers",
]

TRACE_HEADERS = ("traceparent", "tracestate", "baggage")
"""The request headers that carry a caller's trace context (W3C Trace Context
and W3C Baggage), lower case."""

_NONE: Mapping[str, str] = {}


def listening_socket(host: str, port: int, *, backlog: int = 2048) -> socket.socket:
    """A TCP socket bound to ``host``:``port`` (port 0: any free port) and
    listening, for a server to accept on: ``TCP_NODELAY`` on, which the
    sockets it accepts inherit, so that no reply waits on Nagle's algorithm;
    ``SO_REUSEADDR`` on; inheritable, so that worker processes can share it.
    Raises `seamkit.SeamkitError` when the address cannot be bound."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise SeamkitError(
            f"cannot listen on {host}:{port}: {exc.strerror}",
            hint="pick another --port, or stop what listens there",
        ) from None
    sock.listen(backlog)
    sock.set_inheritable(True)
    return sock


def trace_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The trace-context headers (`TRACE_HEADERS`) among a request's
    ``headers`` (empty when it has none): what `continue_trace` takes, for a
    request whose work runs later than its headers are read."""
    return {name: value for name in TRACE_HEADERS if (value := headers.get(name)) is not None}


@functools.cache
def _otel() -> bool:
    """Whether the OpenTelemetry API is installed (other OpenTelemetry
    packages share the ``opentelemetry`` namespace: look for the API itself)."""
    from importlib.util import find_spec  # lazy: asked once, on the first request

    try:
        return find_spec("opentelemetry.propagate") is not None
    except ImportError:  # no "opentelemetry" package at all
        return False


@contextlib.contextmanager
def continue_trace(headers: Mapping[str, str] | None) -> Iterator[None]:
    """Run the body in the trace context a caller's ``headers`` carry: its
    span (``traceparent``, ``tracestate``) and its ``baggage``, on top of the
    current context (whose baggage, an ASGI middleware's say, is kept unless
    the caller sent the same keys). Without such headers, or without
    OpenTelemetry, the body runs as it is."""
    if not headers or ("traceparent" not in headers and "baggage" not in headers) or not _otel():
        yield
        return
    from opentelemetry.context import attach, detach, get_current  # lazy: only with OpenTelemetry
    from opentelemetry.propagate import extract  # lazy: see above

    token = attach(extract(dict(headers), context=get_current()))
    try:
        yield
    finally:
        detach(token)


def current_trace_headers() -> Mapping[str, str]:
    """The headers that carry the current trace context (span and baggage) to
    a service this process calls; empty, and not to be changed, when there is
    neither a current span nor baggage, or no OpenTelemetry."""
    if not _otel():
        return _NONE
    api = _api()
    if not api.current_span().get_span_context().is_valid and not api.baggage():
        return _NONE
    carrier: dict[str, str] = {}
    api.inject(carrier)
    return carrier


class _Api:
    """The OpenTelemetry functions `current_trace_headers` calls, imported once."""

    def __init__(self) -> None:
        from opentelemetry.baggage import get_all  # lazy: only with OpenTelemetry installed
        from opentelemetry.propagate import inject  # lazy: see above
        from opentelemetry.trace import get_current_span  # lazy: see above

        self.inject = inject
        self.current_span = get_current_span
        self.baggage = get_all


@functools.cache
def _api() -> _Api:
    return _Api()
