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

__all__ = ["Partial", "consistent"]

_NUMBER_CHARS = "0123456789+-.eE"
_NUMBER = frozenset(_NUMBER_CHARS)
_OPENERS = frozenset('{["')


class Partial:
    """The partial value of one JSON text fed piece by piece.

    ``unwrap``, when given, is the key of a wrapper object whose value is
    the answer (``{"response": ...}``): the partial is that value (an answer
    that is not an object is taken bare).
    """

    __slots__ = ("_bare", "_lead", "_started", "_text", "_unwrap", "last")

    def __init__(self, *, unwrap: str | None = None) -> None:
        self._text = ""
        self._bare = False
        """Whether the text is not an object, list or string (a bare number,
        ``true``...): it shows only when finished."""
        self._started = False
        self._lead = ""
        """What came before the JSON started: spaces, a fence's line."""
        self._unwrap = unwrap
        self.last: JsonValue = None
        """The latest partial reported (``None`` before the first)."""

    def feed(self, piece: str) -> JsonValue | None:
        """Add ``piece``; the new partial value when it changed, else ``None``."""
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
        value = self._value()
        if value is None or value == self.last:
            return None
        self.last = value
        return value

    def finish(self) -> JsonValue | None:
        """The text is whole (the turn ended): its value when it is JSON and
        differs from the last partial, else ``None``."""
        body = self._text.rstrip()
        if body.endswith("```"):  # the fence after the JSON (prompted answers)
            body = body[:-3]
        try:
            value: JsonValue = from_json(body)
        except ValueError:
            return None
        if self._unwrap is not None and isinstance(value, dict):
            if set(value) != {self._unwrap}:
                return None
            value = value[self._unwrap]
        if value == self.last and type(value) is type(self.last):
            return None
        self.last = value
        return value

    def _value(self) -> JsonValue | None:
        text = self._text
        if text[-1] in _NUMBER:
            # A number that may go on; or, inside a string, characters that
            # will still be there: cutting them shows a shorter prefix of the
            # string, which is as consistent (and needs no string tracking).
            text = text.rstrip(_NUMBER_CHARS)
        try:
            value: JsonValue = from_json(text, allow_partial="trailing-strings")
        except ValueError:
            return None
        if self._unwrap is not None and isinstance(value, dict):
            if self._unwrap not in value:
                return None  # the wrapper's key has not arrived (or a bare object)
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
