"""`Agent`: a model, tools and hooks, and the runs made with them."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack
from datetime import datetime
from os import PathLike
from pathlib import Path
from typing import Any

from ._app import AppConfig, Settings
from ._context import ActionContext, HookContext, system_clock
from ._dispatch import ConfiguredHook, Dispatcher
from ._drive import RunState, drive
from ._errors import ManifestError, Problem, SeamkitError
from ._events import HookEvent
from ._messages import Message
from ._model import Model, resolve_model
from ._results import ModelRequest, RunResult
from ._toolmap import ToolMap, resolve_tools
from .stream import Event

__all__ = ["Agent"]

Input = str | Message | Sequence[Message]


class Agent:
    """A model, its tools and its hooks: the thing that runs requests.

    Build it in code, ``Agent(model=..., tools=[...], hooks=[...])``, or from
    a manifest with ``await Agent.load(path_or_config)``. Use ``async with
    agent:`` (or ``await agent.aclose()``) to close what tool kinds opened.
    One agent serves any number of runs, concurrent ones included.
    """

    def __init__(
        self,
        model: Model | str,
        *,
        name: str = "agent",
        preamble: str | None = None,
        tools: Iterable[Any] = (),
        hooks: Sequence[object] = (),
        settings: Settings | Mapping[str, Any] | None = None,
        clock: Callable[[], datetime] | None = None,
        plugin_hooks: bool = True,
        registry: Any = None,
        base_dir: str | PathLike[str] | None = None,
    ) -> None:
        from ._loader import get_registry

        self.registry = registry if registry is not None else get_registry()
        self.name = name
        self.preamble = preamble
        self.settings = (
            settings if isinstance(settings, Settings) else Settings(**dict(settings or {}))
        )
        self.clock = clock if clock is not None else system_clock
        self.base_dir = Path(base_dir) if base_dir is not None else None
        self.config: AppConfig | None = None
        self.exit_stack = AsyncExitStack()
        """Where tool kinds register what ``async with agent`` closes."""
        self.model: Model = resolve_model(model, registry=self.registry, base_dir=self.base_dir)
        self._plugin_hooks = plugin_hooks
        self._set_tools(ToolMap.of(tools))
        self._set_hooks(list(hooks))

    # --- building -------------------------------------------------------------

    @classmethod
    async def load(
        cls,
        source: AppConfig | str | PathLike[str] | Mapping[str, Any],
        *,
        tools: Iterable[Any] = (),
        hooks: Sequence[object] = (),
        model: Model | str | None = None,
        clock: Callable[[], datetime] | None = None,
        registry: Any = None,
    ) -> Agent:
        """Build an agent from a manifest (a path, a dict or an `AppConfig`).

        Awaits every tool kind's ``resolve`` and builds every configured hook.
        ``tools`` and ``hooks`` add code tools and hooks; ``model`` replaces
        the manifest's model. Raises :class:`seamkit.ManifestError` listing
        every problem, each naming its manifest entry.
        """
        app = source if isinstance(source, AppConfig) else AppConfig.load(source, registry=registry)
        base_dir = Path(app.source).resolve().parent if app.source else None
        from ._loader import get_registry
        from ._toolmap import locate_problems

        registry = registry if registry is not None else get_registry()
        problems: list[Problem] = []
        try:
            built = resolve_model(
                model if model is not None else app.model, registry=registry, base_dir=base_dir
            )
        except SeamkitError as exc:
            problems.append(Problem(("model",), exc.message, exc.hint))
            built = _UNBUILT
        agent = cls(
            built,
            name=app.name,
            preamble=app.preamble,
            settings=app.settings,
            clock=clock,
            registry=registry,
            base_dir=base_dir,
        )
        agent.config = app
        try:
            try:
                agent._set_tools(
                    await resolve_tools(app, tools=tools, agent=agent, registry=registry)
                )
            except ManifestError as exc:
                problems.extend(exc.problems)
            else:  # hooks look their tools up: build them only on a whole tool map
                try:
                    configured = await agent._configured_hooks(app)
                    agent._set_hooks([*configured, *hooks])
                except ManifestError as exc:
                    problems.extend(exc.problems)
            if problems:
                raise ManifestError(locate_problems(problems, app), source=app.source)
        except BaseException:
            await agent.aclose()
            raise
        return agent

    async def _configured_hooks(self, app: AppConfig) -> list[ConfiguredHook]:
        problems: list[Problem] = []
        built: list[ConfiguredHook] = []
        for index, config in enumerate(app.hooks):
            kind = self.registry.kind("hook", config.kind)
            name = config.name or f"{config.kind}@hooks[{index}]"
            try:
                if kind is None or kind.factory is None:
                    raise SeamkitError(f"no hook kind {config.kind!r} is installed")
                hook = kind.factory(config, self)
                if inspect.isawaitable(hook):
                    hook = await hook
            except SeamkitError as exc:
                problems.append(Problem(("hooks", index), exc.message, exc.hint))
                continue
            except Exception as exc:
                problems.append(
                    Problem(
                        ("hooks", index),
                        f"hook kind {config.kind!r} could not build this hook: "
                        f"{type(exc).__name__}: {exc}",
                    )
                )
                continue
            built.append(ConfiguredHook(config, hook, name))
        if problems:
            from ._toolmap import locate_problems

            raise ManifestError(locate_problems(problems, app), source=app.source)
        return built

    def _set_tools(self, tools: ToolMap) -> None:
        self.tools = tools
        self._specs = tuple(t.spec for t in tools.values())

    def _set_hooks(self, hooks: list[object]) -> None:
        pm = self.registry.plugin_manager if self._plugin_hooks else None
        self._dispatcher = Dispatcher(pm, hooks)
        self._hooked_events = frozenset(e for e in HookEvent if self._dispatcher.hooks_at(e))

    def hooks_at(self, event: HookEvent | str) -> tuple[str, ...]:
        """The names of the hooks at ``event``, in call order."""
        return tuple(r.name for r in self._dispatcher.hooks_at(HookEvent(event)))

    async def aclose(self) -> None:
        """Close what the tool kinds opened (idempotent)."""
        await self.exit_stack.aclose()

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"Agent({self.name!r}, tools={list(self.tools)})"

    # --- running --------------------------------------------------------------

    def _start(
        self,
        input: Input,
        context: ActionContext | Mapping[str, Any] | None,
        history: Sequence[Message],
        streaming: bool,
        emit: Callable[[Event], None] | None,
    ) -> RunState:
        if context is None or isinstance(context, ActionContext):
            action_context = context if context is not None else ActionContext()
        else:
            action_context = ActionContext(context)
        ctx = HookContext(
            agent_name=self.name,
            is_streaming=streaming,
            action_context=action_context,
            tools=self.tools,
            clock=self.clock,
        )
        return RunState(self, ctx, [*_answer_dangling(history), *_messages(input)], emit)

    async def _execute(
        self,
        input: Input,
        context: ActionContext | Mapping[str, Any] | None,
        history: Sequence[Message],
        session: str | None,
        store: Any,
        streaming: bool,
        emit: Callable[[Event], None] | None,
    ) -> RunResult:
        if session is None:
            return await drive(self._start(input, context, history, streaming, emit))
        from ._sessions import SessionStore

        store = store if store is not None else SessionStore()
        async with store.hold(session, wait_seconds=self.settings.session_wait_seconds):
            stored = store.load(session)
            run = self._start(input, context, [*stored, *history], streaming, emit)
            try:
                return await drive(run)
            finally:
                # Whatever the outcome (cancelled included), the run's whole
                # transcript replaces the stored one: no message is lost.
                store.save(session, run.transcript)

    async def run(
        self,
        input: Input,
        *,
        context: ActionContext | Mapping[str, Any] | None = None,
        history: Sequence[Message] = (),
        session: str | None = None,
        store: Any = None,
    ) -> RunResult:
        """Run one request to the end and return its `RunResult`.

        ``input`` is the user's text, a message or messages; ``history`` goes
        before it. ``context`` is the run's `ActionContext` (a mapping is
        wrapped). With ``session``, the stored transcript of that session (in
        ``store``, a `SessionStore`, by default the user's) goes first, and
        the run's transcript replaces it at the end; runs on one session take
        turns, and one that waits longer than ``settings.session_wait_seconds``
        raises `SessionBusy`. A failing model, tool or hook never raises here:
        the outcome says what happened. Cancelling the task ends the run as
        ``cancelled`` (``on_completion`` fires) and re-raises.
        """
        return await self._execute(input, context, history, session, store, False, None)

    async def stream(
        self,
        input: Input,
        *,
        context: ActionContext | Mapping[str, Any] | None = None,
        history: Sequence[Message] = (),
        session: str | None = None,
        store: Any = None,
    ) -> AsyncIterator[Event]:
        """Run one request, yielding `seamkit.stream` events; the last is
        `RunFinished` with the `RunResult`. Same arguments as :meth:`run`.
        Closing the iterator early cancels the run cleanly."""
        queue: asyncio.Queue[Any] = asyncio.Queue()
        done = object()
        task = asyncio.ensure_future(
            self._execute(input, context, history, session, store, True, queue.put_nowait)
        )
        task.add_done_callback(lambda _: queue.put_nowait(done))
        try:
            while True:
                item = await queue.get()
                if item is done:
                    break
                yield item
            await task
        finally:
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    def run_sync(self, input: Input, **options: Any) -> RunResult:
        """:meth:`run` for scripts: runs its own event loop."""
        return asyncio.run(self.run(input, **options))


class _Unbuilt:
    """Stands in for a model that could not be built while the rest of a
    manifest is checked; never run."""

    async def complete(self, request: ModelRequest) -> Any:
        raise SeamkitError("this agent's model could not be built")

    async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
        raise SeamkitError("this agent's model could not be built")
        yield  # pragma: no cover


_UNBUILT: Any = _Unbuilt()


UNANSWERED = "Not run: the previous run ended before this call was answered."


def _answer_dangling(history: Sequence[Message]) -> list[Message]:
    """``history`` with a tool message for each call its last model turn left
    unanswered (a run that a hook stopped mid-batch ends that way), so that
    the next request is one every OpenAI-compatible API accepts."""
    out = list(history)
    answered: set[str] = set()
    for message in reversed(out):
        if message.role == "tool":
            answered.add(message.tool_call_id or "")
            continue
        if message.role == "assistant" and message.tool_calls:
            out.extend(
                Message.tool(call.id, UNANSWERED)
                for call in message.tool_calls
                if call.id not in answered
            )
        break
    return out


def _messages(input: Input) -> list[Message]:
    if isinstance(input, str):
        return [Message.user(input)]
    if isinstance(input, Message):
        return [input]
    return list(input)
