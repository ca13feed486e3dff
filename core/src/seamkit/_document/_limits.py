"""The limits a YAML or JSON document (an app manifest, a model script) is read
within, and the environment variables that raise them."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from .._errors import ManifestError, Problem

__all__ = [
    "ALIAS_VARIABLE",
    "DEPTH_CEILING",
    "DEPTH_VARIABLE",
    "Limits",
]

DEPTH_VARIABLE = "SEAMKIT_MANIFEST_MAX_DEPTH"
ALIAS_VARIABLE = "SEAMKIT_MANIFEST_MAX_ALIAS_NODES"

DEPTH_CEILING = 200
"""The most ``SEAMKIT_MANIFEST_MAX_DEPTH`` may allow: a value nested deeper
would reach code that walks it level by level (a hook rendering its
arguments, pydantic serialising a tool call, whose own limit is near 250)
and fail there instead of here."""


@dataclass(frozen=True, slots=True)
class Limits:
    """What a document may hold before reading it stops with a `Problem`.

    ``max_depth`` is how many collections (mappings and lists) may nest, the
    top-level mapping being the first; aliases count with the depth of what
    they repeat. ``max_alias_nodes`` is how many values YAML aliases may add
    in all (an alias of a mapping of three scalars adds seven: the mapping,
    three keys and three values), which keeps an "alias bomb" of a few
    hundred bytes from expanding into billions of values.
    """

    max_depth: int = 100
    max_alias_nodes: int = 10_000

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Limits:
        """The limits ``SEAMKIT_MANIFEST_MAX_DEPTH`` and
        ``SEAMKIT_MANIFEST_MAX_ALIAS_NODES`` set, the defaults for those
        unset. Raises `ManifestError` for a value that is not a whole number
        in range."""
        env = os.environ if environ is None else environ
        default = cls()
        return cls(
            max_depth=_number(env, DEPTH_VARIABLE, default.max_depth, 1, DEPTH_CEILING),
            max_alias_nodes=_number(env, ALIAS_VARIABLE, default.max_alias_nodes, 0, None),
        )


def _number(env: Mapping[str, str], variable: str, default: int, low: int, high: int | None) -> int:
    text = env.get(variable, "").strip()
    if not text:
        return default
    value = int(text) if text.isdigit() else None
    if value is None or value < low or (high is not None and value > high):
        allowed = f"from {low} to {high}" if high is not None else f"of at least {low}"
        raise ManifestError(
            [
                Problem(
                    (),
                    f"environment variable {variable} must be a whole number {allowed}, "
                    f"not {text[:40]!r}",
                    hint=f"unset it for the default ({default})",
                )
            ]
        )
    return value
