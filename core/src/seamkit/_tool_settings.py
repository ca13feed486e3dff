"""What every tool entry of a manifest may say about the tools it yields:
``approval``, ``effects`` and ``stream_output``, each one value for all of
them or a map by tool name (``effects: {refund: once, lookup: none}``).

The values are checked when the manifest loads (`ToolConfig` declares the
fields with the types here); once a kind resolved an entry's tools, the
kernel applies them in one place (:func:`apply_settings`), so no tool kind
has code of its own for them. A name in a map that the entry does not yield
is a problem located at that name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Generic, TypeVar, cast, get_args

from pydantic import PlainSerializer, PlainValidator, ValidationError, WithJsonSchema
from pydantic_core import InitErrorDetails, PydanticCustomError

from ._approval import ApprovalRule, approval_rule
from ._context import Effects
from ._errors import Problem, ToolDefinitionError

if TYPE_CHECKING:
    from ._tool import Tool

__all__ = [
    "SETTING_FIELDS",
    "ApprovalEntry",
    "EffectsEntry",
    "PerTool",
    "StreamOutputEntry",
    "apply_settings",
]

T = TypeVar("T")

SETTING_FIELDS = ("approval", "effects", "stream_output")
"""The fields every tool entry has for its tools; reserved names in every
tool kind's config (a tool service's config param may not take one)."""

_EFFECTS: tuple[str, ...] = get_args(Effects)


class PerTool(Generic[T]):
    """One entry's setting for its tools: ``every`` for all of them, or a
    value per tool name (``by_name``, the tools' own names, before any
    toolset); a tool the map leaves out keeps its own value."""

    __slots__ = ("by_name", "every")

    def __init__(self, every: T | None = None, by_name: Mapping[str, T] | None = None) -> None:
        self.every = every
        self.by_name: Mapping[str, T] = dict(by_name or {})

    def of(self, name: str) -> T | None:
        """The value for the tool ``name``; ``None``: the tool keeps its own."""
        return self.every if self.every is not None else self.by_name.get(name)

    def unknown(self, names: Sequence[str]) -> list[str]:
        """The names of the map that are not among ``names``."""
        return [name for name in self.by_name if name not in names]

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, PerTool)
            and self.every == other.every
            and dict(self.by_name) == dict(other.by_name)
        )

    def __hash__(self) -> int:
        return hash((type(self.every).__name__, repr(self.every), tuple(sorted(self.by_name))))

    def __repr__(self) -> str:
        if self.every is not None:
            return f"PerTool({self.every!r})"
        return f"PerTool(by_name={dict(self.by_name)!r})"


# --- reading a field: one value or a map by tool name -------------------------


def _per_tool(
    field: str, one: Callable[[object], T], expected: str
) -> Callable[[object], PerTool[T] | None]:
    """The validator of a field that takes ``one`` value or a map by tool
    name of them; a bad value in a map is reported at its name."""

    def validate(value: object) -> PerTool[T] | None:
        if value is None:
            return None
        if isinstance(value, PerTool):
            return cast("PerTool[T]", value)
        if not isinstance(value, Mapping) or _is_single(field, value):
            return PerTool(every=one(value))
        if not value:
            raise PydanticCustomError(
                "empty_tool_map",
                f"{field} is an empty map",
                {"hint": f"give {expected} for all the entry's tools, or a map by tool name"},
            )
        found: dict[str, T] = {}
        issues: list[InitErrorDetails] = []
        for name, item in value.items():
            try:
                found[str(name)] = one(item)
            except PydanticCustomError as exc:
                issues.append(InitErrorDetails(type=exc, loc=(str(name),), input=item))
        if issues:
            raise ValidationError.from_exception_data(field, issues)
        return PerTool(by_name=found)

    return validate


def _is_single(field: str, value: Mapping[Any, Any]) -> bool:
    """Whether the mapping ``value`` is one value, not a map by tool name:
    ``{when: ...}`` under ``approval`` is a rule (so a map cannot name a
    tool ``when`` alone)."""
    return field == "approval" and set(value) == {"when"}


def _effects(value: object) -> Effects:
    if isinstance(value, str) and value in _EFFECTS:
        return cast("Effects", value)
    raise PydanticCustomError(
        "bad_effects",
        "effects must be none, idempotent or once",
        {
            "hint": "'none' for a tool that only reads, 'idempotent' for one that acts once "
            "per idempotency key, 'once' (the default) for any other; or a map by tool "
            "name, e.g. {refund: once, lookup: none}"
        },
    )


def _stream_output(value: object) -> bool:
    if isinstance(value, bool):
        return value
    raise PydanticCustomError(
        "bad_stream_output",
        "stream_output must be true or false",
        {"hint": "one boolean for all the entry's tools, or a map by tool name to booleans"},
    )


def _approval(value: object) -> ApprovalRule:
    if isinstance(value, ApprovalRule):
        return value
    if isinstance(value, Mapping) and set(value) == {"when"}:
        if not isinstance(value["when"], Mapping):
            raise PydanticCustomError(
                "bad_approval",
                "approval.when must be a JSON Schema (a mapping) over the call's arguments",
                {"hint": "e.g. when: {properties: {amount: {minimum: 100}}, required: [amount]}"},
            )
        try:
            return approval_rule(value)
        except ToolDefinitionError as exc:
            raise PydanticCustomError(
                "bad_approval",
                exc.message.removeprefix("tool '': "),
                {
                    "hint": "write the JSON Schema the validated arguments must match to need "
                    "approval"
                },
            ) from None
    if value is True or value is False or value in ("always", "never"):
        return approval_rule(cast("bool", value))
    raise PydanticCustomError(
        "bad_approval",
        "approval must be always, never (or true, false) or {when: <JSON Schema>}",
        {
            "hint": "'always' asks a person before every call, {when: <JSON Schema over the "
            "arguments>} only for calls whose arguments match; or a map by tool name, e.g. "
            "{refund: always, lookup: never}"
        },
    )


def _dump(one: Callable[[T], object]) -> Callable[[PerTool[T] | None], object]:
    """The serializer of a field: as the manifest writes it."""

    def dump(value: PerTool[T] | None) -> object:
        if value is None:
            return None
        if value.every is not None:
            return one(value.every)
        return {name: one(item) for name, item in value.by_name.items()}

    return dump


def _rule_setting(rule: ApprovalRule) -> object:
    """A rule as a manifest writes it: ``true``, ``false`` or ``{when: ...}``."""
    if rule.when is not None:
        return {"when": rule.when}
    return rule.mode == "always"


def _schema(one: dict[str, Any], description: str) -> WithJsonSchema:
    """A field's JSON Schema: ``one`` value, a map by tool name of them, or null."""
    return WithJsonSchema(
        {
            "anyOf": [
                one,
                {"type": "object", "additionalProperties": one, "minProperties": 1},
                {"type": "null"},
            ],
            "description": description,
        }
    )


_WHEN: dict[str, Any] = {
    "type": "object",
    "properties": {"when": {"type": "object"}},
    "required": ["when"],
    "additionalProperties": False,
}
_APPROVAL_ONE: dict[str, Any] = {"anyOf": [{"enum": [True, False, "always", "never"]}, _WHEN]}

ApprovalEntry = Annotated[
    PerTool[ApprovalRule] | None,
    PlainValidator(_per_tool("approval", _approval, "one rule")),
    PlainSerializer(_dump(_rule_setting)),
    _schema(_APPROVAL_ONE, "When a call needs a person's approval."),
]
"""A tool entry's ``approval``: a rule for all its tools or a map by name."""

EffectsEntry = Annotated[
    PerTool[Effects] | None,
    PlainValidator(_per_tool("effects", _effects, "one value")),
    PlainSerializer(_dump(str)),
    _schema({"enum": list(_EFFECTS)}, "What running the tools does."),
]
"""A tool entry's ``effects``: one value for all its tools or a map by name."""

StreamOutputEntry = Annotated[
    PerTool[bool] | None,
    PlainValidator(_per_tool("stream_output", _stream_output, "one boolean")),
    PlainSerializer(_dump(bool)),
    _schema({"type": "boolean"}, "Whether the tools' output streams."),
]
"""A tool entry's ``stream_output``: one boolean for all its tools or a map by name."""


# --- applying them ---------------------------------------------------------------


def _settings(config: object) -> Iterator[tuple[str, PerTool[Any]]]:
    for field in SETTING_FIELDS:
        value = getattr(config, field, None)
        if isinstance(value, PerTool):
            yield field, value


def apply_settings(
    config: object, tools: Sequence[Tool], *, check: bool = True
) -> tuple[tuple[Tool, ...], list[Problem]]:
    """``tools`` (what a kind resolved ``config`` to) with the entry's
    ``approval``, ``effects`` and ``stream_output`` applied, and, when
    ``check``, a problem for each name of a map that is not among them
    (located at the field's name, relative to the entry)."""
    problems: list[Problem] = []
    settings = list(_settings(config))
    if not settings:
        return tuple(tools), problems
    names = [tool.name for tool in tools]
    if check:
        kind = getattr(config, "kind", "?")
        yields = ", ".join(names) if names else "no tool"
        for field, value in settings:
            for name in value.unknown(names):
                problems.append(
                    Problem(
                        (field, name),
                        f"{field} names tool '{name}', which this entry (kind '{kind}') "
                        "does not yield",
                        hint=f"it yields: {yields}; a map's keys are the tools' own names "
                        "(before any toolset)",
                    )
                )
    out: list[Tool] = []
    for tool in tools:
        changes: dict[str, Any] = {}
        for field, value in settings:
            chosen = value.of(tool.name)
            if chosen is not None:
                changes[field] = chosen
        out.append(tool.replace(**changes) if changes else tool)
    return tuple(out), problems
