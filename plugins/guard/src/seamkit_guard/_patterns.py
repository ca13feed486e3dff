"""What a guard's patterns are checked for, once, when its entry is read:
each compiles under Python's `re` (the run's redactor uses it) and under
`regex` (the guard's partial matching), matches no empty text, looks at no
text before its match, and has a longest match (its hold window) or none."""

from __future__ import annotations

import re
from collections.abc import Iterator
from re import _constants, _parser  # type: ignore[attr-defined]
from typing import Any

__all__ = ["compile_error", "longest_match", "looks_behind", "shortest_match"]


def longest_match(pattern: str) -> int | None:
    """The most characters a match of ``pattern`` spans, with what its
    look-aheads read past its end; ``None`` when no bound exists (``\\d+``).

    This is the guard's hold window: a stream that holds back the last
    ``longest_match - 1`` characters never lets out the start of a match.
    """
    parsed = _parser.parse(pattern)
    width = int(parsed.getwidth()[1])
    ahead = max((_width(sub) for sub in _assertions(parsed, direction=1)), default=0)
    if width >= _constants.MAXREPEAT or ahead >= _constants.MAXREPEAT:
        return None
    return width + ahead


def shortest_match(pattern: str) -> int:
    """The fewest characters a match of ``pattern`` spans (0: it can match
    the empty text)."""
    return int(_parser.parse(pattern).getwidth()[0])


def looks_behind(pattern: str) -> bool:
    """Whether ``pattern`` has a look-behind: held text loses what came before it."""
    return any(True for _ in _assertions(_parser.parse(pattern), direction=-1))


def compile_error(pattern: str) -> str | None:
    """Why ``pattern`` does not compile under `re` or `regex`, or ``None``."""
    try:
        re.compile(pattern)
    except re.error as exc:
        return f"re: {exc}"
    import regex  # lazy: only a guard's patterns need it

    try:
        regex.compile(pattern)
    except regex.error as exc:
        return f"regex: {exc}"
    return None


def _width(sub: Any) -> int:
    return int(sub.getwidth()[1])


def _assertions(sub: Any, *, direction: int) -> Iterator[Any]:
    """The bodies of the look-arounds in ``sub`` that read in ``direction``
    (1 ahead, -1 behind), however deeply nested."""
    for op, av in sub.data:
        if op in (_constants.ASSERT, _constants.ASSERT_NOT) and av[0] == direction:
            yield av[1]
        for child in _children(av):
            yield from _assertions(child, direction=direction)


def _children(av: Any) -> Iterator[Any]:
    if isinstance(av, _parser.SubPattern):
        yield av
    elif isinstance(av, tuple | list):
        for item in av:
            yield from _children(item)
