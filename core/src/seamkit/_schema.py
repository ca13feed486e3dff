"""The JSON Schema of the app manifest, covering every installed kind."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._registry import Registry

__all__ = ["manifest_schema"]


def manifest_schema(registry: Registry, *, preview: bool | None = None) -> dict[str, Any]:
    """The manifest's JSON Schema (draft 2020-12), ready for an editor."""
    from pydantic.json_schema import models_json_schema

    model = registry.app_model(preview=preview)
    schema = model.model_json_schema(mode="validation")
    # Every installed refresh condition is listed, even before a hook kind uses one.
    refresh = [info.model for info in registry.kinds_of("refresh", preview=preview).values()]
    if refresh:
        _, extra = models_json_schema([(m, "validation") for m in refresh])
        defs = schema.setdefault("$defs", {})
        for name, definition in extra.get("$defs", {}).items():
            defs.setdefault(name, definition)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://seamkit.dev/schema/app.json",
        **schema,
        "title": "seamkit app manifest",
    }
