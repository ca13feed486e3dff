"""Load-time interpolation of manifest strings.

The forms, and the only ones: ``${env:NAME}``, ``${env:NAME:-default}``,
``${secret:NAME}`` and ``${secret:NAME:-default}`` (a secret gives a
`Secret`), with NAME letters, digits and ``_``, not starting with a digit,
and a default of plain text (no ``}``, no placeholder inside). ``$${``
writes a literal ``${``; a ``$`` before anything else is just a ``$``. Any
other text starting with ``${`` is a problem naming the field and the text.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .._document import shown
from .._errors import Problem
from .._secret import Secret

__all__ = ["interpolate"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SCHEMES = ("env", "secret")
_FORMS = "${env:NAME}, ${env:NAME:-default}, ${secret:NAME} or ${secret:NAME:-default}"


@dataclass(frozen=True, slots=True)
class _Placeholder:
    """One well-formed placeholder: its text, scheme, variable and default."""

    text: str
    scheme: str
    name: str
    default: str | None


def interpolate(data: Any, environ: Mapping[str, str] | None = None) -> tuple[Any, list[Problem]]:
    """Replace placeholders in every string of ``data`` (a copy: ``data`` is
    left as it is); collect the problems, in the document's order."""
    env = os.environ if environ is None else environ
    problems: list[Problem] = []
    if not isinstance(data, dict | list):
        return _leaf(data, (), env, problems), problems
    root = _empty(data)
    # Depth-first with an explicit stack of iterators: as deep as the
    # document's limit allows, whatever Python's recursion limit.
    stack: list[tuple[Iterator[tuple[Any, Any]], Any, tuple[str | int, ...]]] = [
        (_items(data), root, ())
    ]
    while stack:
        items, target, loc = stack[-1]
        item = next(items, None)
        if item is None:
            stack.pop()
            continue
        key, value = item
        where = (*loc, key)
        if isinstance(value, dict | list):
            child = _empty(value)
            stack.append((_items(value), child, where))
        else:
            child = _leaf(value, where, env, problems)
        if isinstance(target, dict):
            target[key] = child
        else:
            target.append(child)
    return root, problems


def _empty(value: dict[Any, Any] | list[Any]) -> dict[Any, Any] | list[Any]:
    return {} if isinstance(value, dict) else []


def _items(value: dict[Any, Any] | list[Any]) -> Iterator[tuple[Any, Any]]:
    return iter(value.items()) if isinstance(value, dict) else enumerate(value)


def _leaf(
    value: Any, loc: tuple[str | int, ...], env: Mapping[str, str], problems: list[Problem]
) -> Any:
    if isinstance(value, str) and "${" in value:
        return _string(value, loc, env, problems)
    return value


def _string(
    text: str, loc: tuple[str | int, ...], env: Mapping[str, str], problems: list[Problem]
) -> Any:
    pieces = _pieces(text)
    bad = [p for p in pieces if isinstance(p, Problem)]
    if bad:
        problems.extend(Problem(loc, p.message, p.hint) for p in bad)
        return text
    secret = False
    parts: list[str] = []
    out: list[str] = []
    for piece in pieces:
        if isinstance(piece, str):
            out.append(piece)
            continue
        assert isinstance(piece, _Placeholder)
        value = env.get(piece.name, piece.default)
        if piece.scheme == "secret":
            secret = True
            if value:
                parts.append(value)
        if value is None:
            problems.append(
                Problem(
                    loc,
                    f"environment variable {shown(piece.name)} is not set",
                    hint=f"set {shown(piece.name)}, or give a default: "
                    f"${{{piece.scheme}:{shown(piece.name)}:-value}}",
                )
            )
            value = ""
        out.append(value)
    result = "".join(out)
    return Secret(result, source=text, parts=tuple(parts)) if secret else result


def _pieces(text: str) -> list[str | _Placeholder | Problem]:
    """``text`` cut into literal text and placeholders; a malformed
    placeholder is a `Problem` (without a location) in its place."""
    out: list[str | _Placeholder | Problem] = []
    position = 0
    while True:
        dollar = text.find("$", position)
        if dollar < 0:
            out.append(text[position:])
            return out
        if text.startswith("$${", dollar):
            out.append(text[position:dollar] + "${")
            position = dollar + 3
        elif text.startswith("${", dollar):
            out.append(text[position:dollar])
            piece, position = _placeholder(text, dollar)
            out.append(piece)
        else:
            out.append(text[position : dollar + 1])
            position = dollar + 1


def _placeholder(text: str, start: int) -> tuple[_Placeholder | Problem, int]:
    """The placeholder starting at ``text[start]`` (``${``) and where it ends."""
    close = text.find("}", start + 2)
    nested = text.find("${", start + 2)
    if close < 0:
        return _malformed(text[start:], "is not closed", "end it with }"), len(text)
    whole = text[start : close + 1]
    if 0 <= nested < close:
        return _malformed(
            whole,
            "holds another placeholder",
            "placeholders do not nest and a default is plain text: close the first with } "
            "before the next ${",
        ), close + 1
    scheme, colon, rest = text[start + 2 : close].partition(":")
    if scheme not in _SCHEMES:
        what = f"has an unknown scheme '{shown(scheme)}'" if scheme else "has no scheme"
        what = what if scheme or colon else "is empty"
        return _malformed(whole, what), close + 1
    name = _NAME.match(rest)
    found = name.group() if name is not None else ""
    after = rest[len(found) :]
    display = whole if scheme == "env" or not rest else _masked(scheme, found)
    if not colon or not rest:
        return _malformed(display, "names no variable", f"write ${{{scheme}:NAME}}"), close + 1
    if not found or (after and not after.startswith(":")):
        return _malformed(
            display,
            "does not name a variable",
            "a variable's name is letters, digits and _, not starting with a digit",
        ), close + 1
    if after and not after.startswith(":-"):
        default = after[1:] if scheme == "env" else "***"
        return _malformed(
            display,
            "is missing the '-' of ':-' before its default",
            f"write ${{{scheme}:{shown(found)}:-{shown(default)}}}",
        ), close + 1
    return _Placeholder(whole, scheme, found, after[2:] if after else None), close + 1


def _malformed(text: str, problem: str, fix: str | None = None) -> Problem:
    hint = f"{fix}; " if fix else ""
    return Problem(
        (),
        f"malformed placeholder '{shown(text)}': it {problem}",
        hint=f"{hint}the forms are {_FORMS}; write $${{ for a literal ${{",
    )


def _masked(scheme: str, name: str) -> str:
    """A ``${secret:...}`` placeholder as shown in a problem: its name if it
    is one, the rest hidden (it may be a secret pasted in by mistake)."""
    return f"${{{scheme}:{name}***}}" if name else f"${{{scheme}:***}}"
