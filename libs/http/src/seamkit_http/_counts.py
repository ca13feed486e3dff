"""Reading a server's token counts: a count that is not a finite,
non-negative number counts as 0, so an odd usage block never breaks an
answer."""

from __future__ import annotations

import math

__all__ = ["token_count"]


def token_count(value: object) -> int:
    """``value`` as a token count: a finite, non-negative ``int`` or ``float``
    (rounded down), else 0 (``None``, a bool, a string, NaN, an infinity, a
    negative number)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if not math.isfinite(value) or value < 0:
        return 0
    return int(value)
