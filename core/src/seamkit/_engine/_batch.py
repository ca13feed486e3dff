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
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic_core import to_json

from .. import flow as F
from .._context import HookContext
from .._errors import HookError, InvalidToolCall
from .._events import HookEvent
from .._secret import secret_json, secret_texts
from .._tool import Tool
from .._toolmap import ToolMap
from .._types import Failed, Outcome, Terminated, ToolCall, ToolResult
from ..stream import ObservedEvent, ToolExecutionEnd, ToolExecutionStart, ToolOutputDelta
from ._dispatch import Dispatched
from ._lifecycle import INTERRUPTS, Interrupt

__all__ = ["Dispatch", "Settled", "Stop", "run_batch"]

Dispatch = Callable[..., Awaitable[Dispatched]]
"""``await dispatch(event, *args)``: the run's hooks at one event."""

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
    """A call that never started because a sibling stopped the batch."""


_DROPPED = _Dropped()


class Batch:
    """Runs one turn's calls; built per turn by the drive loop."""

    __slots__ = ("agent", "ctx", "dispatch", "emit", "interrupt", "settled", "stopped", "tools")

    def __init__(
        self,
        ctx: HookContext,
        tools: ToolMap,
        dispatch: Dispatch,
        emit: Callable[[ObservedEvent], None] | None,
        agent: object,
        settled: list[Settled],
    ) -> None:
        self.ctx = ctx
        self.tools = tools
        self.dispatch = dispatch  # skips events without hooks; reports HookFired
        self.emit = emit
        self.agent = agent
        self.settled = settled
        self.stopped = False
        self.interrupt: Interrupt | None = None

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
            return Stop(call.index, Terminated(reason=flow.reason, hook=decided.hook))
        if type(flow) is F.RewriteArgs:
            arguments = dict(flow.arguments)
            call = call.model_copy(
                update={"arguments": arguments, "raw_arguments": _json(arguments)}
            )
            secrets = secret_texts(arguments)
            try:
                values = _validated(tool, arguments)
            except InvalidToolCall as exc:
                text = self._redact(exc.message, secrets)
                return Settled(call, _error(call, f"{text} (after a hook rewrote them)"), None)
        if self.stopped:
            return _DROPPED
        if self.emit is None:  # the hot path: nobody watches, no coroutine more
            result = await tool.invoke(
                values,
                self.ctx.action_context,
                call_id=call.id,
                secrets=secrets,
                agent=self.agent,
                redactor=self.ctx.redactor,
            )
        else:
            result = await self._observed(tool, values, call, secrets, self.emit)
        # The tool ran: its result is kept from now on, whatever the hooks
        # after it decide (a Terminate or a failure stops the run, not the
        # result) and whether or not the run is cancelled meanwhile.
        kept = Settled(call, result, call, tool.terminal and not result.is_error)
        self.settled.append(kept)
        try:
            decided = await self.dispatch(_POST, call, result)
        except HookError as exc:
            return Stop(call.index, Failed(error=str(exc.message)))
        flow = decided.flow
        if type(flow) is F.RewriteResult:
            kept.result = flow.applied_to(result)
        elif type(flow) is F.Terminate:
            return Stop(call.index, Terminated(reason=flow.reason, hook=decided.hook))
        return kept

    async def _observed(
        self,
        tool: Tool,
        values: dict[str, Any],
        call: ToolCall,
        secrets: list[str],
        emit: Callable[[ObservedEvent], None],
    ) -> ToolResult:
        """Invoke the tool between its live start and end events, its chunks
        surfacing as they come."""
        turn = self.ctx.turn
        emit(ToolExecutionStart(call, turn))
        started = time.perf_counter()
        ended: ToolResult | None = None
        try:
            ended = await tool.invoke(
                values,
                self.ctx.action_context,
                call_id=call.id,
                secrets=secrets,
                agent=self.agent,
                redactor=self.ctx.redactor,
                on_chunk=lambda text: emit(ToolOutputDelta(call.id, text, turn)),
            )
            return ended
        finally:
            emit(ToolExecutionEnd(call, ended, turn, time.perf_counter() - started))

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
            return Stop(call.index, Terminated(reason=flow.reason, hook=decided.hook))
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
        if repaired.name not in self.tools:
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
    emit: Callable[[ObservedEvent], None] | None = None,
    agent: object = None,
) -> Stop | None:
    """Settle the calls of a turn into ``settled`` (in the order they settle:
    sort by ``call.index`` to commit); the stop that ends the run (the lowest
    call index when several stopped), or ``None``. ``emit`` receives the live
    tool events; ``agent`` is what an ``action_agent`` parameter receives."""
    batch = Batch(ctx, tools, dispatch, emit, agent, settled)
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
