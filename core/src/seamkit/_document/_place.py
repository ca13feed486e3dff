"""Where a value stands in a document's text: the protocol both readers'
indexes follow, and turning a character offset into a line and column."""

from __future__ import annotations

from bisect import bisect_right
from typing import Protocol

__all__ = ["Lines", "Placements", "Position"]

Position = tuple[int, int]
"""A 1-based ``(line, column)``."""


class Placements(Protocol):
    """Finds a location such as ``("hooks", 0, "event")`` in the text a
    document was read from. Built by one parse; each lookup costs the
    location's length, whatever the document's size."""

    def find(self, location: tuple[str | int, ...], *, key: bool = False) -> Position:
        """Where the deepest value on ``location`` that exists starts (the
        document's start for ``()``); with ``key``, where its key starts."""
        ...


class Lines:
    """Turns character offsets of one text into 1-based lines and columns."""

    def __init__(self, text: str) -> None:
        self._starts = [0]
        start = text.find("\n")
        while start != -1:
            self._starts.append(start + 1)
            start = text.find("\n", start + 1)

    def position(self, offset: int) -> Position:
        """The ``(line, column)`` of the character at ``offset``."""
        line = bisect_right(self._starts, offset)
        return line, offset - self._starts[line - 1] + 1
