"""Reading a manifest file (YAML or JSON) safely, and placing problems at
their line and column from one parse of it (see `seamkit._document`)."""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike, fspath

from .._document import Document, Placements, locate, parse_document, read_document as _read
from .._errors import ManifestError, Problem

__all__ = ["locate_problems", "read_document"]


def read_document(path: str | PathLike[str]) -> Document:
    """Parse a YAML or JSON manifest file. Raises `ManifestError`, every
    problem with its line and column."""
    source = fspath(path)
    try:
        return _read(source)
    except FileNotFoundError:
        raise ManifestError(
            [Problem((), f"no such file: {source}", hint="check the path to the app manifest")]
        ) from None
    except IsADirectoryError:
        raise ManifestError(
            [Problem((), f"{source} is a directory", hint="give the path of the manifest file")]
        ) from None
    except OSError as exc:
        raise ManifestError([Problem((), f"cannot read {source}: {exc.strerror}")]) from None


def locate_problems(
    problems: Sequence[Problem],
    where: Placements | str | None,
    *,
    source: str | None = None,
) -> list[Problem]:
    """``problems`` with line and column filled in from one parse of the
    manifest: ``where`` is its index, or its text, or ``None`` to read the
    file ``source``. A problem that already has a line keeps it; when the
    text cannot be read or parsed, the problems are returned as they are."""
    placements: Placements | None = None
    try:
        if isinstance(where, str):
            json = bool(source and source.endswith(".json"))
            placements = parse_document(where, json=json).placements
        elif where is not None:
            placements = where
        elif source:
            placements = read_document(source).placements
    except ManifestError:
        placements = None
    if placements is None:
        return list(problems)
    return locate(list(problems), placements)
