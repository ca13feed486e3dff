"""The instruments the plugin records with (a tracer, two histograms and the
approval and in-doubt counters),
from the providers `_providers` chooses; the SDK set up from the ``OTEL_*``
environment when that is the choice. Imports OpenTelemetry: loaded with the
first run that may be traced."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from importlib import metadata

from opentelemetry import metrics, trace
from opentelemetry.metrics import Counter, Histogram, MeterProvider
from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
from opentelemetry.sdk.metrics.export import MetricExporter, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import ProxyTracerProvider, Tracer, TracerProvider

from ._providers import env_exporters, given

__all__ = ["Instruments", "Setup"]

log = logging.getLogger("seamkit_otel")

SCOPE = "seamkit"
"""The instrumentation scope of every span and metric the plugin records."""

TOKEN_BUCKETS = (
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864
)  # fmt: skip
"""``gen_ai.client.token.usage`` bucket boundaries, as the conventions advise."""

DURATION_BUCKETS = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92
)  # fmt: skip
"""``gen_ai.client.operation.duration`` bucket boundaries (seconds), as advised."""


@dataclass(frozen=True, slots=True)
class Instruments:
    """What a traced run records with."""

    tracer: Tracer
    token_usage: Histogram
    duration: Histogram
    approvals: Counter
    """``seamkit.approval.requests``: calls that began to wait for a person."""
    decisions: Counter
    """``seamkit.approval.decisions``: decisions applied, by action."""
    in_doubt: Counter
    """``seamkit.tool.in_doubt``: calls a crash left in doubt."""


def _version() -> str:
    try:
        return metadata.version("seamkit-otel")
    except metadata.PackageNotFoundError:  # pragma: no cover - run from a source tree
        return "0"


def instruments(tracer_provider: TracerProvider, meter_provider: MeterProvider) -> Instruments:
    """The tracer, histograms and counters of ``seamkit``'s instrumentation scope."""
    version = _version()
    meter = meter_provider.get_meter(SCOPE, version)
    return Instruments(
        tracer=tracer_provider.get_tracer(SCOPE, version),
        token_usage=meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=list(TOKEN_BUCKETS),
        ),
        duration=meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
        ),
        approvals=meter.create_counter(
            "seamkit.approval.requests",
            unit="{call}",
            description="Tool calls that began to wait for a person's approval.",
        ),
        decisions=meter.create_counter(
            "seamkit.approval.decisions",
            unit="{call}",
            description="Decisions about waiting tool calls applied as runs continued.",
        ),
        in_doubt=meter.create_counter(
            "seamkit.tool.in_doubt",
            unit="{call}",
            description="Tool calls a crash cut short, reported in doubt and not run again.",
        ),
    )


def _span_exporter(name: str) -> SpanExporter | None:
    if name == "otlp":
        _check_protocol("traces")
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # lazy: heavy
            OTLPSpanExporter,
        )

        return OTLPSpanExporter()
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter  # lazy: only when asked for

        return ConsoleSpanExporter()
    _unknown("traces", name)
    return None


def _metric_exporter(name: str) -> MetricExporter | None:
    if name == "otlp":
        _check_protocol("metrics")
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import (  # lazy: heavy
            OTLPMetricExporter,
        )

        return OTLPMetricExporter()
    if name == "console":
        from opentelemetry.sdk.metrics.export import ConsoleMetricExporter  # lazy: as above

        return ConsoleMetricExporter()
    _unknown("metrics", name)
    return None


def _unknown(signal: str, name: str) -> None:
    log.warning(
        "OTEL_%s_EXPORTER names %r, which seamkit-otel does not ship; ignored "
        "(it ships 'otlp' over HTTP and 'console')",
        signal.upper(),
        name,
    )


def _check_protocol(signal: str) -> None:
    protocol = os.environ.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL") or os.environ.get(
        "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"
    )
    if protocol.strip().lower() != "http/protobuf":
        log.warning(
            "OTLP protocol %r is not shipped with seamkit-otel; exporting %s over "
            "http/protobuf instead",
            protocol,
            signal,
        )


def _resource() -> Resource:
    keys = {
        pair.partition("=")[0].strip()
        for pair in os.environ.get("OTEL_RESOURCE_ATTRIBUTES", "").split(",")
    }
    named = os.environ.get("OTEL_SERVICE_NAME") or "service.name" in keys
    return Resource.create({} if named else {"service.name": "seamkit"})


def _from_env() -> tuple[TracerProvider, MeterProvider]:
    """SDK providers exporting where the environment says, set as the global
    providers when the application set none (an application that set no
    tracer provider is taken to have set no meter provider either)."""
    resource = _resource()
    unset = isinstance(trace.get_tracer_provider(), ProxyTracerProvider)
    tracer_provider: TracerProvider = trace.get_tracer_provider()
    span_exporters = [e for n in env_exporters("traces") if (e := _span_exporter(n))]
    if span_exporters:
        sdk = SdkTracerProvider(resource=resource)
        for exporter in span_exporters:
            sdk.add_span_processor(BatchSpanProcessor(exporter))
        if unset:
            trace.set_tracer_provider(sdk)
        tracer_provider = sdk
    meter_provider: MeterProvider = metrics.get_meter_provider()
    metric_exporters = [m for n in env_exporters("metrics") if (m := _metric_exporter(n))]
    if metric_exporters:
        readers = [PeriodicExportingMetricReader(e) for e in metric_exporters]
        sdk_meters = SdkMeterProvider(resource=resource, metric_readers=readers)
        if unset:
            metrics.set_meter_provider(sdk_meters)
        meter_provider = sdk_meters
    return tracer_provider, meter_provider


class Setup:
    """Chooses the instruments at the start of each run (cheaply: the
    choice is kept until `configure` or the global providers change)."""

    def __init__(self) -> None:
        self._key: object = None
        self._instruments: Instruments | None = None
        self._env: tuple[TracerProvider, MeterProvider] | None = None

    def instruments(self) -> Instruments | None:
        """The instruments a run starting now records with, or ``None``
        when nothing is configured to receive them: the providers given to
        `configure`, else the application's global ones, else those the
        ``OTEL_*`` environment sets up (which become the global ones)."""
        chosen = given()
        if chosen.tracer_provider is not None or chosen.meter_provider is not None:
            key: object = ("given", chosen.generation)
            if key != self._key:
                self._keep(
                    key,
                    chosen.tracer_provider or trace.get_tracer_provider(),
                    chosen.meter_provider or metrics.get_meter_provider(),
                )
            return self._instruments
        tracer_provider = trace.get_tracer_provider()
        if not isinstance(tracer_provider, ProxyTracerProvider):
            key = ("global", id(tracer_provider))
            if key != self._key:
                self._keep(key, tracer_provider, metrics.get_meter_provider())
            return self._instruments
        if self._env is None and (env_exporters("traces") or env_exporters("metrics")):
            self._env = _from_env()
        if self._env is None:
            return None  # nothing receives spans
        if self._key != "env":
            self._keep("env", *self._env)
        return self._instruments

    def _keep(self, key: object, tracer: TracerProvider, meter: MeterProvider) -> None:
        self._key = key
        self._instruments = instruments(tracer, meter)
