"""The ``telemetry:`` manifest section."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["TelemetryConfig"]


class TelemetryConfig(BaseModel):
    """The ``telemetry:`` section: whether the app's runs are traced, whether
    message content is recorded, and what is masked beside the secrets.

    The OpenTelemetry SDK itself (exporters, endpoint, resource, sampling) is
    set up by the standard ``OTEL_*`` environment variables.
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
