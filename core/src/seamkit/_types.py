"""The values that flow through a run, all JSON round-trippable: chat messages
in the OpenAI format, documents, tool calls and results, model requests and
turns, the run's result with its outcome and diagnostics; and the `Model`
protocol that turns a request into a turn."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ._approval import PendingCall

__all__ = [
    "FEEDBACK_NAME",
    "JSON_DECODER",
    "MAX_ARGUMENT_DEPTH",
    "Cancelled",
    "Completed",
    "Diagnostic",
    "Document",
    "Failed",
    "FunctionCall",
    "MaxTurns",
    "Message",
    "MessageToolCall",
    "Model",
    "ModelRequest",
    "ModelTurn",
    "Outcome",
    "OutputMode",
    "OutputSpec",
    "Role",
    "RunResult",
    "Suspended",
    "Terminated",
    "ToolArgumentsDelta",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "Usage",
]

Role = Literal["system", "user", "assistant", "tool"]

MAX_ARGUMENT_DEPTH = 64
"""How deeply a tool call's JSON arguments may nest (objects and arrays) by
default; ``settings.max_argument_depth`` changes it for a run."""

FEEDBACK_NAME = "seamkit_feedback"
"""The ``name`` of the ``user`` messages a run writes itself, to tell the
model why its answer was not accepted (`seamkit.Output`): they continue a
request, they do not start one (`Message.from_user` is false for them)."""

_FROZEN = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class FunctionCall(BaseModel):
    """The function part of a tool call on the wire: a name and JSON-text arguments."""

    model_config = _FROZEN

    name: str
    arguments: str = "{}"


class MessageToolCall(BaseModel):
    """One tool call inside an assistant message: ``{id, type, function}``."""

    model_config = _FROZEN

    id: str
    type: Literal["function"] = "function"
    function: FunctionCall

    @classmethod
    def make(cls, id: str, name: str, arguments: dict[str, Any] | str) -> MessageToolCall:
        """Build one from a name and arguments (a dict is JSON-encoded)."""
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        return cls(id=id, function=FunctionCall(name=name, arguments=text))


class Message(BaseModel):
    """One chat message, shaped exactly like the OpenAI chat format.

    Roles ``system``, ``user``, ``assistant`` and ``tool``. An assistant message
    may carry ``tool_calls``; a tool message answers one of them by
    ``tool_call_id``. ``content`` is text, or a list of content parts as the
    OpenAI format allows. A tool message whose result is an error has
    ``is_error`` set (providers whose API flags failed results, like
    Anthropic's, send it; `to_openai` leaves it out, as OpenAI's format has no
    such field). Content parts an API needs echoed back verbatim (Anthropic's
    thinking blocks) are kept as parts of the assistant message; `text` skips them.
    """

    model_config = _FROZEN

    role: Role
    content: str | list[dict[str, Any]] | None = None
    tool_calls: tuple[MessageToolCall, ...] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    is_error: Literal[True] | None = None

    @model_validator(mode="after")
    def _check_shape(self) -> Message:
        if self.tool_calls is not None and self.role != "assistant":
            raise ValueError("only assistant messages carry tool_calls")
        if self.role == "tool" and not self.tool_call_id:
            raise ValueError("a tool message needs the tool_call_id it answers")
        if self.tool_call_id is not None and self.role != "tool":
            raise ValueError("only tool messages carry a tool_call_id")
        if self.is_error and self.role != "tool":
            raise ValueError("only tool messages carry is_error")
        return self

    @classmethod
    def system(cls, content: str) -> Message:
        """A system message."""
        return cls(role="system", content=content)

    @classmethod
    def user(cls, content: str) -> Message:
        """A user message."""
        return cls(role="user", content=content)

    @classmethod
    def assistant(
        cls, content: str | None = None, tool_calls: Sequence[MessageToolCall] | None = None
    ) -> Message:
        """An assistant message, with text, tool calls, or both."""
        return cls(
            role="assistant",
            content=content,
            tool_calls=tuple(tool_calls) if tool_calls else None,
        )

    @classmethod
    def tool(cls, tool_call_id: str, content: str, *, is_error: bool = False) -> Message:
        """A tool message carrying the result of the call ``tool_call_id``;
        ``is_error`` when that result reports a failure."""
        return cls(
            role="tool", tool_call_id=tool_call_id, content=content, is_error=is_error or None
        )

    @property
    def from_user(self) -> bool:
        """Whether this is the user's message: a ``user`` message the run did
        not write as feedback (`FEEDBACK_NAME`)."""
        return self.role == "user" and self.name != FEEDBACK_NAME

    @property
    def text(self) -> str:
        """The message's text: ``content``, or its text parts joined; ``""`` if none."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(str(p.get("text", "")) for p in self.content if p.get("type") == "text")

    def to_openai(self) -> dict[str, Any]:
        """The message as an OpenAI chat API dict (unset fields, and the
        ``is_error`` flag OpenAI's format lacks, left out)."""
        return self.model_dump(mode="json", exclude_none=True, exclude={"is_error"})


class Document(BaseModel):
    """A piece of context a hook adds to a model request (``extra_context``)."""

    model_config = _FROZEN

    id: str
    text: str
    metadata: dict[str, Any] = Field(default_factory=dict)


class ToolCall(BaseModel):
    """One tool call the model asked for, parsed.

    ``index`` is its position in the turn's batch; ``raw_arguments`` keeps the
    model's own text. When that text is not a JSON object, ``arguments`` is
    empty and ``arguments_error`` says why: the call is invalid.
    ``result_source`` says where the result ``on_post_tool_use`` sees came
    from: the tool ran (``"tool"``), the run's journal recovered it after a
    crash (``"journal"``: the hooks saw it once already, before the crash), or
    the caller ran it and sent it back (``"client"``: a call to one of the
    run's ``client_tools``, answered with `seamkit.ClientResults`).
    """

    model_config = _FROZEN

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    raw_arguments: str = "{}"
    index: int = 0
    arguments_error: str | None = None
    result_source: Literal["tool", "journal", "client"] = "tool"

    @classmethod
    def from_message(
        cls, call: MessageToolCall, index: int = 0, *, max_depth: int = MAX_ARGUMENT_DEPTH
    ) -> ToolCall:
        """Parse a wire tool call. Arguments that are not a JSON object (bad
        JSON, ``NaN``, an integer too long to convert, nesting deeper than
        ``max_depth`` containers) become ``arguments_error``; parsing never
        raises on what a model wrote."""
        raw = call.function.arguments
        error: str | None = None
        args: dict[str, Any] = {}
        try:
            parsed = JSON_DECODER.decode(raw) if raw.strip() else {}
        except json.JSONDecodeError as exc:
            error = f"arguments are not valid JSON: {exc.msg} at position {exc.pos}"
        except RecursionError:
            error = f"arguments are nested deeper than {max_depth} levels"
        except ValueError as exc:  # NaN, or an integer longer than Python converts
            error = f"arguments are not valid JSON: {exc}"
        else:
            if not isinstance(parsed, dict):
                error = f"arguments must be a JSON object, not {type(parsed).__name__}"
            elif len(raw) > 2 * max_depth and _deeper_than(parsed, max_depth):
                error = f"arguments are nested deeper than {max_depth} levels"
            else:
                args = parsed
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


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON value")


JSON_DECODER = json.JSONDecoder(parse_constant=_not_json)
"""Python's JSON, without the ``NaN`` and ``Infinity`` JSON has not."""


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` nests more than ``limit`` containers (walked without
    recursion: the point is to refuse what would overflow the stack later)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False


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
    """Token counts of one model call, or summed over a run.

    ``input_tokens`` counts every input token, the cached ones included (as
    OpenAI counts them); ``cache_read_tokens`` of them were read from the
    provider's prompt cache and ``cache_write_tokens`` written to it.
    """

    model_config = _FROZEN

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    @property
    def cache_note(self) -> str:
        """What the prompt cache did, as the CLI shows it: ``"1000 cached, 150
        written"``, either part only when not zero; ``""`` when neither."""
        parts = []
        if self.cache_read_tokens:
            parts.append(f"{self.cache_read_tokens} cached")
        if self.cache_write_tokens:
            parts.append(f"{self.cache_write_tokens} written")
        return ", ".join(parts)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            requests=self.requests + other.requests,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )


OutputMode = Literal["auto", "tool", "native", "prompted"]
"""How a run asks for its declared output: ``tool`` (the model calls an
output tool whose parameters are the schema), ``native`` (the provider's own
structured output), ``prompted`` (the schema in the instructions, the answer
parsed as JSON), ``auto`` (native where the model supports it, else tool)."""


class OutputSpec(BaseModel):
    """A run's declared output as a model request carries it (``mode`` is
    never ``auto`` here: the run resolved it).

    ``json_schema`` is what the model is asked for: always a JSON object at
    its root (a declared type that is not an object is wrapped as
    ``{"response": ...}``). A provider acts on it only in ``native`` mode
    (``response_format`` for OpenAI-compatible servers, with ``name`` and
    ``strict``); in ``tool`` mode the output tool is among the request's
    ``tools`` under ``name``, and in ``prompted`` mode the schema is in the
    preamble already.
    """

    model_config = _FROZEN

    mode: Literal["tool", "native", "prompted"]
    name: str
    json_schema: dict[str, Any]
    description: str | None = None
    strict: bool = False


class ModelRequest(BaseModel):
    """Everything a model is asked in one call.

    ``tool_choice`` is ``"auto"``, ``"none"``, ``"required"`` or a tool's name;
    ``None`` leaves it to the provider. ``output`` is the run's declared
    output, when it has one (`OutputSpec`).
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
    output: OutputSpec | None = None


class ModelTurn(BaseModel):
    """One model turn the run accepted: the assistant message, its usage, and
    why the model stopped (``finish_reason`` as the provider said it:
    ``stop``, ``tool_calls``, ``length``...; ``None`` when it did not say).
    A provider reports a model's refusal to answer (OpenAI's ``refusal``) as
    ``finish_reason="refusal"`` with the refusal's text as the message's
    content: text guards see it like any text."""

    model_config = _FROZEN

    message: Message
    usage: Usage = Field(default_factory=Usage)
    finish_reason: str | None = None


class Completed(BaseModel):
    """The run finished normally."""

    model_config = _FROZEN
    kind: Literal["completed"] = "completed"


class Terminated(BaseModel):
    """A hook (or a terminal tool) stopped the run on purpose: ``hook`` and
    the ``event`` where it did."""

    model_config = _FROZEN
    kind: Literal["terminated"] = "terminated"
    reason: str
    hook: str | None = None
    event: str | None = None


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


class Suspended(BaseModel):
    """The run waits for a person: each of ``pending`` needs a decision
    (`seamkit.Decisions`) before the run goes on. The batch's other calls
    ran; the pending ones did not."""

    model_config = _FROZEN
    kind: Literal["suspended"] = "suspended"
    pending: tuple[PendingCall, ...]


class Deferred(BaseModel):
    """The model called tools the caller runs (the run's ``client_tools``):
    ``calls`` are handed back, unrun, for the caller to run and answer with
    `seamkit.ClientResults`. The turn's other calls ran (or wait for a
    decision: a turn that needs both suspends first). Nothing waits for a
    person."""

    model_config = _FROZEN
    kind: Literal["deferred"] = "deferred"
    calls: tuple[ToolCall, ...]


Outcome = Annotated[
    Completed | Terminated | Failed | MaxTurns | Cancelled | Suspended | Deferred,
    Field(discriminator="kind"),
]
"""How a run ended, told apart by ``kind``: completed, terminated, failed,
max_turns, cancelled, suspended, deferred."""


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

    ``output`` is the model's final text, or, for a run with a declared
    output (`seamkit.Output`), the validated value (an instance of the
    declared type; JSON in a dump) and ``None`` unless the run completed.
    ``text`` is the model's final text either way. ``transcript`` is the
    whole history: the input messages, injected pairs and everything the run
    added. ``outcome`` says how it ended.
    """

    model_config = _FROZEN

    output: object = None
    text: str | None = None
    transcript: tuple[Message, ...] = ()
    usage: Usage = Field(default_factory=Usage)
    diagnostics: tuple[Diagnostic, ...] = ()
    outcome: Outcome = Field(default_factory=Completed)
    suspended: str | None = None
    """A run without a session that ended ``suspended``: the signed state
    that ``Agent.run(Decisions(...), suspended=...)`` continues (a string,
    JSON-safe; ``None`` otherwise, or when no ``settings.state_key`` is set)."""


@dataclass(frozen=True, slots=True)
class ToolArgumentsDelta:
    """A fragment of a tool call's JSON arguments, as a model streams it
    (optional for providers: a model's ``stream`` may yield these beside its
    text deltas). ``index`` is the call's position in the turn; ``id`` and
    ``name`` are given at least with the call's first fragment (``None``
    after, when the provider does not repeat them). The kernel reads the
    output tool's fragments for `seamkit.stream.OutputDelta`; the turn's
    tool calls are still those of the `ModelTurn` the stream ends with."""

    index: int
    id: str | None
    name: str | None
    text: str


@runtime_checkable
class Model(Protocol):
    """A chat model. ``complete`` answers a request with one turn; ``stream``
    yields the turn's text deltas (``str``), optionally `ToolArgumentsDelta`
    fragments, and then the `ModelTurn`.

    A model may also have an ``output_modes`` attribute (a collection of
    ``"native"``, ``"tool"``, ``"prompted"``): the structured-output modes it
    supports for the model it talks to. A run whose output mode is ``auto``
    uses ``native`` when it is among them, else ``tool``. A model without
    the attribute gets ``tool`` under ``auto``; ``native`` asks it for
    nothing it does not know (``ModelRequest.output`` is there to read).
    """

    async def complete(self, request: ModelRequest) -> ModelTurn:
        """One whole turn."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[str | ToolArgumentsDelta | ModelTurn]:
        """Text deltas (and `ToolArgumentsDelta` fragments) as they arrive,
        then the turn."""
        ...
