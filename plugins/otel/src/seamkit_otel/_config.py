"""The ``telemetry:`` manifest section."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["TelemetryConfig"]


class TelemetryConfig(BaseModel):
    """How an app's runs are traced (the OpenTelemetry SDK itself is set up
    by the standard ``OTEL_*`` environment variables).

    - ``enabled``: trace this app's runs (default true);
    - ``capture_content``: record messages, tool arguments and results; when
      left out, ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``
      decides, as the GenAI conventions say (default: not recorded);
    - ``redact_patterns``: regular expressions whose matches are masked as
      ``***`` in every attribute and event, beside the secrets the kernel
      knows.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(default=True, description="Trace this app's runs.")
    capture_content: bool | None = Field(
        default=None,
        description=(
            "Record message content, tool arguments and results; when left out, "
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true decides."
        ),
    )
    redact_patterns: tuple[str, ...] = Field(
        default=(),
        description=(
            "Regular expressions (Python syntax) whose matches are masked as *** "
            "before any attribute or event is created."
        ),
    )

    @field_validator("redact_patterns")
    @classmethod
    def _compiles(cls, patterns: tuple[str, ...]) -> tuple[str, ...]:
        for pattern in patterns:
            try:
                compiled = re.compile(pattern)
            except re.error as exc:
                raise ValueError(
                    f"{pattern!r} is not a regular expression ({exc}); "
                    "write one in Python syntax, e.g. 'sk-[A-Za-z0-9]{20,}'"
                ) from None
            if compiled.match(""):
                raise ValueError(
                    f"{pattern!r} matches the empty text, so it would mask nothing "
                    "useful and everything around it; make it match at least one character"
                )
        return patterns
