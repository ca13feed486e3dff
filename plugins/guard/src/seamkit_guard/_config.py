"""The ``guard`` hook kind's config model: the patterns it looks for, what
it does with a match (mask or block), and how much of a stream it may hold
back while a match could still be forming."""

from __future__ import annotations

from typing import ClassVar, Literal

import seamkit
from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from ._patterns import compile_error, longest_match, looks_behind, shortest_match

__all__ = ["GuardHookConfig"]


class GuardHookConfig(seamkit.HookConfig):
    """Mask (``action: mask``) or block (``action: block``) text matching any
    of ``patterns`` in the user's input, the model's text or tool results,
    at the events the entry names."""

    default_on_error: ClassVar[Literal["skip", "fail"]] = "fail"

    kind: Literal["guard"] = "guard"
    patterns: list[str] = Field(
        description="Regular expressions (Python 're' syntax, also compiled by the 'regex' "
        "package), at least one. None may match the empty text or look behind (a held piece "
        "of a stream loses what came before it); one with no longest match ('\\d+') needs "
        "'hold'.",
    )
    action: Literal["mask", "block"] = Field(
        default="mask",
        description="mask: replace each match with 'replacement' (and mask the patterns in "
        "the run's logs and diagnostics too); block: end the run as terminated (a tool "
        "result is withheld) as soon as a match exists.",
    )
    replacement: str = Field(
        default="***", description="What each match becomes (action: mask only)."
    )
    reason: str | None = Field(
        default=None,
        min_length=1,
        description="The terminated run's reason (action: block only). Default: the "
        "guard's name and the index of the pattern that matched, never the matched text.",
    )
    hold: int | None = Field(
        default=None,
        ge=1,
        description="The hold window in characters for patterns with no longest match: a "
        "match up to this long is caught whole even when it streams in pieces (the guard "
        "holds back at most hold - 1 characters for it). Required when a pattern is "
        "unbounded; others use their own longest match.",
    )

    @field_validator("patterns")
    @classmethod
    def _check_patterns(cls, value: list[str]) -> list[str]:
        if not value:
            raise PydanticCustomError(
                "no_patterns",
                "patterns is empty: the guard would look for nothing",
                {"hint": r"give at least one regular expression, e.g. patterns: ['sk-\w{20}']"},
            )
        return value

    @model_validator(mode="after")
    def _check_each_pattern(self) -> GuardHookConfig:
        problems: list[InitErrorDetails] = []
        for index, pattern in enumerate(self.patterns):
            problem = _problem(pattern, hold=self.hold)
            if problem is not None:
                problems.append({"type": problem, "loc": ("patterns", index), "input": pattern})
        if problems:
            raise ValidationError.from_exception_data(type(self).__name__, problems)
        return self


def _problem(pattern: str, *, hold: int | None) -> PydanticCustomError | None:
    """What is wrong with one pattern, as a located error, or ``None``."""
    error = compile_error(pattern)
    if error is not None:
        return PydanticCustomError(
            "invalid_guard_pattern",
            "pattern '{pattern}' does not compile: {error}",
            {
                "pattern": pattern,
                "error": error,
                "hint": "write a Python regular expression; quote it in YAML with single "
                "quotes so backslashes stay as written",
            },
        )
    if shortest_match(pattern) == 0:
        return PydanticCustomError(
            "empty_guard_match",
            "pattern '{pattern}' can match the empty text",
            {"pattern": pattern, "hint": "make it match at least one character ('x+', not 'x*')"},
        )
    if looks_behind(pattern):
        return PydanticCustomError(
            "guard_lookbehind",
            "pattern '{pattern}' looks behind its match",
            {
                "pattern": pattern,
                "hint": "a held piece of a stream loses the text before it; match that text "
                "as part of the pattern instead",
            },
        )
    if longest_match(pattern) is None and hold is None:
        return PydanticCustomError(
            "unbounded_guard_pattern",
            "pattern '{pattern}' has no longest match, so no hold window can be derived "
            "from it: give `hold:`",
            {
                "pattern": pattern,
                "hint": "add e.g. hold: 64 (the longest match caught whole in a stream), or "
                "bound the pattern ('\\d{1,19}' instead of '\\d+')",
            },
        )
    return None
