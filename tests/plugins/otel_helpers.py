"""In-memory OpenTelemetry providers for the seamkit-otel tests: spans,
metrics and log records, given to the plugin with `seamkit_otel.configure`
(the global providers can be set only once per process)."""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import seamkit_otel
from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


@dataclass
class Exported:
    """What the plugin exported: finished spans, metrics, log records."""

    spans: InMemorySpanExporter
    metrics: InMemoryMetricReader
    logs: InMemoryLogRecordExporter
    tracer_provider: TracerProvider

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [s for s in self.finished() if (s.name or "").startswith(prefix)]

    def metric_points(self) -> dict[str, list[dict[str, Any]]]:
        """Each metric's data points (as JSON), by metric name."""
        data = self.metrics.get_metrics_data()
        out: dict[str, list[dict[str, Any]]] = {}
        if data is None:
            return out
        for resource in json.loads(data.to_json())["resource_metrics"]:
            for scope in resource["scope_metrics"]:
                for metric in scope["metrics"]:
                    out.setdefault(metric["name"], []).extend(metric["data"]["data_points"])
        return out

    def everything(self) -> str:
        """Every exported span, metric and log record as one JSON text."""
        texts = [s.to_json() for s in self.finished()]
        data = self.metrics.get_metrics_data()
        if data is not None:
            texts.append(data.to_json())
        texts += [r.to_json() for r in self.logs.get_finished_logs()]
        return "\n".join(texts)


@pytest.fixture
def exported() -> Iterator[Exported]:
    """Providers given to the plugin for one test (and the root logger's
    records exported as OpenTelemetry log records)."""
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    metrics = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[metrics])
    logs = InMemoryLogRecordExporter()
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    with warnings.catch_warnings():  # the SDK's handler is deprecated for a separate package
        warnings.simplefilter("ignore", DeprecationWarning)
        handler = LoggingHandler(level=logging.DEBUG, logger_provider=logger_provider)
    root = logging.getLogger()
    root.addHandler(handler)
    seamkit_otel.configure(tracer_provider=tracer_provider, meter_provider=meter_provider)
    try:
        yield Exported(spans, metrics, logs, tracer_provider)
    finally:
        seamkit_otel.configure()
        root.removeHandler(handler)
        meter_provider.shutdown()
        logger_provider.shutdown()
