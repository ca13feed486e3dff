"""A run's declared output in the drive loop (`seamkit.Output`).

`Structured` is one run's view of its output: the mode it resolved (``auto``
becomes ``native`` when the model lists it in ``output_modes``, else
``tool``), what it adds to every request (the output tool, the schema in the
preamble, ``ModelRequest.output``), the partial values of the answer being
streamed, and how many answers failed. `conclude` decides what an answer
turn means for the run:

- an answer is the output tool's arguments (tool mode; the turn's other
  calls are not run and are answered so) or the text of a turn without tool
  calls (native, prompted); a text answer in tool mode is a failed answer;
- it is parsed and validated (`Output.parse`), then passes the ``on_output``
  hooks (chain: `RewriteOutput` is validated again, `Retry` counts as a
  failed answer, `Terminate` ends the run);
- a failed answer tells the model exactly what was wrong (field paths and
  messages, through the run's redactor) and lets it answer again, at most
  ``retries`` times; then the run ends ``failed`` with ``OutputInvalid:``;
- a model's refusal (``finish_reason="refusal"``) ends the run ``failed``
  at once: asking again rarely changes a refusal, and it costs a call.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import JsonValue

from .. import flow as F
from .._errors import OutputInvalid
from .._events import HookEvent
from .._output import WRAPPER, Output
from .._partial import Partial, Snapshot
from .._types import (
    FEEDBACK_NAME,
    Failed,
    Message,
    ModelRequest,
    ModelTurn,
    Outcome,
    OutputSpec,
    Terminated,
    ToolArgumentsDelta,
    ToolCall,
    ToolSpec,
)
from ._dispatch import Dispatched

__all__ = [
    "ACCEPTED",
    "NOT_RUN",
    "Answer",
    "Dispatch",
    "Mode",
    "Structured",
    "Verdict",
    "answer_of",
    "conclude",
    "resolve_mode",
]

ACCEPTED = "Final answer accepted."
NOT_RUN = "Not run: the final answer was given in this turn."
_SHOWN = 200

Mode = Literal["tool", "native", "prompted"]
Dispatch = Callable[..., Awaitable[Dispatched]]


def resolve_mode(output: Output[object], model: object) -> Mode:
    """The mode a run of ``model`` uses for ``output``."""
    if output.mode != "auto":
        return output.mode
    modes: object = getattr(model, "output_modes", None)
    if isinstance(modes, Collection) and "native" in modes:
        return "native"
    return "tool"


@dataclass(slots=True)
class Structured:
    """One run's declared output and where its answers stand."""

    output: Output[object]
    mode: Mode
    spec: OutputSpec = field(init=False)
    failures: int = 0
    """Answers that failed so far (each one the model was asked to redo)."""
    partial: Partial | None = None
    """The partial value of the answer streaming in this turn."""
    shown: bool = False
    """Whether this turn emitted an `OutputDelta`."""
    _streamed: int | None = None

    def __post_init__(self) -> None:
        self.spec = self.output.spec(self.mode)

    @classmethod
    def of(cls, output: Output[object], model: object) -> Structured:
        """The run's view of ``output`` with ``model``."""
        return cls(output, resolve_mode(output, model))

    def request(self, request: ModelRequest) -> ModelRequest:
        """``request`` asking for the output: applied after the hooks patched
        it, so no ``active_tools`` or ``preamble`` patch takes the output tool
        or the instructions away (they see ``request.output``)."""
        update: dict[str, object] = {"output": self.spec}
        if self.mode == "tool":
            description = self.output.description or (
                "Give your final answer by calling this tool; its arguments are the answer."
            )
            tool = ToolSpec(
                name=self.spec.name, description=description, parameters=self.spec.json_schema
            )
            update["tools"] = (*request.tools, tool)
            if request.tool_choice is None:
                update["tool_choice"] = "required"
        elif self.mode == "prompted":
            update["preamble"] = _joined(request.preamble, self.instructions())
        return request.model_copy(update=update)

    def instructions(self) -> str:
        """What prompted mode adds to the preamble: the schema, and how to answer."""
        about = f" ({self.output.description})" if self.output.description else ""
        return (
            f"Give your final answer{about} as one JSON value, and nothing else, that "
            f"matches this JSON Schema:\n{json.dumps(self.spec.json_schema, sort_keys=True)}"
        )

    def begin_turn(self) -> None:
        """A model call starts: no partial yet."""
        self.partial = None
        self.shown = False
        self._streamed = None

    def text(self, released: str) -> Snapshot | None:
        """Released answer text arrived (native, prompted): the partial
        value (read when asked for), when the text added to it."""
        if self.mode == "tool" or not released:
            return None
        return self._fed(released)

    def arguments(self, delta: ToolArgumentsDelta) -> Snapshot | None:
        """An argument fragment arrived (tool mode): the partial value of
        the output tool's arguments (its first call only), when it added to it."""
        if self.mode != "tool":
            return None
        if self._streamed is None and delta.name == self.spec.name:
            self._streamed = delta.index
        if delta.index != self._streamed:
            return None
        return self._fed(delta.text)

    def finish(self) -> JsonValue | None:
        """The streamed turn ended: the whole answer's value, when it adds to
        the last partial (a bare scalar, a number at the end)."""
        if self.partial is None:
            return None
        value = self.partial.finish()
        if value is not None:
            self.shown = True
        return value

    def _fed(self, piece: str) -> Snapshot | None:
        if not self.output.partials:
            return None
        if self.partial is None:
            self.partial = Partial(unwrap=WRAPPER if self.output.wrapped else None)
        value = self.partial.feed(piece)
        if value is not None:
            self.shown = True
        return value


@dataclass(frozen=True, slots=True)
class Answer:
    """What of a turn is its answer: the output tool's ``call`` (tool mode)
    or the turn's text; ``others`` are the calls not run because of it."""

    text: str
    call: ToolCall | None = None
    others: tuple[ToolCall, ...] = ()
    refused: bool = False
    missing_tool: bool = False


def answer_of(structured: Structured, turn: ModelTurn, calls: Sequence[ToolCall]) -> Answer | None:
    """The answer ``turn`` gives; ``None`` when it asks for tools instead."""
    text = turn.message.text
    if turn.finish_reason == "refusal":
        return Answer(text, refused=True, others=tuple(calls))
    if structured.mode == "tool":
        name = structured.spec.name
        mine = [c for c in calls if c.name == name]
        if mine:
            return Answer(
                mine[0].raw_arguments, mine[0], tuple(c for c in calls if c is not mine[0])
            )
        if calls:
            return None
        return Answer(text, missing_tool=True)
    return None if calls else Answer(text)


@dataclass(frozen=True, slots=True)
class Verdict:
    """What an answer means for the run: ``messages`` to append, then the
    ``value`` accepted (``outcome`` ``None`` and ``again`` false), another try
    (``again``, with the ``errors`` that caused it) or an ``outcome``."""

    messages: tuple[Message, ...]
    value: object = None
    again: bool = False
    errors: tuple[str, ...] = ()
    outcome: Outcome | None = None


async def conclude(
    structured: Structured,
    answer: Answer,
    *,
    dispatch: Dispatch,
    redact: Callable[[str], str],
    can_retry: bool = True,
    hooked: bool = True,
) -> Verdict:
    """Validate ``answer``, pass it through ``on_output``, and say what the
    run does with it (``can_retry`` false: a terminal tool's result, which
    the model cannot redo; ``hooked``: the run has ``on_output`` hooks,
    whose value is checked whole once they ran, as they may have changed it)."""
    output = structured.output
    skipped = tuple(Message.tool(c.id, NOT_RUN) for c in answer.others)
    if answer.refused:
        reason = _short(redact(answer.text)) or "no reason given"
        return Verdict(skipped, outcome=Failed(error=f"OutputInvalid: the model refused: {reason}"))
    if answer.missing_tool:
        errors: tuple[str, ...] = (
            f"(answer): no call to the tool {structured.spec.name!r}; give your final answer "
            "by calling it",
        )
    else:
        try:
            value = output.parse(answer.text)
        except OutputInvalid as exc:
            errors = tuple(redact(e) for e in exc.errors)
        else:
            decided = await dispatch(HookEvent.ON_OUTPUT, value)
            flow = decided.flow
            if type(flow) is F.Terminate:
                done = _answered(answer, "Not accepted: the run was stopped.")
                outcome = Terminated(
                    reason=flow.reason, hook=decided.hook, event=HookEvent.ON_OUTPUT.value
                )
                return Verdict((*skipped, *done), outcome=outcome)
            if type(flow) is F.Retry:
                errors = (redact(flow.feedback or "the answer was not accepted"),)
            else:
                try:
                    if type(flow) is F.RewriteOutput:
                        value = output.check(flow.value)
                    elif hooked:  # a hook may have changed the value in place
                        value = output.check(value)
                except OutputInvalid as exc:
                    problems = "; ".join(exc.errors)
                    did = "rewrote the output to" if decided.hook else "left the output as"
                    message = (
                        f"hook {decided.hook or '(on_output)'!r} at on_output {did} a value "
                        f"that does not fit it: {problems}"
                    )
                    done = _answered(answer, "Not accepted: the run failed.")
                    return Verdict((*skipped, *done), outcome=Failed(error=redact(message)))
                return Verdict((*skipped, *_answered(answer, ACCEPTED)), value=value)
    structured.failures += 1
    limit = output.retries if can_retry else 0
    if structured.failures > limit:
        tries = structured.failures
        last = _short(redact(answer.text))
        error = (
            f"OutputInvalid: {'; '.join(errors)} (after {tries} answer{'s' * (tries != 1)}); "
            f"last answer: {last!r}"
        )
        done = _answered(answer, "Not accepted: " + "; ".join(errors))
        return Verdict((*skipped, *done), errors=errors, outcome=Failed(error=error))
    feedback = _feedback(structured, errors)
    if answer.call is not None:
        return Verdict(
            (*skipped, Message.tool(answer.call.id, feedback, is_error=True)),
            again=True,
            errors=errors,
        )
    told = Message(role="user", content=feedback, name=FEEDBACK_NAME)
    return Verdict((*skipped, told), again=True, errors=errors)


def _answered(answer: Answer, text: str) -> tuple[Message, ...]:
    """The output call's tool message (tool mode), so every call is answered."""
    return () if answer.call is None else (Message.tool(answer.call.id, text),)


def _feedback(structured: Structured, errors: Sequence[str]) -> str:
    how = (
        f"by calling the tool {structured.spec.name!r} again"
        if structured.mode == "tool"
        else "with the JSON value only"
    )
    listed = "\n".join(f"- {e}" for e in errors)
    return f"Your answer was not accepted:\n{listed}\nAnswer again, {how}."


def _joined(preamble: str | None, more: str) -> str:
    return more if not preamble else f"{preamble}\n\n{more}"


def _short(text: str) -> str:
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."
