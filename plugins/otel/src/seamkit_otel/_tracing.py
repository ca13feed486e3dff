"""A run's observed events as spans, span events and metrics in the
OpenTelemetry GenAI semantic conventions.

- ``invoke_agent {agent}`` per run, a child of whatever span is current when
  the run starts (a caller's, or one `seamkit serve` continued), and current
  itself for the run's hooks and tools;
- ``chat {model}`` per model call and ``execute_tool {tool}`` per tool body,
  children of the run's span; a tool's span is current in the tool's task,
  so what the tool calls (a tool service, an MCP server) joins the trace;
- a ``seamkit.hook`` span event per `HookFired`;
- span events on the run's span for runs that wait for a person or continue
  after a crash: ``seamkit.approval.requested`` (`CallSuspended`),
  ``seamkit.approval.decided`` (`CallDecided`, with who decided),
  ``seamkit.tool.in_doubt`` (`CallInDoubt`) and ``seamkit.journal.replayed``
  (`JournalReplayed`); an approved or edited call's ``execute_tool`` span
  says so, and by whom;
- the ``gen_ai.client.operation.duration`` and ``gen_ai.client.token.usage``
  histograms per model call, and the ``seamkit.approval.requests``,
  ``seamkit.approval.decisions`` and ``seamkit.tool.in_doubt`` counters.
- a run with a declared output (`seamkit.Output`) says so on its span:
  ``gen_ai.output.type`` ``json``, ``seamkit.output.type`` and
  ``seamkit.output.mode``, and ``seamkit.output.retries`` (its `OutputRetry`
  events); its captured output is the validated value's JSON.

Every text goes through the run's redactor (``ctx.redactor``, plus the
``telemetry: redact_patterns``) before an attribute or event is made.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import context as otel_context, trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from seamkit import Edit, Failed, HookContext, Redactor, Reject, Suspended, Usage
from seamkit.plugins import secret_texts
from seamkit.stream import (
    CallDecided,
    CallInDoubt,
    CallSuspended,
    HookFired,
    JournalReplayed,
    ModelCallEnded,
    ModelCallStarted,
    ObservedEvent,
    OutputRetry,
    RunFinished,
    RunStarted,
    ToolExecutionEnd,
    ToolExecutionStart,
)

from ._config import TelemetryConfig
from ._content import (
    arguments_json,
    final_output,
    input_messages,
    output_messages,
    system_instructions,
    to_json,
    value_json,
)
from ._providers import capture_content_default
from ._setup import Instruments, Setup

__all__ = ["Tracing"]

AttributeValue = str | bool | int | float | Sequence[str]
Attributes = dict[str, AttributeValue]

_ERROR_TYPE = re.compile(r"([A-Za-z_][\w.]*):")
_DEFAULT = TelemetryConfig()
"""The settings of an app whose manifest has no ``telemetry:`` section."""

_REQUEST_PARAMS = {
    "top_p": "gen_ai.request.top_p",
    "top_k": "gen_ai.request.top_k",
    "seed": "gen_ai.request.seed",
    "frequency_penalty": "gen_ai.request.frequency_penalty",
    "presence_penalty": "gen_ai.request.presence_penalty",
    "n": "gen_ai.request.choice.count",
}


def _cache_attributes(usage: Usage) -> dict[str, AttributeValue | None]:
    """The prompt cache's token counts as GenAI attributes, each left out
    (None) when zero, as a provider without a cache reports them."""
    return {
        "gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens or None,
        "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_tokens or None,
    }


def _error_type(text: str | None, default: str, redact: Redactor) -> str:
    """A low-cardinality ``error.type``: the exception class a text starts
    with (``"ModelError: ..."``, ``"Error: Timeout: ..."``), ``timeout`` for
    a time-out, else ``default``; never a text the redactor would mask."""
    text = (text or "").removeprefix("Error: ")
    found = _ERROR_TYPE.match(text)
    if found is None:
        return "timeout" if "timed out" in text else default
    name = found.group(1)
    return name if redact(name) == name else default


_current_task = asyncio.current_task
"""The running task (observers are always called inside a run's task)."""


@dataclass(slots=True)
class _Open:
    """A started span, and the attach that made it current (undone only in
    the task that did it)."""

    span: Span
    token: object | None
    task: asyncio.Task[object] | None

    def close(self) -> None:
        if self.token is not None and _current_task() is self.task:
            otel_context.detach(self.token)  # type: ignore[arg-type]
        self.span.end()


def _open(span: Span, current: Context | None = None) -> _Open:
    """``span`` made current (``current`` is its context, when already made)."""
    token = otel_context.attach(current or trace.set_span_in_context(span))
    return _Open(span, token, _current_task())


@dataclass(slots=True)
class _Run:
    """What one traced run keeps between its events."""

    instruments: Instruments
    redact: Redactor
    capture: bool
    provider: str
    model: str
    root: _Open
    parent: Context
    chats: dict[int, tuple[_Open, Attributes]] = field(default_factory=dict)
    tools: dict[str, list[_Open]] = field(default_factory=dict)
    approved: dict[str, Attributes] = field(default_factory=dict)
    """What the ``execute_tool`` span of a decided call adds, by call id."""
    structured: bool = False
    """Whether the run declared an output (`seamkit.Output`)."""
    retries: int = 0
    """The run's `OutputRetry` events so far: answers it did not accept."""

    def clean(self, attributes: Mapping[str, AttributeValue | None]) -> Attributes:
        """``attributes`` without ``None`` values, every text redacted."""
        redact = self.redact
        if not redact:  # nothing to mask: the common case, kept quick
            return {k: v for k, v in attributes.items() if v is not None}
        out: Attributes = {}
        for key, value in attributes.items():
            if value is None:
                continue
            if isinstance(value, str):
                out[key] = redact(value)
            elif isinstance(value, list | tuple):
                out[key] = [redact(str(v)) for v in value]
            else:
                out[key] = value
        return out


class Tracing:
    """The run observer behind the plugin: one per process, keyed by run id."""

    def __init__(self) -> None:
        self._setup = Setup()
        self._runs: dict[str, _Run] = {}
        handlers: dict[type, Callable[[HookContext, _Run, Any], None]] = {
            ModelCallStarted: self._chat_started,
            ModelCallEnded: self._chat_ended,
            ToolExecutionStart: self._tool_started,
            ToolExecutionEnd: self._tool_ended,
            HookFired: self._hook_fired,
            CallSuspended: self._call_suspended,
            CallDecided: self._call_decided,
            CallInDoubt: self._call_in_doubt,
            JournalReplayed: self._journal_replayed,
            OutputRetry: self._output_retry,
            RunFinished: self._run_finished,
        }
        self._handlers = handlers

    def on_run_event(self, ctx: HookContext, event: ObservedEvent) -> None:
        """Record ``event`` of the run ``ctx.run_id``."""
        kind = type(event)
        if kind is RunStarted:
            self._run_started(ctx, event)  # type: ignore[arg-type]
            return
        run = self._runs.get(ctx.run_id)
        if run is not None:
            handler = self._handlers.get(kind)
            if handler is not None:
                handler(ctx, run, event)

    @property
    def open_runs(self) -> int:
        """How many traced runs have started and not finished."""
        return len(self._runs)

    # --- the run ------------------------------------------------------------

    def _run_started(self, ctx: HookContext, event: RunStarted) -> None:
        section = ctx.section("telemetry")
        config = section if isinstance(section, TelemetryConfig) else _DEFAULT
        if not config.enabled:
            return
        instruments = self._setup.instruments()
        if instruments is None:
            return
        redact = ctx.redactor
        if config.redact_patterns:
            redact = redact.extend(patterns=config.redact_patterns)
        capture = (
            config.capture_content
            if config.capture_content is not None
            else capture_content_default()
        )
        provider, _, model = event.model.partition(":")
        attributes: Attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": redact(event.agent_name),
            "gen_ai.provider.name": redact(provider),
            "seamkit.run.id": event.run_id,
            "seamkit.run.streaming": event.streaming,
        }
        if model:
            attributes["gen_ai.request.model"] = redact(model)
        if event.session is not None:
            attributes["gen_ai.conversation.id"] = redact(event.session)
        if event.output is not None:  # a declared output: the answer is JSON
            attributes["gen_ai.output.type"] = "json"
            attributes["seamkit.output.type"] = redact(event.output)
            if event.output_mode is not None:
                attributes["seamkit.output.mode"] = event.output_mode
        span = instruments.tracer.start_span(
            redact(f"invoke_agent {event.agent_name}"),
            kind=SpanKind.INTERNAL,
            attributes=attributes,
        )
        parent = trace.set_span_in_context(span)
        self._runs[ctx.run_id] = _Run(
            instruments,
            redact,
            capture,
            provider,
            model,
            _open(span, parent),
            parent,
            structured=event.output is not None,
        )

    def _run_finished(self, ctx: HookContext, run: _Run, event: RunFinished) -> None:
        del self._runs[ctx.run_id]
        for chat, _ in run.chats.values():  # the kernel ends each; a safety net only
            chat.close()
        for opened in run.tools.values():
            for tool in opened:
                tool.close()
        try:
            self._run_outcome(run, event)
        finally:
            run.root.close()

    def _run_outcome(self, run: _Run, event: RunFinished) -> None:
        result = event.result
        outcome = result.outcome
        span = run.root.span
        span.set_attributes(
            run.clean(
                {
                    "seamkit.run.outcome": outcome.kind,
                    "seamkit.run.pending": (
                        len(outcome.pending) if isinstance(outcome, Suspended) else None
                    ),
                    "gen_ai.usage.input_tokens": result.usage.input_tokens,
                    "gen_ai.usage.output_tokens": result.usage.output_tokens,
                    **_cache_attributes(result.usage),
                    "seamkit.output.retries": run.retries if run.structured else None,
                }
            )
        )
        if isinstance(outcome, Failed):
            error = run.redact(outcome.error)
            span.set_attribute("error.type", _error_type(outcome.error, "failed", run.redact))
            span.set_status(Status(StatusCode.ERROR, error))
        elif outcome.kind == "cancelled":
            span.set_attribute("error.type", "cancelled")
            span.set_status(Status(StatusCode.ERROR, "cancelled"))
        if not run.capture:
            return
        if run.structured:  # the validated value's JSON; none when the run did not complete
            if result.output is not None:
                value = value_json(result.output)
                span.set_attribute("gen_ai.output.messages", final_output(value, run.redact))
            return
        shown = result.output if isinstance(result.output, str) else result.text
        if shown:
            span.set_attribute("gen_ai.output.messages", final_output(shown, run.redact))

    def _output_retry(self, ctx: HookContext, run: _Run, event: OutputRetry) -> None:
        if event.errors:  # an answer not accepted (not partials that became tool calls)
            run.retries += 1

    # --- model calls --------------------------------------------------------

    def _chat_started(self, ctx: HookContext, run: _Run, event: ModelCallStarted) -> None:
        request = event.request
        params = request.additional_params
        model = str(params.get("model") or run.model)
        attributes: dict[str, AttributeValue | None] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": run.provider,
            "gen_ai.request.model": model or None,
            "gen_ai.request.temperature": request.temperature,
            "gen_ai.request.max_tokens": request.max_tokens,
            "seamkit.turn": event.turn,
        }
        for key, name in _REQUEST_PARAMS.items():
            value = params.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                attributes[name] = value
        stop = params.get("stop")
        if isinstance(stop, str):
            attributes["gen_ai.request.stop_sequences"] = [stop]
        elif isinstance(stop, list | tuple):
            attributes["gen_ai.request.stop_sequences"] = [str(s) for s in stop]
        if run.capture:
            attributes["gen_ai.input.messages"] = input_messages(request, run.redact)
            attributes["gen_ai.system_instructions"] = system_instructions(request, run.redact)
        span = run.instruments.tracer.start_span(
            run.redact(f"chat {model}" if model else "chat"),
            context=run.parent,
            kind=SpanKind.CLIENT,
            attributes=run.clean(attributes),
        )
        metric: Attributes = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": run.provider}
        if model:
            metric["gen_ai.request.model"] = model
        run.chats[event.turn] = (_open(span), run.clean(metric))

    def _chat_ended(self, ctx: HookContext, run: _Run, event: ModelCallEnded) -> None:
        opened = run.chats.pop(event.turn, None)
        if opened is None:
            return
        chat, metric = opened
        try:
            self._chat_outcome(run, chat.span, metric, event)
        finally:
            chat.close()

    def _chat_outcome(
        self, run: _Run, span: Span, metric: Attributes, event: ModelCallEnded
    ) -> None:
        turn = event.model_turn
        if turn is not None:
            usage = turn.usage
            attributes: dict[str, AttributeValue | None] = {
                "gen_ai.usage.input_tokens": usage.input_tokens,
                "gen_ai.usage.output_tokens": usage.output_tokens,
                **_cache_attributes(usage),
                "gen_ai.response.finish_reasons": [turn.finish_reason or "stop"],
            }
            if run.capture:
                attributes["gen_ai.output.messages"] = output_messages(
                    turn.message, turn.finish_reason, run.redact
                )
            span.set_attributes(run.clean(attributes))
            record = run.instruments.token_usage.record
            record(usage.input_tokens, {**metric, "gen_ai.token.type": "input"})
            record(usage.output_tokens, {**metric, "gen_ai.token.type": "output"})
        if event.error is not None:
            error_type = _error_type(event.error, "error", run.redact)
            span.set_attribute("error.type", error_type)
            span.set_status(Status(StatusCode.ERROR, run.redact(event.error)))
            metric["error.type"] = error_type
        run.instruments.duration.record(event.duration, metric)

    # --- tools --------------------------------------------------------------

    def _tool_started(self, ctx: HookContext, run: _Run, event: ToolExecutionStart) -> None:
        call = event.call
        written = secret_texts(call.arguments)  # a hook may have written secrets in
        if written:
            run.redact = run.redact.extend(written)
        attributes: dict[str, AttributeValue | None] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "function",
            "seamkit.turn": event.turn,
        }
        if run.capture:
            attributes["gen_ai.tool.call.arguments"] = arguments_json(call, run.redact)
        attributes.update(run.approved.pop(call.id, {}))
        span = run.instruments.tracer.start_span(
            run.redact(f"execute_tool {call.name}"),
            context=run.parent,
            kind=SpanKind.INTERNAL,
            attributes=run.clean(attributes),
        )
        run.tools.setdefault(call.id, []).append(_open(span))

    def _tool_ended(self, ctx: HookContext, run: _Run, event: ToolExecutionEnd) -> None:
        opened = run.tools.get(event.call.id)
        if not opened:
            return
        if len(opened) == 1:
            tool = opened[0]
            del run.tools[event.call.id]
        else:  # one id, several calls in flight: the one of this task
            task = _current_task()
            tool = next((t for t in opened if t.task is task), opened[0])
            opened.remove(tool)
        result = event.result
        if result is None or result.is_error or run.capture:
            try:
                self._tool_outcome(run, tool.span, event)
            finally:
                tool.close()
        else:
            tool.close()

    def _tool_outcome(self, run: _Run, span: Span, event: ToolExecutionEnd) -> None:
        result = event.result
        if result is None:
            span.set_attribute("error.type", "cancelled")
            span.set_status(Status(StatusCode.ERROR, "cancelled"))
        elif result.is_error:
            error_type = "tool_error"
            if result.raised:
                error_type = _error_type(result.content, error_type, run.redact)
            span.set_attribute("error.type", error_type)
            span.set_status(Status(StatusCode.ERROR, run.redact(result.content)))
        if run.capture and result is not None:
            span.set_attribute("gen_ai.tool.call.result", run.redact(result.content))

    # --- hooks --------------------------------------------------------------

    def _hook_fired(self, ctx: HookContext, run: _Run, event: HookFired) -> None:
        run.root.span.add_event(
            "seamkit.hook",
            run.clean(
                {
                    "seamkit.hook.event": event.event,
                    "seamkit.hook.names": list(event.hooks),
                    "seamkit.hook.flow": event.flow,
                    "seamkit.hook.decided_by": event.hook,
                    "seamkit.hook.duration": event.duration,
                    "seamkit.turn": event.turn,
                }
            ),
        )

    # --- approvals and the journal --------------------------------------------

    def _call_suspended(self, ctx: HookContext, run: _Run, event: CallSuspended) -> None:
        pending = event.pending
        attributes: dict[str, AttributeValue | None] = {
            "gen_ai.tool.name": pending.tool,
            "gen_ai.tool.call.id": pending.call_id,
            "seamkit.approval.digest": pending.digest,
            "seamkit.approval.reason": pending.reason,
            "seamkit.approval.hook": pending.hook,
            "seamkit.turn": event.turn,
        }
        if run.capture:
            attributes["gen_ai.tool.call.arguments"] = run.redact(to_json(pending.arguments))
        run.root.span.add_event("seamkit.approval.requested", run.clean(attributes))
        run.instruments.approvals.add(1, run.clean({"gen_ai.tool.name": pending.tool}))

    def _call_decided(self, ctx: HookContext, run: _Run, event: CallDecided) -> None:
        pending = event.pending
        decision = pending.decision
        if decision is None:  # the kernel emits only decided calls; a safety net
            return
        who: dict[str, AttributeValue | None] = {
            "seamkit.approval.action": decision.action,
            "seamkit.approval.by": decision.by,
        }
        attributes: dict[str, AttributeValue | None] = {
            "gen_ai.tool.name": pending.tool,
            "gen_ai.tool.call.id": pending.call_id,
            "seamkit.approval.digest": pending.digest,
            **who,
            "seamkit.turn": event.turn,
        }
        if isinstance(decision, Reject):
            attributes["seamkit.approval.reason"] = decision.reason
        elif isinstance(decision, Edit) and run.capture:
            written = secret_texts(decision.arguments)
            redact = run.redact.extend(written) if written else run.redact
            attributes["gen_ai.tool.call.arguments"] = redact(to_json(decision.arguments))
        run.root.span.add_event("seamkit.approval.decided", run.clean(attributes))
        metric = {"gen_ai.tool.name": pending.tool, "seamkit.approval.action": decision.action}
        run.instruments.decisions.add(1, run.clean(metric))
        if not isinstance(decision, Reject):  # the call runs next: its span says who let it
            run.approved[pending.call_id] = run.clean(who)

    def _call_in_doubt(self, ctx: HookContext, run: _Run, event: CallInDoubt) -> None:
        call = event.call
        attributes: dict[str, AttributeValue | None] = {
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "seamkit.turn": event.turn,
        }
        run.root.span.add_event("seamkit.tool.in_doubt", run.clean(attributes))
        run.instruments.in_doubt.add(1, run.clean({"gen_ai.tool.name": call.name}))

    def _journal_replayed(self, ctx: HookContext, run: _Run, event: JournalReplayed) -> None:
        run.root.span.add_event(
            "seamkit.journal.replayed",
            {"seamkit.journal.turns": event.turns, "seamkit.journal.results": event.results},
        )
