"""What flows through a run: tool calls and results, model requests and turns,
and the run's result with its outcome and diagnostics."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ._messages import Document, Message, MessageToolCall

__all__ = [
    "Cancelled",
    "Completed",
    "Diagnostic",
    "Failed",
    "MaxTurns",
    "ModelRequest",
    "ModelTurn",
    "Outcome",
    "RunResult",
    "Terminated",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "Usage",
]

_FROZEN = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class ToolCall(BaseModel):
    """One tool call the model asked for, parsed.

    ``index`` is its position in the turn's batch; ``raw_arguments`` keeps the
    model's own text. When that text is not a JSON object, ``arguments`` is
    empty and ``arguments_error`` says why: the call is invalid.
    """

    model_config = _FROZEN

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    raw_arguments: str = "{}"
    index: int = 0
    arguments_error: str | None = None

    @classmethod
    def from_message(cls, call: MessageToolCall, index: int = 0) -> ToolCall:
        """Parse a wire tool call; bad JSON becomes ``arguments_error``."""
        raw = call.function.arguments
        error: str | None = None
        args: dict[str, Any] = {}
        try:
            parsed = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as exc:
            error = f"arguments are not valid JSON: {exc.msg} at position {exc.pos}"
        else:
            if isinstance(parsed, dict):
                args = parsed
            else:
                error = f"arguments must be a JSON object, not {type(parsed).__name__}"
        return cls(
            id=call.id,
            name=call.function.name,
            arguments=args,
            raw_arguments=raw,
            index=index,
            arguments_error=error,
        )

    def to_message_call(self) -> MessageToolCall:
        """The wire form of this call (``arguments`` JSON-encoded)."""
        return MessageToolCall.make(self.id, self.name, self.arguments)


class ToolResult(BaseModel):
    """What a tool call produced, as the model will see it.

    ``is_error`` marks an error result; ``raised`` tells an exception, time-out
    or missing dependency apart from an error the tool returned on purpose
    with :meth:`ToolResult.error`.
    """

    model_config = _FROZEN

    call_id: str = ""
    content: str
    is_error: bool = False
    raised: bool = False

    @classmethod
    def error(cls, text: str, *, call_id: str = "") -> ToolResult:
        """An error result returned on purpose (``is_error=True, raised=False``)."""
        return cls(call_id=call_id, content=text, is_error=True, raised=False)


class ToolSpec(BaseModel):
    """A tool as advertised to the model: name, description, JSON Schema of arguments."""

    model_config = _FROZEN

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class Usage(BaseModel):
    """Token counts of one model call, or summed over a run."""

    model_config = _FROZEN

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            requests=self.requests + other.requests,
        )


class ModelRequest(BaseModel):
    """Everything a model is asked in one call.

    ``tool_choice`` is ``"auto"``, ``"none"``, ``"required"`` or a tool's name;
    ``None`` leaves it to the provider.
    """

    model_config = _FROZEN

    messages: tuple[Message, ...] = ()
    preamble: str | None = None
    extra_context: tuple[Document, ...] = ()
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    additional_params: dict[str, Any] = Field(default_factory=dict)


class ModelTurn(BaseModel):
    """One model turn the run accepted: the assistant message and its usage."""

    model_config = _FROZEN

    message: Message
    usage: Usage = Field(default_factory=Usage)


class Completed(BaseModel):
    """The run finished normally."""

    model_config = _FROZEN
    kind: Literal["completed"] = "completed"


class Terminated(BaseModel):
    """A hook (or a terminal tool) stopped the run on purpose."""

    model_config = _FROZEN
    kind: Literal["terminated"] = "terminated"
    reason: str
    hook: str | None = None


class Failed(BaseModel):
    """The run failed with an error."""

    model_config = _FROZEN
    kind: Literal["failed"] = "failed"
    error: str


class MaxTurns(BaseModel):
    """The run stopped after ``max_turns`` model turns."""

    model_config = _FROZEN
    kind: Literal["max_turns"] = "max_turns"


class Cancelled(BaseModel):
    """The run was cancelled, or hit ``run_timeout_seconds``."""

    model_config = _FROZEN
    kind: Literal["cancelled"] = "cancelled"


Outcome = Annotated[
    Completed | Terminated | Failed | MaxTurns | Cancelled, Field(discriminator="kind")
]


class Diagnostic(BaseModel):
    """Something worth knowing that did not stop the run (a conflict, a skipped hook)."""

    model_config = _FROZEN

    code: str
    message: str
    event: str | None = None
    hooks: tuple[str, ...] = ()
    turn: int | None = None


class RunResult(BaseModel):
    """The result of one agent run.

    ``transcript`` is the whole history: the input messages, injected pairs and
    everything the run added. ``outcome`` says how it ended.
    """

    model_config = _FROZEN

    output: str | None = None
    transcript: tuple[Message, ...] = ()
    usage: Usage = Field(default_factory=Usage)
    diagnostics: tuple[Diagnostic, ...] = ()
    outcome: Outcome = Field(default_factory=Completed)
