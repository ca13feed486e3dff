"""seamkit plugin: OpenTelemetry traces and metrics of every run, in the
GenAI semantic conventions, with every secret redacted before export.

```yaml
telemetry:                      # optional
  capture_content: false        # else OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT
  redact_patterns: ["sk-[A-Za-z0-9]{20,}"]
```

Spans go to the providers given to `configure`, else to an SDK set up from
the ``OTEL_*`` environment when it names an exporter (``OTEL_TRACES_EXPORTER``
or ``OTEL_EXPORTER_OTLP_ENDPOINT``; OTLP over HTTP), else to the
application's global providers; with none of these nothing is recorded.
``OTEL_SDK_DISABLED=true`` registers no run hookimpl at all.

This module imports only seamkit: OpenTelemetry loads with the first run
that something may receive the spans of.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from seamkit.plugins import lazy_module

if TYPE_CHECKING:
    from ._config import TelemetryConfig as TelemetryConfig
    from ._plugin import OtelPlugin as OtelPlugin, SectionOnly as SectionOnly, plugin as plugin
    from ._providers import configure as configure

__getattr__, __dir__, __all__ = lazy_module(
    __name__,
    {
        "TelemetryConfig": "._config",
        "OtelPlugin": "._plugin",
        "SectionOnly": "._plugin",
        "plugin": "._plugin",  # what the entry point names
        "configure": "._providers",  # standard library only: no OpenTelemetry
    },
)
__seamkit_api__ = 1
