"""Reading a manifest file (YAML or JSON), and finding where a location such
as ``("hooks", 0, "event")`` stands in its text."""

from __future__ import annotations

import json
from collections.abc import Sequence
from os import PathLike, fspath
from pathlib import Path
from typing import Any

import yaml

from .._errors import ManifestError, Problem

__all__ = ["locate", "locate_problems", "read_document"]

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_document(path: str | PathLike[str]) -> tuple[Any, str]:
    """Parse a YAML or JSON file; returns ``(data, text)``. Raises `ManifestError`."""
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
        data = json.loads(text) if source.endswith(".json") else yaml.load(text, Loader=_LOADER)
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


def locate(
    text: str, location: tuple[str | int, ...], *, key: bool = False
) -> tuple[int | None, int | None]:
    """1-based ``(line, column)`` of the deepest node on ``location`` that exists:
    of its value, or of its key when ``key`` is true."""
    try:
        node = yaml.compose(text, Loader=_LOADER)
    except yaml.YAMLError:
        return None, None
    if node is None:
        return None, None
    mark = node.start_mark
    for part in location:
        child = None
        if isinstance(node, yaml.MappingNode):
            for name, value in node.value:
                if name.value == str(part):
                    child = value
                    mark = name.start_mark if key else value.start_mark
                    break
        elif (
            isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value)
        ):
            child = node.value[part]
            mark = child.start_mark
        if child is None:
            break
        node = child
    return mark.line + 1, mark.column + 1


def locate_problems(
    problems: Sequence[Problem], text: str | None, *, source: str | None = None
) -> list[Problem]:
    """``problems`` with line and column filled in from the manifest's text
    (``text``, or the file ``source`` when no text is given); a problem that
    already has a line keeps it."""
    if text is None and source:
        try:
            text = Path(source).read_text(encoding="utf-8")
        except OSError:
            text = None
    if text is None:
        return list(problems)
    out = []
    for p in problems:
        if p.line is None and p.location:
            line, column = locate(text, p.location, key=p.message.startswith("unknown field"))
            p = Problem(p.location, p.message, p.hint, line, column)
        out.append(p)
    return out
