"""`HookRef`: who a hookimpl belongs to and the policy it runs under."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ._config import OnError

__all__ = ["HookRef", "compile_match"]


def compile_match(patterns: Sequence[str] | None) -> Callable[[str], object] | None:
    """A matcher for glob patterns on a tool's final name (``None``: match all)."""
    if patterns is None:
        return None
    regex = re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns) or r"(?!)")
    return regex.match


@dataclass(frozen=True, slots=True)
class HookRef:
    """A hook as diagnostics name it, with its time-out, error policy and matcher.

    ``origin`` is ``plugin`` (plugin-wide hookimpl), ``configured`` (a manifest
    entry) or ``code`` (an object passed in code).
    """

    name: str
    origin: str = "code"
    timeout_seconds: float | None = None
    on_error: OnError = "fail"
    match: tuple[str, ...] | None = None
