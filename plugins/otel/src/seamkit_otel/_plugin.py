"""The plugin objects the ``otel`` entry point gives seamkit: the whole
plugin, or, with ``OTEL_SDK_DISABLED=true``, its manifest section alone (so
manifests with ``telemetry:`` still load) and no run hookimpl at all."""

from __future__ import annotations

from typing import TYPE_CHECKING

import seamkit
from seamkit import HookContext
from seamkit.stream import ObservedEvent, RunStarted

from ._config import TelemetryConfig
from ._providers import env_exporters, given, opentelemetry_loaded, sdk_disabled

if TYPE_CHECKING:
    from seamkit.plugins import RegisterSection

    from ._tracing import Tracing

__all__ = ["OtelPlugin", "SectionOnly", "plugin"]


class SectionOnly:
    """The ``telemetry:`` manifest section, and nothing else."""

    __seamkit_api__ = 1

    @seamkit.hookimpl
    def register_manifest_sections(self, register: RegisterSection) -> None:
        """Add the ``telemetry`` section."""
        register("telemetry", TelemetryConfig)

    def __repr__(self) -> str:
        return f"<seamkit-otel {type(self).__name__}>"


def _wanted() -> bool:
    """Whether something may receive spans: providers given to `configure`,
    an exporter in the environment, or an application that loaded the
    OpenTelemetry API (and may have set global providers). Decided without
    importing OpenTelemetry."""
    chosen = given()
    return bool(
        chosen.tracer_provider is not None
        or chosen.meter_provider is not None
        or opentelemetry_loaded()
        or env_exporters("traces")
        or env_exporters("metrics")
    )


class OtelPlugin(SectionOnly):
    """The section and the run observer. OpenTelemetry is imported with the
    first run that something may receive the spans of."""

    def __init__(self) -> None:
        self._tracing: Tracing | None = None

    @seamkit.hookimpl
    def on_run_event(self, ctx: HookContext, event: ObservedEvent) -> None:
        """Trace the run (see `seamkit_otel`)."""
        tracing = self._tracing
        if tracing is None:
            if type(event) is not RunStarted or not _wanted():
                return
            from ._tracing import Tracing  # lazy: OpenTelemetry loads with the first traced run

            tracing = self._tracing = Tracing()
        tracing.on_run_event(ctx, event)

    @property
    def tracing(self) -> Tracing | None:
        """The observer, once a run has been traced."""
        return self._tracing


plugin: SectionOnly = SectionOnly() if sdk_disabled() else OtelPlugin()
"""What the ``otel`` entry point registers."""
