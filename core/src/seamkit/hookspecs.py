"""The pluggy hookspecs of seamkit.

One hookspec per :class:`seamkit.HookEvent` (named as the event's value, with
exactly the argument names and types of the kernel's events table, and
returning the event's `seamkit.flow` alias; an impl may take fewer arguments), plus the
registration hookspecs through which plugins add kinds, providers, manifest
sections, session stores and commands, and the run observer ``on_run_event``.
A seam hookimpl may be a plain function or ``async def``; returning ``None``
means Continue.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING

from ._events import hookspec

if TYPE_CHECKING:
    import click

    from . import flow as F
    from ._context import HookContext
    from ._registry import (
        RegisterHookKind,
        RegisterModel,
        RegisterRefreshCondition,
        RegisterSection,
        RegisterStore,
        RegisterToolKind,
    )
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
    "on_text_delta",
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
def on_request_start(
    ctx: HookContext, messages: tuple[Message, ...]
) -> F.RequestStartFlow | Awaitable[F.RequestStartFlow]:
    """Once per run, before the first model call. Chain: Continue, RewriteMessages,
    Terminate."""


@hookspec
def on_pre_llm(ctx: HookContext, request: ModelRequest) -> F.PreLlmFlow | Awaitable[F.PreLlmFlow]:
    """Before every model call. Accumulate: Continue, PatchRequest, Terminate."""


@hookspec
def on_model_turn_finished(
    ctx: HookContext, turn: ModelTurn
) -> F.ModelTurnFinishedFlow | Awaitable[F.ModelTurnFinishedFlow]:
    """Once per accepted model turn. First non-Continue: Continue, Terminate."""


@hookspec
def on_pre_tool_use(
    ctx: HookContext, call: ToolCall
) -> F.PreToolUseFlow | Awaitable[F.PreToolUseFlow]:
    """Before a tool body runs (RequireApproval: it waits for a person's
    decision). Chain: Continue, RewriteArgs, Skip, Terminate, RequireApproval."""


@hookspec
def on_text_delta(
    ctx: HookContext, text: str, final: bool
) -> F.TextDeltaFlow | Awaitable[F.TextDeltaFlow]:
    """Before the model's text is released: ``text`` is what is not released
    yet (what arrived since the last release, and what guards held);
    ``final`` at the end of the turn, when nothing may be held. Tool-call
    argument texts come one by one, each whole and ``final``. Chain:
    Continue, Hold, RewriteText, Terminate."""


@hookspec
def on_post_tool_use(
    ctx: HookContext, call: ToolCall, result: ToolResult
) -> F.PostToolUseFlow | Awaitable[F.PostToolUseFlow]:
    """After a tool ran. Chain: Continue, RewriteResult, Terminate."""


@hookspec
def on_invalid_tool_call(
    ctx: HookContext, call: ToolCall, error: str, available_tools: tuple[str, ...]
) -> F.InvalidToolCallFlow | Awaitable[F.InvalidToolCallFlow]:
    """For an unknown tool or bad arguments. First non-Continue: Continue, Retry,
    Repair, Skip, Terminate, Fail."""


@hookspec
def on_iteration_end(
    ctx: HookContext, messages: tuple[Message, ...]
) -> F.IterationEndFlow | Awaitable[F.IterationEndFlow]:
    """After a turn's tool batch is committed. First non-Continue: Continue, Terminate."""


@hookspec
def on_output(ctx: HookContext, output: object) -> F.OutputFlow | Awaitable[F.OutputFlow]:
    """Before a run with a declared output completes: ``output`` is the
    answer's validated value (an instance of the declared type), or what an
    earlier hook's ``RewriteOutput`` returned. The value the hooks leave is
    written as JSON and validated again, whole; a ``Retry`` tells the model
    its feedback and counts toward the output's ``retries``. Chain:
    Continue, RewriteOutput, Retry, Terminate."""


@hookspec
def on_completion(
    ctx: HookContext, result: RunResult
) -> F.CompletionFlow | Awaitable[F.CompletionFlow]:
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
def register_hook_kinds(register: RegisterHookKind) -> None:
    """Add hook kinds: ``register(config_model, factory, events={...})`` per kind
    (``shared=True``: one instance serves every event of a manifest entry)."""


@hookspec
def register_refresh_conditions(register: RegisterRefreshCondition) -> None:
    """Add refresh-condition kinds: ``register(config_model)`` per kind."""


@hookspec
def register_tool_kinds(register: RegisterToolKind) -> None:
    """Add tool kinds: ``register(config_model, resolve)`` per kind."""


@hookspec
def register_models(register: RegisterModel) -> None:
    """Add model providers: ``register(prefix, factory, config=ConfigModel)``
    per provider; ``factory(config, build)`` returns the `Model`."""


@hookspec
def register_manifest_sections(register: RegisterSection) -> None:
    """Add top-level manifest sections: ``register(key, config_model)`` each."""


@hookspec
def register_session_stores(register: RegisterStore) -> None:
    """Add session-store URL schemes: ``register(scheme, factory)``, where
    ``factory(url)`` returns a `seamkit.SessionStore`."""


@hookspec
def register_commands(cli: click.Group) -> None:
    """Add subcommands to the ``seamkit`` command (``cli.add_command(...)``)."""
