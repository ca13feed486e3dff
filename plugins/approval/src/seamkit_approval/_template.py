"""The ``reason`` of an ``approval`` entry: text with ``{name}``
placeholders, each one top-level argument of the call.

Only plain names are allowed: no attribute or index access (``{a.b}``,
``{a[0]}``), no conversion (``{a!r}``), no format spec (``{a:>10}``), so a
reason can neither reach into an object nor fail on a value. ``{{`` and
``}}`` are literal braces, but a name in doubled braces (``{{ amount }}``,
the ``tool_call`` kind's placeholders) is refused as the mistake it is.

A value renders as itself when it is text and as JSON otherwise, cut to
`MAX_VALUE` characters; a `seamkit.Secret` as ``***``; an argument the call
lacks as ``<missing NAME>``. Rendering never raises.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Mapping
from typing import Any

import seamkit
from pydantic_core import to_json

__all__ = ["MAX_VALUE", "ReasonTemplate"]

MAX_VALUE = 200
"""At most this many characters of one argument's value are shown."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_DOUBLED = re.compile(r"\{\{\s*[A-Za-z_][A-Za-z0-9_.-]*\s*\}\}")
_HINT = "write a top-level argument's name in braces, as in 'Refund of {amount} EUR'"


class ReasonTemplate:
    """A parsed reason template: ``ReasonTemplate("Refund of {amount} EUR")``.

    Raises `seamkit.SeamkitError` (with a hint) for a placeholder that is not
    a plain argument name, or for unbalanced braces.
    """

    __slots__ = ("_pieces", "names", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        doubled = _DOUBLED.search(text)
        if doubled is not None:
            raise seamkit.SeamkitError(
                f"{doubled.group(0)} is literal text here, not a placeholder",
                hint=f"placeholders take single braces: {{amount}}; {_HINT}",
            )
        try:
            parsed = list(string.Formatter().parse(text))
        except ValueError as exc:
            raise seamkit.SeamkitError(
                f"the braces do not pair up ({exc})",
                hint=f"{_HINT}; write {{{{ and }}}} for a literal brace",
            ) from None
        pieces: list[tuple[str, str | None]] = []
        for literal, name, spec, conversion in parsed:
            if name is None:
                pieces.append((literal, None))
                continue
            shown = "{" + name + (f"!{conversion}" if conversion else "")
            shown += (f":{spec}" if spec else "") + "}"
            if conversion or spec:
                raise seamkit.SeamkitError(
                    f"placeholder {shown} has a conversion or format spec; only "
                    f"{{{name}}} is allowed",
                    hint=_HINT,
                )
            if not _NAME.fullmatch(name):
                raise seamkit.SeamkitError(
                    f"placeholder {shown} does not name a top-level argument "
                    "(no attribute or index access, no positions)",
                    hint=_HINT,
                )
            pieces.append((literal, name))
        self._pieces = tuple(pieces)
        self.names = tuple(dict.fromkeys(n for _, n in pieces if n is not None))
        """The argument names the template shows, in order, each once."""

    def render(
        self, arguments: Mapping[str, Any], redact: Callable[[str], str] | None = None
    ) -> str:
        """The reason for a call with these ``arguments``, passed through
        ``redact`` (a run's ``ctx.redactor``) when given."""
        out: list[str] = []
        for literal, name in self._pieces:
            out.append(literal)
            if name is not None:
                out.append(_shown(arguments[name]) if name in arguments else f"<missing {name}>")
        text = "".join(out)
        return redact(text) if redact is not None else text

    def __repr__(self) -> str:
        return f"ReasonTemplate({self.text!r})"


def _shown(value: Any) -> str:
    """One argument's value as the reason shows it; never raises."""
    try:
        if isinstance(value, str):
            text = value
        elif isinstance(value, seamkit.Secret):
            text = "***"
        else:
            text = to_json(value, fallback=_opaque).decode()
    except Exception:
        text = f"<{type(value).__name__}>"
    if len(text) > MAX_VALUE:
        text = text[: MAX_VALUE - 3] + "..."
    return text


def _opaque(value: Any) -> Any:
    """What JSON has no type for: a secret masked, anything else by its type."""
    return (
        seamkit.secret_json(value)
        if isinstance(value, seamkit.Secret)
        else f"<{type(value).__name__}>"
    )
