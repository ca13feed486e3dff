"""Tool names: the grammar the model sees, and `sanitize_toolname`."""

from __future__ import annotations

import re

__all__ = ["TOOL_NAME_PATTERN", "check_toolname", "sanitize_toolname"]

TOOL_NAME_PATTERN = r"^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$"
"""What every final tool name matches (OpenAI's function-name grammar)."""

_VALID = re.compile(r"[a-zA-Z_][a-zA-Z0-9_-]{0,63}")
_OUTSIDE = re.compile(r"[^a-zA-Z0-9_-]+")
_MAX = 64


def sanitize_toolname(name: str) -> str:
    """Turn any text into a valid tool name.

    Each run of characters outside ``[a-zA-Z0-9_-]`` becomes one ``_``; a ``_``
    is prefixed when the first character is not a letter or ``_``; the result
    is cut to 64 characters. ``""`` stays ``""``. Idempotent.
    """
    if not name:
        return ""
    out = _OUTSIDE.sub("_", name)
    if not (out[0].isascii() and (out[0].isalpha() or out[0] == "_")):
        out = "_" + out
    return out[:_MAX]


def check_toolname(name: str) -> str | None:
    """``None`` when ``name`` is a valid final tool name, else what is wrong."""
    if _VALID.fullmatch(name):
        return None
    if not name:
        return "a tool name cannot be empty"
    if len(name) > _MAX:
        return f"tool name {name!r} is longer than {_MAX} characters"
    return (
        f"tool name {name!r} is not valid: use letters, digits, '_' and '-', "
        f"starting with a letter or '_'"
    )
