"""The built-in ``replay`` model's manifest form, `ReplayConfig`: light (no
cassette reading, no ``difflib``), so registering the built-in providers
costs nothing until a manifest names ``replay`` (`seamkit._replay` plays it).
"""

from __future__ import annotations

import re

from pydantic import Field, field_validator

from ._config import ModelConfig

__all__ = ["ReplayConfig"]


class ReplayConfig(ModelConfig):
    """``{provider: replay, name: FILE, ignore: [...]}``: a cassette that
    ``seamkit run --record FILE`` (or `seamkit.testing.record`) wrote,
    played back instead of the model (no network)."""

    name: str = Field(
        description="The cassette file (JSON Lines), relative to the manifest's directory."
    )
    ignore: list[str] = Field(
        default_factory=list,
        description="Regular expressions: what they match in a request's texts may differ "
        "from the recording (beside injected results' expiry and run ids, always ignored).",
    )

    @field_validator("ignore")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"ignore pattern {pattern!r} is not a regex: {exc}") from None
        return patterns
