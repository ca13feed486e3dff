"""``seamkit temporal run`` and ``decide``: start a run on Temporal (or
deliver decisions to one) and print it as ``seamkit run`` (``seamkit
resume``) does, through `seamkit.plugins.RunPresenter`: the answer on
standard output, hooks, tool calls and the summary on standard error, the
same exit status. A suspended run lists its calls with the ``seamkit
temporal decide`` command lines that decide them; nothing is asked."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping

import seamkit
from pydantic import JsonValue
from seamkit.plugins import DecideCommand, RunPresenter
from seamkit.stream import ObservedEvent, RunFinished
from temporalio.service import RPCError

from ._reach import reach
from ._runner import LIVE_EVENTS_UNAVAILABLE, TemporalRunner

__all__ = ["LIVE_NOTE", "decide_line", "follow_decide", "follow_run"]

LIVE_NOTE = "[live events unavailable: the run's result is shown now that it ended]"
"""The note on standard error when a run's live events did not reach the
command (its result came when it ended)."""

_STATUS_SECONDS = 3.0
"""How long a refused decision's hint waits for a worker to say what the run waits for."""


def decide_line(address: str, namespace: str, session: str | None) -> DecideCommand | None:
    """The ``seamkit temporal decide`` command for ``session``'s suspended
    run (``None``: no session, so no command can reach it)."""
    if session is None:
        return None
    words = ["seamkit", "temporal", "decide", "--address", address]
    if namespace != "default":
        words += ["--namespace", namespace]
    return DecideCommand((*words, "--session", session))


async def follow_run(
    app: str,
    message: str,
    *,
    address: str,
    namespace: str,
    task_queue: str,
    session: str | None,
    context: Mapping[str, JsonValue],
    as_json: bool,
) -> int:
    """Run ``message`` on ``app``'s workers and print it; the exit status.

    The app is loaded here too, as ``seamkit run`` loads it: a manifest that
    does not hold fails the same way, and its declared output decides how the
    answer is printed. The workers run the run: this process only follows."""
    presenter = RunPresenter(as_json=as_json, decide=decide_line(address, namespace, session))
    async with await seamkit.Agent.load(app) as agent:
        presenter.output = agent.output
        client = await reach(address, namespace)
        async with TemporalRunner(client, task_queue) as runner:
            if as_json:
                result = await runner.run(agent, message, session=session, context=context)
                presenter.finish(result)
            else:
                events = runner.stream(agent, message, session=session, context=context)
                result = await _shown(events, presenter)
    return _ended(presenter, result)


async def follow_decide(
    session: str,
    decisions: seamkit.Decisions,
    *,
    address: str,
    namespace: str,
    as_json: bool,
) -> int:
    """Deliver ``decisions`` to ``session``'s suspended run and print the
    run they continue (its answer and summary, or the calls that wait
    again); the exit status. A refused decision is a `seamkit.ResumeError`
    whose hint lists the calls that wait."""
    decide = decide_line(address, namespace, session)
    presenter = RunPresenter(as_json=as_json, decide=decide)
    client = await reach(address, namespace)
    async with TemporalRunner(client) as runner:
        try:
            if as_json:
                result = await runner.decide(session, decisions)
                presenter.finish(result)
            else:
                result = await _shown(runner.decide_stream(session, decisions), presenter)
        except seamkit.ResumeError as exc:
            if exc.hint is None:
                exc.hint = await _waiting_hint(runner, session, decide)
            raise
    return _ended(presenter, result)


async def _shown(
    events: AsyncIterator[ObservedEvent], presenter: RunPresenter
) -> seamkit.RunResult:
    """Show a run's events as they come; its result."""
    result = None
    async for event in events:
        if isinstance(event, RunFinished):
            result = event.result
            if any(d.code == LIVE_EVENTS_UNAVAILABLE for d in result.diagnostics):
                presenter.note(LIVE_NOTE)
        presenter.show(event)
    if result is None:  # (a stream always ends with RunFinished)
        raise seamkit.SeamkitError("the run's stream ended without its result")
    return result


def _ended(presenter: RunPresenter, result: seamkit.RunResult) -> int:
    """A suspended run's calls (as text: ``--json`` has them), and the exit status."""
    if isinstance(result.outcome, seamkit.Suspended) and not presenter.as_json:
        presenter.print_pending(result.outcome.pending)
    return presenter.exit_code(result)


async def _waiting_hint(
    runner: TemporalRunner, session: str, decide: DecideCommand | None
) -> str | None:
    """What a refused decision's hint says: the calls the run waits for
    (nothing when no worker answers at once)."""
    try:
        status = await asyncio.wait_for(runner.status(session), _STATUS_SECONDS)
    except (TimeoutError, RPCError):
        return None
    if status is None or decide is None:
        return None
    waiting = [p for p in status.pending if p.decision is None]
    if not waiting:
        return f"session {session!r} has no call waiting for a decision"
    ids = ", ".join(p.call_id for p in waiting)
    return f"the run waits for: {ids}; e.g. `{decide.approve(waiting[0])}`"
