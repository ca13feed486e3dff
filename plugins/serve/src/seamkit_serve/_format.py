"""The client's ``response_format``: read into a `seamkit.Output` in native
mode (or `ApiError` naming the field), and reconciled with the app's own
declared output into the output a run answers with.

``{"type": "text"}`` (OpenAI's default) asks for nothing; ``json_object``
is ``Output({"type": "object"})``; ``json_schema`` is ``Output(schema,
name=, description=, strict=)``, where an absent ``strict`` is false, as
with OpenAI. An app that declares its own output takes ``json_object`` and
the same schema (after seamkit's normalisation: `same_schema`), and refuses
any other with a 400.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

import seamkit

from ._error import ApiError

__all__ = ["JSON_OBJECT", "ResponseFormat", "parse_format", "run_output", "same_schema"]

JSON_OBJECT: dict[str, Any] = {"type": "object"}
"""The schema of ``{"type": "json_object"}``: any JSON object."""

_PARAM = "response_format"
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_FIELDS = frozenset({"name", "schema", "strict", "description"})


@dataclass(frozen=True, slots=True)
class ResponseFormat:
    """What a client's ``response_format`` asks for: its ``kind``
    (``json_object`` or ``json_schema``), the schema as sent, and the
    `seamkit.Output` a run without its own output answers with."""

    kind: str
    schema: Mapping[str, Any]
    output: seamkit.Output[object]


def _bad(message: str, param: str = _PARAM) -> ApiError:
    return ApiError(400, message, param=param, code="invalid_response_format")


def _output(schema: Mapping[str, Any], param: str, **options: Any) -> seamkit.Output[object]:
    try:
        return seamkit.Output(schema, mode="native", partials=False, **options)
    except seamkit.OutputDefinitionError as exc:
        hint = f" ({exc.hint})" if exc.hint else ""
        raise _bad(f"{param}: {exc.message}{hint}", param) from None


def parse_format(raw: object) -> ResponseFormat | None:
    """The ``response_format`` of a request (``None``: text, as without
    one), or the 400 naming what is wrong with it."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise _bad("response_format must be an object with a type")
    kind = raw.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        return ResponseFormat(kind, JSON_OBJECT, _output(JSON_OBJECT, _PARAM))
    if kind != "json_schema":
        raise _bad(
            f"response_format.type is {kind!r}; use one of: text, json_object, json_schema",
            f"{_PARAM}.type",
        )
    where = f"{_PARAM}.json_schema"
    spec = raw.get("json_schema")
    if not isinstance(spec, dict):
        raise _bad(f"{where} must be an object with a name and a schema", where)
    spec = {k: v for k, v in spec.items() if v is not None}  # an explicit null is absent
    unknown = sorted(set(spec) - _FIELDS)
    if unknown:
        raise _bad(
            f"{where} has {', '.join(unknown)}; it takes name, schema, strict and description",
            f"{where}.{unknown[0]}",
        )
    name = spec.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise _bad(f"{where}.name must be 1 to 64 letters, digits, _ or -", f"{where}.name")
    schema = spec.get("schema")
    if not isinstance(schema, dict):
        raise _bad(f"{where}.schema must be a JSON Schema object", f"{where}.schema")
    strict = spec.get("strict", False)
    if not isinstance(strict, bool):
        raise _bad(f"{where}.strict must be true or false", f"{where}.strict")
    description = spec.get("description")
    if description is not None and not isinstance(description, str):
        raise _bad(f"{where}.description must be a string", f"{where}.description")
    options = {"name": name, "strict": strict, "description": description}
    return ResponseFormat(kind, schema, _output(schema, f"{where}.schema", **options))


def same_schema(declared: seamkit.Output[object], asked: ResponseFormat) -> bool:
    """Whether ``asked`` is the app's ``declared`` output: ``json_object``
    (every declared output is a JSON object), or a schema that reads, as
    seamkit normalises it with the app's strictness, as the app's."""
    if asked.kind == "json_object":
        return True
    try:
        theirs: seamkit.Output[object] = seamkit.Output(
            asked.schema, mode="native", strict=declared.strict
        )
    except seamkit.OutputDefinitionError:
        return False
    return theirs.json_schema == declared.json_schema


def run_output(
    declared: seamkit.Output[object] | None, asked: ResponseFormat | None, model: object
) -> seamkit.Output[object] | None:
    """The output a run answers with: the app's own when it declares one
    (``asked`` must then be the same: `same_schema`, else a 400 that says
    so), else the one the client asked for (``None``: text), which the
    app's ``model`` must take in native mode (its ``output_modes``, when it
    lists them: else a 400 before anything runs)."""
    if asked is None:
        return declared
    if declared is None:
        modes: object = getattr(model, "output_modes", None)
        if isinstance(modes, Collection) and "native" not in modes:
            raise ApiError(
                400,
                "this app's model takes no JSON Schema response format (native structured "
                "output), so the app cannot honour response_format",
                param=_PARAM,
                code="unsupported_parameter",
            )
        return asked.output
    if not same_schema(declared, asked):
        raise ApiError(
            400,
            f"this app answers with its own output ({declared.type_name}, schema "
            f"{declared.name!r}); response_format asks for a different schema. Send no "
            'response_format, {"type": "json_object"}, or the app\'s own schema',
            param=f"{_PARAM}.json_schema.schema",
            code="response_format_conflict",
        )
    return declared
