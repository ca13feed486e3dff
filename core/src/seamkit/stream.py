"""The events `Agent.stream` yields, in the order a run produces them.

- `TextDelta`: a piece of the model's text, as it arrives;
- `ToolCallEmitted`: a call the model asked for, when its turn is committed
  (whether or not it runs);
- `TurnFinished`: a model turn was accepted (after its `ToolCallEmitted`);
- `HookFired`: the hooks of one event ran (only events that have hooks);
- `ToolExecutionStart`: a tool body starts, with the effective (possibly
  rewritten) call, emitted live; never for a skipped or invalid call;
- `ToolOutputDelta`: a chunk a streaming tool produced, live: before its
  ``on_post_tool_use`` hooks saw the result, so a guard there cannot take
  it back (a tool marked ``stream_output=False`` shows its chunks only once
  its hooks passed the result unchanged, and none when they did not);
- `ToolCompleted`: a call's result, as committed to the transcript;
- `OutputDelta`: a run with a declared output (`seamkit.Output`): the
  answer's value so far, as its JSON arrives (from the text the guards
  released, or the output tool's argument fragments when no guard runs);
- `OutputRetry`: the answer the partials came from was not accepted (it
  failed validation, an ``on_output`` hook asked again, or the turn became
  tool calls): drop the partials, the model tries again;
- `RunFinished`: the run's `RunResult`, always last.

A model's ``stream`` may yield `ToolArgumentsDelta` fragments beside its
text (the output tool's feed `OutputDelta` in tool mode); they are read by
the run, not yielded by `Agent.stream`.

Results of one turn are committed together, in call order, once the whole
batch has settled (a batch that ends the run commits none of them), so
`ToolCompleted` events come after every `ToolExecutionStart` of their turn.

A run observer (the ``on_run_event`` hookspec) receives these and the
`ObservedEvent` kinds too: `RunStarted`, `ModelCallStarted` (the patched
request) and `ModelCallEnded`, and `ToolExecutionEnd`; every start has its
end, on an error or a cancellation too. Runs that wait for a person or
continue after a crash add `CallSuspended` (a call now waits for approval),
`CallDecided` (a decision was applied, and by whom), `CallInDoubt` (a crash
cut a ``once`` call short: it is not run again) and `JournalReplayed` (the
run continued from its journal).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pydantic import JsonValue

from ._approval import PendingCall
from ._types import ModelRequest, ModelTurn, RunResult, ToolArgumentsDelta, ToolCall, ToolResult

__all__ = [
    "STREAMED",
    "CallDecided",
    "CallInDoubt",
    "CallSuspended",
    "Event",
    "HookFired",
    "JournalReplayed",
    "ModelCallEnded",
    "ModelCallStarted",
    "ObservedEvent",
    "OutputDelta",
    "OutputRetry",
    "RunFinished",
    "RunStarted",
    "TextDelta",
    "ToolArgumentsDelta",
    "ToolCallEmitted",
    "ToolCompleted",
    "ToolExecutionEnd",
    "ToolExecutionStart",
    "ToolOutputDelta",
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
    when nothing changed) and ``hook`` the one that decided it, if one did;
    ``duration`` is the seconds the event's hooks took together."""

    event: str
    hooks: tuple[str, ...]
    flow: str
    hook: str | None
    turn: int
    duration: float = 0.0


@dataclass(frozen=True, slots=True)
class ToolExecutionStart:
    """A tool body starts for ``call`` (the effective call, after hooks)."""

    call: ToolCall
    turn: int


@dataclass(frozen=True, slots=True)
class ToolOutputDelta:
    """A chunk of text the tool answering ``call_id`` streamed, as it came."""

    call_id: str
    text: str
    turn: int


@dataclass(frozen=True, slots=True)
class ToolCompleted:
    """The result of ``call``, as the model will see it."""

    call: ToolCall
    result: ToolResult
    turn: int


class OutputDelta:
    """The declared output's value so far (JSON: an object's finished
    fields, a list's items, a string's text so far), as the model writes it:
    consistent with the answer's JSON when it is whole (`seamkit.Output.dump`
    of the accepted value gives the same, unless validation coerced a value,
    ``"2"`` to ``2.0`` say, or filled a default, or an ``on_output`` hook
    rewrote it: `RunFinished` carries the value).

    One comes for each piece of the answer that adds something safe to show
    (the partial may equal the last one when a piece only began a key).
    ``partial`` is computed when first read: a consumer that reads none
    (a server holding the content, a burst of pieces of which only the last
    matters) pays no parsing. ``OutputDelta(partial, turn)`` also takes a
    function of no arguments that returns the partial.
    """

    __slots__ = ("_read", "_value", "turn")

    def __init__(self, partial: JsonValue | Callable[[], JsonValue], turn: int) -> None:
        self._read: Callable[[], JsonValue] | None = partial if callable(partial) else None
        self._value: JsonValue = None if callable(partial) else partial
        self.turn = turn

    @property
    def partial(self) -> JsonValue:
        """The answer's value so far (computed on the first read)."""
        if self._read is not None:
            self._value, self._read = self._read(), None
        return self._value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OutputDelta):
            return NotImplemented
        return (self.partial, self.turn) == (other.partial, other.turn)

    __hash__ = None  # type: ignore[assignment]  # a partial is a dict or list: not hashable

    def __repr__(self) -> str:
        return f"OutputDelta(partial={self.partial!r}, turn={self.turn})"


@dataclass(frozen=True, slots=True)
class OutputRetry:
    """The answer of ``turn`` was not accepted: ``errors`` say why (empty
    when the turn turned into tool calls). Drop its partials."""

    errors: tuple[str, ...]
    turn: int


@dataclass(frozen=True, slots=True)
class RunFinished:
    """The run ended; ``result`` is what `Agent.run` would have returned."""

    result: RunResult


@dataclass(frozen=True, slots=True)
class RunStarted:
    """A run starts (observers only): its id, the agent, the session, the
    model as ``"<provider>:<name>"`` (or its class's name for a model object
    that names no provider), and its declared output, if any."""

    run_id: str
    agent_name: str
    session: str | None
    streaming: bool
    model: str = ""
    output: str | None = None
    """The declared output's type name (``"schema"`` for a JSON Schema),
    ``None`` when the output is text."""
    output_mode: str | None = None
    """The mode the run asks for its output in (never ``auto``)."""


@dataclass(frozen=True, slots=True)
class ModelCallStarted:
    """The model is asked ``request``, after every patch (observers only)."""

    request: ModelRequest
    turn: int


@dataclass(frozen=True, slots=True)
class ModelCallEnded:
    """The model call of ``turn`` ended with ``model_turn``, or with ``error``
    (its text, secrets masked); ``duration`` in seconds (observers only)."""

    turn: int
    model_turn: ModelTurn | None
    error: str | None
    duration: float


@dataclass(frozen=True, slots=True)
class ToolExecutionEnd:
    """The tool body for ``call`` ended, and its ``on_post_tool_use`` hooks
    made ``result`` of it (withheld when one stopped the run;
    ``result.raised`` for an exception or time-out; ``None`` when the body
    was cancelled); the body took ``duration`` seconds (observers only)."""

    call: ToolCall
    result: ToolResult | None
    turn: int
    duration: float


@dataclass(frozen=True, slots=True)
class CallSuspended:
    """A call waits for a person's decision (the run will end ``suspended``)."""

    pending: PendingCall
    turn: int


@dataclass(frozen=True, slots=True)
class CallDecided:
    """A decision about a pending call was applied as the run continued;
    ``pending.decision`` says what and ``by`` whom."""

    pending: PendingCall
    turn: int


@dataclass(frozen=True, slots=True)
class CallInDoubt:
    """A crash stopped the run while this ``once`` call was running: it is
    not run again, and the model is told it may or may not have acted."""

    call: ToolCall
    turn: int


@dataclass(frozen=True, slots=True)
class JournalReplayed:
    """The run continued from its session's journal: ``turns`` model turns
    were reused (not asked again) and ``results`` tool results recovered."""

    turns: int
    results: int


Event = (
    TextDelta
    | ToolCallEmitted
    | TurnFinished
    | HookFired
    | ToolExecutionStart
    | ToolOutputDelta
    | ToolCompleted
    | OutputDelta
    | OutputRetry
    | RunFinished
)
"""Any event of `Agent.stream`."""

ObservedEvent = (
    Event
    | RunStarted
    | ModelCallStarted
    | ModelCallEnded
    | ToolExecutionEnd
    | CallSuspended
    | CallDecided
    | CallInDoubt
    | JournalReplayed
)
"""Any event a run observer (``on_run_event``) receives."""

STREAMED: frozenset[type] = frozenset(
    (
        TextDelta,
        ToolCallEmitted,
        TurnFinished,
        HookFired,
        ToolExecutionStart,
        ToolOutputDelta,
        ToolCompleted,
        OutputDelta,
        OutputRetry,
        RunFinished,
    )
)
"""The event types `Agent.stream` yields (observers receive every type)."""
