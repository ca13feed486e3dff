"""Reading a YAML or JSON document (an app manifest, a model script) safely.

Whatever the bytes, reading either gives the data and an index that places
any location in the text, or raises `ManifestError` whose every problem has
a line and a column: text that is not UTF-8, YAML or JSON that does not
parse, nesting deeper than `Limits.max_depth`, aliases adding more than
`Limits.max_alias_nodes` values, an alias inside what it repeats, duplicate
keys, a value YAML cannot build (``!!int x``), more than one document.
The limits come from the environment (``SEAMKIT_MANIFEST_MAX_DEPTH``,
``SEAMKIT_MANIFEST_MAX_ALIAS_NODES``) unless given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from os import PathLike, fspath
from pathlib import Path
from typing import Any

from .._errors import ManifestError, Problem
from ._decode import decode
from ._json import read_json
from ._limits import ALIAS_VARIABLE, DEPTH_CEILING, DEPTH_VARIABLE, Limits
from ._place import Placements, Position
from ._shown import shown
from ._yaml import read_yaml

__all__ = [
    "ALIAS_VARIABLE",
    "DEPTH_CEILING",
    "DEPTH_VARIABLE",
    "Document",
    "Limits",
    "Placements",
    "Position",
    "locate",
    "parse_document",
    "read_document",
    "shown",
]


@dataclass(frozen=True, slots=True)
class Document:
    """A document read: its ``data``, its ``text``, and where each value stands."""

    data: Any
    text: str
    placements: Placements


def read_document(path: str | PathLike[str], *, limits: Limits | None = None) -> Document:
    """Read the file at ``path`` (JSON when its name ends in ``.json``, YAML
    otherwise). Raises `OSError` when it cannot be read, `ManifestError`
    (with the path as its source) when it cannot be parsed."""
    source = fspath(path)
    data = Path(source).read_bytes()
    text = decode(data)
    if isinstance(text, Problem):
        raise ManifestError([text], source=source)
    return parse_document(text, json=source.endswith(".json"), source=source, limits=limits)


def parse_document(
    text: str, *, json: bool = False, source: str | None = None, limits: Limits | None = None
) -> Document:
    """Parse ``text`` as JSON or YAML. Raises `ManifestError` naming ``source``."""
    try:
        chosen = limits if limits is not None else Limits.from_environ()
        data, placements = read_json(text, chosen) if json else read_yaml(text, chosen)
    except ManifestError as exc:
        raise ManifestError(exc.problems, source=source) from None
    return Document(data, text, placements)


def locate(problems: Sequence[Problem], placements: Placements) -> list[Problem]:
    """``problems`` with line and column filled in from ``placements``; one
    that has a line keeps it, and one about the whole document (location
    ``()``) gets none. A problem about an unknown field (or argument, or a
    duplicate key) is placed at the key, any other at the value."""
    out = []
    for p in problems:
        if p.line is None and p.location:
            key = p.message.startswith(("unknown field", "unknown argument", "duplicate key"))
            line, column = placements.find(p.location, key=key)
            p = Problem(p.location, p.message, p.hint, line, column)
        out.append(p)
    return out
