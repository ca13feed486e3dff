"""The JSON Schema of the app manifest, covering every installed kind."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._registry import Registry

__all__ = ["manifest_schema"]


def manifest_schema(registry: Registry, *, preview: bool | None = None) -> dict[str, Any]:
    """The manifest's JSON Schema (draft 2020-12), ready for an editor."""
    model = registry.app_model(preview=preview)
    schema = model.model_json_schema(mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://seamkit.dev/schema/app.json",
        **schema,
        "title": "seamkit app manifest",
    }
