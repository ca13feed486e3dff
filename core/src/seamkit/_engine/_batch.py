"""One turn's tool calls, run as an atomic batch.

Each call goes: validation (the invalid-call path when it fails), then
``on_pre_tool_use``, the tool body, ``on_post_tool_use``. Nothing is committed
or surfaced here: each settled call goes into the drive loop's ``settled``
list as it settles (a call whose tool ran goes there the moment the tool
returned, so that its result is kept whatever happens next: a hook stopping
the run, a cancellation, an interrupt), and the batch returns the stop that
ended it, if any. A stop (Terminate, Fail, a fail-closed hook error) is
fail-fast: sequentially the remaining calls never start; concurrently no new
call starts, calls in flight are drained, and the stop of the lowest call
index wins. A KeyboardInterrupt or SystemExit in a call stops the batch the
same way and is re-raised once the calls in flight are drained.

A call that needs approval (a hook's ``RequireApproval``, the tool's own
rule) and has no approval for exactly its arguments is held, not run; a
continued run's calls come with their decisions and what the journal knows
of them: a recorded result is committed (after ``on_post_tool_use``), a
``once`` call cut short is in doubt, an ``idempotent`` one runs again with its
first key. A call with effects is journaled before its body runs and its
result as soon as its ``on_post_tool_use`` hooks passed it (withheld when
one stopped the run: no table holds what a guard refused).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic_core import to_json

from .. import flow as F
from .._approval import Edit, PendingCall, Reject, arguments_digest
from .._context import CallInfo, HookContext
from .._errors import HookError, InvalidToolCall
from .._events import HookEvent
from .._secret import secret_json, secret_texts
from .._tool import Tool
from .._toolmap import ToolMap
from .._types import Diagnostic, Failed, Outcome, Terminated, ToolCall, ToolResult
from ..stream import (
    CallDecided,
    CallInDoubt,
    CallSuspended,
    ObservedEvent,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolOutputDelta,
)
from ._dispatch import Dispatched
from ._executor import CutOff, RunExecutor
from ._journaling import RunJournal, plain_arguments, stopped_outcome
from ._lifecycle import INTERRUPTS, Interrupt
from ._resume import Record, Resume

__all__ = ["IN_DOUBT", "WITHHELD", "Dispatch", "Settled", "Stop", "run_batch"]

IN_DOUBT = (
    "Error: InDoubt: the process stopped while {tool} was running; it may or may not have acted"
)
"""What the model is told of a ``once`` call a crash cut short."""

WITHHELD = "Result withheld by {hook}: {reason}"
"""What is kept of a result a hook stopped at ``on_post_tool_use`` (an
error result): the model, the transcript, the session and the stream see
this, never the content."""

Dispatch = Callable[..., Awaitable[Dispatched]]
"""``await dispatch(event, *args)``: the run's hooks at one event."""

Ended = Callable[[ToolResult, bool], None]
"""Reports an observed call's end: its result as its ``on_post_tool_use``
hooks left it, and whether they left it unchanged."""

_PRE = HookEvent.ON_PRE_TOOL_USE
_POST = HookEvent.ON_POST_TOOL_USE
_INVALID = HookEvent.ON_INVALID_TOOL_CALL


@dataclass(slots=True)
class Settled:
    """One call's outcome: its result, the effective call when the body ran
    (``None`` for a skipped or invalid call), and whether it ends the run.
    ``call.index`` is its position in the turn (the commit order)."""

    call: ToolCall
    result: ToolResult
    executed: ToolCall | None
    terminal: bool = False
    invalid: bool = False


@dataclass(slots=True)
class Stop:
    """A call that ended the run: the outcome, at call ``index``."""

    index: int
    outcome: Outcome


class _Dropped:
    """A call that never started because a sibling stopped the batch, one
    that waits for approval (it is in the batch's ``held``), or one handed
    back to the client (in its ``deferred``)."""


_DROPPED = _Dropped()


class Batch:
    """Runs one turn's calls; built per turn by the drive loop."""

    __slots__ = (
        "agent",
        "client",
        "ctx",
        "deferred",
        "dispatch",
        "emit",
        "executor",
        "held",
        "interrupt",
        "journal",
        "resume",
        "settled",
        "stopped",
        "tools",
    )

    def __init__(
        self,
        ctx: HookContext,
        tools: ToolMap,
        dispatch: Dispatch,
        emit: Callable[[ObservedEvent], None] | None,
        agent: object,
        settled: list[Settled],
        held: list[PendingCall],
        journal: RunJournal | None = None,
        resume: Resume | None = None,
        client: frozenset[str] = frozenset(),
        deferred: list[ToolCall] | None = None,
        executor: RunExecutor | None = None,
    ) -> None:
        self.ctx = ctx
        self.executor = executor  # (None: in process)
        self.tools = tools
        self.dispatch = dispatch  # skips events without hooks; reports HookFired
        self.emit = emit
        self.agent = agent
        self.settled = settled
        self.held = held
        """The calls that wait for approval, as they are found."""
        self.journal = journal
        self.resume = resume
        self.stopped = False
        self.interrupt: Interrupt | None = None
        self.client = client
        """The names of the run's client tools: their calls are handed back."""
        self.deferred = [] if deferred is None else deferred
        """The client's calls, as they are found (the run ends ``deferred``)."""

    async def one(self, call: ToolCall) -> Settled | Stop | _Dropped:
        """Settle one call and keep it in ``settled``; never raises except on
        cancellation or an interrupt."""
        try:
            outcome = await self._one(call)
        except HookError as exc:
            return Stop(call.index, Failed(error=str(exc.message)))
        if isinstance(outcome, Settled) and outcome.executed is None:
            self.settled.append(outcome)  # (one whose tool ran is kept already)
        return outcome

    def _redact(self, text: str, secrets: list[str]) -> str:
        """``text`` (an invalid call's explanation) with the run's secrets and
        those of arguments a hook wrote masked."""
        return self.ctx.redactor.extend(secrets)(text)

    async def _one(self, call: ToolCall) -> Settled | Stop | _Dropped:
        if call.name in self.client and call.name not in self.tools:
            return await self._client_call(call)
        record: Record | None = None
        if self.resume is not None:
            known = self._decided(call)
            if isinstance(known, Settled):
                return known
            call, record = known
            if record is not None and record.finished is not None:
                return await self._replayed(call, record)
            if record is not None and record.started:
                tool = self.tools.get(call.name)
                if tool is not None and tool.effects == "once":
                    return await self._in_doubt(call)
        tool = self.tools.get(call.name)
        values: dict[str, Any] | None = None
        error: str | None = None
        secrets: list[str] = []  # of arguments a hook wrote: model JSON holds no Secret
        if tool is None:
            error = f"unknown tool {call.name!r}"
        elif call.arguments_error is not None:
            error = f"invalid arguments for tool {call.name!r}: {call.arguments_error}"
        else:
            try:
                values = _validated(tool, call.arguments)
            except InvalidToolCall as exc:
                error = exc.message
        if error is not None:
            outcome = await self._invalid(call, self._redact(error, secrets))
            if not isinstance(outcome, ToolCall):
                return outcome
            call = outcome
            if call.name not in self.tools:  # repaired into a client's call
                return self._defer(call)
            tool = self.tools[call.name]
            secrets = secret_texts(call.arguments)
            try:
                values = _validated(tool, call.arguments)
            except InvalidToolCall as exc:
                return Settled(
                    call,
                    _error(call, f"{self._redact(exc.message, secrets)} (after repair)"),
                    None,
                    False,
                    True,
                )
        assert tool is not None and values is not None
        decided = await self.dispatch(_PRE, call)
        flow = decided.flow
        if type(flow) is F.Skip:
            return Settled(call, ToolResult(call_id=call.id, content=flow.reason), None)
        if type(flow) is F.Terminate:
            return Stop(
                call.index, Terminated(reason=flow.reason, hook=decided.hook, event=_PRE.value)
            )
        asked = flow if type(flow) is F.RequireApproval else None
        if type(flow) is F.RewriteArgs or (asked is not None and asked.arguments is not None):
            assert type(flow) is F.RewriteArgs or type(flow) is F.RequireApproval
            arguments = dict(flow.arguments or {})
            call = call.model_copy(
                update={"arguments": arguments, "raw_arguments": _json(arguments)}
            )
            secrets = secret_texts(arguments)
            try:
                values = _validated(tool, arguments)
            except InvalidToolCall as exc:
                text = self._redact(exc.message, secrets)
                return Settled(call, _error(call, f"{text} (after a hook rewrote them)"), None)
        digest: str | None = None
        if asked is not None or tool.approval.needed(values):
            digest = arguments_digest(call.name, call.arguments)
            if self.resume is None or self.resume.approved(call.id) != digest:
                self._hold(call, tool, asked, decided.hook, digest)
                return _DROPPED
        if self.stopped:
            return _DROPPED
        info: CallInfo | None = None
        journal = self.journal
        executor = self.executor
        if journal is not None and tool.effects != "none":
            # Journaled, durably, before the body runs: after a crash the
            # call is known to have started, and re-run (idempotent) only
            # with this key.
            key = record.key if record is not None and record.started else uuid.uuid4().hex
            attempt = len(record.started) + 1 if record is not None else 1
            digest = digest or arguments_digest(call.name, call.arguments)
            await journal.started(call, digest, key, attempt)
            info = CallInfo(call.id, key, attempt, tool.name)
        elif executor is not None and tool.effects != "none":
            # Elsewhere, the executor's record is the journal: the key it
            # draws is kept with the call, and each re-run (idempotent) has it.
            info = CallInfo(call.id, executor.new_id(), 1, tool.name)
        ended: Ended | None = None
        if executor is not None:
            try:
                if self.emit is None:
                    result = await executor.invoke(tool, call, self.ctx, info, None)
                else:
                    result, ended = await self._observed(
                        tool, values, call, secrets, self.emit, info
                    )
            except CutOff:
                return await self._in_doubt(call)
        elif self.emit is None:  # the hot path: nobody watches, no coroutine more
            result = await tool.invoke(
                values,
                self.ctx.action_context,
                call_id=call.id,
                secrets=secrets,
                agent=self.agent,
                redactor=self.ctx.redactor,
                call_info=info,
            )
        else:
            result, ended = await self._observed(tool, values, call, secrets, self.emit, info)
        return await self._ran(call, result, tool.terminal, journaled=info is not None, ended=ended)

    async def _ran(
        self,
        call: ToolCall,
        result: ToolResult,
        terminal: bool,
        *,
        journaled: bool = False,
        ended: Ended | None = None,
    ) -> Settled | Stop:
        """A result exists for ``call`` (the tool ran, the journal has its
        result, or a crash left it in doubt): kept, then through
        ``on_post_tool_use``; journaled (``journaled``) and observed as
        ended (``ended``) as the hooks left it.

        A hook that stops the run here (Terminate, or failing closed) stops
        the result too: what is kept is `withheld`, never the content the
        hook refused; so is a result whose hooks a cancellation cut short.
        """
        # The tool ran: a result is kept from now on, whatever the hooks
        # after it decide and whether or not the run is cancelled meanwhile.
        kept = Settled(call, result, call, terminal and not result.is_error)
        self.settled.append(kept)
        stop: Stop | None = None
        try:
            decided = await self.dispatch(_POST, call, result)
        except HookError as exc:
            kept.result = self._withheld(call, exc.hook, "the hook failed (on_error: fail)")
            stop = Stop(call.index, Failed(error=str(exc.message)))
        except BaseException:
            kept.result = self._withheld(call, None, "the run stopped before its hooks passed it")
            raise
        else:
            flow = decided.flow
            if type(flow) is F.RewriteResult:
                kept.result = flow.applied_to(result)
            elif type(flow) is F.Terminate:
                kept.result = self._withheld(call, decided.hook, flow.reason)
                stop = Stop(
                    call.index, Terminated(reason=flow.reason, hook=decided.hook, event=_POST.value)
                )
        finally:
            if ended is not None:
                ended(kept.result, kept.result is result)
        if journaled and self.journal is not None:
            await self.journal.finished(
                call.id, kept.result, None if stop is None else stop.outcome
            )
        return kept if stop is None else stop

    async def _client_call(self, call: ToolCall) -> Settled | Stop | _Dropped:
        """A call to a client tool: its result, when the client sent one,
        through ``on_post_tool_use``; else handed back (arguments that are no
        JSON object take the invalid-call path: the client gets only calls
        it can run)."""
        results = self.resume.results if self.resume is not None else {}
        given = results.get(call.id)
        if given is not None:
            return await self._ran(
                call.model_copy(update={"result_source": "client"}), given, False
            )
        if call.arguments_error is None:
            return self._defer(call)
        error = f"invalid arguments for tool {call.name!r}: {call.arguments_error}"
        outcome = await self._invalid(call, self._redact(error, []))
        if not isinstance(outcome, ToolCall):
            return outcome
        return await self._one(outcome)

    def _defer(self, call: ToolCall) -> _Dropped:
        """Hand ``call`` back to the client (it is in the batch's ``deferred``)."""
        self.deferred.append(call)
        return _DROPPED

    def _withheld(self, call: ToolCall, hook: str | None, reason: str) -> ToolResult:
        """What is kept of a result a hook stopped: never its content."""
        text = WITHHELD.format(hook=hook or "a hook", reason=self.ctx.redactor(reason))
        return ToolResult(call_id=call.id, content=text, is_error=True)

    async def _observed(
        self,
        tool: Tool,
        values: dict[str, Any],
        call: ToolCall,
        secrets: list[str],
        emit: Callable[[ObservedEvent], None],
        info: CallInfo | None,
    ) -> tuple[ToolResult, Ended]:
        """Invoke the tool after its live start event, its chunks surfacing
        as they come (or, for a tool that does not ``stream_output``, once its
        result passed its hooks unchanged); the result, and what reports its
        end once the hooks are done with it (a body that raised or was
        cancelled reports its end here)."""
        turn = self.ctx.turn
        emit(ToolExecutionStart(call, turn))
        later: list[str] = []
        on_chunk: Callable[[str], None] = (
            (lambda text: emit(ToolOutputDelta(call.id, text, turn)))
            if tool.stream_output
            else later.append
        )
        started = time.perf_counter()
        try:
            result = await (
                tool.invoke(
                    values,
                    self.ctx.action_context,
                    call_id=call.id,
                    secrets=secrets,
                    agent=self.agent,
                    redactor=self.ctx.redactor,
                    on_chunk=on_chunk,
                    call_info=info,
                )
                if self.executor is None
                else self.executor.invoke(tool, call, self.ctx, info, on_chunk)
            )
        except BaseException:
            emit(ToolExecutionEnd(call, None, turn, time.perf_counter() - started))
            raise
        took = time.perf_counter() - started

        def ended(shown: ToolResult, unchanged: bool) -> None:
            if unchanged:
                for text in later:
                    emit(ToolOutputDelta(call.id, text, turn))
            emit(ToolExecutionEnd(call, shown, turn, took))

        return result, ended

    def _decided(self, call: ToolCall) -> Settled | tuple[ToolCall, Record | None]:
        """A call of a continued run, as its decision and the journal have
        it: a rejected call's result, or the call to run (an edited one with
        its new arguments) and what the journal knows of it."""
        assert self.resume is not None
        pending = self.resume.pending.get(call.id)
        if pending is not None and pending.decision is not None:
            decision = pending.decision
            if self.emit is not None:
                self.emit(CallDecided(pending, self.ctx.turn))
            if isinstance(decision, Reject):
                return Settled(call, ToolResult(call_id=call.id, content=decision.reason), None)
            if isinstance(decision, Edit):
                arguments = dict(decision.arguments)
                call = call.model_copy(
                    update={
                        "arguments": arguments,
                        "raw_arguments": _json(arguments),
                        "arguments_error": None,
                    }
                )
        return call, self.resume.records.get(call.id)

    async def _replayed(self, call: ToolCall, record: Record) -> Settled | Stop:
        """A call whose result the journal holds: not run again; the
        recorded result goes through ``on_post_tool_use``."""
        assert record.finished is not None
        data = record.finished.data
        result = ToolResult(
            call_id=call.id,
            content=str(data.get("content", "")),
            is_error=bool(data.get("is_error", False)),
            raised=bool(data.get("raised", False)),
        )
        stopped = data.get("stopped")
        if isinstance(stopped, dict):  # a hook stopped the run there: it stops again
            self.settled.append(Settled(call, result, call))
            return Stop(call.index, stopped_outcome(stopped))
        tool = self.tools.get(call.name)
        recovered = call.model_copy(update={"result_source": "journal"})
        return await self._ran(recovered, result, tool is not None and tool.terminal)

    async def _in_doubt(self, call: ToolCall) -> Settled | Stop:
        """A ``once`` call a crash cut short: never run again; the model,
        the diagnostics and ``on_post_tool_use`` learn it may have acted."""
        result = ToolResult(
            call_id=call.id, content=IN_DOUBT.format(tool=call.name), is_error=True, raised=True
        )
        self.ctx.diagnostics.append(
            Diagnostic(
                code="in_doubt",
                message=f"call {call.id!r} of {call.name!r} was running when the process "
                "stopped; it was not run again, and it may or may not have acted",
                turn=self.ctx.turn,
            )
        )
        if self.emit is not None:
            self.emit(CallInDoubt(call, self.ctx.turn))
        # journaled: reported once, not at each resume
        return await self._ran(call, result, False, journaled=True)

    def _hold(
        self,
        call: ToolCall,
        tool: Tool,
        asked: F.RequireApproval | None,
        hook: str | None,
        digest: str,
    ) -> None:
        """Keep ``call`` (as the hooks left it) to wait for a decision."""
        if asked is not None:
            reason = asked.reason
        else:
            reason, hook = f"{tool.name} needs approval", None
        pending = PendingCall(
            call_id=call.id,
            tool=call.name,
            arguments=plain_arguments(call.arguments),
            reason=self.ctx.redactor(reason),
            hook=hook,
            digest=digest,
            requested_at=self.ctx.now(),
        )
        self.held.append(pending)
        if self.emit is not None:
            self.emit(CallSuspended(pending, self.ctx.turn))

    async def _invalid(self, call: ToolCall, error: str) -> Settled | Stop | ToolCall:
        available = tuple(self.tools)
        decided = await self.dispatch(_INVALID, call, error, available)
        flow = decided.flow
        if type(flow) is F.Continue:
            text = _told(error, available)
            return Settled(call, ToolResult.error(text, call_id=call.id), None, False, True)
        if type(flow) is F.Retry:
            feedback = flow.feedback if flow.feedback is not None else _told(error, available)
            return Settled(call, ToolResult.error(feedback, call_id=call.id), None, False, True)
        if type(flow) is F.Skip:
            return Settled(call, ToolResult(call_id=call.id, content=flow.reason), None)
        if type(flow) is F.Terminate:
            return Stop(
                call.index, Terminated(reason=flow.reason, hook=decided.hook, event=_INVALID.value)
            )
        if type(flow) is F.Fail:
            return Stop(call.index, Failed(error=flow.reason))
        # Repair: the replacement call goes through on_pre_tool_use like any other.
        assert type(flow) is F.Repair  # the events table: nothing else is accepted here
        arguments = call.arguments if flow.arguments is None else dict(flow.arguments)
        repaired = ToolCall(
            id=call.id,
            name=flow.tool_name,
            arguments=arguments,
            raw_arguments=_json(arguments),
            index=call.index,
        )
        if repaired.name not in self.tools and repaired.name not in self.client:
            text = f"unknown tool {repaired.name!r} (after repair)"
            return Settled(call, _error(call, text), None, False, True)
        return repaired


def _told(error: str, available: tuple[str, ...]) -> str:
    """What the model is told about an invalid call by default."""
    return f"{error}. Available tools: {', '.join(available) or 'none'}."


def _validated(tool: Tool, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """``tool.validate(arguments)``; arguments nested too deeply for the
    validator (a recursive schema) are an invalid call too, never a crash."""
    try:
        return tool.validate(arguments)
    except RecursionError:
        raise InvalidToolCall(
            f"arguments for tool {tool.name!r} are nested too deeply to validate",
            tool=tool.name,
        ) from None


def _error(call: ToolCall, text: str) -> ToolResult:
    """An invalid call's result: an error, but nothing the tool raised."""
    return ToolResult.error(text, call_id=call.id)


def _json(arguments: Any) -> str:
    """The wire text of arguments a hook wrote (secrets as ``***``); ``{}``
    when they are not JSON (validation then says why)."""
    try:
        return to_json(arguments, fallback=secret_json).decode()
    except Exception:
        return "{}"


async def run_batch(
    calls: list[ToolCall],
    concurrency: int,
    *,
    ctx: HookContext,
    tools: ToolMap,
    dispatch: Dispatch,
    settled: list[Settled],
    held: list[PendingCall],
    emit: Callable[[ObservedEvent], None] | None = None,
    agent: object = None,
    journal: RunJournal | None = None,
    resume: Resume | None = None,
    client: frozenset[str] = frozenset(),
    deferred: list[ToolCall] | None = None,
    executor: RunExecutor | None = None,
) -> Stop | None:
    """Settle the calls of a turn into ``settled`` (in the order they settle:
    sort by ``call.index`` to commit) and those that wait for approval into
    ``held``; the stop that ends the run (the lowest call index when several
    stopped), or ``None``. ``emit`` receives the live tool events; ``agent``
    is what an ``action_agent`` parameter receives; ``journal`` records the
    calls with effects; ``resume`` holds the decisions and journal records
    of a continued run's calls (and the client's results); calls to a
    ``client`` tool without a result go into ``deferred``, unrun."""
    batch = Batch(
        ctx,
        tools,
        dispatch,
        emit,
        agent,
        settled,
        held,
        journal,
        resume,
        client,
        deferred,
        executor,
    )
    if concurrency <= 1 or len(calls) <= 1:
        for call in calls:
            outcome = await batch.one(call)
            if isinstance(outcome, Stop):
                return outcome
        return None
    gate = asyncio.Semaphore(concurrency)

    async def guarded(call: ToolCall) -> Settled | Stop | _Dropped:
        async with gate:
            if batch.stopped:
                return _DROPPED
            try:
                outcome = await batch.one(call)
            except INTERRUPTS as exc:
                # Raised in this task it would stop the event loop itself: it
                # is handed to the batch's caller instead, like a stop.
                batch.interrupt = batch.interrupt or exc
                batch.stopped = True
                return _DROPPED
            if isinstance(outcome, Stop):
                batch.stopped = True
            return outcome

    tasks = [asyncio.ensure_future(guarded(call)) for call in calls]
    try:
        outcomes = await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    if batch.interrupt is not None:
        raise batch.interrupt
    stops = [o for o in outcomes if isinstance(o, Stop)]
    return min(stops, key=lambda s: s.index) if stops else None
