"""The app manifest: reading YAML/JSON, ``${env:...}``/``${secret:...}``
interpolation, the `AppConfig` model built from the installed kinds and
sections, its JSON Schema, and problems placed at their line and column."""

from __future__ import annotations

from typing import Any

from .._config import Placement, Settings
from .._registry import Registry
from ._app import AppConfig, SessionsConfig
from ._build import manifest_schema as _schema_for
from ._output import OutputConfig, build_output
from ._read import locate_problems, read_document

__all__ = [
    "AppConfig",
    "OutputConfig",
    "Placement",
    "SessionsConfig",
    "Settings",
    "build_output",
    "locate_problems",
    "manifest_schema",
    "read_document",
]


def manifest_schema(registry: Registry, *, preview: bool | None = None) -> dict[str, Any]:
    """The JSON Schema of the app manifest with every kind installed in
    ``registry`` (draft 2020-12)."""
    return _schema_for(registry, AppConfig, preview=preview)
