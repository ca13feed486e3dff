"""Starting and following seamkit runs on Temporal, from code.

`TemporalRunner(client, task_queue)` starts a run's workflow on the workers
of a task queue (`seamkit temporal worker`) and returns its `seamkit.RunResult`
(`run`), or yields its events live while it runs (`stream`), over the side
channel (`seamkit_temporal._channel`): the workers post them to an `Inbox`
this runner serves, never through Temporal's history. `decide` delivers
decisions to a suspended run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Mapping, Sequence
from types import TracebackType
from typing import Any, cast

import seamkit
from pydantic import JsonValue, TypeAdapter, ValidationError
from seamkit.stream import ObservedEvent, RunFinished
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
    WorkflowUpdateHandle,
    WorkflowUpdateRPCTimeoutOrCancelledError,
    WorkflowUpdateStage,
)
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from ._channel import Inbox, Route
from ._workflow import ROUNDS_MEMO, DecideInput, RunInput, RunStatus, SeamkitRun

__all__ = ["LIVE_EVENTS_UNAVAILABLE", "TemporalRunner", "workflow_id"]

log = logging.getLogger("seamkit.temporal")

LIVE_EVENTS_UNAVAILABLE = "live_events_unavailable"
"""The code of the diagnostic a streamed run's result carries when its live
events did not reach the caller (it got the result when the run ended)."""

_GRACE_SECONDS = 2.0
"""How long the events may trail the workflow's result before the runner
stops waiting for them."""
_ACCEPT_SECONDS = 5.0
"""How long `decide` waits for a worker to accept its update before it
sends the decisions as a signal, which Temporal keeps while no worker is up."""
_CONTEXT: TypeAdapter[dict[str, JsonValue]] = TypeAdapter(dict[str, JsonValue])

Input = str | seamkit.Message | Sequence[seamkit.Message]


def workflow_id(app: str, session: str | None, request_id: str | None = None) -> str:
    """The workflow id of a run: ``seamkit/session/NAME`` for a session
    (one session, one workflow at a time); ``seamkit/request/APP/ID`` for a
    request the caller named (its retries find that run); else a fresh one."""
    if session is not None:
        return f"seamkit/session/{session}"
    if request_id is not None:
        return f"seamkit/request/{app}/{request_id}"
    return f"seamkit/run/{app}/{uuid.uuid4().hex}"


class TemporalRunner:
    """Runs seamkit apps on the Temporal workers of ``task_queue``.

    ``client`` must use ``temporalio.contrib.pydantic.pydantic_data_converter``
    (`seamkit_temporal.connect` makes one). Live events come to an `Inbox` the
    runner serves on ``events_host`` (127.0.0.1; workers on other machines
    need an address they can reach), opened on the first `stream` and closed
    by `aclose` (or ``async with``).
    """

    def __init__(
        self,
        client: Client,
        task_queue: str = "seamkit",
        *,
        events_host: str = "127.0.0.1",
        events_port: int = 0,
    ) -> None:
        self.client = client
        self.task_queue = task_queue
        self._events_host = events_host
        self._events_port = events_port
        self._inbox: Inbox | None = None

    async def __aenter__(self) -> TemporalRunner:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop serving the live events' inbox."""
        if self._inbox is not None:
            await self._inbox.aclose()
            self._inbox = None

    async def run(
        self,
        agent_or_app: seamkit.Agent | str,
        input: Input,
        *,
        session: str | None = None,
        context: Mapping[str, JsonValue] | None = None,
        request_id: str | None = None,
    ) -> seamkit.RunResult:
        """Run ``input`` on the app's workers; its result once it ends or
        suspends (a suspended run waits in its workflow: `decide`).

        ``request_id`` (a run without a session) names the request: a retry
        with the same id (after a time-out, a lost answer) gets the first
        run's result and runs nothing again, for as long as Temporal keeps
        the workflow (its namespace's retention)."""
        given = _input(agent_or_app, input, None, session, context, False, None)
        if session is not None or request_id is None:
            handle = await self._start(given)
        else:
            wid = workflow_id(given.app, None, request_id)
            handle = await self._start(given, wid, attach=True)
        return await _result(_outcome(handle, 0), session)

    async def stream(
        self,
        agent_or_app: seamkit.Agent | str,
        input: Input,
        *,
        session: str | None = None,
        context: Mapping[str, JsonValue] | None = None,
    ) -> AsyncIterator[ObservedEvent]:
        """Run ``input`` and yield its `seamkit.stream` events as they
        happen; the last is `RunFinished`. When the events cannot reach this
        process, the result comes when the run ends, with a
        ``live_events_unavailable`` diagnostic."""
        app = _app(agent_or_app)
        wid = workflow_id(app, session)
        inbox = await self._opened()
        route = inbox.route(wid)
        try:
            given = _input(agent_or_app, input, None, session, context, True, route)
            handle = await self._start(given, wid)
            async for event in _followed(inbox, route, _outcome(handle, 0), session):
                yield event
        finally:
            inbox.discard(route)

    async def decide(self, session: str, decisions: seamkit.Decisions) -> seamkit.RunResult:
        """Deliver ``decisions`` to the suspended run of ``session`` and
        return the result of the run they continue.

        Sent as the ``decide`` update, which a worker checks at once (an
        unknown call id is a `seamkit.ResumeError`, leaving no trace). When
        no worker is up to accept it within a few seconds, they go as the
        ``decisions`` signal instead, which Temporal keeps until a worker is;
        the result then comes when the run ends or suspends again.
        """
        return await (await self._deliver(session, decisions, None))

    async def decide_stream(
        self, session: str, decisions: seamkit.Decisions
    ) -> AsyncIterator[ObservedEvent]:
        """`decide`, yielding the events of the run the decisions continue
        as they happen (the last is `RunFinished`), as `stream` does."""
        wid = workflow_id("", session)
        inbox = await self._opened()
        route = inbox.route(wid)
        try:
            result = await self._deliver(session, decisions, route)
            async for event in _followed(inbox, route, result, session):
                yield event
        finally:
            inbox.discard(route)

    async def _deliver(
        self, session: str, decisions: seamkit.Decisions, route: Route | None
    ) -> Awaitable[seamkit.RunResult]:
        """Send ``decisions`` (refused ones raise here); what waits for the
        result of the run they continue."""
        handle = self.client.get_workflow_handle_for(SeamkitRun.run, workflow_id("", session))
        status, answered = await _status_or_memo(handle)
        if status is None or status.state == "ended":
            raise seamkit.ResumeError(
                f"session {session!r} has no run on Temporal that waits for a decision",
                session=session,
                hint="start one with `seamkit temporal run` (or TemporalRunner.run)",
            )
        given = DecideInput.of(decisions, route, status.rounds)
        if not answered:  # no worker is up: the signal keeps them until one is
            log.warning("no worker is up for %r: the decisions are sent as a signal", session)
            await handle.signal(SeamkitRun.decisions, given)
            return _result(_outcome(handle, status.rounds), session)
        try:
            update = await asyncio.wait_for(
                handle.start_update(
                    SeamkitRun.decide, given, wait_for_stage=WorkflowUpdateStage.ACCEPTED
                ),
                _ACCEPT_SECONDS,
            )
        except WorkflowUpdateFailedError as exc:
            raise _refused(exc, session) from None
        except (TimeoutError, RPCError, WorkflowUpdateRPCTimeoutOrCancelledError) as exc:
            # (the SDK turns the cancel of a timed-out wait into its own error)
            if isinstance(exc, RPCError) and exc.status != RPCStatusCode.DEADLINE_EXCEEDED:
                raise
            log.warning("no worker took the decisions for %r at once: sent as a signal", session)
            await handle.signal(SeamkitRun.decisions, given)
            return _result(_outcome(handle, status.rounds), session)
        return _updated(update, session)

    async def status(self, session: str) -> RunStatus | None:
        """What the workflow of ``session`` is doing (``None``: it has none)."""
        handle = self.client.get_workflow_handle_for(SeamkitRun.run, workflow_id("", session))
        return await _status(handle)

    async def _opened(self) -> Inbox:
        if self._inbox is None:
            inbox = Inbox(self._events_host, self._events_port)
            await inbox.__aenter__()
            self._inbox = inbox
        return self._inbox

    async def _start(
        self, given: RunInput, wid: str | None = None, *, attach: bool = False
    ) -> WorkflowHandle[SeamkitRun, seamkit.RunResult]:
        """Start the run's workflow. A session's (or a fresh) id: refused while
        one runs (`_busy`), free again once it ended. ``attach`` (a named
        request): the run of that id, started now or before, never twice."""
        wid = wid or workflow_id(given.app, given.session)
        try:
            return await self.client.start_workflow(
                SeamkitRun.run,
                given,
                id=wid,
                task_queue=self.task_queue,
                id_conflict_policy=(
                    WorkflowIDConflictPolicy.USE_EXISTING
                    if attach
                    else WorkflowIDConflictPolicy.FAIL
                ),
                id_reuse_policy=(
                    WorkflowIDReusePolicy.REJECT_DUPLICATE
                    if attach
                    else WorkflowIDReusePolicy.ALLOW_DUPLICATE
                ),
            )
        except WorkflowAlreadyStartedError:
            if attach:  # it ended: its result stays
                return self.client.get_workflow_handle_for(SeamkitRun.run, wid)
            raise await self._busy(wid, given.session) from None

    async def _busy(self, wid: str, session: str | None) -> seamkit.SeamkitError:
        """What a run of a session whose workflow still runs is told."""
        status = await _status(self.client.get_workflow_handle_for(SeamkitRun.run, wid))
        name = session or wid
        if status is not None and status.state == "suspended":
            ids = ", ".join(p.call_id for p in status.pending)
            return seamkit.ResumeError(
                f"session {name!r} has calls waiting for a decision: {ids}",
                session=session,
                hint=f"decide them first: `seamkit temporal decide --session {name} "
                "--approve ID ...` (or TemporalRunner.decide)",
            )
        return seamkit.SessionBusy(name, 0)


def _app(agent_or_app: seamkit.Agent | str) -> str:
    return agent_or_app if isinstance(agent_or_app, str) else agent_or_app.name


def _input(
    agent_or_app: seamkit.Agent | str,
    input: Input,
    decide: DecideInput | None,
    session: str | None,
    context: Mapping[str, JsonValue] | None,
    streaming: bool,
    route: Route | None,
) -> RunInput:
    """The workflow's input; `seamkit.SeamkitError` for a context that
    cannot cross to a worker (a `seamkit.Secret`, a value that is not JSON)."""
    if isinstance(input, str):
        messages: tuple[seamkit.Message, ...] = (seamkit.Message.user(input),)
    elif isinstance(input, seamkit.Message):
        messages = (input,)
    else:
        messages = tuple(input)
    try:
        props = _CONTEXT.validate_python(dict(context or {}), strict=True)
    except ValidationError as exc:
        key = exc.errors()[0]["loc"][0]
        raise seamkit.SeamkitError(
            f"context value {key!r} cannot go to a Temporal worker: it is not JSON"
            " (a Secret would be written into the workflow's history)",
            hint="give secrets to the workers (the manifest, their environment); "
            "pass JSON values in the context",
        ) from None
    return RunInput(
        app=_app(agent_or_app),
        messages=messages,
        decide=decide,
        session=session,
        context=props,
        context_id=uuid.uuid4().hex,
        streaming=streaming,
        route=route,
    )


async def _status(handle: WorkflowHandle[SeamkitRun, seamkit.RunResult]) -> RunStatus | None:
    try:
        return await handle.query(SeamkitRun.status)
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return None
        raise
    except Exception:  # a closed workflow a worker cannot query: it ended
        return RunStatus(state="ended")


async def _status_or_memo(
    handle: WorkflowHandle[SeamkitRun, seamkit.RunResult],
) -> tuple[RunStatus | None, bool]:
    """What the run's workflow is doing, and whether a worker said so: the
    ``status`` query needs a worker, so when none answers within a few
    seconds the server's description says whether the workflow runs, and its
    memo how many rounds it has had (the state is then ``running``)."""
    try:
        return await asyncio.wait_for(_status(handle), _ACCEPT_SECONDS), True
    except TimeoutError:
        pass
    except RPCError as exc:  # (the server's "no poller seen for task queue recently")
        if exc.status not in (RPCStatusCode.FAILED_PRECONDITION, RPCStatusCode.DEADLINE_EXCEEDED):
            raise
    try:
        described = await handle.describe()
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return None, False
        raise
    if described.status != WorkflowExecutionStatus.RUNNING:
        return RunStatus(state="ended"), False
    rounds = await described.memo_value(ROUNDS_MEMO, 0, type_hint=int)
    return RunStatus(state="running", rounds=rounds), False


async def _updated(update: WorkflowUpdateHandle[Any], session: str) -> seamkit.RunResult:
    """The result of an accepted ``decide`` update: the run it continued."""
    while True:
        try:
            return cast("seamkit.RunResult", await update.result())
        except WorkflowUpdateFailedError as exc:
            raise _refused(exc, session) from None
        except WorkflowUpdateRPCTimeoutOrCancelledError as exc:  # a long round: ask again
            _reraise_cancel(exc)


async def _outcome(
    handle: WorkflowHandle[SeamkitRun, seamkit.RunResult], after: int
) -> seamkit.RunResult:
    """The result of the run's workflow once more than ``after`` of its runs
    ended or suspended (the ``outcome`` update; it waits for a worker)."""
    while True:
        try:
            return cast("seamkit.RunResult", await handle.execute_update(SeamkitRun.outcome, after))
        except WorkflowUpdateRPCTimeoutOrCancelledError as exc:
            # no worker took it in the call's deadline (its worker died, say): ask again
            _reraise_cancel(exc)
        except RPCError as exc:
            if exc.status == RPCStatusCode.DEADLINE_EXCEEDED:
                continue  # (the same, as the server says it)
            if exc.status == RPCStatusCode.FAILED_PRECONDITION:
                await asyncio.sleep(1.0)  # "no poller seen for task queue recently": none is up
                continue
            described = await handle.describe()
            if described.status == WorkflowExecutionStatus.RUNNING:
                raise
            return await handle.result()  # it ended: its result says how
        except WorkflowUpdateFailedError:  # it ended meanwhile
            return await handle.result()


def _reraise_cancel(exc: WorkflowUpdateRPCTimeoutOrCancelledError) -> None:
    """The cancel of this task, which the SDK reports as an update's time-out,
    raised again as what it is."""
    if isinstance(exc.__cause__, asyncio.CancelledError):
        raise asyncio.CancelledError from exc


async def _result(pending: Awaitable[seamkit.RunResult], session: str | None) -> seamkit.RunResult:
    """The workflow's result; its failure as the seamkit error it was."""
    try:
        return await pending
    except WorkflowFailureError as exc:
        cause = exc.cause
        if isinstance(cause, ApplicationError):
            raise _seamkit_error(cause, session) from None
        raise seamkit.SeamkitError(f"the run's workflow failed: {cause or exc}") from None


def _seamkit_error(cause: ApplicationError, session: str | None) -> seamkit.SeamkitError:
    message = cause.message
    if cause.type == "ResumeError":
        return seamkit.ResumeError(message, session=session)
    return seamkit.SeamkitError(message)


def _refused(exc: WorkflowUpdateFailedError, session: str) -> seamkit.ResumeError:
    cause = exc.cause
    text = cause.message if isinstance(cause, ApplicationError) else str(cause or exc)
    return seamkit.ResumeError(text, session=session)


async def _followed(
    inbox: Inbox,
    route: Route,
    result: Awaitable[seamkit.RunResult],
    session: str | None,
) -> AsyncIterator[ObservedEvent]:
    """The run's live events until `RunFinished`; when the run ends and its
    events do not follow within a grace period, its result alone."""
    ended = asyncio.ensure_future(_result(result, session))
    events = cast("AsyncGenerator[ObservedEvent, None]", inbox.events(route))
    got: asyncio.Future[ObservedEvent] | None = None
    try:
        while True:
            got = asyncio.ensure_future(anext(events))
            await asyncio.wait((got, ended), return_when=asyncio.FIRST_COMPLETED)
            if not got.done():
                done, _ = await asyncio.wait((got,), timeout=_GRACE_SECONDS)
                if not done:
                    got.cancel()
                    final = ended.result()
                    yield RunFinished(_unlive(final))
                    return
            try:
                event = got.result()
            except StopAsyncIteration:
                yield RunFinished(_unlive(await ended))
                return
            yield event
            if isinstance(event, RunFinished):
                return
    finally:
        if not ended.done():
            ended.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):  # (its news was the events')
            await ended
        if got is not None and not got.done():  # (a generator cannot close while it runs)
            got.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await got
        await events.aclose()


def _unlive(result: seamkit.RunResult) -> seamkit.RunResult:
    note = seamkit.Diagnostic(
        code=LIVE_EVENTS_UNAVAILABLE,
        message="the run's live events did not reach this process: its result came when it ended",
    )
    return result.model_copy(update={"diagnostics": (*result.diagnostics, note)})
