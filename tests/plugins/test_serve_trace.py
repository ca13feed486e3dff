"""``seamkit serve`` continues a caller's W3C trace context: a request's
``traceparent`` (and ``tracestate``) header is the context of its run, whole
or streamed, so that a tool of the app runs in the caller's trace; the
caller's ``baggage`` header comes along.

The server is a real process (`Served`), without an OpenTelemetry SDK of its
own: the tool sees the caller's span context itself. The served app is
``tests/fixtures/serve/trace.yaml``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import baggage, context, trace
from opentelemetry.propagate import inject
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from seamkit.plugins import continue_trace

from tests.plugins.test_serve import Served, ask


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    served = Served("trace", tmp_path_factory.mktemp("trace"))
    yield served
    served.stop()


def where(served: Served, stream: bool, headers: dict[str, str]) -> str:
    """What the app's tool says of the trace context it ran in, for a
    request with ``headers``."""
    answer = ask(served.client(), "where?", model="trace", stream=stream, extra_headers=headers)
    if not stream:
        return str(answer.choices[0].message.content)
    return "".join(c.choices[0].delta.content or "" for c in answer if c.choices)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_run_continues_the_callers_trace(served: Served, stream: bool) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()  # local: the global provider can be set only once
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("tests.serve").start_as_current_span("caller") as span:
        headers: dict[str, str] = {}
        inject(headers)
    headers["tracestate"] = "seamkit=test"
    seen = where(served, stream, headers)
    caller = span.get_span_context()
    assert seen == f"{caller.trace_id:032x} {caller.span_id:016x} seamkit=test"
    assert headers["traceparent"].split("-")[1] == seen.split()[0]
    (finished,) = exporter.get_finished_spans()  # the one trace starts with the caller's span
    assert finished.name == "caller" and finished.context.trace_id == caller.trace_id


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_request_without_a_traceparent_runs_in_no_trace(served: Served, stream: bool) -> None:
    assert where(served, stream, {}) == "none"
    assert where(served, stream, {"tracestate": "seamkit=test"}) == "none"


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_run_keeps_the_callers_baggage(served: Served, stream: bool) -> None:
    # the same helpers as tool-service's (seamkit.plugins): baggage kept on both
    caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    seen = where(served, stream, {"traceparent": caller, "baggage": "tenant=acme,plan=pro"})
    assert seen.startswith("4bf92f3577b34da6a3ce929d0e0e4736 ")
    assert seen.endswith(" baggage:plan=pro,tenant=acme")
    assert where(served, stream, {"baggage": "tenant=acme"}) == "none baggage:tenant=acme"


def test_continuing_a_trace_keeps_the_rest_of_the_current_context() -> None:
    caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    token = context.attach(baggage.set_baggage("tenant", "acme"))
    try:
        with continue_trace({"traceparent": caller}):
            assert baggage.get_baggage("tenant") == "acme"  # e.g. an ASGI middleware's
            current = trace.get_current_span().get_span_context()
            assert f"{current.trace_id:032x}" == caller.split("-")[1]
        assert not trace.get_current_span().get_span_context().is_valid
    finally:
        context.detach(token)
