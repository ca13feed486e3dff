"""The drive loop: one run, from the input to `on_completion`.

`Agent.run` and `Agent.stream` both call :func:`drive` with a `RunState` made
from the agent's frozen `RunPlan`; the only differences are
``ctx.is_streaming``, whether the model is asked with ``stream`` (so text
deltas exist) and whether events reach a stream. Hooks fire in the same order
with the same arguments either way; observers see the same events either way.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from . import flow as F
from ._batch import Settled, Stop, run_batch
from ._context import HookContext
from ._dispatch import NOTHING, Dispatched, Dispatcher
from ._errors import HookError, ModelError, SeamkitError
from ._events import HookEvent
from ._manifest import Settings
from ._patch import RequestPatch
from ._toolmap import ToolMap
from ._types import (
    Cancelled,
    Completed,
    Diagnostic,
    Failed,
    MaxTurns,
    Message,
    Model,
    ModelRequest,
    ModelTurn,
    Outcome,
    RunResult,
    Terminated,
    ToolCall,
    ToolSpec,
    Usage,
)
from .stream import (
    HookFired,
    ModelCallEnded,
    ModelCallStarted,
    ObservedEvent,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolCallEmitted,
    ToolCompleted,
    TurnFinished,
)

__all__ = ["Emit", "RunPlan", "RunState", "drive", "to_the_end"]

log = logging.getLogger("seamkit.run")

T = TypeVar("T")

Emit = Callable[[ObservedEvent], None]


@dataclass(frozen=True, slots=True)
class RunPlan:
    """What an agent hands the drive loop: everything a run reads and nothing
    it changes. An agent replaces its plan atomically (new tools between
    runs); a run keeps the plan it started with."""

    name: str
    model: Model
    preamble: str | None
    tools: ToolMap
    specs: tuple[ToolSpec, ...]
    dispatcher: Dispatcher
    hooked: frozenset[HookEvent]
    settings: Settings
    clock: Callable[[], datetime]
    agent: object
    """What a tool's ``action_agent`` parameter receives."""
    model_spec: str = ""
    """The model as ``"<provider>:<name>"``, for observers."""


class RunState:
    """Everything one run changes: the transcript, usage, counters, outcome."""

    __slots__ = (
        "ctx",
        "defaults",
        "emit",
        "invalid",
        "outcome",
        "output",
        "plan",
        "session",
        "transcript",
        "usage",
    )

    def __init__(
        self,
        plan: RunPlan,
        ctx: HookContext,
        messages: list[Message],
        emit: Emit | None,
        session: str | None = None,
        defaults: RequestPatch | None = None,
    ) -> None:
        self.plan = plan
        self.defaults = defaults
        self.ctx = ctx
        self.emit = emit
        self.session = session
        self.transcript = messages
        self.usage = Usage()
        self.invalid = 0
        self.outcome: Outcome = Completed()
        self.output: str | None = None

    def baseline(self) -> ModelRequest:
        """The request every model call of this turn starts from: the
        agent's, with the run's ``defaults`` patch applied."""
        request = ModelRequest.model_construct(
            messages=tuple(self.transcript),
            preamble=self.plan.preamble,
            extra_context=(),
            tools=self.plan.specs,
            tool_choice=None,
            temperature=None,
            max_tokens=None,
            additional_params={},
        )
        return request if self.defaults is None else self.defaults.apply(request)

    async def dispatch(self, event: HookEvent, *args: Any) -> Dispatched:
        """Run ``event``'s hooks (nothing when it has none); report `HookFired`."""
        if event not in self.plan.hooked:
            return NOTHING
        dispatcher = self.plan.dispatcher
        if self.emit is None:
            return await dispatcher.dispatch(event, self.ctx, *args)
        started = time.perf_counter()
        decided = await dispatcher.dispatch(event, self.ctx, *args)
        self.emit(
            HookFired(
                event.value,
                tuple(r.name for r in dispatcher.hooks_at(event)),
                type(decided.flow).__name__,
                decided.hook,
                self.ctx.turn,
                time.perf_counter() - started,
            )
        )
        return decided

    def redact(self, text: str) -> str:
        """``text`` with every secret of the run masked (``ctx.redactor``)."""
        return self.ctx.redactor(text)


async def drive(run: RunState) -> RunResult:
    """Run to the end; always fires ``on_completion`` and emits `RunFinished`.

    Cancellation (of the task, or by ``run_timeout_seconds``) ends the run as
    ``cancelled``; a task cancellation is re-raised after ``on_completion``.
    """
    settings = run.plan.settings
    cancelled: asyncio.CancelledError | None = None
    scope: asyncio.Timeout | None = None
    if run.emit is not None:
        run.emit(
            RunStarted(
                run.ctx.run_id,
                run.plan.name,
                run.session,
                run.ctx.is_streaming,
                run.plan.model_spec,
            )
        )
    try:
        async with asyncio.timeout(settings.run_timeout_seconds) as scope:
            await _turns(run)
    except asyncio.CancelledError as exc:
        run.outcome = Cancelled()
        cancelled = exc
    except HookError as exc:
        run.outcome = Failed(error=run.redact(exc.message))
    except SeamkitError as exc:
        run.outcome = Failed(error=run.redact(str(exc)))
    except Exception as exc:  # a model or plugin bug: the run fails, the caller gets a result
        if isinstance(exc, TimeoutError) and scope is not None and scope.expired():
            run.outcome = Cancelled()
            limit = settings.run_timeout_seconds
            _note(run, "run_timeout", f"the run hit run_timeout_seconds={limit}")
        else:
            text = run.redact(f"{type(exc).__name__}: {exc}")
            log.warning("run %s failed: %s", run.ctx.run_id, text)
            run.outcome = Failed(error=text)
    result = RunResult.model_construct(
        output=run.output if isinstance(run.outcome, Completed | MaxTurns) else None,
        transcript=tuple(run.transcript),
        usage=run.usage,
        diagnostics=tuple(run.ctx.diagnostics),
        outcome=run.outcome,
    )
    # on_completion runs to its end even when the run is cancelled meanwhile
    # (a stream closed early, say); the cancellation is re-raised afterwards.
    _, late = await to_the_end(run.dispatch(HookEvent.ON_COMPLETION, result))
    cancelled = cancelled or late
    if run.emit is not None:
        run.emit(RunFinished(result))
    if cancelled is not None:
        raise cancelled
    return result


async def to_the_end(work: Awaitable[T]) -> tuple[T, asyncio.CancelledError | None]:
    """Await ``work`` to its end even when the awaiting task is cancelled
    meanwhile; its result, and the cancellation that arrived (for the caller
    to re-raise once it has finished what must not be cut short)."""
    task = asyncio.ensure_future(work)
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError as exc:
            cancelled = cancelled or exc
    return task.result(), cancelled


def _note(run: RunState, code: str, message: str) -> None:
    run.ctx.diagnostics.append(Diagnostic(code=code, message=message, turn=run.ctx.turn))


async def _turns(run: RunState) -> None:
    plan = run.plan
    ctx = run.ctx
    settings = plan.settings
    decided = await run.dispatch(HookEvent.ON_REQUEST_START, tuple(run.transcript))
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
            _check_request(request, plan.tools)
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
        settled = await run_batch(
            calls,
            settings.tool_concurrency,
            ctx=ctx,
            tools=plan.tools,
            dispatch=run.dispatch,
            emit=run.emit,
            agent=plan.agent,
        )
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
        if HookEvent.ON_ITERATION_END not in plan.hooked:
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
            run.emit(ToolCompleted(s.call, s.result, turn))


async def _ask(run: RunState, request: ModelRequest) -> ModelTurn:
    model = run.plan.model
    emit = run.emit
    if emit is None:
        turn: ModelTurn = await model.complete(request)
        return turn
    emit(ModelCallStarted(request, run.ctx.turn))
    started = time.perf_counter()
    final: ModelTurn | None = None
    error: str | None = "cancelled"
    try:
        if not run.ctx.is_streaming:  # observed, not streamed: the same call as unobserved
            final = await model.complete(request)
        else:
            items = model.stream(request)
            try:
                async for item in items:
                    if isinstance(item, str):
                        if item:
                            emit(TextDelta(item, run.ctx.turn))
                    else:
                        final = item
            finally:  # a provider's stream (and its connection) closes now, not at GC
                close = getattr(items, "aclose", None)
                if close is not None:
                    await close()
            if final is None:
                raise ModelError("the model's stream ended without a turn")
        error = None
        return final
    except Exception as exc:
        error = run.redact(f"{type(exc).__name__}: {exc}")
        raise
    finally:
        emit(ModelCallEnded(run.ctx.turn, final, error, time.perf_counter() - started))


def _check_request(request: ModelRequest, all_tools: ToolMap) -> None:
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
