"""Drive hooks through one event without an agent."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from .._context import ActionContext, HookContext, system_clock
from .._engine._dispatch import Dispatched, Dispatcher, HookStack
from .._events import EVENTS, HookEvent, hookimpl

__all__ = ["Opaque", "arun_event", "make_context", "run_event", "scripted_hook"]


def make_context(
    *,
    agent_name: str = "test-agent",
    turn: int = 1,
    is_streaming: bool = False,
    properties: dict[str, Any] | None = None,
    tools: dict[str, Any] | None = None,
    clock: Callable[[], datetime] = system_clock,
) -> HookContext:
    """A `HookContext` for tests, with a fresh scratchpad and no diagnostics."""
    return HookContext(
        agent_name=agent_name,
        turn=turn,
        is_streaming=is_streaming,
        action_context=ActionContext(properties or {}),
        tools=tools or {},
        clock=clock,
    )


async def arun_event(
    hooks: Sequence[object],
    event: HookEvent | str,
    *args: Any,
    ctx: HookContext | None = None,
) -> Dispatched:
    """Dispatch ``event`` with ``(ctx, *args)`` over ``hooks``; the net flow."""
    context = ctx if ctx is not None else make_context()
    return await Dispatcher(hooks=hooks).dispatch(HookEvent(event), context, *args)


def run_event(
    hooks: Sequence[object],
    event: HookEvent | str,
    *args: Any,
    ctx: HookContext | None = None,
) -> Dispatched:
    """:func:`arun_event` for synchronous tests (runs its own event loop)."""
    return asyncio.run(arun_event(hooks, event, *args, ctx=ctx))


def scripted_hook(
    event: HookEvent | str,
    returns: Any = None,
    *,
    name: str = "scripted",
    raises: BaseException | None = None,
    is_async: bool = False,
    delay: float = 0.0,
    on_error: str | None = None,
    timeout_seconds: float | None = None,
    match: Sequence[str] | None = None,
    calls: list[tuple[str, tuple[Any, ...]]] | None = None,
) -> object:
    """A hook object with one hookimpl at ``event``.

    It records ``(name, args)`` into ``calls`` when given, raises ``raises`` if
    set, and returns ``returns`` (called with the event's arguments when it is
    callable). ``on_error``, ``timeout_seconds`` and ``match`` act as on a
    configured hook.
    """
    spec = EVENTS[HookEvent(event)]

    def respond(args: tuple[Any, ...]) -> Any:
        if calls is not None:
            calls.append((name, args))
        if raises is not None:
            raise raises
        return returns(*args) if callable(returns) else returns

    async def async_impl(*args: Any) -> Any:
        if delay:
            await asyncio.sleep(delay)
        return respond(args)

    def sync_impl(*args: Any) -> Any:
        if delay:
            time.sleep(delay)
        return respond(args)

    impl: Callable[..., Any] = async_impl if is_async else sync_impl
    impl.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(a, inspect.Parameter.POSITIONAL_OR_KEYWORD) for a in spec.args]
    )
    attrs: dict[str, Any] = {
        "name": name,
        "on_error": on_error,
        "timeout_seconds": timeout_seconds,
        "match": list(match) if match is not None else None,
        spec.event.value: staticmethod(hookimpl(impl)),
        "__repr__": lambda self: f"scripted_hook({name!r}, {spec.event.value})",
    }
    return type("ScriptedHook", (), attrs)()


class Opaque:
    """Wraps a :class:`HookStack` so a dispatcher calls it as one hook instead of
    inlining its members: what the nested = flat law is checked against."""

    def __init__(self, stack: HookStack, name: str = "opaque") -> None:
        self.name = name
        for event in HookEvent:
            setattr(self, event.value, getattr(stack, event.value))
