"""A minimal OTLP/HTTP receiver on 127.0.0.1 for the seamkit-otel tests: it
accepts ``POST /v1/traces``, ``/v1/metrics`` and ``/v1/logs`` (protobuf,
gzip or not), keeps every raw body and decodes them with the official
``opentelemetry-proto`` messages."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span


@dataclass
class Received:
    """Every body posted to the receiver, by path, in arrival order."""

    bodies: dict[str, list[bytes]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, path: str, body: bytes) -> None:
        with self.lock:
            self.bodies.setdefault(path, []).append(body)

    def raw(self) -> bytes:
        with self.lock:
            return b"".join(b for bodies in self.bodies.values() for b in bodies)

    def spans(self) -> list[tuple[dict[str, Any], Span]]:
        """Each received span with its resource's attributes."""
        out: list[tuple[dict[str, Any], Span]] = []
        for body in self.bodies.get("/v1/traces", []):
            request = ExportTraceServiceRequest.FromString(body)
            for resource_spans in request.resource_spans:
                resource = attributes(resource_spans.resource.attributes)
                for scope_spans in resource_spans.scope_spans:
                    out.extend((resource, span) for span in scope_spans.spans)
        return out

    def metric_names(self) -> set[str]:
        names: set[str] = set()
        for body in self.bodies.get("/v1/metrics", []):
            request = ExportMetricsServiceRequest.FromString(body)
            for resource_metrics in request.resource_metrics:
                for scope_metrics in resource_metrics.scope_metrics:
                    names |= {m.name for m in scope_metrics.metrics}
        return names


def value(any_value: AnyValue) -> Any:
    """The Python value of an OTLP ``AnyValue``."""
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return tuple(value(v) for v in any_value.array_value.values)
    return getattr(any_value, kind) if kind else None


def attributes(pairs: Any) -> dict[str, Any]:
    """OTLP ``KeyValue`` attributes as a dict."""
    return {pair.key: value(pair.value) for pair in pairs}


@pytest.fixture
def otlp_receiver() -> Iterator[tuple[str, Received]]:
    """A receiver on a free port: its base URL and what it received."""
    received = Received()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            received.add(self.path, body)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
