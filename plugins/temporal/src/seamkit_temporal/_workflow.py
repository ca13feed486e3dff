"""The workflow of a seamkit run on Temporal: ``seamkit.run``.

One run is one workflow. It runs the kernel's own `seamkit.Agent.run` (or
``stream``) of the worker's agent, unchanged, with a `WorkflowExecutor`: the
clock is ``workflow.now()``, ids come from ``workflow.uuid4()``, and the I/O
(model turns, tool bodies, hook dispatches, the tool sources' refresh, the
session's load and save) are activities (`seamkit_temporal._activities`), so
the loop replays deterministically from the history: Temporal's history is the
run's journal.

A run that suspends for approval waits inside its workflow (no worker held)
until decisions arrive, by the ``decide`` update or the ``decisions`` signal,
or until ``settings.approval_expires_seconds`` passes on a durable timer;
then the run continues as `Agent.run(Decisions(...), session=...)` would.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Annotated, Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    import seamkit
    from pydantic import BaseModel, ConfigDict, Field, JsonValue
    from pydantic_core import to_jsonable_python
    from seamkit.plugins import CutOff, HookCall, TextStop
    from seamkit.stream import Event, RunFinished

    from ._activities import (
        HEARTBEAT_SECONDS,
        AskInput,
        HooksInput,
        SaveInput,
        SessionInput,
        ToolInput,
        dispatch_hooks,
        invoke_tool,
        load_session,
        model_turn,
        refresh_tools,
        save_session,
    )
    from ._channel import Route
    from ._served import agent_for, publish

__all__ = [
    "ROUNDS_MEMO",
    "WORKFLOW",
    "DecideInput",
    "RunInput",
    "RunStatus",
    "SeamkitRun",
    "WorkflowExecutor",
]

WORKFLOW = "seamkit.run"
"""The workflow type of a seamkit run."""

ROUNDS_MEMO = "seamkit.rounds"
"""The memo key of `RunStatus.rounds`, which a caller reads while no worker
is up to answer the ``status`` query."""

_FROZEN = ConfigDict(frozen=True, extra="forbid")
_HEARTBEAT_TIMEOUT = timedelta(seconds=HEARTBEAT_SECONDS * 5)
_MODEL_TIMEOUT = timedelta(minutes=10)
_TOOL_TIMEOUT = timedelta(hours=1)
_LOCAL_TIMEOUT = timedelta(minutes=5)
_STORE_TIMEOUT = timedelta(seconds=60)
_IDEMPOTENT_ATTEMPTS = 5
"""How often an ``idempotent`` tool's body is tried (with one key) before the call is in doubt."""

_STALE = "these decisions were made for an earlier suspension of the run: decide again"

Decision = Annotated[seamkit.Approve | seamkit.Reject | seamkit.Edit, Field(discriminator="action")]


class DecideInput(BaseModel):
    """Decisions for a suspended run (`seamkit.Decisions` as JSON), and where
    the events of the run they continue go."""

    model_config = _FROZEN

    decisions: dict[str, Decision] = {}
    rest: Decision | None = None
    by: str | None = None
    route: Route | None = None
    rounds: int | None = None
    """How many of the workflow's runs had ended when these decisions were
    made: they decide that suspension and no later one (a copy that arrives
    late, by a signal say, never decides calls nobody saw)."""

    @classmethod
    def of(
        cls, decisions: seamkit.Decisions, route: Route | None = None, rounds: int | None = None
    ) -> DecideInput:
        return cls(
            decisions=dict(decisions.decisions),
            rest=decisions.rest,
            by=decisions.by,
            route=route,
            rounds=rounds,
        )

    def value(self) -> seamkit.Decisions:
        return seamkit.Decisions(self.decisions, rest=self.rest, by=self.by)


class RunInput(BaseModel):
    """One run: the app the worker serves, what the run starts from (new
    messages, or decisions for a session's suspended run), its session and
    context, and where its live events go."""

    model_config = _FROZEN

    app: str
    messages: tuple[seamkit.Message, ...] = ()
    decide: DecideInput | None = None
    session: str | None = None
    context: dict[str, JsonValue] = {}
    context_id: str = ""
    streaming: bool = False
    route: Route | None = None


class RunStatus(BaseModel):
    """What a run's workflow is doing (the ``status`` query): ``running``,
    ``suspended`` (its ``pending`` calls wait for decisions) or ``ended``."""

    model_config = _FROZEN

    state: str
    pending: tuple[seamkit.PendingCall, ...] = ()
    rounds: int = 0
    """How many runs (the first, and one per decisions) have ended or suspended."""


class WorkflowExecutor:
    """The `seamkit.plugins.RunExecutor` of a run in a workflow."""

    def __init__(self, app: str, route: Route | None) -> None:
        self.app = app
        self.route = route
        """Where the run's live events go (decisions may bring another)."""

    def now(self) -> datetime:
        return workflow.now()

    def new_id(self) -> str:
        return workflow.uuid4().hex

    def live(self) -> bool:
        return not workflow.unsafe.is_replaying()

    async def refresh(self) -> tuple[seamkit.Diagnostic, ...]:
        notes = await workflow.execute_local_activity(
            refresh_tools, self.app, start_to_close_timeout=_LOCAL_TIMEOUT
        )
        return tuple(notes)

    async def ask(
        self, request: seamkit.ModelRequest, ctx: seamkit.HookContext
    ) -> seamkit.ModelTurn | TextStop:
        given = AskInput(
            app=self.app,
            request=request,
            state=seamkit.plugins.ContextState.of(ctx),
            route=self.route,
        )
        asked = await workflow.execute_activity(
            model_turn,
            given,
            start_to_close_timeout=_MODEL_TIMEOUT,
            heartbeat_timeout=_HEARTBEAT_TIMEOUT,
            retry_policy=RetryPolicy(maximum_attempts=3),
        )
        return asked.answer(ctx)

    async def invoke(
        self,
        tool: seamkit.Tool,
        call: seamkit.ToolCall,
        ctx: seamkit.HookContext,
        info: seamkit.CallInfo | None,
        on_chunk: Callable[[str], None] | None,
    ) -> seamkit.ToolResult:
        given = ToolInput(
            app=self.app,
            call=call,
            state=seamkit.plugins.ContextState.of(ctx),
            key=None if info is None else info.idempotency_key,
            route=self.route,
        )
        if tool.effects == "none":  # no start to record: run again if cut off
            return await workflow.execute_local_activity(
                invoke_tool, given, start_to_close_timeout=_LOCAL_TIMEOUT
            )
        attempts = 1 if tool.effects == "once" else _IDEMPOTENT_ATTEMPTS
        try:
            return await workflow.execute_activity(
                invoke_tool,
                given,
                start_to_close_timeout=_TOOL_TIMEOUT,
                heartbeat_timeout=_HEARTBEAT_TIMEOUT,
                retry_policy=RetryPolicy(maximum_attempts=attempts),
            )
        except ActivityError as exc:  # its worker died (or it failed) after it started
            raise CutOff(tool.name, str(exc.cause or exc)) from None

    async def dispatch(
        self, event: seamkit.HookEvent, ctx: seamkit.HookContext, args: tuple[object, ...]
    ) -> seamkit.flow.Dispatched:
        given = HooksInput(app=self.app, call=HookCall.of(event, ctx, args), route=self.route)
        answer = await workflow.execute_local_activity(
            dispatch_hooks,
            given,
            start_to_close_timeout=_LOCAL_TIMEOUT,
            retry_policy=RetryPolicy(maximum_attempts=3),
        )
        return answer.dispatched(ctx, event)


class ActivityStore:
    """The app's session store, as seen from the workflow: load and save are
    activities on a worker. The workflow id is the session's lock (one
    session, one workflow at a time)."""

    def __init__(self, app: str) -> None:
        self.app = app

    async def load(self, name: str) -> seamkit.StoredSession | None:
        loaded = await workflow.execute_activity(
            load_session,
            SessionInput(app=self.app, name=name),
            start_to_close_timeout=_STORE_TIMEOUT,
            heartbeat_timeout=_HEARTBEAT_TIMEOUT,
        )
        if not loaded.found:
            return None
        return seamkit.StoredSession(loaded.transcript, loaded.state)

    async def save(
        self, name: str, transcript: Sequence[seamkit.Message], state: Mapping[str, Any]
    ) -> None:
        given = SaveInput(
            app=self.app, name=name, transcript=tuple(transcript), state=to_jsonable_python(state)
        )
        await workflow.execute_activity(
            save_session,
            given,
            start_to_close_timeout=_STORE_TIMEOUT,
            heartbeat_timeout=_HEARTBEAT_TIMEOUT,  # (a dead worker's save: again in 10 s)
        )

    def lock(self, name: str, wait_seconds: float) -> contextlib.AbstractAsyncContextManager[None]:
        return contextlib.nullcontext()

    async def list(self) -> list[str]:
        raise seamkit.SessionError("a run on Temporal does not list sessions")

    async def delete(self, name: str) -> None:
        raise seamkit.SessionError("a run on Temporal does not delete sessions")


@workflow.defn(name=WORKFLOW)
class SeamkitRun:
    """One seamkit run: `Agent.run` in the workflow, its I/O as activities,
    waiting for decisions (or their expiry) while suspended."""

    def __init__(self) -> None:
        self._state = "running"
        self._pending: tuple[seamkit.PendingCall, ...] = ()
        self._inbox: list[tuple[int, DecideInput]] = []
        self._answers: dict[int, seamkit.RunResult | str] = {}
        self._asked = itertools.count(1)
        self._updates: set[int] = set()
        """The numbers of the decisions a ``decide`` update waits on."""
        self._seq = itertools.count(1)
        self._executor: WorkflowExecutor | None = None
        self._rounds = 0
        self._last: seamkit.RunResult | None = None

    @workflow.run
    async def run(self, given: RunInput) -> seamkit.RunResult:
        try:
            agent = agent_for(given.app)
        except seamkit.SeamkitError as exc:  # (raised, the workflow task would fail forever)
            raise ApplicationError(str(exc), type=type(exc).__name__, non_retryable=True) from None
        executor = self._executor = WorkflowExecutor(given.app, given.route)
        store = ActivityStore(given.app) if given.session is not None else None
        context = seamkit.ActionContext(given.context, context_id=given.context_id or None)
        options: dict[str, Any] = {
            "session": given.session,
            "store": store,
            "context": context,
            "executor": executor,
        }
        if given.session is None:
            options["state"] = {}
        first: Any = given.decide.value() if given.decide is not None else list(given.messages)
        try:
            result = await self._round(agent, given, first, options, given.streaming)
        except seamkit.SeamkitError as exc:  # the run could not start: the caller's error
            raise ApplicationError(str(exc), type=type(exc).__name__, non_retryable=True) from None
        while isinstance(result.outcome, seamkit.Suspended):
            if given.session is None and result.suspended is None:
                break  # (no way to continue it: the result says why)
            if given.session is None:
                options["suspended"] = result.suspended
            asked = await self._next(agent)
            decide = None if asked is None else asked[1]
            executor.route = None if decide is None else decide.route  # (the last caller left)
            self._state = "running"
            try:
                result = await self._round(
                    agent,
                    given,
                    None if decide is None else decide.value(),
                    options,
                    decide is not None and decide.route is not None,  # its caller follows it
                )
            except seamkit.SeamkitError as exc:  # decisions that do not fit: still waiting
                self._state = "suspended"
                self._answer(asked, str(exc))
                continue
            self._answer(asked, result)
        self._state, self._pending = "ended", ()
        return result

    def _answer(
        self, asked: tuple[int, DecideInput] | None, answer: seamkit.RunResult | str
    ) -> None:
        """What the ``decide`` update that sent ``asked`` returns; decisions
        that came as a signal have nobody waiting (a refusal is logged)."""
        if asked is None:
            return
        if asked[0] in self._updates:
            self._answers[asked[0]] = answer
        elif isinstance(answer, str):
            workflow.logger.warning("decisions sent as a signal were refused: %s", answer)

    async def _next(self, agent: seamkit.Agent) -> tuple[int, DecideInput] | None:
        """The next decisions, or ``None`` when the oldest pending call's
        approval expired first (the run then continues, and rejects it)."""
        limit = agent.settings.approval_expires_seconds
        timeout: timedelta | None = None
        if limit is not None and self._pending:
            oldest = min(p.requested_at for p in self._pending if p.decision is None)
            timeout = max(
                oldest + timedelta(seconds=limit) - workflow.now(), timedelta(milliseconds=1)
            )
        while True:
            try:
                await workflow.wait_condition(lambda: bool(self._inbox), timeout=timeout)
            except TimeoutError:
                return None
            asked = self._inbox.pop(0)
            made = asked[1].rounds
            if made is None or made == self._rounds:
                return asked
            self._answer(asked, _STALE)  # (decisions for an earlier suspension)

    async def _round(
        self,
        agent: seamkit.Agent,
        given: RunInput,
        input: Any,
        options: dict[str, Any],
        streaming: bool,
    ) -> seamkit.RunResult:
        """One `Agent.run` (streamed when its caller follows it); its result
        is the ``outcome`` update's answer. Its `RunFinished` leaves last,
        once the session is saved and the workflow waits for decisions (a
        caller that decides on seeing it finds the run waiting)."""
        finished: RunFinished | None = None
        if not streaming:
            result = await agent.run(input, **options)
        else:
            events: AsyncIterator[Event] = agent.stream(input, **options)
            async for event in events:
                if isinstance(event, RunFinished):
                    finished = event
                else:
                    self._emit(event)
            assert finished is not None
            result = finished.result
        if isinstance(result.outcome, seamkit.Suspended) and (
            given.session is not None or result.suspended is not None
        ):
            self._state, self._pending = "suspended", result.outcome.pending
        self._rounds += 1
        # (in the memo too: a caller reads it without a worker, `describe`)
        workflow.upsert_memo({ROUNDS_MEMO: self._rounds})
        self._last = result
        if finished is not None:
            self._emit(finished)
        return result

    def _emit(self, event: Event) -> None:
        """``event`` to the caller: numbered on replay too, sent only live."""
        seq = next(self._seq)
        executor = self._executor
        if executor is not None and not workflow.unsafe.is_replaying():
            publish(executor.route, event, "workflow", seq)

    @workflow.query(name="status")
    def status(self) -> RunStatus:
        """What the run is doing, and the calls that wait for decisions."""
        return RunStatus(state=self._state, pending=self._pending, rounds=self._rounds)

    # A run that fails before its first round ends leaves this waiting: its
    # caller reads the failure from the workflow's result instead.
    @workflow.update(name="outcome", unfinished_policy=workflow.HandlerUnfinishedPolicy.ABANDON)
    async def outcome(self, after: int) -> seamkit.RunResult:
        """The result of the latest run once more than ``after`` runs ended
        or suspended (0: the first run's): what a caller that does not
        follow the events waits for (the workflow of a suspended run goes on)."""
        await workflow.wait_condition(lambda: self._rounds > after)
        assert self._last is not None
        return self._last

    @outcome.validator
    def _counted(self, after: int) -> None:
        """Refuse (leaving no history) a count below 0: no run is before the first."""
        if after < 0:
            raise ValueError(f"after must be 0 or more, not {after}")

    @workflow.update(name="decide")
    async def decide(self, given: DecideInput) -> seamkit.RunResult:
        """Decisions for the suspended run; the result of the run they continue."""
        number = next(self._asked)
        self._updates.add(number)
        self._inbox.append((number, given))
        await workflow.wait_condition(lambda: number in self._answers)
        self._updates.discard(number)
        answer = self._answers.pop(number)
        if isinstance(answer, str):
            raise ApplicationError(answer, type="ResumeError", non_retryable=True)
        return answer

    @decide.validator
    def _check(self, given: DecideInput) -> None:
        """Refuse (leaving no history) decisions for a run that does not
        wait, or for calls it does not wait on."""
        if self._state != "suspended":
            raise ValueError(f"the run is {self._state}: no call waits for a decision")
        if given.rounds is not None and given.rounds != self._rounds:
            raise ValueError(_STALE)  # whatever else is queued
        if self._inbox:
            raise ValueError(
                "other decisions for the run arrived first and are being taken: "
                "read its status, then decide again"
            )
        waiting = {p.call_id for p in self._pending if p.decision is None}
        for call_id in given.decisions:
            if call_id not in waiting:
                known = ", ".join(sorted(waiting)) or "none"
                raise ValueError(f"no pending call has the id {call_id!r} (pending: {known})")

    @workflow.signal(name="decisions")
    def decisions(self, given: DecideInput) -> None:
        """Decisions for the suspended run, kept by Temporal while no worker
        is up (the ``decide`` update needs one); decisions that do not fit
        are dropped, with a warning in the worker's log (the run still waits)."""
        self._inbox.append((next(self._asked), given))
