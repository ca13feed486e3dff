"""`Output`: what a run's answer must be, and how an answer is checked.

A declared output is a type pydantic can validate (a model, a dataclass, a
``TypedDict``, a scalar or a list type) or a JSON Schema mapping. The model
is always asked for a JSON object: a type whose schema is not an object is
wrapped as ``{"response": <schema>}`` (`Output.json_schema`), and an answer
may come wrapped or bare. `Output.parse` turns an answer's text into the
value, or raises `OutputInvalid` listing each problem as ``path: message``,
written for the model.
"""

from __future__ import annotations

import builtins
import copy
import json
import re
from collections.abc import Mapping
from typing import Any, Generic, TypeVar, cast, get_args

from pydantic import JsonValue, PydanticUserError, TypeAdapter, ValidationError

from ._errors import OutputDefinitionError, OutputInvalid
from ._types import JSON_DECODER, OutputMode, OutputSpec

__all__ = ["DEFAULT_OUTPUT_NAME", "WRAPPER", "Output", "strict_problem", "strict_schema"]

T = TypeVar("T")

DEFAULT_OUTPUT_NAME = "final_result"
"""The output tool's name (tool mode) and the schema's name (native mode)
unless `Output` names another."""

WRAPPER = "response"
"""The key a value that is not a JSON object is wrapped in."""

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_MODES: tuple[str, ...] = get_args(OutputMode)
_ROOTED = ("$schema", "$id", "$defs", "definitions")
"""The keys of a schema that stay at the root when it is wrapped."""
_FENCE_OPENING = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n")


class Output(Generic[T]):
    """A run's declared output: ``Agent(output=Output(Invoice, mode="tool"))``.

    ``type`` is a pydantic-validatable type or a JSON Schema mapping (the
    value is then the parsed JSON). ``mode`` is how the model is asked
    (`seamkit.OutputMode`, ``auto`` by default); ``retries`` how many more
    answers the model may give after one that fails (default 2, a hard cap);
    ``name`` and ``description`` name the output tool and the native schema;
    ``strict`` asks a native provider to enforce the schema (``None``: when
    the schema allows it, `strict_problem`). ``partials`` (default true)
    computes `seamkit.stream.OutputDelta` partials as a streamed answer
    arrives; a consumer that only wants the validated value (a server that
    holds the content until then) turns them off and pays no partial parsing.
    Raises `OutputDefinitionError` for what cannot be an output.
    """

    __slots__ = (
        "_adapter",
        "_schema",
        "_validator",
        "description",
        "mode",
        "name",
        "partials",
        "retries",
        "strict",
        "type",
        "wrapped",
    )

    def __init__(
        self,
        type: type[T] | Mapping[str, Any] | object,
        *,
        mode: OutputMode = "auto",
        retries: int = 2,
        name: str = DEFAULT_OUTPUT_NAME,
        description: str | None = None,
        strict: bool | None = None,
        partials: bool = True,
    ) -> None:
        if mode not in _MODES:
            raise OutputDefinitionError(
                f"output mode {mode!r} is not one of {', '.join(_MODES)}", hint="mode: auto"
            )
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise OutputDefinitionError(
                f"output retries must be a whole number >= 0, not {retries!r}", hint="retries: 2"
            )
        if not isinstance(name, str) or not _NAME.match(name):
            raise OutputDefinitionError(
                f"output name {name!r} must be 1 to 64 letters, digits, '_' or '-'",
                hint=f"name: {DEFAULT_OUTPUT_NAME}",
            )
        self.type = type
        self.mode: OutputMode = mode
        self.retries = retries
        self.name = name
        self.description = description
        self.partials = partials
        self._adapter: TypeAdapter[T] | None = None
        self._validator: Any = None
        if isinstance(type, Mapping):
            schema = _checked_schema(type)
            from jsonschema.validators import validator_for  # lazy: only schema outputs

            self._validator = validator_for(schema)(schema)
        else:
            try:
                self._adapter = TypeAdapter(cast("builtins.type[T]", type))
                schema = self._adapter.json_schema()
            except (PydanticUserError, TypeError, ValueError) as exc:  # a schema error too
                raise OutputDefinitionError(
                    f"{_type_name(type)} cannot be an output: {exc}".splitlines()[0],
                    hint="use a pydantic model, a dataclass, a TypedDict, a scalar or list "
                    "type, or a JSON Schema mapping",
                ) from None
        self.wrapped = schema.get("type") != "object"
        """Whether the model is asked for ``{"response": <value>}``."""
        if self.wrapped:
            inner = dict(schema)
            # What the inner schema's references resolve against stays at the root.
            rooted = {key: inner.pop(key) for key in _ROOTED if key in inner}
            schema = {
                **rooted,
                "type": "object",
                "properties": {WRAPPER: inner},
                "required": [WRAPPER],
                "additionalProperties": False,
            }
        problem = strict_problem(schema)
        if strict and problem is not None:
            raise OutputDefinitionError(
                f"the output schema cannot be strict: {problem}",
                construct=problem,
                hint="make every field required (a field may be `T | None`) and drop the "
                "construct, or set strict: false",
            )
        self.strict = problem is None if strict is None else strict
        """Whether a native provider is asked to enforce the schema."""
        self._schema = strict_schema(schema) if self.strict else schema

    @classmethod
    def of(cls, declared: Output[T] | type[T] | Mapping[str, Any] | Any) -> Output[T]:
        """``declared`` as an `Output` (a bare type or schema gets the defaults)."""
        return declared if isinstance(declared, Output) else cls(declared)

    @property
    def json_schema(self) -> dict[str, Any]:
        """The JSON Schema the model is asked for (an object at its root)."""
        return copy.deepcopy(self._schema)

    @property
    def type_name(self) -> str:
        """The declared type's name (``"schema"`` for a JSON Schema mapping)."""
        return "schema" if self._adapter is None else _type_name(self.type)

    def spec(self, mode: OutputMode) -> OutputSpec:
        """What a model request carries in ``mode`` (not ``auto``)."""
        assert mode != "auto"
        return OutputSpec(
            mode=mode,
            name=self.name,
            json_schema=self._schema,
            description=self.description,
            strict=self.strict,
        )

    def parse(self, text: str) -> T:
        """The value of an answer's text (JSON; a Markdown code fence around
        it is allowed; wrapped or bare); `OutputInvalid` when it is not JSON
        or does not fit."""
        body = text.strip()
        body = _unfenced(body)
        try:
            value: JsonValue = JSON_DECODER.decode(body)
        except (ValueError, RecursionError) as exc:
            where = f" at position {exc.pos}" if isinstance(exc, json.JSONDecodeError) else ""
            message = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
            raise OutputInvalid(
                [f"the answer is not valid JSON: {message}{where}"], answer=text
            ) from None
        if self.wrapped and isinstance(value, dict) and set(value) == {WRAPPER}:
            value = value[WRAPPER]
        try:
            return self.validate(value)
        except OutputInvalid as exc:
            raise OutputInvalid(exc.errors, answer=text) from None

    def check(self, value: object) -> T:
        """``value`` (what a hook made of the output) checked whole: written
        as JSON and validated again, so that an instance built without
        validation (``model_construct``) or changed since is checked too;
        `OutputInvalid` when it does not fit."""
        if self._adapter is None:
            return self.validate(value)
        try:
            plain = self._adapter.dump_python(
                cast(T, value), mode="json", by_alias=True, warnings="error"
            )
        except Exception as exc:  # pydantic's serialisation errors have no common base
            raise OutputInvalid([f"(answer): cannot be written as JSON: {exc}"]) from None
        return self.validate(plain)

    def validate(self, value: object) -> T:
        """``value`` as the declared type (validated; a model instance passes
        as it is); `OutputInvalid` when it does not fit."""
        if self._adapter is not None:
            try:
                return self._adapter.validate_python(value)
            except ValidationError as exc:
                raise OutputInvalid(_pydantic_errors(exc)) from None
        errors = sorted(self._validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        if errors:
            raise OutputInvalid([f"{_path(e.absolute_path)}: {e.message}" for e in errors[:20]])
        return cast(T, value)

    def dump(self, value: T) -> JsonValue:
        """The JSON value of ``value`` (what ``--json`` prints, what partials
        are consistent with)."""
        if self._adapter is None:
            return cast(JsonValue, value)
        return cast(JsonValue, self._adapter.dump_python(value, mode="json", by_alias=True))

    def __repr__(self) -> str:
        return f"Output({self.type_name}, mode={self.mode!r}, retries={self.retries})"


def _unfenced(body: str) -> str:
    """``body`` without a Markdown code fence around it (```json ... ```)."""
    if not body.startswith("```") or not body.endswith("```") or len(body) < 6:
        return body
    opening = _FENCE_OPENING.match(body)
    if opening is None:
        return body
    return body[opening.end() : -3].strip()


def _type_name(tp: object) -> str:
    name = getattr(tp, "__name__", None)
    return name if isinstance(name, str) and not get_args(tp) else repr(tp)


def _checked_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` as a dict, checked as a JSON Schema (draft by ``$schema``)."""
    from jsonschema.exceptions import SchemaError  # lazy: only schema outputs
    from jsonschema.validators import validator_for  # lazy: only schema outputs

    try:
        plain = json.loads(json.dumps(schema, allow_nan=False))  # JSON only (and a copy)
    except (TypeError, ValueError) as exc:  # a type object in it, a cycle, NaN
        raise OutputDefinitionError(
            f"an output schema must be plain JSON: {exc}",
            hint="write the schema with JSON values only (strings, numbers, lists, mappings)",
        ) from None
    if not isinstance(plain, dict):
        raise OutputDefinitionError("an output schema must be a JSON Schema mapping")
    try:
        validator_for(plain).check_schema(plain)
    except SchemaError as exc:
        raise OutputDefinitionError(
            f"the output schema is not a valid JSON Schema: {exc.message} "
            f"(at {_path(exc.absolute_path)})",
            hint="schema: {type: object, properties: {name: {type: string}}, required: [name]}",
        ) from None
    return cast(dict[str, Any], plain)


def _pydantic_errors(exc: ValidationError) -> list[str]:
    out = []
    for error in exc.errors(include_url=False, include_input=False)[:20]:
        out.append(f"{_path(error['loc'])}: {error['msg']}")
    return out


def _path(location: object) -> str:
    """A JSON path as a user reads it: ``items[2].price``; ``(answer)`` for the root."""
    out = ""
    for part in cast("list[str | int]", list(cast(Any, location))):
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(answer)"


# --- strict schemas ----------------------------------------------------------------

_NOT_STRICT = (
    "allOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "patternProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "contains",
    "minContains",
    "maxContains",
    "uniqueItems",
    "prefixItems",
)
"""Keywords OpenAI's strict structured outputs reject."""


def strict_problem(schema: Mapping[str, Any]) -> str | None:
    """The first construct of ``schema`` a strict structured-output schema
    (OpenAI's ``strict: true``) cannot hold, as ``"<path>: <what>"``; ``None``
    when it can hold all of it. Objects must list every property as
    required and allow no others; the keywords in `_NOT_STRICT` are refused."""
    if schema.get("type") != "object":
        return "(root): a strict schema's root must be an object"
    return _strict_walk(schema, "")


def _strict_walk(node: object, path: str) -> str | None:
    if isinstance(node, list):
        for i, item in enumerate(node):
            found = _strict_walk(item, f"{path}[{i}]")
            if found:
                return found
        return None
    if not isinstance(node, Mapping):
        return None
    where = path or "(root)"
    for keyword in _NOT_STRICT:
        if keyword in node:
            return f"{where}: '{keyword}' is not allowed in a strict schema"
    if "default" in node and path:
        return f"{where}: 'default' is not allowed in a strict schema"
    if node.get("type") == "object" or "properties" in node:
        extra = node.get("additionalProperties")
        if extra not in (None, False):
            return f"{where}: additionalProperties must be false in a strict schema"
        properties = node.get("properties") or {}
        required = set(node.get("required") or ())
        for name in properties:
            if name not in required:
                return (
                    f"{path}.{name}".lstrip(".") + ": an optional field; a strict schema "
                    "requires every field (make it required, or `T | None` with no default)"
                )
    for key, child in node.items():
        if key in ("properties", "$defs", "definitions") and isinstance(child, Mapping):
            for name, sub in child.items():
                prefix = f"{path}.{name}" if key == "properties" else f"$defs.{name}"
                found = _strict_walk(sub, prefix.lstrip("."))
                if found:
                    return found
        elif key in ("items", "anyOf", "additionalProperties"):
            found = _strict_walk(child, f"{path}{'[]' if key == 'items' else '.' + key}")
            if found:
                return found
    return None


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` with ``additionalProperties: false`` on every object that
    does not say (what a strict schema needs; a pydantic model ignores extra
    fields anyway)."""

    def walk(node: object) -> object:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, Mapping):
            return node
        out = {key: walk(value) for key, value in node.items()}
        if (out.get("type") == "object" or "properties" in out) and (
            "additionalProperties" not in out
        ):
            out["additionalProperties"] = False
        return out

    return cast(dict[str, Any], walk(schema))
