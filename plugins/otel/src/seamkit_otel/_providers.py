"""Which tracer and meter providers the plugin uses: the ones given to
`configure`, else one set up from the ``OTEL_*`` environment when it names
an exporter, else the application's global ones when it set them; else
none, and runs are not traced.

This module imports only the standard library: it decides whether
OpenTelemetry has to be loaded at all.
"""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

__all__ = [
    "Given",
    "capture_content_default",
    "configure",
    "env_exporters",
    "given",
    "opentelemetry_loaded",
    "sdk_disabled",
]

_TRUE = {"true", "1", "yes", "on"}


@dataclass(frozen=True, slots=True)
class Given:
    """The providers `configure` was given (either may be ``None``)."""

    tracer_provider: TracerProvider | None
    meter_provider: MeterProvider | None
    generation: int


_given = Given(None, None, 0)


def configure(
    *,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
) -> None:
    """Use these providers for seamkit's spans and metrics from the next run
    on, whatever the environment says; ``configure()`` with neither goes
    back to the environment and the global providers."""
    global _given
    _given = Given(tracer_provider, meter_provider, _given.generation + 1)


def given() -> Given:
    """What `configure` set last."""
    return _given


def sdk_disabled() -> bool:
    """Whether ``OTEL_SDK_DISABLED`` says the SDK is off."""
    return os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() in _TRUE


def _names(variable: str) -> tuple[str, ...]:
    value = os.environ.get(variable, "")
    return tuple(n.strip().lower() for n in value.split(",") if n.strip())


@functools.cache
def env_exporters(signal: str) -> tuple[str, ...]:
    """The exporters the environment names for ``signal`` (``traces`` or
    ``metrics``): ``OTEL_<SIGNAL>_EXPORTER``, or ``otlp`` when only an OTLP
    endpoint is set; empty when none is configured (``none`` included).
    Read once, at the first run, as the SDK reads its own settings once."""
    named = _names(f"OTEL_{signal.upper()}_EXPORTER")
    if named:
        return tuple(n for n in named if n != "none")
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get(
        f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT"
    )
    return ("otlp",) if endpoint else ()


def capture_content_default() -> bool:
    """``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``, as a flag
    (``true``, and the newer ``SPAN_ONLY`` and ``SPAN_AND_EVENT``, which for
    seamkit's spans mean the same)."""
    value = os.environ.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "")
    return value.strip().lower() in {*_TRUE, "span_only", "span_and_event"}


def opentelemetry_loaded() -> bool:
    """Whether the application imported OpenTelemetry's trace API (only then
    can it have set global providers)."""
    return "opentelemetry.trace" in sys.modules
