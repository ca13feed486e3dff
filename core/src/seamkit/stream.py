"""The events `Agent.stream` yields, in the order a run produces them.

- `TextDelta`: a piece of the model's text, as it arrives;
- `ToolCallEmitted`: a call the model asked for, when its turn is committed
  (whether or not it runs);
- `TurnFinished`: a model turn was accepted (after its `ToolCallEmitted`);
- `HookFired`: the hooks of one event ran (only events that have hooks);
- `ToolExecutionStart`: a tool body ran, with the effective (possibly
  rewritten) call; never for a skipped or invalid call;
- `ToolCompleted`: a call's result, as committed to the transcript;
- `RunFinished`: the run's `RunResult`, always last.

Execution starts and results of one turn are surfaced together, in call
order, once the whole batch has settled; a batch that ends the run surfaces
none of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._results import ModelTurn, RunResult, ToolCall, ToolResult

__all__ = [
    "Event",
    "HookFired",
    "RunFinished",
    "TextDelta",
    "ToolCallEmitted",
    "ToolCompleted",
    "ToolExecutionStart",
    "TurnFinished",
]


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the model's text in turn ``turn``."""

    text: str
    turn: int


@dataclass(frozen=True, slots=True)
class ToolCallEmitted:
    """A tool call the model asked for, surfaced when its turn is committed."""

    call: ToolCall
    turn: int


@dataclass(frozen=True, slots=True)
class TurnFinished:
    """Model turn ``turn`` was accepted."""

    model_turn: ModelTurn
    turn: int


@dataclass(frozen=True, slots=True)
class HookFired:
    """The hooks at ``event`` ran; ``flow`` is what they decided (``Continue``
    when nothing changed) and ``hook`` the one that decided it, if one did."""

    event: str
    hooks: tuple[str, ...]
    flow: str
    hook: str | None
    turn: int


@dataclass(frozen=True, slots=True)
class ToolExecutionStart:
    """A tool body ran for ``call`` (the effective call, after hooks)."""

    call: ToolCall
    turn: int


@dataclass(frozen=True, slots=True)
class ToolCompleted:
    """The result of ``call``, as the model will see it."""

    call: ToolCall
    result: ToolResult
    turn: int


@dataclass(frozen=True, slots=True)
class RunFinished:
    """The run ended; ``result`` is what `Agent.run` would have returned."""

    result: RunResult


Event = (
    TextDelta
    | ToolCallEmitted
    | TurnFinished
    | HookFired
    | ToolExecutionStart
    | ToolCompleted
    | RunFinished
)
"""Any event of `Agent.stream`."""
