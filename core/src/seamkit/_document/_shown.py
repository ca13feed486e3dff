"""Text from a document as a problem's message shows it: one line, short."""

from __future__ import annotations

__all__ = ["shown"]


def shown(text: str, limit: int = 60) -> str:
    """``text`` with every character that does not print (a line break, a
    tab, a control character) escaped as Python writes it, cut to ``limit``
    characters with ``...``."""
    if not text.isprintable():
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text[: limit * 2])
    return text if len(text) <= limit else text[: limit - 3] + "..."
