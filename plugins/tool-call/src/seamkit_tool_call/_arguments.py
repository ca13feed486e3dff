"""Checking a ``tool_call`` entry against its tool when the hook is built:
the tool exists, every argument is one the tool takes, every required one is
there, and every value fits the tool's JSON Schema.

A value holding ``{{ ... }}`` placeholders is checked as far as it is known
before the call: ``{{ context.NAME }}`` alone may render to any type, so it
is not checked; any other placeholder, or one inside other text, renders to
text, so only its type is checked. Problems are located inside the hook's
entry (``("arguments", "limit")``); the kernel adds the entry's place.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import seamkit
from pydantic_core import to_json

if TYPE_CHECKING:
    from jsonschema import ValidationError
    from jsonschema.protocols import Validator

__all__ = ["PLACEHOLDER", "check_arguments", "unknown_tool"]

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_-]+)?)\s*\}\}")
"""A ``{{ name }}`` or ``{{ context.NAME }}`` placeholder in an argument's text."""

_SHOWN = 120

Path = tuple[str | int, ...]


def unknown_tool(
    label: str, final: str, tool_name: str, toolset_name: str | None, tools: list[str]
) -> seamkit.ManifestError:
    """The error for hook ``label`` naming no tool of the agent, with the closest name."""
    how = (
        f"toolset_name '{toolset_name}' + tool_name '{tool_name}'"
        if toolset_name
        else f"tool_name '{tool_name}'"
    )
    close = difflib.get_close_matches(final, tools, n=1)
    listing = f"the agent's tools: {', '.join(tools) or 'none'}"
    hint = f"did you mean '{close[0]}'? {listing}" if close else listing
    return seamkit.ManifestError(
        [
            seamkit.Problem(
                ("tool_name",), f"hook '{label}': no tool named '{final}' ({how})", hint=hint
            )
        ]
    )


def check_arguments(
    arguments: Mapping[str, Any], tool: seamkit.Tool, final: str
) -> list[seamkit.Problem]:
    """Every way ``arguments`` (unrendered) do not fit ``tool``'s schema.

    Arguments without placeholders are judged by the tool's own validation,
    exactly as the call would be; the schema places what it finds. Those
    with placeholders are checked against the schema as far as they are known.
    """
    schema = tool.parameters
    problems = _names(arguments, schema, tool, final)
    prepared = _Prepared()
    instance = {str(name): prepared.value(value, (str(name),)) for name, value in arguments.items()}
    problems += prepared.problems
    validator = _validator(schema)
    if validator is not None:
        for error in validator.iter_errors(instance):
            path: Path = tuple(error.absolute_path)
            if not prepared.hides(path, str(error.validator)):
                problems.append(_mismatch(path, error, final, prepared))
    if prepared.unknown or prepared.texts:
        return problems
    try:
        tool.validate(instance)
    except seamkit.InvalidToolCall as exc:
        if not problems:  # the schema let through what the call would refuse
            errors = "; ".join(exc.errors) or exc.message
            message = errors if not prepared.secrets else "a secret argument does not fit"
            problems.append(
                seamkit.Problem(
                    ("arguments",),
                    f"do not fit tool '{final}': {_short(message)}",
                    hint="JSON's meaning applies: 5.0 is not an integer, '5' is not a number",
                )
            )
        return problems
    return []  # the call would take them: whatever the schema said is moot


def _names(
    arguments: Mapping[str, Any], schema: Mapping[str, Any], tool: seamkit.Tool, final: str
) -> list[seamkit.Problem]:
    """Unknown arguments (when the schema takes no others) and missing ones."""
    properties = schema.get("properties") or {}
    names = sorted(properties)
    listing = f"its arguments: {', '.join(names)}" if names else "it takes no arguments"
    extra = schema.get("additionalProperties", True) is not False
    patterns = list(schema.get("patternProperties") or {})
    injected = set(tool.injected)
    out: list[seamkit.Problem] = []
    strays = []
    for name in map(str, arguments):
        if name in properties:
            continue
        strays.append(name)
        if name in injected:
            out.append(
                seamkit.Problem(
                    ("arguments", name),
                    f"unknown argument '{name}' of tool '{final}': the tool receives it from "
                    "the request's context, not from its arguments",
                    hint=f"remove it; {listing}",
                )
            )
        elif not extra and not any(re.search(p, name) for p in patterns):
            close = difflib.get_close_matches(name, names, n=1)
            guess = f"did you mean '{close[0]}'? " if close else ""
            out.append(
                seamkit.Problem(
                    ("arguments", name),
                    f"unknown argument '{_short(name)}' of tool '{final}'",
                    hint=guess + listing,
                )
            )
    for name in schema.get("required") or []:
        if name in arguments:
            continue
        close = difflib.get_close_matches(name, strays, n=1)
        hint = (
            f"did you mean '{name}' where it says '{_short(close[0])}'?"
            if close
            else f"add it to arguments; {listing}"
        )
        out.append(
            seamkit.Problem(
                ("arguments",), f"missing required argument '{name}' of tool '{final}'", hint=hint
            )
        )
    return out


@dataclass
class _Prepared:
    """The arguments as the JSON the schema is checked against, and which
    parts of them are not known before the call."""

    unknown: list[Path] = field(default_factory=list)  # any value: {{ context.X }} alone
    texts: list[Path] = field(default_factory=list)  # some text: other placeholders
    secrets: list[Path] = field(default_factory=list)
    problems: list[seamkit.Problem] = field(default_factory=list)

    def value(self, value: Any, path: Path) -> Any:
        """``value`` as JSON, its placeholders and secrets recorded."""
        if isinstance(value, seamkit.Secret):
            self.secrets.append(path)
            value = value.get_secret_value()
        if isinstance(value, str):
            whole = PLACEHOLDER.fullmatch(value.strip())
            if whole is not None and whole.group(1).startswith("context."):
                self.unknown.append(path)
                return None
            if whole is not None or PLACEHOLDER.search(value):
                self.texts.append(path)
            return value
        if isinstance(value, Mapping):
            return {str(k): self.value(v, (*path, str(k))) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v, (*path, i)) for i, v in enumerate(value)]
        try:  # as the call sends it: JSON (a date as text, NaN as null)
            return json.loads(to_json(value))
        except Exception as exc:
            self.problems.append(
                seamkit.Problem(
                    ("arguments", *path),
                    f"this value cannot be sent to a tool as JSON: {exc}",
                    hint="give a string, a number, a boolean, a list or a mapping",
                )
            )
            return None

    def hides(self, path: Path, validator: str) -> bool:
        """Whether an error at ``path`` may not hold once the placeholders
        are rendered (or is about names, which are checked on their own)."""
        if not path and validator in ("required", "additionalProperties"):
            return True
        if any(_within(u, path) for u in self.unknown):
            return True
        return any(_within(t, path) and (t != path or validator != "type") for t in self.texts)


def _within(inner: Path, outer: Path) -> bool:
    """Whether ``inner`` is ``outer`` or inside it."""
    return inner[: len(outer)] == outer


def _validator(schema: dict[str, Any]) -> Validator | None:
    import jsonschema  # lazy: ~40 ms to import, and only a built tool_call hook needs it

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError:
        return None  # the tool's own problem: its calls report it
    validator: Validator = cls(schema)
    return validator


def _mismatch(
    path: Path, error: ValidationError, final: str, prepared: _Prepared
) -> seamkit.Problem:
    secret = any(_within(path, s) or _within(s, path) for s in prepared.secrets)
    wanted = _short(json.dumps(error.schema, default=str))
    if secret:
        message = (
            f"does not fit tool '{final}': the secret's value fails '{error.validator}' "
            f"({_short(json.dumps(error.validator_value, default=str))})"
        )
    else:
        message = f"does not fit tool '{final}': {_short(error.message)}"
    hint = f"the tool's schema here: {wanted}"
    if path in prepared.texts:
        hint += (
            "; this placeholder renders to text (only {{ context.NAME }} standing alone "
            "keeps its value's type)"
        )
    return seamkit.Problem(("arguments", *path), message, hint=hint)


def _short(text: str) -> str:
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."
