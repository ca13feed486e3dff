"""Reading JSON safely: one pass over the tokens checks the nesting depth
(before ``json.loads``, which recurses once per level), finds duplicate keys
and integers too long to convert, and records where every value starts; then
``json.loads`` builds the values."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from typing import Any

from .._errors import ManifestError, Problem
from ._limits import DEPTH_CEILING, DEPTH_VARIABLE, Limits
from ._place import Lines, Position
from ._shown import shown

__all__ = ["SpanPlacements", "read_json"]

_TOKEN = re.compile(
    r'[ \t\n\r]*(?:("[^"\\]*(?:\\.[^"\\]*)*")|([\[\]{}:,])|([^ \t\n\r\[\]{}:,"]+))', re.S
)
_INTEGER = re.compile(r"-?\d+")


@dataclass(slots=True)
class _Spot:
    """Where a value starts; a collection's children by key (with where the
    key starts) or by index."""

    offset: int
    keys: dict[str, tuple[int, _Spot]] | None = None
    items: list[_Spot] | None = None


@dataclass(slots=True)
class _Scan:
    """What one pass over the tokens found."""

    root: _Spot | None = None
    problems: list[Problem] = field(default_factory=list)
    too_deep: Problem | None = None
    too_long: Problem | None = None


def read_json(text: str, limits: Limits) -> tuple[Any, SpanPlacements]:
    """The value of ``text`` and its index. Raises `ManifestError` (without a
    source) with the problems found, each with line and column."""
    lines = Lines(text)
    scan = _scan(text, limits, lines)
    if scan.too_deep is not None:
        raise ManifestError([scan.too_deep])
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ManifestError(
            [Problem((), f"invalid JSON: {exc.msg}", line=exc.lineno, column=exc.colno)]
        ) from None
    except ValueError as exc:  # an integer past sys.get_int_max_str_digits()
        problem = scan.too_long or Problem((), f"invalid JSON: {exc}", line=1, column=1)
        raise ManifestError([problem]) from None
    if scan.problems:
        raise ManifestError(scan.problems)
    return data, SpanPlacements(scan.root, lines)


def _scan(text: str, limits: Limits, lines: Lines) -> _Scan:
    """Walk the tokens of ``text``; stops quietly where the text is not JSON
    (``json.loads`` then says what is wrong)."""
    out = _Scan()
    stack: list[tuple[_Spot, list[str | int]]] = []  # open collections, their location
    pending: tuple[str, int] | None = None  # a key read, waiting for its value
    previous = ""
    digits = sys.get_int_max_str_digits()
    position = 0
    end = len(text)
    while position < end:
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            break
        position = match.end()
        string, punctuation, literal = match.groups()
        start = match.start(1 if string else 2 if punctuation else 3)
        if punctuation in ("]", "}"):
            if stack:
                stack.pop()
            pending = None
            previous = punctuation
            continue
        if punctuation in (":", ","):
            previous = punctuation
            continue
        top = stack[-1][0] if stack else None
        if (
            string is not None
            and top is not None
            and top.keys is not None
            and previous in ("{", ",")
        ):
            pending = (_decoded(string), start)
            _check_key(top, pending, stack[-1][1], out, lines)
            previous = "key"
            continue
        where = _location(stack, pending)
        if punctuation is not None:  # [ or {: a collection opens
            if len(stack) >= limits.max_depth:
                out.too_deep = _problem(
                    where[:4],
                    f"nested more than {limits.max_depth} levels deep",
                    start,
                    lines,
                    f"flatten this value; {DEPTH_VARIABLE} raises the limit (at most "
                    f"{DEPTH_CEILING})",
                )
                break
            spot = _Spot(start, keys={}) if punctuation == "{" else _Spot(start, items=[])
            _attach(stack, pending, spot, out)
            stack.append((spot, list(where)))
            pending = None
            previous = punctuation
            continue
        if literal is not None and digits and _INTEGER.fullmatch(literal):
            count = len(literal.lstrip("-"))
            if count > digits and out.too_long is None:
                out.too_long = _problem(
                    where,
                    f"an integer of {count:,} digits is too long to read (at most {digits:,})",
                    start,
                    lines,
                    "write it as a string",
                )
        _attach(stack, pending, _Spot(start), out)
        pending = None
        previous = "value"
    return out


def _attach(
    stack: list[tuple[_Spot, list[str | int]]],
    pending: tuple[str, int] | None,
    spot: _Spot,
    out: _Scan,
) -> None:
    if not stack:
        if out.root is None:
            out.root = spot
        return
    top = stack[-1][0]
    if top.items is not None:
        top.items.append(spot)
    elif top.keys is not None and pending is not None:
        top.keys[pending[0]] = (pending[1], spot)


def _decoded(token: str) -> str:
    try:
        value = json.loads(token)
    except ValueError:
        return token
    return value if isinstance(value, str) else token


def _check_key(
    top: _Spot,
    pending: tuple[str, int],
    where: list[str | int],
    out: _Scan,
    lines: Lines,
) -> None:
    name, start = pending
    assert top.keys is not None
    first = top.keys.get(name)
    if first is None:
        return
    line, column = lines.position(first[0])
    out.problems.append(
        _problem(
            (*where, shown(name)),
            f"duplicate key '{shown(name)}' (first at line {line}, column {column})",
            start,
            lines,
            "an object takes each key once: remove one of them, or merge their values",
        )
    )


def _location(
    stack: list[tuple[_Spot, list[str | int]]], pending: tuple[str, int] | None
) -> tuple[str | int, ...]:
    if not stack:
        return ()
    spot, where = stack[-1]
    if spot.items is not None:
        return (*where, len(spot.items))
    return (*where, shown(pending[0])) if pending is not None else tuple(where)


def _problem(
    location: tuple[str | int, ...], message: str, offset: int, lines: Lines, hint: str
) -> Problem:
    line, column = lines.position(offset)
    return Problem(location, message, hint, line, column)


class SpanPlacements:
    """Places locations in a JSON document by the offsets one scan recorded."""

    def __init__(self, root: _Spot | None, lines: Lines) -> None:
        self._root = root
        self._lines = lines

    def find(self, location: tuple[str | int, ...], *, key: bool = False) -> Position:
        """See `Placements.find`."""
        spot = self._root
        if spot is None:
            return 1, 1
        offset = spot.offset
        for part in location:
            if spot.keys is not None and str(part) in spot.keys:
                key_offset, spot = spot.keys[str(part)]
                offset = key_offset if key else spot.offset
            elif spot.items is not None and isinstance(part, int) and 0 <= part < len(spot.items):
                spot = spot.items[part]
                offset = spot.offset
            else:
                break
        return self._lines.position(offset)
