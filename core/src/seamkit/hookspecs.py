"""The pluggy hookspecs of seamkit.

One hookspec per :class:`seamkit.HookEvent` (named as the event's value, with
exactly the design's argument names; an impl may take fewer), plus the
registration hookspecs through which plugins add kinds, providers, manifest
sections, session stores and commands, and the run observer ``on_run_event``.
A seam hookimpl may be a plain function or ``async def``; returning ``None``
means Continue.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._events import hookspec

if TYPE_CHECKING:
    import click

    from ._context import HookContext
    from ._types import Message, ModelRequest, ModelTurn, RunResult, ToolCall, ToolResult
    from .stream import ObservedEvent

__all__ = [
    "on_completion",
    "on_invalid_tool_call",
    "on_iteration_end",
    "on_model_turn_finished",
    "on_post_tool_use",
    "on_pre_llm",
    "on_pre_tool_use",
    "on_request_start",
    "on_run_event",
    "register_commands",
    "register_hook_kinds",
    "register_manifest_sections",
    "register_models",
    "register_refresh_conditions",
    "register_session_stores",
    "register_tool_kinds",
]

# --- the seams -------------------------------------------------------------


@hookspec
def on_request_start(ctx: HookContext, messages: tuple[Message, ...]) -> Any:
    """Once per run, before the first model call. Chain: Continue, RewriteMessages,
    Terminate."""


@hookspec
def on_pre_llm(ctx: HookContext, request: ModelRequest) -> Any:
    """Before every model call. Accumulate: Continue, PatchRequest, Terminate."""


@hookspec
def on_model_turn_finished(ctx: HookContext, turn: ModelTurn) -> Any:
    """Once per accepted model turn. First non-Continue: Continue, Terminate."""


@hookspec
def on_pre_tool_use(ctx: HookContext, call: ToolCall) -> Any:
    """Before a tool body runs. Chain: Continue, RewriteArgs, Skip, Terminate."""


@hookspec
def on_post_tool_use(ctx: HookContext, call: ToolCall, result: ToolResult) -> Any:
    """After a tool ran. Chain: Continue, RewriteResult, Terminate."""


@hookspec
def on_invalid_tool_call(
    ctx: HookContext, call: ToolCall, error: str, available_tools: tuple[str, ...]
) -> Any:
    """For an unknown tool or bad arguments. First non-Continue: Continue, Retry,
    Repair, Skip, Terminate, Fail."""


@hookspec
def on_iteration_end(ctx: HookContext, messages: tuple[Message, ...]) -> Any:
    """After a turn's tool batch is committed. First non-Continue: Continue, Terminate."""


@hookspec
def on_completion(ctx: HookContext, result: RunResult) -> Any:
    """Once at the end, whatever the outcome. All run: Continue only."""


# --- observing --------------------------------------------------------------


@hookspec
def on_run_event(ctx: HookContext, event: ObservedEvent) -> None:
    """Every event of a run, in ``run`` and ``stream`` alike (`seamkit.stream`):
    what the stream yields plus `RunStarted`, `ModelCallStarted`/`Ended` and
    `ToolExecutionEnd`. Called inline on the event loop: keep it quick and
    never block; it cannot change the run, and an exception it raises is
    logged and ignored. Must be a plain function (not ``async def``)."""


# --- registration ----------------------------------------------------------


@hookspec
def register_hook_kinds(register: Callable[..., None]) -> None:
    """Add hook kinds: ``register(config_model, factory, events={...})`` per kind."""


@hookspec
def register_refresh_conditions(register: Callable[..., None]) -> None:
    """Add refresh-condition kinds: ``register(config_model)`` per kind."""


@hookspec
def register_tool_kinds(register: Callable[..., None]) -> None:
    """Add tool kinds: ``register(config_model, resolve)`` per kind."""


@hookspec
def register_models(register: Callable[..., None]) -> None:
    """Add model providers: ``register(prefix, factory, config=ConfigModel)``
    per provider; ``factory(config, build)`` returns the `Model`."""


@hookspec
def register_manifest_sections(register: Callable[..., None]) -> None:
    """Add top-level manifest sections: ``register(key, config_model)`` each."""


@hookspec
def register_session_stores(register: Callable[..., None]) -> None:
    """Add session-store URL schemes: ``register(scheme, factory)``, where
    ``factory(url)`` returns a `seamkit.SessionStore`."""


@hookspec
def register_commands(cli: click.Group) -> None:
    """Add subcommands to the ``seamkit`` command (``cli.add_command(...)``)."""
