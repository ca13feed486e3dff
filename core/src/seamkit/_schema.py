"""JSON Schema validators, compiled once where a schema is declared (a
schema tool's parameters, an approval rule's ``when``); ``jsonschema`` is
imported on first use only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._errors import ToolDefinitionError

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

__all__ = ["compile_schema"]


def compile_schema(schema: dict[str, Any], what: str) -> Validator:
    """A validator for ``schema`` (its ``$schema`` draft, else 2020-12);
    `ToolDefinitionError` saying that ``what`` is not valid JSON Schema."""
    import jsonschema  # lazy: ~40 ms to import, and only schema tools and rules need it

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ToolDefinitionError(f"{what} is not valid JSON Schema: {exc.message}") from None
    validator: Validator = cls(schema)
    return validator
