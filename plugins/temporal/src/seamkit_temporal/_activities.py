"""The activities of a seamkit run on Temporal: what may do I/O, done on a
worker with the worker's agent (`seamkit.plugins.Remote`).

- ``seamkit.model``: one model turn with its text guards (a regular
  activity: its result is recorded, so a recorded turn is never asked
  again); it heartbeats, and its events go to the caller as they happen.
- ``seamkit.tool``: one tool body. A regular activity for a tool with
  effects (its start is recorded: a ``once`` tool cut off after it started is
  not run again), a local one for a tool without; it heartbeats, and its
  output chunks go to the caller as they happen.
- ``seamkit.hooks``: one event's hooks (a local activity).
- ``seamkit.refresh``: the agent's tool sources refreshed (a local activity).
- ``seamkit.load`` and ``seamkit.save``: the session, from and to the app's
  store (regular activities that heartbeat: a save cut off by a dead worker
  is done again within the heartbeat time-out, not the minute it may take).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import seamkit
from pydantic import BaseModel, ConfigDict, JsonValue
from seamkit.plugins import Asked, ContextState, HookAnswer, HookCall
from seamkit.stream import ObservedEvent
from temporalio import activity

from ._channel import Route
from ._served import agent_for, publish

__all__ = [
    "ACTIVITIES",
    "HEARTBEAT_SECONDS",
    "AskInput",
    "HooksInput",
    "Loaded",
    "SaveInput",
    "SessionInput",
    "ToolInput",
    "dispatch_hooks",
    "invoke_tool",
    "load_session",
    "model_turn",
    "refresh_tools",
    "save_session",
]

HEARTBEAT_SECONDS = 2.0
"""How often a running model turn or tool body heartbeats."""

_FROZEN = ConfigDict(frozen=True, extra="forbid")
T = TypeVar("T")


class AskInput(BaseModel):
    """A model turn to ask: the request, the run's context, where its events go."""

    model_config = _FROZEN

    app: str
    request: seamkit.ModelRequest
    state: ContextState
    route: Route | None = None


class ToolInput(BaseModel):
    """A tool body to run: the call (its arguments valid), the idempotency
    key the workflow drew for it (``None``: a tool without effects)."""

    model_config = _FROZEN

    app: str
    call: seamkit.ToolCall
    state: ContextState
    key: str | None = None
    route: Route | None = None


class HooksInput(BaseModel):
    """One event's hooks to run."""

    model_config = _FROZEN

    app: str
    call: HookCall
    route: Route | None = None


class SessionInput(BaseModel):
    """A session to load."""

    model_config = _FROZEN

    app: str
    name: str


class Loaded(BaseModel):
    """A session as the store has it (``found``: it exists)."""

    model_config = _FROZEN

    found: bool
    transcript: tuple[seamkit.Message, ...] = ()
    state: dict[str, JsonValue] = {}


class SaveInput(BaseModel):
    """A session to save: its whole transcript and state."""

    model_config = _FROZEN

    app: str
    name: str
    transcript: tuple[seamkit.Message, ...]
    state: dict[str, JsonValue]


def _emitter(route: Route | None) -> Callable[[ObservedEvent], None] | None:
    """This attempt's events to the caller, numbered (``None``: no caller listens)."""
    if route is None:
        return None
    info = activity.info()
    source = f"{info.activity_id}#{info.attempt}"
    seq = itertools.count(1)

    def emit(event: ObservedEvent) -> None:
        publish(route, event, source, next(seq))

    return emit


async def _heartbeating(work: Awaitable[T]) -> T:
    """``work``'s result, heartbeating while it runs (so that a dead worker
    is noticed within the heartbeat time-out)."""
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait((task,), timeout=HEARTBEAT_SECONDS)
            if done:
                return task.result()
            activity.heartbeat()
    finally:
        if not task.done():
            task.cancel()


@activity.defn(name="seamkit.model")
async def model_turn(given: AskInput) -> Asked:
    """One model turn, with its text guards, as a run in process asks it."""
    remote = agent_for(given.app).remote()
    emit = _emitter(given.route)
    return await _heartbeating(remote.ask(given.request, given.state, emit))


@activity.defn(name="seamkit.tool")
async def invoke_tool(given: ToolInput) -> seamkit.ToolResult:
    """One tool body, with the call's idempotency key and this attempt's number."""
    agent = agent_for(given.app)
    remote = agent.remote()
    call = given.call
    info = None
    if given.key is not None:
        info = seamkit.CallInfo(call.id, given.key, activity.info().attempt, call.name)
    on_chunk = None
    emit = _emitter(given.route)
    if emit is not None:
        turn = given.state.turn

        def on_chunk(text: str) -> None:
            emit(seamkit.stream.ToolOutputDelta(call.id, text, turn))

    try:
        return await _heartbeating(remote.invoke(call, given.state, info, on_chunk))
    except seamkit.SeamkitError as exc:  # no such tool here, arguments that do not fit
        text = agent.redactor(f"Error: {exc.message}")
        return seamkit.ToolResult(call_id=call.id, content=text, is_error=True, raised=True)


@activity.defn(name="seamkit.hooks")
async def dispatch_hooks(given: HooksInput) -> HookAnswer:
    """One event's hooks, on the worker's agent."""
    return await agent_for(given.app).remote().dispatch(given.call)


@activity.defn(name="seamkit.refresh")
async def refresh_tools(app: str) -> list[seamkit.Diagnostic]:
    """The agent's tool sources refreshed; what they said."""
    return list(await agent_for(app).refresh_tools())


@activity.defn(name="seamkit.load")
async def load_session(given: SessionInput) -> Loaded:
    """The session from the app's store."""
    store = agent_for(given.app).session_store()
    stored = await _heartbeating(store.load(given.name))
    if stored is None:
        return Loaded(found=False)
    state: dict[str, Any] = dict(stored.state)
    return Loaded(found=True, transcript=tuple(stored.transcript), state=state)


@activity.defn(name="seamkit.save")
async def save_session(given: SaveInput) -> None:
    """The session to the app's store."""
    store = agent_for(given.app).session_store()
    await _heartbeating(store.save(given.name, list(given.transcript), given.state))


ACTIVITIES = (
    model_turn,
    invoke_tool,
    dispatch_hooks,
    refresh_tools,
    load_session,
    save_session,
)
"""Every activity a worker registers."""
