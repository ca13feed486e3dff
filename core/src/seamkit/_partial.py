"""Partial JSON values of an answer that is still arriving.

`Partial` is fed the pieces of a JSON text as they come and says, after each,
what of the value is complete so far: an object's finished fields, a list's
items, a string's text so far. What it reports is always consistent with the
value the whole text will be (`consistent`): a number, ``true``, ``false`` or
``null`` shows only once it is finished, and a key only with its value
started, so a partial never shows something the final value takes back.
Parsing is pydantic-core's (``from_json`` with ``allow_partial``); this module
only finds where the text stops being safe to show. `Partial.finish` says
what the whole text is once no more can come: the one moment a bare number
or ``true`` shows, and a number at the end of the text.
"""

from __future__ import annotations

import bisect

from pydantic import JsonValue
from pydantic_core import from_json

__all__ = ["Partial", "Snapshot", "consistent"]

_NUMBER_CHARS = "0123456789+-.eE"
_NUMBER = frozenset(_NUMBER_CHARS)
_OPENERS = frozenset('{["')
_SPACES = " \t\n\r"


class Snapshot:
    """A partial value read when first asked for (`Partial.feed` makes one
    per piece that adds something safe to show): a stream whose consumer
    reads every partial parses each once; one whose consumer does not (a
    server that holds the content, a burst of pieces read as one) parses
    none. It holds only where the text it shows ends: every snapshot of an
    answer shares the answer's one text (`Partial.value_at`)."""

    __slots__ = ("_done", "_end", "_partial", "_value")

    def __init__(self, partial: Partial, end: int) -> None:
        self._partial = partial
        self._end = end
        self._value: JsonValue = None
        self._done = False

    def __call__(self) -> JsonValue:
        if not self._done:
            self._value, self._done = self._partial.value_at(self._end), True
        return self._value


_MISSING: JsonValue = "\0missing"


class Partial:
    """The partial value of one JSON text fed piece by piece.

    ``unwrap``, when given, is the key of a wrapper object whose value is
    the answer (``{"response": ...}``): the partial is that value (an answer
    that is not an object is taken bare), shown once the key has come.

    Feeding costs the piece's length, whatever the text's: the pieces are
    kept as they came (joined only when a snapshot is read), and where the
    text stops being safe to show is kept up to date piece by piece.
    """

    __slots__ = (
        "_bare",
        "_ends",
        "_joined",
        "_lead",
        "_length",
        "_number_start",
        "_pieces",
        "_shown",
        "_shown_end",
        "_started",
        "_unwrap",
    )

    def __init__(self, *, unwrap: str | None = None) -> None:
        self._pieces: list[str] = []
        self._joined = ""
        """The pieces joined, as far as a read needed them."""
        self._length = 0
        self._number_start = 0
        """Where the text's trailing run of number characters starts."""
        self._shown_end = 0
        """Where the text before that run ends, trailing spaces left out."""
        self._bare = False
        """Whether the text is not an object, list or string (a bare number,
        ``true``...): it shows only when finished."""
        self._started = False
        self._lead = ""
        """What came before the JSON started: spaces, a fence's line."""
        self._unwrap = unwrap
        self._ends: list[int] = []
        """Where the snapshots made so far end, in order."""
        self._shown = 0
        """The last snapshot's length without trailing spaces."""

    def feed(self, piece: str) -> Snapshot | None:
        """Add ``piece``; a `Snapshot` of the partial value when the piece
        added something safe to show, else ``None``."""
        if not piece:
            return None
        if not self._started:
            piece = self._lead = (self._lead + piece).lstrip()
            if piece.startswith("```"):  # a fence before the JSON (prompted answers)
                newline = piece.find("\n")
                if newline < 0:
                    return None  # the fence's line goes on
                piece = self._lead = piece[newline + 1 :].lstrip()
            if not piece or "```".startswith(piece):  # nothing yet, or a fence forming
                return None
            self._started, self._lead = True, ""
            if piece[0] not in _OPENERS:  # a bare scalar: shown only when finished
                self._bare = True
        before = self._length
        self._pieces.append(piece)
        self._length = before + len(piece)
        if self._bare:
            return None
        # A trailing run of number characters may be a number that goes on;
        # or, inside a string, characters that will still be there: leaving
        # them out shows a shorter prefix of the string, which is as
        # consistent (and needs no tracking of strings).
        kept = piece.rstrip(_NUMBER_CHARS)
        if kept:
            body = kept.rstrip(_SPACES)
            if body:
                self._shown_end = before + len(body)
            elif self._number_start < before:  # a number the spaces finished
                self._shown_end = before
            self._number_start = before + len(kept)
        shown = self._shown_end
        if shown == self._shown:  # nothing more to show yet
            return None
        end = self._number_start
        if not self._ends and self._parse(end) is _MISSING:
            return None  # nothing to show yet (a wrapper's value has not begun)
        self._shown = shown
        self._ends.append(end)
        return Snapshot(self, end)

    def value_at(self, end: int) -> JsonValue:
        """The partial value of the text's first ``end`` characters (a
        snapshot's). Where they do not parse (the model wrote something that
        is not JSON), the value of the latest snapshot before them that does:
        JSON text that fails to parse fails with anything added to it, so a
        binary search over the snapshots finds it, in a few parses however
        long the text."""
        value = self._parse(end)
        if value is not _MISSING:
            return value
        ends = self._ends
        low, high = 0, bisect.bisect_left(ends, end)  # the snapshots before this one
        found: JsonValue = None
        while low < high:
            middle = (low + high) // 2
            parsed = self._parse(ends[middle])
            if parsed is _MISSING:
                high = middle
            else:
                found, low = parsed, middle + 1
        return found

    def _text(self, end: int) -> str:
        """The text's first ``end`` characters."""
        if len(self._joined) < end:
            self._joined = "".join(self._pieces)
            self._pieces = [self._joined]
        return self._joined[:end]

    def _parse(self, end: int) -> JsonValue:
        """The partial value of the text's first ``end`` characters;
        `_MISSING` when they show nothing."""
        try:
            value: JsonValue = from_json(
                self._text(end), allow_partial="trailing-strings", cache_strings="keys"
            )
        except ValueError:
            return _MISSING
        if self._unwrap is not None and isinstance(value, dict):
            return value.get(self._unwrap, _MISSING)
        return value

    def finish(self) -> JsonValue | None:
        """The text is whole (the turn ended): its value when it is JSON and
        adds to the last snapshot (a bare scalar, a number at the end), else
        ``None``."""
        body = self._text(self._length).rstrip()
        if body.endswith("```"):  # the fence after the JSON (prompted answers)
            body = body[:-3].rstrip()
        if self._ends and len(body) == self._shown:
            return None  # the last snapshot showed all of it
        try:
            value: JsonValue = from_json(body)
        except ValueError:
            return None
        if self._unwrap is not None and isinstance(value, dict):
            if set(value) != {self._unwrap}:
                return None
            value = value[self._unwrap]
        return value


def consistent(partial: JsonValue, final: JsonValue) -> bool:
    """Whether ``partial`` could be a partial of ``final``: an object's keys
    among the final's with consistent values, a list no longer than the
    final's with consistent items, a string a prefix of the final's, a
    number the same number (``3`` and ``3.0`` are one JSON number: a float
    field's value shows as the answer wrote it), and anything else equal."""
    if isinstance(partial, dict):
        return isinstance(final, dict) and all(
            key in final and consistent(value, final[key]) for key, value in partial.items()
        )
    if isinstance(partial, list):
        return (
            isinstance(final, list)
            and len(partial) <= len(final)
            and all(consistent(p, f) for p, f in zip(partial, final, strict=False))
        )
    if isinstance(partial, str):
        return isinstance(final, str) and final.startswith(partial)
    if _number(partial) and _number(final):
        return partial == final
    return type(partial) is type(final) and partial == final


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
