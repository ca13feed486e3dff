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

from pydantic import JsonValue
from pydantic_core import from_json

__all__ = ["Partial", "Snapshot", "consistent"]

_NUMBER_CHARS = "0123456789+-.eE"
_NUMBER = frozenset(_NUMBER_CHARS)
_OPENERS = frozenset('{["')


class Snapshot:
    """A partial value read when first asked for (`Partial.feed` makes one
    per piece that adds something safe to show): a stream whose consumer
    reads every partial parses each once; one whose consumer does not (a
    server that holds the content, a burst of pieces read as one) parses
    none. Where its text does not parse, or a wrapper's key is missing, it
    is the value of the snapshot before it (``None`` at the first)."""

    __slots__ = ("_before", "_done", "_text", "_unwrap", "_value")

    def __init__(self, text: str, unwrap: str | None, before: Snapshot | None) -> None:
        self._text = text
        self._unwrap = unwrap
        self._before = before
        self._value: JsonValue = None
        self._done = False

    def __call__(self) -> JsonValue:
        if not self._done:
            value = self._parse()
            node = self._before
            while value is _MISSING and node is not None:  # (a loop: chains are long)
                value = node._value if node._done else node._parse()
                node = node._before
            self._value = None if value is _MISSING else value
            self._done, self._before = True, None
        return self._value

    def _parse(self) -> JsonValue:
        """The text's value; `_MISSING` when it shows nothing."""
        try:
            value: JsonValue = from_json(
                self._text, allow_partial="trailing-strings", cache_strings="keys"
            )
        except ValueError:
            return _MISSING
        if self._unwrap is not None and isinstance(value, dict):
            return value.get(self._unwrap, _MISSING)
        return value


_MISSING: JsonValue = "\0missing"


class Partial:
    """The partial value of one JSON text fed piece by piece.

    ``unwrap``, when given, is the key of a wrapper object whose value is
    the answer (``{"response": ...}``): the partial is that value (an answer
    that is not an object is taken bare), shown once the key has come.
    """

    __slots__ = ("_bare", "_last", "_lead", "_parsed", "_shown", "_started", "_text", "_unwrap")

    def __init__(self, *, unwrap: str | None = None) -> None:
        self._text = ""
        self._bare = False
        """Whether the text is not an object, list or string (a bare number,
        ``true``...): it shows only when finished."""
        self._started = False
        self._lead = ""
        """What came before the JSON started: spaces, a fence's line."""
        self._unwrap = unwrap
        self._parsed = ""
        """The text the last snapshot shows (what was safe to show)."""
        self._shown = 0
        """Its length without trailing spaces."""
        self._last: Snapshot | None = None

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
        self._text += piece
        if self._bare:
            return None
        text = self._text
        if text[-1] in _NUMBER:
            # A number that may go on; or, inside a string, characters that
            # will still be there: cutting them shows a shorter prefix of the
            # string, which is as consistent (and needs no string tracking).
            text = text.rstrip(_NUMBER_CHARS)
        shown = len(text) if text[-1] > " " else len(text.rstrip())
        if shown == self._shown:  # nothing more to show yet
            return None
        snapshot = Snapshot(text, self._unwrap, self._last)
        if self._last is None and snapshot() is None:
            return None  # nothing to show yet (a wrapper's value has not begun)
        self._parsed, self._shown = text, shown
        self._last = snapshot
        return snapshot

    def finish(self) -> JsonValue | None:
        """The text is whole (the turn ended): its value when it is JSON and
        adds to the last snapshot (a bare scalar, a number at the end), else
        ``None``."""
        body = self._text.rstrip()
        if body.endswith("```"):  # the fence after the JSON (prompted answers)
            body = body[:-3].rstrip()
        if body == self._parsed.rstrip():
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
