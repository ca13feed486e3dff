"""Agent-level helpers for tests: build an agent from a dict manifest with
plugins registered in-process, play a script, record every hook call."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._context import HookContext
from .._engine._agent import Agent
from .._errors import PluginError
from .._events import EVENTS, EventSpec, hookimpl
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
    args: tuple[object, ...]


class Recorder:
    """A pass-through hook that records every event it sees, in order.

    Pass it in ``hooks=[...]``; read ``calls`` (`HookCall` records) or
    ``events`` (their event names). It has a hookimpl for every event of the
    kernel's events table, taking exactly the event's arguments.
    """

    name = "recorder"

    def __init__(self) -> None:
        self.calls: list[HookCall] = []

    @property
    def events(self) -> list[str]:
        """The event names, in call order."""
        return [c.event for c in self.calls]


def _recording(spec: EventSpec) -> Callable[..., None]:
    """The `Recorder` method of one event: records it, returns ``None``."""

    def see(self: Recorder, ctx: HookContext, *args: object) -> None:
        self.calls.append(HookCall(spec.event.value, ctx.turn, ctx.is_streaming, args))

    see.__name__ = see.__qualname__ = spec.event.value
    see.__doc__ = f"Record ``{spec.event.value}``."
    see.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD)
            for name in ("self", *spec.args)
        ]
    )
    return hookimpl(see)


for _spec in EVENTS.values():
    setattr(Recorder, _spec.event.value, _recording(_spec))


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
