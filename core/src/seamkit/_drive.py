"""The drive loop: one run, from the input to `on_completion`.

`Agent.run` and `Agent.stream` both call :func:`drive`; the only differences
are ``ctx.is_streaming``, whether the model is asked with ``stream`` (so text
deltas exist) and whether events are emitted. Hooks fire in the same order
with the same arguments either way.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from . import flow as F
from ._batch import Settled, Stop, run_batch
from ._context import HookContext
from ._dispatch import Dispatched
from ._errors import HookError, SeamkitError
from ._events import HookEvent
from ._messages import Message
from ._results import (
    Cancelled,
    Completed,
    Diagnostic,
    Failed,
    MaxTurns,
    ModelRequest,
    ModelTurn,
    Outcome,
    RunResult,
    Terminated,
    ToolCall,
    Usage,
)
from .stream import (
    Event,
    HookFired,
    RunFinished,
    TextDelta,
    ToolCallEmitted,
    ToolCompleted,
    ToolExecutionStart,
    TurnFinished,
)

__all__ = ["RunState", "drive"]

log = logging.getLogger("seamkit.run")

Emit = Callable[[Event], None]


class RunState:
    """Everything one run changes: the transcript, usage, counters, outcome."""

    __slots__ = (
        "agent",
        "ctx",
        "dispatcher",
        "emit",
        "has_hooks",
        "invalid",
        "outcome",
        "output",
        "specs",
        "tools",
        "transcript",
        "usage",
    )

    def __init__(self, agent: Any, ctx: HookContext, messages: list[Message], emit: Emit | None):
        self.agent = agent
        self.ctx = ctx
        self.dispatcher = agent._dispatcher
        self.has_hooks: frozenset[HookEvent] = agent._hooked_events
        self.tools = agent.tools
        self.specs = agent._specs  # taken with the tools: one map for the whole run
        self.emit = emit
        self.transcript = messages
        self.usage = Usage()
        self.invalid = 0
        self.outcome: Outcome = Completed()
        self.output: str | None = None

    def baseline(self) -> ModelRequest:
        """The request every model call of this turn starts from."""
        return ModelRequest.model_construct(
            messages=tuple(self.transcript),
            preamble=self.agent.preamble,
            extra_context=(),
            tools=self.specs,
            tool_choice=None,
            temperature=None,
            max_tokens=None,
            additional_params={},
        )

    async def dispatch(self, event: HookEvent, *args: Any) -> Dispatched:
        if event not in self.has_hooks:
            return _NOTHING
        decided: Dispatched = await self.dispatcher.dispatch(event, self.ctx, *args)
        if self.emit is not None:  # streaming: surface that the event's hooks ran
            self.emit(
                HookFired(
                    event.value,
                    tuple(r.name for r in self.dispatcher.hooks_at(event)),
                    type(decided.flow).__name__,
                    decided.hook,
                    self.ctx.turn,
                )
            )
        return decided


_NOTHING = Dispatched(F.Continue())


async def drive(run: RunState) -> RunResult:
    """Run to the end; always fires ``on_completion`` and emits `RunFinished`.

    Cancellation (of the task, or by ``run_timeout_seconds``) ends the run as
    ``cancelled``; a task cancellation is re-raised after ``on_completion``.
    """
    settings = run.agent.settings
    cancelled: asyncio.CancelledError | None = None
    scope: asyncio.Timeout | None = None
    try:
        async with asyncio.timeout(settings.run_timeout_seconds) as scope:
            await _turns(run)
    except asyncio.CancelledError as exc:
        run.outcome = Cancelled()
        cancelled = exc
    except HookError as exc:
        run.outcome = Failed(error=exc.message)
    except SeamkitError as exc:
        run.outcome = Failed(error=str(exc))
    except Exception as exc:  # a model or plugin bug: the run fails, the caller gets a result
        if isinstance(exc, TimeoutError) and scope is not None and scope.expired():
            run.outcome = Cancelled()
            limit = settings.run_timeout_seconds
            _note(run, "run_timeout", f"the run hit run_timeout_seconds={limit}")
        else:
            log.warning("run %s failed: %s: %s", run.ctx.run_id, type(exc).__name__, exc)
            run.outcome = Failed(error=f"{type(exc).__name__}: {exc}")
    result = RunResult.model_construct(
        output=run.output if isinstance(run.outcome, Completed | MaxTurns) else None,
        transcript=tuple(run.transcript),
        usage=run.usage,
        diagnostics=tuple(run.ctx.diagnostics),
        outcome=run.outcome,
    )
    # on_completion runs to its end even when the run is cancelled meanwhile
    # (a stream closed early, say); the cancellation is re-raised afterwards.
    completion = asyncio.ensure_future(run.dispatch(HookEvent.ON_COMPLETION, result))
    while not completion.done():
        try:
            await asyncio.shield(completion)
        except asyncio.CancelledError as exc:
            cancelled = cancelled or exc
    completion.result()
    if run.emit is not None:
        run.emit(RunFinished(result))
    if cancelled is not None:
        raise cancelled
    return result


def _note(run: RunState, code: str, message: str) -> None:
    run.ctx.diagnostics.append(Diagnostic(code=code, message=message, turn=run.ctx.turn))


async def _turns(run: RunState) -> None:
    agent = run.agent
    ctx = run.ctx
    settings = agent.settings
    decided = (
        await run.dispatch(HookEvent.ON_REQUEST_START, tuple(run.transcript))
        if HookEvent.ON_REQUEST_START in run.has_hooks
        else _NOTHING
    )
    if type(decided.flow) is F.Terminate:
        run.outcome = Terminated(reason=decided.flow.reason, hook=decided.hook)
        return
    if type(decided.flow) is F.RewriteMessages:
        run.transcript = list(decided.flow.messages)
    while True:
        if ctx.turn >= settings.max_turns:
            run.outcome = MaxTurns()
            _note(run, "max_turns", f"stopped after max_turns={settings.max_turns} turns")
            return
        ctx.turn += 1
        request = run.baseline()
        decided = await run.dispatch(HookEvent.ON_PRE_LLM, request)
        kind = type(decided.flow)
        if kind is F.Terminate:
            run.outcome = Terminated(reason=decided.flow.reason, hook=decided.hook)
            return
        if kind is F.PatchRequest:
            request = decided.flow.patch.apply(request)
            _check_request(request, run.tools)
        turn = await _ask(run, request)
        run.usage = run.usage + turn.usage
        message = turn.message
        run.transcript.append(message)
        calls = [ToolCall.from_message(c, i) for i, c in enumerate(message.tool_calls or ())]
        if run.emit is not None:
            for call in calls:
                run.emit(ToolCallEmitted(call, ctx.turn))
            run.emit(TurnFinished(turn, ctx.turn))
        run.output = message.text
        decided = await run.dispatch(HookEvent.ON_MODEL_TURN_FINISHED, turn)
        if type(decided.flow) is F.Terminate:
            run.outcome = Terminated(reason=decided.flow.reason, hook=decided.hook)
            return
        if not calls:
            return
        settled = await run_batch(run, calls, settings.tool_concurrency)
        if isinstance(settled, Stop):
            run.outcome = settled.outcome
            return
        run.invalid += sum(1 for s in settled if s.invalid)
        if run.invalid > settings.max_invalid_tool_calls:
            run.outcome = Failed(
                error=f"the model made {run.invalid} invalid tool calls; "
                f"max_invalid_tool_calls is {settings.max_invalid_tool_calls}"
            )
            return
        _commit(run, settled)
        finals = [s for s in settled if s.terminal]
        if finals:
            run.output = finals[0].result.content
            return
        if HookEvent.ON_ITERATION_END not in run.has_hooks:
            continue
        decided = await run.dispatch(HookEvent.ON_ITERATION_END, tuple(run.transcript))
        if type(decided.flow) is F.Terminate:
            run.outcome = Terminated(reason=decided.flow.reason, hook=decided.hook)
            return


def _commit(run: RunState, settled: list[Settled]) -> None:
    """Append the batch's tool messages in call order; surface them."""
    turn = run.ctx.turn
    for s in settled:
        run.transcript.append(Message.tool(s.call.id, s.result.content))
        if run.emit is not None:
            if s.executed is not None:
                run.emit(ToolExecutionStart(s.executed, turn))
            run.emit(ToolCompleted(s.call, s.result, turn))


async def _ask(run: RunState, request: ModelRequest) -> ModelTurn:
    model = run.agent.model
    if run.emit is None:
        turn: ModelTurn = await model.complete(request)
        return turn
    final: ModelTurn | None = None
    async for item in model.stream(request):
        if isinstance(item, str):
            if item:
                run.emit(TextDelta(item, run.ctx.turn))
        else:
            final = item
    if final is None:
        raise SeamkitError("the model's stream ended without a turn")
    return final


def _check_request(request: ModelRequest, all_tools: Any) -> None:
    """Catch a request the model would reject, before calling it; say so when
    ``active_tools`` is what removed the tool."""
    choice = request.tool_choice
    if choice is None or choice in ("auto", "none"):
        return
    names = [t.name for t in request.tools]
    if choice == "required" and not names:
        because = " (active_tools removed every tool)" if all_tools else ""
        raise SeamkitError(
            f"tool_choice is 'required' but no tool is advertised{because}",
            hint="widen active_tools, or drop tool_choice",
        )
    if choice != "required" and choice not in names:
        because = " (active_tools removed it)" if choice in all_tools else ""
        raise SeamkitError(
            f"tool_choice names {choice!r}, which is not advertised{because}",
            hint=f"advertised tools: {', '.join(names) or 'none'}",
        )
