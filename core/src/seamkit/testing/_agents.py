"""Agent-level helpers for tests: build an agent from a dict manifest with
plugins registered in-process, play a script, record every hook call."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._engine._agent import Agent
from .._errors import PluginError
from .._events import HookEvent, hookimpl
from .._scripted import ScriptedModel
from .._types import RunResult
from ..plugins import PluginInfo, add_plugin, load_plugins
from ..stream import RunFinished

__all__ = ["Recorder", "StreamedRun", "build_agent", "stream_run"]


@dataclass(frozen=True, slots=True)
class HookCall:
    """One hook call a `Recorder` saw: the event, the run's turn and streaming
    flag, and the event's arguments (without ``ctx``)."""

    event: str
    turn: int
    is_streaming: bool
    args: tuple[Any, ...]


class Recorder:
    """A pass-through hook that records every event it sees, in order.

    Pass it in ``hooks=[...]``; read ``calls`` (`HookCall` records) or
    ``events`` (their event names).
    """

    name = "recorder"

    def __init__(self) -> None:
        self.calls: list[HookCall] = []

    def _see(self, event: HookEvent, ctx: Any, *args: Any) -> None:
        self.calls.append(HookCall(event.value, ctx.turn, ctx.is_streaming, args))

    @property
    def events(self) -> list[str]:
        """The event names, in call order."""
        return [c.event for c in self.calls]

    @hookimpl
    def on_request_start(self, ctx: Any, messages: Any) -> None:
        self._see(HookEvent.ON_REQUEST_START, ctx, messages)

    @hookimpl
    def on_pre_llm(self, ctx: Any, request: Any) -> None:
        self._see(HookEvent.ON_PRE_LLM, ctx, request)

    @hookimpl
    def on_model_turn_finished(self, ctx: Any, turn: Any) -> None:
        self._see(HookEvent.ON_MODEL_TURN_FINISHED, ctx, turn)

    @hookimpl
    def on_pre_tool_use(self, ctx: Any, call: Any) -> None:
        self._see(HookEvent.ON_PRE_TOOL_USE, ctx, call)

    @hookimpl
    def on_post_tool_use(self, ctx: Any, call: Any, result: Any) -> None:
        self._see(HookEvent.ON_POST_TOOL_USE, ctx, call, result)

    @hookimpl
    def on_invalid_tool_call(self, ctx: Any, call: Any, error: Any, available_tools: Any) -> None:
        self._see(HookEvent.ON_INVALID_TOOL_CALL, ctx, call, error, available_tools)

    @hookimpl
    def on_iteration_end(self, ctx: Any, messages: Any) -> None:
        self._see(HookEvent.ON_ITERATION_END, ctx, messages)

    @hookimpl
    def on_completion(self, ctx: Any, result: Any) -> None:
        self._see(HookEvent.ON_COMPLETION, ctx, result)


async def build_agent(
    manifest: Mapping[str, Any],
    *,
    plugins: Iterable[object] = (),
    script: Sequence[Mapping[str, Any]] | None = None,
    tools: Iterable[Any] = (),
    hooks: Sequence[object] = (),
    **options: Any,
) -> Agent:
    """An agent from a dict manifest, with ``plugins`` (modules or objects
    with hookimpls) registered in-process on a fresh registry, next to the
    kernel's built-ins but without the installed entry points.

    ``script`` (a list of scripted turns) replaces the manifest's model, and
    ``model`` may be left out of the manifest then. ``options`` go to
    :meth:`seamkit.Agent.load` (``clock``, say).
    """
    registry = load_plugins(entry_points=[])
    for index, plugin in enumerate(plugins):
        name = getattr(plugin, "__name__", None) or f"{type(plugin).__name__}-{index}"
        add_plugin(registry, plugin, PluginInfo(name=name, module=name))
        if registry.plugins[name].error:
            raise PluginError(f"plugin {name!r}: {registry.plugins[name].error}", plugin=name)
    data = dict(manifest)
    model: Any = None
    if script is not None:
        model = ScriptedModel([dict(turn) for turn in script])
        data.setdefault("model", "scripted:inline")
    data.setdefault("name", "test-agent")
    return await Agent.load(
        data, tools=tools, hooks=hooks, model=model, registry=registry, **options
    )


@dataclass(slots=True)
class StreamedRun:
    """What :func:`stream_run` collected: every event and the result."""

    events: list[Any] = field(default_factory=list)
    result: RunResult | None = None

    def of(self, kind: type) -> list[Any]:
        """The events of one type, in order."""
        return [e for e in self.events if isinstance(e, kind)]


async def stream_run(agent: Agent, input: Any, **options: Any) -> StreamedRun:
    """Stream one run to the end and collect its events."""
    out = StreamedRun()
    async for event in agent.stream(input, **options):
        out.events.append(event)
        if isinstance(event, RunFinished):
            out.result = event.result
    return out
