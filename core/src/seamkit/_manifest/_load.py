"""Reading a manifest: parse YAML/JSON, interpolate, validate, and turn every
validation error into a `Problem` a user can act on, with its line and column."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from os import PathLike, fspath
from pathlib import Path
from typing import Any, TypeVar, get_args

from pydantic import BaseModel, ValidationError

from .._config import HookConfig
from .._document import Placements, shown
from .._errors import ManifestError, Problem
from .._loader import get_registry
from .._registry import CATEGORY_LABEL, Registry
from .._secret import Secret
from ._build import app_model
from ._interpolate import interpolate
from ._read import locate_problems, read_document

__all__ = ["load_manifest"]

M = TypeVar("M", bound=BaseModel)
_CATEGORY_BY_LIST = {"hooks": "hook", "tools": "tool", "refresh_condition": "refresh"}
_EVERY_PLUGIN = "`seamkit plugins` lists every installed plugin and its kinds"


def load_manifest(
    source: str | PathLike[str] | Mapping[str, Any],
    *,
    base: type[M],
    registry: Registry | None = None,
    environ: Mapping[str, str] | None = None,
) -> M:
    """Read, interpolate and validate a manifest against the installed kinds,
    with the model :func:`app_model` derives from ``base``.

    Raises :class:`ManifestError` with every problem found. Validators see
    the whole document (interpolated) as ``info.context["manifest"]``, so a
    kind can check what it names in a plugin-owned section.
    """
    reg = registry if registry is not None else get_registry()
    placements: Placements | None = None
    name: str | None = None
    if isinstance(source, Mapping):
        data: Any = dict(source)
    else:
        name = fspath(source)
        document = read_document(name)
        data, placements = document.data, document.placements
    if not isinstance(data, dict):
        line, column = placements.find(()) if placements is not None else (None, None)
        problem = Problem(
            (),
            "a manifest must be a mapping of fields, not "
            + ("an empty file" if data is None else _kind_of(data)),
            hint="start with 'name:' and 'model:'",
            line=line,
            column=column,
        )
        raise ManifestError([problem], source=name)
    data, problems = interpolate(data, environ)
    model = app_model(reg, base)
    config: M | None = None
    try:
        config = model.model_validate(data, context={"manifest": data})
    except ValidationError as exc:
        # A value emptied by a missing variable is already reported once.
        reported = {p.location for p in problems}
        problems.extend(
            p for p in translate_errors(exc, data, reg, model) if p.location not in reported
        )
    if problems:
        raise ManifestError(locate_problems(problems, placements), source=name)
    assert config is not None
    if name is not None:
        config._source = str(Path(name).resolve())  # type: ignore[attr-defined]
    return config


# --- turning pydantic errors into problems ------------------------------


def translate_errors(
    exc: ValidationError, data: Any, registry: Registry, model: type[BaseModel]
) -> list[Problem]:
    """One `Problem` per pydantic error, in words a manifest author reads."""
    seen: set[tuple[tuple[str | int, ...], str]] = set()
    out: list[Problem] = []
    for err in exc.errors(include_url=False):
        problem = _translate(err, data, registry, model)
        hint = shown(problem.hint, 600) if problem.hint else None
        problem = Problem(problem.location, shown(problem.message, 300), hint)
        key = (problem.location, problem.message)
        if key not in seen:
            seen.add(key)
            out.append(problem)
    return out


def _clean_location(loc: tuple[Any, ...], data: Any) -> tuple[str | int, ...]:
    """Drop the discriminator tags pydantic puts into locations."""
    out: list[str | int] = []
    node = data
    for part in loc:
        if (
            isinstance(node, dict)
            and part not in node
            and part in (node.get("kind"), node.get("provider"))
        ):
            continue
        if isinstance(part, str) and part.startswith("function-"):
            continue
        out.append(part)
        node = _child(node, part)
    return tuple(out)


def _kind_of(value: Any) -> str:
    """``a list``, ``a string``...: what a value is, in a manifest author's words."""
    names = {list: "a list", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return next((n for t, n in names.items() if isinstance(value, t)), f"a {type(value).__name__}")


def _category_at(loc: tuple[str | int, ...]) -> str:
    for part in reversed(loc):
        if isinstance(part, str) and part in _CATEGORY_BY_LIST:
            return _CATEGORY_BY_LIST[part]
    return "hook"


def _describe_input(value: Any) -> str:
    if isinstance(value, Secret):
        return "a secret"
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _translate(err: Any, data: Any, registry: Registry, model: type[BaseModel]) -> Problem:
    loc = _clean_location(tuple(err["loc"]), data)
    kind = err["type"]
    ctx = err.get("ctx") or {}
    value = err.get("input")
    if kind in {"union_tag_invalid", "union_tag_not_found", "unknown_kind"}:
        return _unknown_kind(loc, _category_at(loc), ctx.get("tag"), registry)
    if kind == "unknown_provider":
        return _unknown_kind(loc, "model", ctx.get("tag"), registry)
    if kind == "missing" and _is_hook_event(loc):
        return _no_event(loc, data, registry)
    if kind == "missing":
        field = loc[-1] if loc else "?"
        return Problem(
            loc, f"required field '{field}' is missing", hint=f"add '{field}' to this entry"
        )
    if kind == "extra_forbidden":
        field = str(loc[-1]) if loc else "?"
        allowed = _allowed_fields(loc[:-1], data, registry, model)
        close = difflib.get_close_matches(field, allowed, n=1)
        suggestion = f"did you mean '{close[0]}'? " if close else ""
        if allowed:
            suggestion += "allowed fields: " + ", ".join(allowed)
        if len(loc) == 1 and registry.skipped:  # a top-level key: a skipped plugin's section?
            suggestion += ("; " if suggestion else "") + (
                f"{registry.not_loaded()}: a plugin's section is unknown while the plugin "
                "is not loaded"
            )
        return Problem(loc, f"unknown field '{shown(field)}'", hint=suggestion or None)
    message = err["msg"]
    for prefix in ("Value error, ", "Assertion failed, "):
        if message.startswith(prefix):
            message = message[len(prefix) :]
    hint: str | None = ctx.get("hint")
    if isinstance(value, Secret):
        hint = (
            "${secret:...} gives a secret, which this field does not take; use "
            "${env:VAR} for plain text"
        )
    elif (
        kind
        not in {
            "value_error",
            "unsupported_event",
            "preview_event",
            "model_format",
            "duplicate_event",
        }
        and not isinstance(value, dict | list)
        and "input" in err
        and f"'{value}'" not in message  # the message quotes it already
    ):
        message = f"{message}, got {_describe_input(value)}"
    return Problem(loc, message, hint=hint)


def _is_hook_event(loc: tuple[str | int, ...]) -> bool:
    """Whether ``loc`` is the ``event`` of a hook entry: ``hooks[i].event``."""
    return len(loc) == 3 and loc[0] == "hooks" and isinstance(loc[1], int) and loc[2] == "event"


def _no_event(loc: tuple[str | int, ...], data: Any, registry: Registry) -> Problem:
    """A hook entry that names neither ``event`` nor ``events``."""
    kind = _child(_child(data, "hooks"), loc[1])
    tag = kind.get("kind") if isinstance(kind, dict) else None
    info = registry.kind("hook", tag) if isinstance(tag, str) else None
    supported = sorted(e.value for e in info.events) if info is not None else []
    example = supported[0] if supported else "on_request_start"
    hint = f"add 'event: {example}', or 'events: [...]' for several events"
    if supported:
        hint += f"; hook kind '{tag}' supports: " + ", ".join(supported)
    return Problem(loc, "this hook entry names no event", hint=hint)


def _unknown_kind(
    loc: tuple[str | int, ...], category: Any, tag: Any, registry: Registry
) -> Problem:
    label = CATEGORY_LABEL[category]
    installed = (
        sorted(registry.kinds_of(category))
        if category != "model"
        else sorted(p for p, i in registry.models.items() if not i.preview)
    )
    if category != "model":
        loc = (*loc, "kind")
    listing = f"installed {label}s: " + (", ".join(installed) if installed else "none")
    if tag is None:
        return Problem(loc, f"missing 'kind' of {label}", hint=listing)
    if not isinstance(tag, str):
        return Problem(
            loc, f"the 'kind' of a {label} is its name, not {_kind_of(tag)}", hint=listing
        )
    tag = shown(tag)
    hidden = registry.kind(category, tag) if category != "model" else registry.models.get(tag)
    if hidden is not None:
        return Problem(
            loc,
            f"{label} '{tag}' is a preview",
            hint="set SEAMKIT_ENABLE_PREVIEW=1 to use preview kinds and events",
        )
    message = f"unknown {label} '{tag}'"
    failed = registry.failed_plugins()
    owner = next((p for p in failed if p.owns(str(tag))), None)
    if owner is not None:
        message += (
            f"; it belongs to plugin '{owner.name}' ({owner.distribution or '?'} "
            f"{owner.version or ''}".rstrip()
            + f"), which failed to load: {owner.error}"
        )
        return Problem(
            loc,
            message,
            hint="fix or reinstall that plugin; `seamkit plugins` shows every load error",
        )
    skipped = list(registry.skipped.values())
    off = next((p for p in skipped if p.owns(str(tag))), None)
    if off is not None:
        return Problem(
            loc,
            f"{message}; plugin '{off.name}' ({off.label}) is installed but {off.reason}",
            hint=f"to load it, {off.how_to_enable}",
        )
    if failed:
        names = ", ".join(f"'{p.name}' ({p.error})" for p in failed)
        listing += f"; plugins that failed to load: {names}"
    if skipped:
        listing += f"; {registry.not_loaded()}"
    close = difflib.get_close_matches(str(tag), installed, n=1)
    if close:
        listing = f"did you mean '{close[0]}'? " + listing
    return Problem(loc, message, hint=f"{listing}; {_EVERY_PLUGIN}")


def _allowed_fields(
    loc: tuple[str | int, ...], data: Any, registry: Registry, app: type[BaseModel]
) -> list[str]:
    """The field names of the model that validates the mapping at ``loc``."""
    model: type[BaseModel] | None = app
    node = data
    previous: str | int | None = None
    for part in loc:
        node = _child(node, part)
        category = _CATEGORY_BY_LIST.get(str(part if part == "refresh_condition" else previous))
        kind = node.get("kind") if isinstance(node, dict) else None
        if category is not None and (isinstance(part, int) or part == "refresh_condition"):
            info = registry.kind(category, str(kind)) if kind is not None else None  # type: ignore[arg-type]
            model = info.model if info else None
        elif part == "model" and previous is None:
            provider = node.get("provider") if isinstance(node, dict) else None
            found = registry.models.get(str(provider))
            model = found.config if found else None
        elif isinstance(part, str) and model is not None and part in model.model_fields:
            model = _model_of(model.model_fields[part].annotation)
        else:
            model = None
        previous = part
    if model is None:
        return []
    fields = {field.alias or name for name, field in model.model_fields.items()}
    if issubclass(model, HookConfig):
        fields.add("events")  # written out into one entry per event before validation
    return sorted(fields)


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model a field holds (``X`` or ``X | None``), if any."""
    for candidate in (annotation, *get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _child(node: Any, part: str | int) -> Any:
    if isinstance(node, dict):
        return node.get(part)
    if isinstance(node, list) and isinstance(part, int) and part < len(node):
        return node[part]
    return None
