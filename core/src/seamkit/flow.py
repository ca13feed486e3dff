"""What a hook returns: frozen value types that tell the kernel how to go on.

Returning ``None`` from a hookimpl means :class:`Continue`. Each event accepts
only some flows (see :data:`seamkit.HookEvent` and the design's table); any
other flow fails the run closed, naming the hook, the event and the flow. So
does a flow whose payload is malformed (``Skip(None)``, ``RewriteResult(12345)``,
``RewriteMessages([1, 2, 3])``, a `RequestPatch` field of the wrong type): the
dispatcher checks each flow where a hook returns it, whatever the hook's
``on_error``, and the error names the hook, the event and the field.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias

if TYPE_CHECKING:
    from ._patch import RequestPatch
    from ._types import Message, ToolCall, ToolResult

__all__ = [
    "CompletionFlow",
    "Continue",
    "Dispatched",
    "Fail",
    "Flow",
    "Hold",
    "InvalidToolCallFlow",
    "IterationEndFlow",
    "ModelTurnFinishedFlow",
    "OutputFlow",
    "PatchRequest",
    "PostToolUseFlow",
    "PreLlmFlow",
    "PreToolUseFlow",
    "Repair",
    "RequestStartFlow",
    "RequireApproval",
    "Retry",
    "RewriteArgs",
    "RewriteMessages",
    "RewriteOutput",
    "RewriteResult",
    "RewriteText",
    "Skip",
    "Terminate",
    "TextDeltaFlow",
]


@dataclass(frozen=True, slots=True)
class Continue:
    """Go on as if the hook were not there."""


@dataclass(frozen=True, slots=True)
class PatchRequest:
    """Change this turn's model request (``on_pre_llm``); patches of all hooks merge."""

    patch: RequestPatch


@dataclass(frozen=True, slots=True)
class RewriteMessages:
    """Replace the run's input messages (``on_request_start``)."""

    messages: Sequence[Message]

    def __post_init__(self) -> None:
        # A list (or any iterable of messages) is kept as a tuple; anything
        # else stays as it is, for the dispatcher to report.
        messages: object = self.messages
        if isinstance(messages, Iterable) and not isinstance(messages, str | bytes | Mapping):
            object.__setattr__(self, "messages", tuple(messages))

    def applied_to(self, messages: tuple[Message, ...]) -> tuple[Message, ...]:
        """What the next hook of the chain sees instead of ``messages``."""
        return tuple(self.messages)


@dataclass(frozen=True, slots=True)
class RewriteArgs:
    """Replace a tool call's arguments before the tool runs (``on_pre_tool_use``)."""

    arguments: dict[str, Any]

    def applied_to(self, call: ToolCall) -> ToolCall:
        """What the next hook of the chain sees instead of ``call``."""
        return call.model_copy(update={"arguments": dict(self.arguments)})


@dataclass(frozen=True, slots=True)
class RewriteResult:
    """Replace the content of a tool's result (``on_post_tool_use``)."""

    content: str

    def applied_to(self, result: ToolResult) -> ToolResult:
        """What the next hook of the chain sees instead of ``result``."""
        return result.model_copy(update={"content": self.content})


@dataclass(frozen=True, slots=True)
class Hold:
    """Release the model's unreleased text but its last ``keep`` characters
    (``on_text_delta``): they wait for more text, or the end of the turn.

    A guard holds what could be the start of something it must not let out
    (the first characters of a secret); at the turn's end (``final``) nothing
    may be held, and a ``Hold`` there releases everything.
    """

    keep: int


@dataclass(frozen=True, slots=True)
class RewriteText:
    """Replace the model's unreleased text (``on_text_delta``), holding the
    last ``keep`` characters of the replacement, as `Hold` does.

    The next guard of the chain sees the replacement; what is released is
    what the stream, the transcript and ``RunResult.output`` hold.
    """

    text: str
    keep: int = 0

    def applied_to(self, text: str) -> str:
        """What the next hook of the chain sees instead of ``text``."""
        return self.text


@dataclass(frozen=True, slots=True)
class RewriteOutput:
    """Replace a run's validated output (``on_output``): ``value`` is
    validated against the declared output again (a value that does not fit
    fails the run, naming the event); the next hook of the chain sees it."""

    value: object

    def applied_to(self, output: object) -> object:
        """What the next hook of the chain sees instead of ``output``."""
        return self.value


@dataclass(frozen=True, slots=True)
class Skip:
    """Do not run the tool; ``reason`` is what the model receives as its result."""

    reason: str


@dataclass(frozen=True, slots=True)
class Terminate:
    """End the run on purpose, as ``terminated``."""

    reason: str


@dataclass(frozen=True, slots=True)
class RequireApproval:
    """Do not run the tool until a person approves this call (``on_pre_tool_use``).

    The run ends ``suspended`` once the batch's other calls ran; the call is
    pending with ``reason`` and a digest of its arguments, and runs only when
    a `seamkit.Decisions` approves that digest. Later hooks of the chain still
    run: a ``Skip`` or ``Terminate`` after it wins, a ``RewriteArgs`` changes
    the arguments shown for approval. ``arguments``, when given, replace the
    call's (as ``RewriteArgs`` would) before they are shown; the net flow of a
    chain that asked carries the arguments its hooks left, when they changed.
    """

    reason: str
    arguments: dict[str, Any] | None = None

    def applied_to(self, call: ToolCall) -> ToolCall:
        """What the next hook of the chain sees instead of ``call``."""
        if self.arguments is None:
            return call
        return call.model_copy(update={"arguments": dict(self.arguments)})


@dataclass(frozen=True, slots=True)
class Retry:
    """Tell the model what was wrong with its call (``on_invalid_tool_call``)
    or its answer (``on_output``) and let it try again."""

    feedback: str | None = None


@dataclass(frozen=True, slots=True)
class Repair:
    """Replace an invalid call with this tool name and arguments."""

    tool_name: str
    arguments: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Fail:
    """End the run as ``failed`` (an error, unlike :class:`Terminate`)."""

    reason: str


Flow: TypeAlias = (
    Continue
    | PatchRequest
    | RewriteMessages
    | RewriteArgs
    | RewriteResult
    | Skip
    | Terminate
    | Retry
    | Repair
    | Fail
    | RequireApproval
    | Hold
    | RewriteText
    | RewriteOutput
)
"""Any value a hook may return (``None`` means `Continue`); each event accepts some of them."""

# --- what each seam accepts ----------------------------------------------------
#
# One alias per seam: the flows it accepts, plus ``None`` (Continue). Annotate
# a hookimpl with its seam's alias (``-> PostToolUseFlow``; an ``async def``
# returns the same) and ``mypy --strict`` reports a flow the seam does not
# accept. The kernel's events table (``seamkit.HookEvent``) reads the accepted
# flows from these aliases: they are written only here.

RequestStartFlow: TypeAlias = Continue | RewriteMessages | Terminate | None
"""What an ``on_request_start`` hookimpl returns."""
PreLlmFlow: TypeAlias = Continue | PatchRequest | Terminate | None
"""What an ``on_pre_llm`` hookimpl returns."""
ModelTurnFinishedFlow: TypeAlias = Continue | Terminate | None
"""What an ``on_model_turn_finished`` hookimpl returns."""
TextDeltaFlow: TypeAlias = Continue | Hold | RewriteText | Terminate | None
"""What an ``on_text_delta`` hookimpl returns."""
PreToolUseFlow: TypeAlias = Continue | RewriteArgs | Skip | Terminate | RequireApproval | None
"""What an ``on_pre_tool_use`` hookimpl returns."""
PostToolUseFlow: TypeAlias = Continue | RewriteResult | Terminate | None
"""What an ``on_post_tool_use`` hookimpl returns."""
InvalidToolCallFlow: TypeAlias = Continue | Retry | Repair | Skip | Terminate | Fail | None
"""What an ``on_invalid_tool_call`` hookimpl returns."""
IterationEndFlow: TypeAlias = Continue | Terminate | None
"""What an ``on_iteration_end`` hookimpl returns."""
OutputFlow: TypeAlias = Continue | RewriteOutput | Retry | Terminate | None
"""What an ``on_output`` hookimpl returns."""
CompletionFlow: TypeAlias = Continue | None
"""What an ``on_completion`` hookimpl returns."""


class Dispatched(NamedTuple):
    """What one event's hooks decided together (`HookStack.dispatch`,
    `seamkit.testing.run_event`): the net ``flow`` and the ``hook`` that
    ended the dispatch (``None`` when no single hook did)."""

    flow: Flow
    hook: str | None = None
