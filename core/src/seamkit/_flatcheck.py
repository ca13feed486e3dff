"""A quick yes for the commonest tool schema: a flat object whose properties
each have one JSON ``type`` (what tool services, MCP servers and most
hand-written schemas send).

`flat_check` compiles such a schema into a predicate that says True only
when the arguments certainly satisfy it; anything else (a ``False``, or a
schema of another shape, which gets no predicate) goes to jsonschema, which
decides and words the errors. So the predicate may only ever be stricter
than the schema, never looser: a float such as ``1.0`` is left to
jsonschema even for ``integer``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["flat_check"]

_TOP_KEYS = frozenset(
    {"type", "properties", "required", "additionalProperties", "title", "description"}
)
_PROPERTY_KEYS = frozenset({"type", "title", "description"})


def _is_string(value: object) -> bool:
    return type(value) is str


def _is_integer(value: object) -> bool:
    return type(value) is int


def _is_number(value: object) -> bool:
    return type(value) is int or (type(value) is float and math.isfinite(value))


def _is_boolean(value: object) -> bool:
    return type(value) is bool


def _is_object(value: object) -> bool:
    return type(value) is dict


def _is_array(value: object) -> bool:
    return type(value) is list


def _is_null(value: object) -> bool:
    return value is None


_SCALARS = frozenset({str, int, float, bool, type(None)})

_TYPES: dict[str, Callable[[object], bool]] = {
    "string": _is_string,
    "integer": _is_integer,
    "number": _is_number,
    "boolean": _is_boolean,
    "object": _is_object,
    "array": _is_array,
    "null": _is_null,
}


def _plain_json(name: object, value: object) -> bool:
    """Whether an argument needs no JSON round trip: a string key, and a JSON
    scalar whose text (if any) is valid Unicode (a lone surrogate is not)."""
    if type(name) is not str or type(value) not in _SCALARS:
        return False
    if type(value) is str and not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
    return True


def flat_check(schema: Mapping[str, Any]) -> Callable[[Any, bool], bool] | None:
    """A predicate ``satisfied(data, raw)`` that is True only for arguments
    that satisfy ``schema``, or ``None`` when the schema is not a flat object
    of typed properties. With ``raw`` the data has not been through JSON yet:
    only JSON scalars (finite floats) pass, and objects and arrays are left
    to the slow path, which converts them."""
    if schema.get("type", "object") != "object" or not set(schema) <= _TOP_KEYS:
        return None
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if not isinstance(properties, Mapping) or not isinstance(required, list):
        return None
    if not isinstance(extra, bool) or not all(isinstance(r, str) for r in required):
        return None
    checks: dict[str, Callable[[object], bool]] = {}
    for name, prop in properties.items():
        if not isinstance(prop, Mapping) or not set(prop) <= _PROPERTY_KEYS:
            return None
        kind = prop.get("type")
        check = _TYPES.get(kind) if isinstance(kind, str) else None
        if check is None:
            return None
        checks[name] = check
    needed = tuple(required)
    closed = not extra

    def satisfied(data: Any, raw: bool) -> bool:
        if type(data) is not dict:
            return False
        for name in needed:
            if name not in data:
                return False
        for name, value in data.items():
            if raw and not _plain_json(name, value):
                return False
            check = checks.get(name)
            if check is None:
                if closed:
                    return False
            elif not check(value):
                return False
        return True

    return satisfied
