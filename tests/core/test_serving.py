"""What serving plugins share, from `seamkit.plugins`: `listening_socket`
(``TCP_NODELAY`` on) and the W3C trace context, baggage included, in and out
of headers."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest
import seamkit
from opentelemetry import baggage, context, trace
from opentelemetry.sdk.trace import TracerProvider
from seamkit.plugins import (
    TRACE_HEADERS,
    continue_trace,
    current_trace_headers,
    listening_socket,
    trace_headers,
)

CALLER = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


@pytest.fixture
def server() -> Iterator[socket.socket]:
    sock = listening_socket("127.0.0.1", 0)
    yield sock
    sock.close()


def test_the_listening_socket_has_tcp_nodelay_and_so_do_accepted_ones(
    server: socket.socket,
) -> None:
    assert server.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    assert server.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR) != 0
    assert server.get_inheritable()
    port = server.getsockname()[1]
    with socket.create_connection(("127.0.0.1", port)):
        accepted, _ = server.accept()
        with accepted:
            assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0


def test_an_address_in_use_is_a_seamkit_error_with_a_hint(server: socket.socket) -> None:
    port = server.getsockname()[1]
    with pytest.raises(seamkit.SeamkitError) as caught:
        listening_socket("127.0.0.1", port)
    assert caught.value.message.startswith(f"cannot listen on 127.0.0.1:{port}: ")
    assert caught.value.hint == "pick another --port, or stop what listens there"


def test_trace_headers_keeps_the_three_w3c_headers_only() -> None:
    headers = {"traceparent": CALLER, "tracestate": "a=b", "baggage": "k=v", "x-other": "no"}
    assert trace_headers(headers) == {"traceparent": CALLER, "tracestate": "a=b", "baggage": "k=v"}
    assert trace_headers({"x-other": "no"}) == {}
    assert TRACE_HEADERS == ("traceparent", "tracestate", "baggage")


def test_continue_trace_brings_the_callers_span_and_baggage() -> None:
    with continue_trace({"traceparent": CALLER, "baggage": "tenant=acme"}):
        current = trace.get_current_span().get_span_context()
        assert f"{current.trace_id:032x}" == CALLER_TRACE
        assert baggage.get_baggage("tenant") == "acme"
    assert not trace.get_current_span().get_span_context().is_valid
    assert baggage.get_baggage("tenant") is None


def test_continue_trace_keeps_the_current_contexts_baggage() -> None:
    token = context.attach(baggage.set_baggage("region", "eu"))
    try:
        with continue_trace({"traceparent": CALLER, "baggage": "tenant=acme"}):
            assert baggage.get_baggage("region") == "eu"  # e.g. an ASGI middleware's
            assert baggage.get_baggage("tenant") == "acme"
    finally:
        context.detach(token)


def test_baggage_alone_is_continued_too() -> None:
    with continue_trace({"baggage": "tenant=acme"}):
        assert baggage.get_baggage("tenant") == "acme"
        assert not trace.get_current_span().get_span_context().is_valid


@pytest.mark.parametrize("headers", [None, {}, {"tracestate": "a=b"}, {"x-other": "1"}])
def test_without_trace_headers_the_body_runs_as_it_is(headers: dict[str, str] | None) -> None:
    before = context.get_current()
    with continue_trace(headers):
        assert context.get_current() is before


def test_current_trace_headers_are_empty_without_span_or_baggage() -> None:
    assert current_trace_headers() == {}


def test_current_trace_headers_carry_the_span_and_the_baggage_across() -> None:
    tracer = TracerProvider().get_tracer("tests.serving")
    token = context.attach(baggage.set_baggage("tenant", "acme"))
    try:
        with tracer.start_as_current_span("caller") as span:
            sent = dict(current_trace_headers())
    finally:
        context.detach(token)
    assert set(sent) == {"traceparent", "baggage"}
    with continue_trace(sent):  # what the service on the other side does
        current = trace.get_current_span().get_span_context()
        assert current.trace_id == span.get_span_context().trace_id
        assert baggage.get_baggage("tenant") == "acme"


def test_baggage_without_a_span_goes_out_too() -> None:
    token = context.attach(baggage.set_baggage("tenant", "acme"))
    try:
        assert dict(current_trace_headers()) == {"baggage": "tenant=acme"}
    finally:
        context.detach(token)


def test_the_helpers_import_no_opentelemetry_until_a_trace_is_continued() -> None:
    code = (
        "import sys\n"
        "from seamkit.plugins import continue_trace, listening_socket, trace_headers\n"
        "listening_socket('127.0.0.1', 0).close()\n"
        "trace_headers({'x': '1'})\n"
        "with continue_trace({}):\n"
        "    pass\n"
        "print([m for m in sys.modules if m.startswith('opentelemetry')])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
