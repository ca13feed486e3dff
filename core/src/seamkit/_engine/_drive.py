"""The drive loop: one run, from the input to `on_completion`.

`Agent.run` and `Agent.stream` both call :func:`drive` with a `RunState` made
from the agent's frozen `RunPlan`; the only differences are
``ctx.is_streaming``, whether the model is asked with ``stream`` (so text
deltas exist) and whether events reach a stream. Hooks fire in the same order
with the same arguments either way, but ``on_text_delta``, which sees the
stream's pieces (and, in a run that does not stream, the whole text once);
observers see the same events either way.

Whatever happens, a run ends with an outcome and a transcript that holds the
result of every tool that ran (each tool message answering one call id):

- a model turn is checked before it is accepted: anything but an assistant
  `ModelTurn` fails the run (a `ModelError`); a tool call with an empty id, or
  an id already used in the turn, gets a fresh one (``call_`` and 24 random
  hex digits, noted as ``tool_call_id_assigned``), so that every tool message
  answers exactly one call;
- the tool results of a batch are committed before the run looks at how it
  ended: a hook stopping it, ``max_invalid_tool_calls``, a cancellation or an
  interrupt never drops a result that exists;
- ``on_completion`` runs within ``completion_timeout_seconds``; the first
  cancellation of the run lets it finish, a second one cuts it short;
- a hook raising KeyboardInterrupt or SystemExit ends the run as
  ``cancelled``; on_completion still fires, and the exception is re-raised;
- every diagnostic and the outcome's text go through the run's redactor;
- the model's text and tool-call arguments leave (a `TextDelta`, the
  transcript, the output) only as the text guards released them: the run's
  redactor when it has secrets, then the ``on_text_delta`` hooks
  (`seamkit._engine._release`); a guard's ``Terminate`` commits what the
  stream showed of the turn, and nothing more;
- calls that wait for approval end the run ``suspended`` once the rest of
  their batch settled; a continued run (decisions, a journal) starts with the
  open calls of its last turn (`Resume`) instead of ``on_request_start``;
- with a journal, a model turn is recorded as soon as it is accepted, before
  any of its calls runs (`seamkit._engine._journaling`);
- a run with a declared output ends ``completed`` only with an answer that
  was validated and passed ``on_output``; a failed answer is told to the
  model, within the output's ``retries`` (`seamkit._engine._structured`).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import JsonValue

from .. import flow as F
from .._approval import PendingCall
from .._config import Settings
from .._context import HookContext
from .._errors import HookError, ModelError, SeamkitError
from .._events import HookEvent
from .._flowcheck import message_problem
from .._partial import Snapshot
from .._patch import RequestPatch
from .._toolmap import ToolMap
from .._types import (
    Cancelled,
    Completed,
    Deferred,
    Diagnostic,
    Failed,
    MaxTurns,
    Message,
    MessageToolCall,
    Model,
    ModelRequest,
    ModelTurn,
    Outcome,
    RunResult,
    Suspended,
    Terminated,
    ToolArgumentsDelta,
    ToolCall,
    ToolSpec,
    Usage,
)
from ..stream import (
    STREAMED,
    Event,
    HookFired,
    JournalReplayed,
    ModelCallEnded,
    ModelCallStarted,
    ObservedEvent,
    OutputDelta,
    OutputRetry,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolCallEmitted,
    ToolCompleted,
    TurnFinished,
)
from ._batch import Settled, Stop, run_batch
from ._dispatch import NOTHING, Dispatched, Dispatcher, Observer
from ._executor import RunExecutor, TextStop
from ._journaling import RunJournal
from ._lifecycle import INTERRUPTS, Interrupt, Lifecycle, Phase
from ._release import TextRelease, TextStopped
from ._resume import Resume
from ._structured import Answer, Structured, Verdict, answer_of, conclude

__all__ = ["Emit", "RunPlan", "RunState", "ask_here", "drive", "emitter"]

log = logging.getLogger("seamkit.run")

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
    effectful: bool = False
    """Whether some tool has effects (what a session's journal records)."""


class RunState:
    """Everything one run changes: the transcript, usage, counters, outcome."""

    __slots__ = (
        "client",
        "ctx",
        "defaults",
        "deferred",
        "emit",
        "executor",
        "held",
        "invalid",
        "journal",
        "life",
        "outcome",
        "output",
        "pending",
        "plan",
        "resume",
        "session",
        "structured",
        "text",
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
        journal: RunJournal | None = None,
        resume: Resume | None = None,
        structured: Structured | None = None,
        client: tuple[ToolSpec, ...] = (),
        executor: RunExecutor | None = None,
    ) -> None:
        self.plan = plan
        self.executor = executor
        """Where the run reads the time, makes ids and does its I/O when it
        runs elsewhere (`seamkit.plugins.RunExecutor`); ``None``: here."""
        self.defaults = defaults
        self.ctx = ctx
        self.emit = emit
        self.session = session
        self.transcript = messages
        self.usage = Usage()
        self.invalid = 0
        self.outcome: Outcome = Completed()
        self.output: object = None
        """The run's output: the final text, or the accepted value of a
        declared output."""
        self.text: str | None = None
        """The model's final text."""
        self.structured = structured
        """The run's declared output (``None``: the output is text)."""
        self.pending: list[Settled] = []
        """The current batch's settled calls, not yet in the transcript."""
        self.held: list[PendingCall] = []
        """The calls that wait for a decision (the run ends ``suspended``)."""
        self.client = client
        """The run's client tools: advertised beside the app's, never run here."""
        self.deferred: list[ToolCall] = []
        """The calls handed back to the client (the run ends ``deferred``)."""
        self.journal = journal
        """Where the run records its turns and effects (a session whose store
        keeps a journal, and tools with effects); ``None`` otherwise."""
        self.resume = resume
        """What a continued run (decisions, a journal) starts from."""
        self.life = Lifecycle(ctx.run_id)
        """Where the run is as far as stopping it goes (`seamkit._engine._lifecycle`)."""

    def baseline(self) -> ModelRequest:
        """The request every model call of this turn starts from: the
        agent's, with the run's ``defaults`` patch applied."""
        request = ModelRequest.model_construct(
            messages=tuple(self.transcript),
            preamble=self.plan.preamble,
            extra_context=(),
            tools=self.plan.specs + self.client if self.client else self.plan.specs,
            tool_choice=None,
            temperature=None,
            max_tokens=None,
            additional_params={},
        )
        if self.structured is not None:  # what is asked; `Structured.request` asks it
            request = request.model_copy(update={"output": self.structured.spec})
        return request if self.defaults is None else self.defaults.apply(request)

    async def dispatch(self, event: HookEvent, *args: Any) -> Dispatched:
        """Run ``event``'s hooks (nothing when it has none); report `HookFired`."""
        if event not in self.plan.hooked:
            return NOTHING
        dispatcher = self.plan.dispatcher
        executor = self.executor
        if executor is not None:
            if self.emit is None:
                return await executor.dispatch(event, self.ctx, args)
        elif self.emit is None:
            return await dispatcher.dispatch(event, self.ctx, *args)
        started = time.perf_counter()
        decided = await (
            dispatcher.dispatch(event, self.ctx, *args)
            if executor is None
            else executor.dispatch(event, self.ctx, args)
        )
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


def emitter(
    ctx: HookContext,
    stream: Callable[[Event], None] | None,
    observers: Sequence[Observer],
    executor: RunExecutor | None = None,
) -> Emit | None:
    """One callable for the run's events: the stream gets the types it yields,
    every observer gets every event (but those a durable runner replays:
    ``executor.live()``). ``None`` when nobody listens, so an unobserved,
    unstreamed run makes no event objects at all."""
    if not observers:
        if stream is None:
            return None
        return lambda event: stream(event) if type(event) in STREAMED else None  # type: ignore[arg-type]

    def emit(event: ObservedEvent) -> None:
        if stream is not None and type(event) in STREAMED:
            stream(event)  # type: ignore[arg-type]
        if executor is not None and not executor.live():
            return  # observed when it happened
        for observer in observers:
            try:
                observer(ctx, event)
            except Exception as exc:
                text = ctx.redactor(f"{type(exc).__name__}: {exc}")
                log.warning("run observer %r failed: %s", observer, text)

    return emit


async def drive(run: RunState) -> RunResult:
    """Run to the end: the turns, then ``on_completion``; emits `RunFinished`.

    Never raises a stop: a cancellation (of the task) or a KeyboardInterrupt
    or SystemExit (from a hook, a tool, the model) ends the run as
    ``cancelled`` and is kept in ``run.life``, whose end (`Lifecycle.end`, or
    `Lifecycle.saved` after a session's save) raises it. Anything else ends
    in an outcome too.
    """
    settings = run.plan.settings
    life = run.life
    scope: asyncio.Timeout | None = None
    try:
        if run.emit is not None:  # (an observer may raise KeyboardInterrupt too)
            structured = run.structured
            run.emit(
                RunStarted(
                    run.ctx.run_id,
                    run.plan.name,
                    run.session,
                    run.ctx.is_streaming,
                    run.plan.model_spec,
                    None if structured is None else structured.output.type_name,
                    None if structured is None else structured.mode,
                )
            )
        async with asyncio.timeout(settings.run_timeout_seconds) as scope:
            await _turns(run)
    except asyncio.CancelledError as exc:
        run.outcome = Cancelled()
        life.cancel(exc)
    except INTERRUPTS as exc:
        run.outcome = Cancelled()
        life.interrupt(exc)
        _note(run, "interrupted", f"the run was interrupted by {_name(exc)}")
    except HookError as exc:
        run.outcome = Failed(error=exc.message)
        life.finish()
    except SeamkitError as exc:
        run.outcome = Failed(error=str(exc))
        life.finish()
    except Exception as exc:  # a model or plugin bug: the run fails, the caller gets a result
        if isinstance(exc, TimeoutError) and scope is not None and scope.expired():
            run.outcome = Cancelled()
            life.time_out()
            limit = settings.run_timeout_seconds
            _note(run, "run_timeout", f"the run hit run_timeout_seconds={limit}")
        else:
            text = run.redact(f"{type(exc).__name__}: {exc}")
            log.warning("run %s failed: %s", run.ctx.run_id, text)
            run.outcome = Failed(error=text)
            life.finish()
    else:
        life.finish()
    _commit(run)  # the results a batch cut short had settled
    run.outcome = _redacted(run, run.outcome)
    result = _result(run)
    await _complete(run, result)
    if len(run.ctx.diagnostics) != len(result.diagnostics):
        result = _result(run)  # with what on_completion noted
    if run.emit is not None:
        run.emit(RunFinished(result))
    return result


def _name(exc: BaseException) -> str:
    return f"SystemExit({exc.code!r})" if isinstance(exc, SystemExit) else type(exc).__name__


def _result(run: RunState) -> RunResult:
    """The run's result as it stands, its diagnostics masked."""
    redact = run.ctx.redactor
    diagnostics = tuple(
        d if not redact else d.model_copy(update={"message": redact(d.message)})
        for d in run.ctx.diagnostics
    )
    ended = Completed if run.structured is not None else Completed | MaxTurns
    return RunResult.model_construct(
        output=run.output if isinstance(run.outcome, ended) else None,
        text=run.text,
        transcript=tuple(run.transcript),
        usage=run.usage,
        diagnostics=diagnostics,
        outcome=run.outcome,
    )


def _redacted(run: RunState, outcome: Outcome) -> Outcome:
    """``outcome`` with its text (an error, a reason) masked: whichever
    component wrote it, it may hold a secret."""
    if not run.ctx.redactor:
        return outcome
    if isinstance(outcome, Failed):
        return Failed(error=run.redact(outcome.error))
    if isinstance(outcome, Terminated):
        return Terminated(reason=run.redact(outcome.reason), hook=outcome.hook, event=outcome.event)
    return outcome


async def _complete(run: RunState, result: RunResult) -> None:
    """Fire ``on_completion`` within ``completion_timeout_seconds``, moving
    ``run.life`` from ``completing`` (or ``completing_cancelled``) to
    ``reported``.

    The hooks run in a task of their own: the first cancellation of the run
    (a stream closed early, the first Ctrl-C) lets them finish, within the
    deadline; the deadline or a second cancellation cuts them (``cut``), and
    the run waits at most `CANCEL_GRACE_SECONDS` more for them to clean up.
    """
    life = run.life
    if HookEvent.ON_COMPLETION not in run.plan.hooked:
        # Nothing to run or cut short; still a task's step, as it always was:
        # what waits on a cancelled run sees it end as it used to.
        await life.shielded(_completion(run, result))
        life.complete()
        return
    task = asyncio.ensure_future(_completion(run, result))
    limit = run.plan.settings.completion_timeout_seconds
    loop = asyncio.get_running_loop()
    deadline = None if limit is None else loop.time() + limit
    cut: str | None = None
    while not task.done():
        left = None if deadline is None else max(0.0, deadline - loop.time())
        try:
            await asyncio.wait((task,), timeout=left)
        except asyncio.CancelledError as exc:
            if life.cancel(exc) is Phase.CUT:
                cut = "the run was cancelled a second time"
                break
            continue  # the first: on_completion goes on
        if not task.done():
            life.deadline()
            cut = f"completion_timeout_seconds={limit:g} passed"
            break
    if cut is not None:
        task.cancel()
        await life.grace(task)
        message = f"on_completion hooks were cancelled: {cut}"
        log.warning("run %s: %s", run.ctx.run_id, message)
        run.ctx.diagnostics.append(
            Diagnostic(
                code="completion_cut",
                message=message,
                event=HookEvent.ON_COMPLETION.value,
                turn=run.ctx.turn,
            )
        )
    if not task.done():
        log.warning(
            "run %s: an on_completion hook ignored its cancellation; it is left running",
            run.ctx.run_id,
        )
        life.abandon()
        return
    interrupt = None if task.cancelled() else task.result()
    if interrupt is not None:
        life.interrupt(interrupt)
    life.complete()


async def _completion(run: RunState, result: RunResult) -> Interrupt | None:
    """The on_completion hooks (in their own task); the KeyboardInterrupt or
    SystemExit one raised, returned: raised in a task, it would stop the
    event loop before the run could report and save."""
    try:
        await run.dispatch(HookEvent.ON_COMPLETION, result)
    except INTERRUPTS as exc:
        return exc
    except Exception as exc:  # hooks' failures are handled inside: this is a bug
        text = run.redact(f"{type(exc).__name__}: {exc}")
        log.warning("run %s: on_completion failed: %s", run.ctx.run_id, text)
    return None


def _note(run: RunState, code: str, message: str) -> None:
    run.ctx.diagnostics.append(Diagnostic(code=code, message=message, turn=run.ctx.turn))


async def _turns(run: RunState) -> None:
    plan = run.plan
    ctx = run.ctx
    settings = plan.settings
    if run.resume is None:
        decided = await run.dispatch(HookEvent.ON_REQUEST_START, tuple(run.transcript))
        if type(decided.flow) is F.Terminate:
            run.outcome = Terminated(
                reason=decided.flow.reason,
                hook=decided.hook,
                event=HookEvent.ON_REQUEST_START.value,
            )
            return
        if type(decided.flow) is F.RewriteMessages:
            run.transcript = list(decided.flow.messages)
        if run.journal is not None:
            run.journal.begin(run.transcript)
    elif await _resumed(run, run.resume):
        return
    while True:
        if ctx.turn >= settings.max_turns:
            run.outcome = MaxTurns()
            _note(run, "max_turns", f"stopped after max_turns={settings.max_turns} turns")
            return
        ctx.turn += 1
        request = run.baseline()
        decided = await run.dispatch(HookEvent.ON_PRE_LLM, request)
        flow = decided.flow
        if type(flow) is F.Terminate:
            run.outcome = Terminated(
                reason=flow.reason, hook=decided.hook, event=HookEvent.ON_PRE_LLM.value
            )
            return
        if type(flow) is F.PatchRequest:
            request = flow.patch.apply(request)
            _check_request(request, plan.tools)
        if run.structured is not None:  # after the patches: no hook takes it away
            request = run.structured.request(request)
        try:
            turn = _accept(run, await _ask(run, request))
        except TextStopped as stop:
            _dropped(run, ())  # a guard stopped the turn its partials came from
            if stop.released:  # what the stream showed of the turn, and nothing more
                run.transcript.append(Message.assistant(stop.released))
            run.outcome = Terminated(
                reason=stop.reason, hook=stop.hook, event=HookEvent.ON_TEXT_DELTA.value
            )
            return
        message = turn.message
        run.transcript.append(message)
        if run.journal is not None:  # received: never asked again, whatever happens next
            await run.journal.turn(run.transcript, turn.usage)
        depth = settings.max_argument_depth
        calls = [
            ToolCall.from_message(c, i, max_depth=depth)
            for i, c in enumerate(message.tool_calls or ())
        ]
        if run.emit is not None:
            for call in calls:
                run.emit(ToolCallEmitted(call, ctx.turn))
            run.emit(TurnFinished(turn, ctx.turn))
        run.text = message.text
        if run.structured is None:
            run.output = message.text
        decided = await run.dispatch(HookEvent.ON_MODEL_TURN_FINISHED, turn)
        if type(decided.flow) is F.Terminate:
            run.outcome = Terminated(
                reason=decided.flow.reason,
                hook=decided.hook,
                event=HookEvent.ON_MODEL_TURN_FINISHED.value,
            )
            return
        if run.structured is not None:
            answer = answer_of(run.structured, turn, calls)
            if answer is not None:
                if await _answered(run, answer):
                    return
                continue
            _dropped(run, ())  # the partials became tool calls
        if not calls:
            return
        if await _batch(run, calls):
            return
        if HookEvent.ON_ITERATION_END not in plan.hooked:
            continue
        decided = await run.dispatch(HookEvent.ON_ITERATION_END, tuple(run.transcript))
        if type(decided.flow) is F.Terminate:
            run.outcome = Terminated(
                reason=decided.flow.reason,
                hook=decided.hook,
                event=HookEvent.ON_ITERATION_END.value,
            )
            return


async def _batch(run: RunState, calls: list[ToolCall], resume: Resume | None = None) -> bool:
    """Run one turn's calls and commit their results; whether that ends the
    run (a stop, calls that wait for approval, too many invalid calls, a
    terminal tool's result)."""
    settings = run.plan.settings
    stop = await run_batch(
        calls,
        settings.tool_concurrency,
        ctx=run.ctx,
        tools=run.plan.tools,
        dispatch=run.dispatch,
        settled=run.pending,
        held=run.held,
        emit=run.emit,
        agent=run.plan.agent,
        journal=run.journal,
        resume=resume,
        executor=run.executor,
        client=frozenset(spec.name for spec in run.client),
        deferred=run.deferred,
    )
    ended = _settle(run, stop)
    if ended and run.structured is not None and type(run.outcome) is Completed:
        # A terminal tool's result is the answer; the model cannot redo it.
        return await _answered(run, Answer(str(run.output)), can_retry=False)
    return ended


def _settle(run: RunState, stop: Stop | None) -> bool:
    """Commit a batch's results and say whether the run ends here."""
    settings = run.plan.settings
    settled = _commit(run)  # first: however the run goes on, no result is lost
    if stop is not None:
        run.held.clear()  # a stop ends the run: nothing waits for a decision
        run.deferred.clear()  # nor for the client
        run.outcome = stop.outcome
        return True
    run.invalid += sum(1 for s in settled if s.invalid)
    if run.held:
        run.outcome = Suspended(pending=tuple(sorted(run.held, key=_order(run))))
        run.output = None
        return True
    if run.invalid > settings.max_invalid_tool_calls:
        run.outcome = Failed(
            error=f"the model made {run.invalid} invalid tool calls; "
            f"max_invalid_tool_calls is {settings.max_invalid_tool_calls}"
        )
        return True
    finals = [s for s in settled if s.terminal]
    if finals:
        run.output = finals[0].result.content
        return True
    if run.deferred:  # the app's calls ran: the client's go back to it
        run.outcome = Deferred(calls=tuple(sorted(run.deferred, key=lambda c: c.index)))
        run.output = None
        return True
    return False


async def _answered(run: RunState, answer: Answer, *, can_retry: bool = True) -> bool:
    """Settle an answer of a run with a declared output; whether the run
    ends (accepted, failed, stopped) rather than asking the model again."""
    structured = run.structured
    assert structured is not None
    verdict: Verdict = await conclude(
        structured,
        answer,
        dispatch=run.dispatch,
        redact=run.redact,
        can_retry=can_retry,
        hooked=HookEvent.ON_OUTPUT in run.plan.hooked,
    )
    run.transcript.extend(verdict.messages)
    if verdict.errors:  # an answer that failed: the model answers again, or the run fails
        _note(run, "output_retry", "the answer was not accepted: " + "; ".join(verdict.errors))
    if verdict.again or verdict.outcome is not None:  # its partials are not the output
        _dropped(run, verdict.errors, always=bool(verdict.errors))
    if verdict.outcome is not None:
        run.outcome = verdict.outcome
        run.output = None
        return True
    if verdict.again:
        return False
    run.output = verdict.value
    return True


def _dropped(run: RunState, errors: tuple[str, ...], *, always: bool = False) -> None:
    """Tell a stream that the turn's partials are not the answer."""
    structured = run.structured
    if run.emit is None or structured is None or not (always or structured.shown):
        return
    run.emit(OutputRetry(errors, run.ctx.turn))


def _order(run: RunState) -> Callable[[PendingCall], int]:
    """Pending calls in the order the model made them."""
    calls = next(
        (m.tool_calls or () for m in reversed(run.transcript) if m.role == "assistant"), ()
    )
    index = {call.id: i for i, call in enumerate(calls)}
    return lambda pending: index.get(pending.call_id, len(index))


def _turns_so_far(transcript: list[Message]) -> int:
    """The model turns of the request the transcript ends in: its assistant
    messages after the last user message."""
    turns = 0
    for message in reversed(transcript):
        if message.from_user:
            break
        turns += message.role == "assistant"
    return turns


async def _resumed(run: RunState, resume: Resume) -> bool:
    """Continue a run: first the calls its last turn left open (with their
    decisions and what the journal knows of them); whether that ends it."""
    ctx = run.ctx
    ctx.turn = _turns_so_far(run.transcript)  # a continued request keeps its turn numbers
    run.usage = run.usage + resume.usage
    if resume.replayed and run.emit is not None:
        recovered = sum(1 for r in resume.records.values() if r.finished is not None)
        run.emit(JournalReplayed(resume.turns, recovered))
    if resume.waiting:
        run.outcome = Suspended(pending=tuple(resume.pending.values()))
        return True
    last = run.transcript[-1] if run.transcript else None
    structured = run.structured
    if structured is not None and last is not None and last.role == "assistant":
        # The recorded answer (or output call) is settled as it would have been.
        answer = answer_of(structured, ModelTurn(message=last), resume.calls)
        if answer is not None:
            run.text = last.text
            return await _answered(run, answer)
    if not resume.calls:
        if last is not None and last.role == "assistant" and resume.replayed:
            run.text = last.text
            if structured is None:
                run.output = last.text  # the answer was recorded; the run only missed its save
            return True
        return False
    run.output = None
    return await _batch(run, resume.calls, resume)


def _commit(run: RunState) -> list[Settled]:
    """Append the settled calls' tool messages in call order and surface
    them; the calls committed."""
    settled = sorted(run.pending, key=lambda s: s.call.index)
    run.pending.clear()
    turn = run.ctx.turn
    for s in settled:
        run.transcript.append(Message.tool(s.call.id, s.result.content, is_error=s.result.is_error))
        if run.emit is not None:
            run.emit(ToolCompleted(s.call, s.result, turn))
    return settled


def _accept(run: RunState, turn: object) -> ModelTurn:
    """The model's turn as the run accepts it: an assistant `ModelTurn` whose
    tool calls each have an id of their own. Anything else is a `ModelError`
    (the run fails; nothing of the turn enters the transcript). Its usage is
    counted either way: the call was made."""
    if not isinstance(turn, ModelTurn):
        raise ModelError(
            f"the model returned {type(turn).__name__}, not a ModelTurn",
            hint="a model's complete() returns, and its stream() ends with, a seamkit.ModelTurn",
        )
    if isinstance(turn.usage, Usage):
        run.usage = run.usage + turn.usage
    message = turn.message
    problem = message_problem(message, "its message")
    if problem is not None:
        raise ModelError(f"the model's turn is malformed: {problem}")
    if message.role != "assistant":
        raise ModelError(
            f"the model answered with a {message.role!r} message; a model turn is an "
            f"assistant message",
            hint="this is a bug in the model provider (or a script that plays another role)",
        )
    calls = message.tool_calls
    if not calls:
        return turn
    ids = [call.id for call in calls]
    if all(ids) and len(set(ids)) == len(ids):
        return turn  # the usual case
    taken = set(ids)
    seen: set[str] = set()
    fixed: list[MessageToolCall] = []
    for index, call in enumerate(calls):
        if call.id and call.id not in seen:
            seen.add(call.id)
            fixed.append(call)
            continue
        fresh = _fresh_id(taken, run.executor)
        taken.add(fresh)
        fixed.append(call.model_copy(update={"id": fresh}))
        why = f"the id {call.id!r} of an earlier call" if call.id else "no id"
        _note(
            run,
            "tool_call_id_assigned",
            f"the model's tool call #{index} ({call.function.name!r}) had {why}; "
            f"it was given the id {fresh!r}",
        )
    fixed_message = message.model_copy(update={"tool_calls": tuple(fixed)})
    return turn.model_copy(update={"message": fixed_message})


def _fresh_id(taken: set[str], executor: RunExecutor | None) -> str:
    """A tool-call id no call of the turn has: ``call_`` and 24 random hex
    digits (29 characters; providers accept up to 40)."""
    while True:
        hexes = uuid.uuid4().hex if executor is None else executor.new_id()
        fresh = f"call_{hexes[:24]}"
        if fresh not in taken:
            return fresh


def _release(run: RunState) -> TextRelease | None:
    """The guards of this turn's text: ``None`` when the run has neither
    secrets nor ``on_text_delta`` hooks (nothing is buffered then)."""
    redactor = run.ctx.redactor.secrets  # patterns are held by the guards that name them
    hooked = HookEvent.ON_TEXT_DELTA in run.plan.hooked
    if not redactor and not hooked:
        return None
    return TextRelease(redactor or None, run.dispatch if hooked else None)


async def _ask(run: RunState, request: ModelRequest) -> object:
    """Ask the model; its turn, its text and tool calls as the text guards
    released them (a `TextStopped` when one ends the run)."""
    executor = run.executor
    if executor is None:
        return await ask_here(run, request)
    asked = await executor.ask(request, run.ctx)
    if isinstance(asked, TextStop):
        raise TextStopped(asked.reason, asked.hook, asked.released)
    if run.structured is not None:
        run.structured.begin_turn()
    return asked


async def ask_here(run: RunState, request: ModelRequest) -> object:
    """`_ask` in this process: the model's turn, streamed to the run's
    events, through the text guards."""
    model = run.plan.model
    emit = run.emit
    release = _release(run)
    structured = run.structured
    if structured is not None:
        structured.begin_turn()
    if emit is None:
        turn: ModelTurn = await model.complete(request)
        if release is None or not isinstance(turn, ModelTurn):
            return turn
        return await release.turn(turn, None)
    emit(ModelCallStarted(request, run.ctx.turn))
    started = time.perf_counter()
    final: object = None
    error: str | None = "cancelled"
    try:
        streamed: str | None = None
        if not run.ctx.is_streaming:  # observed, not streamed: the same call as unobserved
            final = await model.complete(request)
        else:
            streamed = ""
            items = model.stream(request)
            try:
                async for item in items:
                    if isinstance(item, ToolArgumentsDelta):
                        # Fragments are read only when nothing guards them: a
                        # guard sees a call's arguments whole, at the turn's end.
                        if structured is not None and release is None:
                            _partial(run, structured.arguments(item))
                        continue
                    if not isinstance(item, str):
                        final = item
                    elif not item:
                        continue
                    elif release is None:
                        emit(TextDelta(item, run.ctx.turn))
                        if structured is not None:
                            _partial(run, structured.text(item))
                    else:
                        streamed += item
                        out = await release.feed(item)
                        if out:
                            emit(TextDelta(out, run.ctx.turn))
                            if structured is not None:
                                _partial(run, structured.text(out))
            finally:  # a provider's stream (and its connection) closes now, not at GC
                close = getattr(items, "aclose", None)
                if close is not None:
                    await close()
            if final is None:
                raise ModelError("the model's stream ended without a turn")
        if release is not None and isinstance(final, ModelTurn):
            final = await _released(run, release, final, streamed)
        if structured is not None and streamed is not None:
            _partial(run, structured.finish())  # the answer is whole now
        error = None
        return final
    except TextStopped:
        final, error = None, None  # a guard's stop, not the model's error
        raise
    except Exception as exc:
        error = run.redact(f"{type(exc).__name__}: {exc}")
        raise
    finally:
        ended = final if isinstance(final, ModelTurn) else None
        emit(ModelCallEnded(run.ctx.turn, ended, error, time.perf_counter() - started))


async def _released(
    run: RunState, release: TextRelease, turn: ModelTurn, streamed: str | None
) -> ModelTurn:
    """The turn as its guards released it; in a stream, what they held
    until its end leaves now."""
    assert run.emit is not None
    before = len(release.released)
    try:
        return await release.turn(turn, streamed)
    finally:
        rest = release.released[before:] if streamed is not None else ""
        if rest:
            run.emit(TextDelta(rest, run.ctx.turn))
            if run.structured is not None:
                _partial(run, run.structured.text(rest))


def _partial(run: RunState, value: JsonValue | Snapshot | None) -> None:
    """Emit the answer's new partial value (or its `Snapshot`), if there is one."""
    if value is not None and run.emit is not None:
        run.emit(OutputDelta(value, run.ctx.turn))


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
