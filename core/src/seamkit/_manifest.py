"""Reading a manifest: parse YAML/JSON, interpolate, validate, and turn every
validation error into a `Problem` a user can act on, with its line and column."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from os import PathLike, fspath
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from ._errors import ManifestError, Problem
from ._interpolate import interpolate
from ._secret import Secret

if TYPE_CHECKING:
    from ._app import AppConfig
    from ._registry import Registry

__all__ = ["load_manifest", "read_document"]

_OWN_MESSAGES = frozenset(
    {
        "value_error",
        "unsupported_event",
        "preview_event",
        "model_format",
        "fail_on_completion",
        "match_not_allowed",
    }
)
_CATEGORY_BY_LIST = {"hooks": "hook", "tools": "tool", "refresh_condition": "refresh"}


def read_document(path: str | PathLike[str]) -> tuple[Any, str]:
    """Parse a YAML or JSON file; returns ``(data, text)``. Raises `ManifestError`."""
    import yaml

    source = fspath(path)
    try:
        text = Path(source).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ManifestError(
            [Problem((), f"no such file: {source}", hint="check the path to the app manifest")]
        ) from None
    except OSError as exc:
        raise ManifestError([Problem((), f"cannot read {source}: {exc.strerror}")]) from None
    try:
        if source.endswith(".json"):
            data = json.loads(text)
        else:
            data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except json.JSONDecodeError as exc:
        raise ManifestError(
            [Problem((), f"invalid JSON: {exc.msg}", line=exc.lineno, column=exc.colno)],
            source=source,
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        what = getattr(exc, "problem", None) or str(exc)
        raise ManifestError(
            [
                Problem(
                    (),
                    f"invalid YAML: {what}",
                    line=mark.line + 1 if mark else None,
                    column=mark.column + 1 if mark else None,
                )
            ],
            source=source,
        ) from None
    return data, text


def load_manifest(
    source: str | PathLike[str] | Mapping[str, Any] | BaseModel,
    *,
    registry: Registry | None = None,
    environ: Mapping[str, str] | None = None,
) -> AppConfig:
    """Read, interpolate and validate a manifest against the installed kinds.

    Raises :class:`ManifestError` with every problem found.
    """
    from ._app import AppConfig
    from ._loader import get_registry

    reg = registry if registry is not None else get_registry()
    if isinstance(source, AppConfig):
        return source
    text: str | None = None
    name: str | None = None
    if isinstance(source, Mapping):
        data: Any = dict(source)
    else:
        name = fspath(source)  # type: ignore[arg-type]
        data, text = read_document(name)
    if not isinstance(data, dict):
        raise ManifestError(
            [
                Problem(
                    (),
                    "a manifest must be a mapping of fields",
                    hint="start with 'name:' and 'model:'",
                )
            ],
            source=name,
        )
    data, problems = interpolate(data, environ)
    model = reg.app_model()
    config: AppConfig | None = None
    try:
        config = model.model_validate(data)
    except ValidationError as exc:
        # A value emptied by a missing variable is already reported once.
        reported = {p.location for p in problems}
        problems.extend(p for p in translate_errors(exc, data, reg) if p.location not in reported)
    if problems:
        raise ManifestError(_with_positions(problems, text), source=name)
    assert config is not None
    if name is not None:
        config._source = str(Path(name).resolve())
    return config


def _with_positions(problems: list[Problem], text: str | None) -> list[Problem]:
    if text is None:
        return problems
    from ._positions import locate

    out = []
    for p in problems:
        line, col = (
            (p.line, p.column)
            if p.line is not None
            else locate(text, p.location, key=p.message.startswith("unknown field"))
        )
        out.append(Problem(p.location, p.message, p.hint, line, col))
    return out


# --- turning pydantic errors into problems ------------------------------


def translate_errors(exc: ValidationError, data: Any, registry: Registry) -> list[Problem]:
    """One `Problem` per pydantic error, in words a manifest author reads."""
    seen: set[tuple[tuple[str | int, ...], str]] = set()
    out: list[Problem] = []
    for err in exc.errors(include_url=False):
        problem = _translate(err, data, registry)
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
        if isinstance(node, dict) and part not in node and node.get("kind") == part:
            continue
        if isinstance(part, str) and part.startswith("function-"):
            continue
        out.append(part)
        node = _child(node, part)
    return tuple(out)


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


def _translate(err: Any, data: Any, registry: Registry) -> Problem:
    loc = _clean_location(tuple(err["loc"]), data)
    kind = err["type"]
    ctx = err.get("ctx") or {}
    value = err.get("input")
    if kind in {"union_tag_invalid", "union_tag_not_found", "unknown_kind"}:
        return _unknown_kind(loc, _category_at(loc), ctx.get("tag"), registry)
    if kind == "unknown_provider":
        return _unknown_kind(loc, "model", ctx.get("tag"), registry)
    if kind == "missing":
        field = loc[-1] if loc else "?"
        return Problem(
            loc, f"required field '{field}' is missing", hint=f"add '{field}' to this entry"
        )
    if kind == "extra_forbidden":
        field = str(loc[-1]) if loc else "?"
        allowed = _allowed_fields(loc[:-1], data, registry)
        close = difflib.get_close_matches(field, allowed, n=1)
        suggestion = f"did you mean '{close[0]}'? " if close else ""
        if allowed:
            suggestion += "allowed fields: " + ", ".join(allowed)
        return Problem(loc, f"unknown field '{field}'", hint=suggestion or None)
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
        kind not in {"value_error", "unsupported_event", "preview_event", "model_format"}
        and not isinstance(value, dict | list)
        and "input" in err
    ):
        message = f"{message}, got {_describe_input(value)}"
    return Problem(loc, message, hint=hint)


def _unknown_kind(
    loc: tuple[str | int, ...], category: Any, tag: Any, registry: Registry
) -> Problem:
    from ._registry import CATEGORY_LABEL

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
    hidden = registry.kind(category, tag) if category != "model" else registry.models.get(tag)
    if hidden is not None:
        return Problem(
            loc,
            f"{label} '{tag}' is a preview",
            hint="set SEAMKIT_ENABLE_PREVIEW=1 to use preview kinds and events",
        )
    message = f"unknown {label} '{tag}'"
    failed = registry.failed_plugins()
    owner = _failed_owner(str(tag), failed)
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
    if failed:
        names = ", ".join(f"'{p.name}' ({p.error})" for p in failed)
        listing += f"; plugins that failed to load: {names}"
    close = difflib.get_close_matches(str(tag), installed, n=1)
    if close:
        listing = f"did you mean '{close[0]}'? " + listing
    return Problem(loc, message, hint=listing)


def _norm(text: str) -> str:
    return text.lower().replace("-", "_").replace(".", "_")


def _failed_owner(tag: str, failed: list[Any]) -> Any:
    for plugin in failed:
        names = {_norm(plugin.name)}
        if plugin.distribution:
            dist = _norm(plugin.distribution)
            names |= {dist, dist.removeprefix("seamkit_")}
        if _norm(tag) in names:
            return plugin
    return None


def _allowed_fields(loc: tuple[str | int, ...], data: Any, registry: Registry) -> list[str]:
    """The field names of the model that validates the mapping at ``loc``."""
    from ._app import AppConfig, Settings

    model: type[BaseModel] | None = AppConfig
    node = data
    previous: str | int | None = None
    for part in loc:
        node = _child(node, part)
        if part == "settings":
            model = Settings
        elif isinstance(part, int) or part == "refresh_condition":
            category = _CATEGORY_BY_LIST.get(str(part if part == "refresh_condition" else previous))
            info = None
            if category is not None and isinstance(node, dict):
                info = registry.kind(category, str(node.get("kind")))  # type: ignore[arg-type]
            model = info.model if info else None
        elif part not in {"hooks", "tools"}:
            model = None
        previous = part
    return sorted(model.model_fields) if model is not None else []


def _child(node: Any, part: str | int) -> Any:
    if isinstance(node, dict):
        return node.get(part)
    if isinstance(node, list) and isinstance(part, int) and part < len(node):
        return node[part]
    return None
