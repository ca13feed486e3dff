"""The dispatcher: runs the hooks of one event and combines their flows.

The hook list per event is built once: plugin-wide hookimpls from the global
plugin manager in pluggy's call order, then configured hook instances in
manifest order (each only at its own event), then hook objects passed in code.
Whether a hookimpl is async, which arguments it takes and how it is guarded
are all decided then, so a dispatch is a tight loop.
"""

from __future__ import annotations

import asyncio
import fnmatch
import inspect
import logging
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import pluggy

from .. import flow as F
from .._config import HookConfig, OnError
from .._context import HookContext
from .._errors import HookError, PluginError
from .._events import EVENTS, OBSERVER, Composition, HookEvent, hookimpl, hookimpls_of
from .._flowcheck import payload_problem
from .._holding import Held
from .._patch import LAST_WRITER_WINS, RequestPatch
from .._secret import Redactor, secret_texts
from .._types import (
    Diagnostic,
    Message,
    ModelRequest,
    ModelTurn,
    RunResult,
    ToolCall,
    ToolResult,
)
from ..flow import Dispatched
from ..stream import ObservedEvent
from ._lifecycle import INTERRUPTS, stops_the_run

__all__ = [
    "NOTHING",
    "ConfiguredHook",
    "Dispatched",
    "Dispatcher",
    "HookRef",
    "HookStack",
    "Observer",
    "impls_of",
]

log = logging.getLogger("seamkit")

CONTINUE = F.Continue()

Observer = Callable[[HookContext, ObservedEvent], None]
"""A run observer: an ``on_run_event(ctx, event)`` hookimpl."""


NOTHING = Dispatched(CONTINUE)
"""The result of a dispatch in which no hook changed anything."""


@dataclass(frozen=True, slots=True)
class ConfiguredHook:
    """A hook instance built from a manifest entry: dispatched only at its event."""

    config: HookConfig
    hook: object
    name: str


def compile_match(patterns: Sequence[str] | None) -> Callable[[str], object] | None:
    """A matcher for glob patterns on a tool's final name (``None``: match all)."""
    if patterns is None:
        return None
    regex = re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns) or r"(?!)")
    return regex.match


@dataclass(frozen=True, slots=True)
class HookRef:
    """A hook as diagnostics name it, with its time-out, error policy and matcher.

    ``origin`` is ``plugin`` (plugin-wide hookimpl), ``configured`` (a manifest
    entry) or ``code`` (an object passed in code).
    """

    name: str
    origin: str = "code"
    timeout_seconds: float | None = None
    on_error: OnError = "fail"
    match: tuple[str, ...] | None = None
    secrets: tuple[str, ...] = ()
    """Secret texts of the hook's own config, masked in its error messages."""


class _Impl:
    """One hookimpl, prepared for fast calls."""

    __slots__ = ("fn", "is_async", "matcher", "picks", "ref", "simple")

    def __init__(self, fn: Callable[..., Any], ref: HookRef, event: HookEvent) -> None:
        spec_args = EVENTS[event].args
        names = _argnames(fn)
        unknown = [n for n in names if n not in spec_args]
        if unknown:
            raise PluginError(
                f"hook {ref.name!r}: {event.value} takes no argument {unknown[0]!r}",
                hint=f"{event.value} arguments are: {', '.join(spec_args)}",
            )
        self.fn = fn
        self.ref = ref
        self.is_async = inspect.iscoroutinefunction(fn)
        self.picks: tuple[int, ...] | None = (
            None if tuple(names) == spec_args else tuple(spec_args.index(n) for n in names)
        )
        self.matcher = compile_match(ref.match) if EVENTS[event].tool_event else None
        self.simple = not self.is_async and ref.timeout_seconds is None


def _argnames(fn: Callable[..., Any]) -> list[str]:
    params = inspect.signature(fn).parameters.values()
    return [
        p.name
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        and p.default is p.empty
        and p.name != "self"
    ]


def impls_of(obj: object) -> dict[HookEvent, Callable[..., Any]]:
    """The seam hookimpls of a hook object, by event (methods marked ``@hookimpl``)."""
    marked = hookimpls_of(obj)
    return {event: marked[event.value][0] for event in HookEvent if event.value in marked}


def _observer_of(obj: object) -> Observer | None:
    marked = hookimpls_of(obj).get(OBSERVER)
    if marked is None:
        return None
    if inspect.iscoroutinefunction(marked[0]):
        raise PluginError(
            f"{type(obj).__name__}.on_run_event must be a plain function, not async def",
            hint="observers run inline; hand slow work to a queue or a task",
        )
    observer: Observer = marked[0]
    return observer


def _policy_for(event: HookEvent, on_error: OnError) -> OnError:
    return "skip" if event == HookEvent.ON_COMPLETION else on_error


class Dispatcher:
    """Runs each event's hooks with the event's composition mode.

    Build one per agent: ``Dispatcher(plugin_manager, configured, hooks)``.
    The lists are fixed at construction; dispatch never re-reads them.
    """

    def __init__(
        self,
        plugin_manager: pluggy.PluginManager | None = None,
        hooks: Sequence[object] = (),
    ) -> None:
        lists: dict[HookEvent, list[_Impl]] = {e: [] for e in HookEvent}
        observers: list[Observer] = []
        if plugin_manager is not None:
            observers.extend(
                cast(Observer, impl.function) for impl in reversed(_impls(plugin_manager, OBSERVER))
            )
            for event in HookEvent:
                for impl in reversed(_impls(plugin_manager, event.value)):
                    name = plugin_manager.get_name(impl.plugin) or repr(impl.plugin)
                    ref = HookRef(name, "plugin", on_error=_policy_for(event, "fail"))
                    lists[event].append(_Impl(impl.function, ref, event))
        patterns: list[str] = []
        for hook in hooks:
            for event, items in _prepare(hook):
                lists[event].extend(items)
            patterns.extend(_masks(hook))
            observer = None if isinstance(hook, ConfiguredHook | HookStack) else _observer_of(hook)
            if observer is not None:
                observers.append(observer)
            if isinstance(hook, HookStack):
                observers.extend(hook.observers)
        self._lists: dict[HookEvent, tuple[_Impl, ...]] = {e: tuple(v) for e, v in lists.items()}
        self.observers: tuple[Observer, ...] = tuple(observers)
        """The run observers, plugin-wide ones first, in call order."""
        self.redact_patterns: tuple[str, ...] = tuple(dict.fromkeys(patterns))
        """What the hooks ask to be masked wherever the run writes (their
        ``redact_patterns``), as regular expressions."""

    def impls_at(self, event: HookEvent) -> tuple[_Impl, ...]:
        """The prepared hookimpls at ``event`` (what a `HookStack` inlines)."""
        return self._lists[event]

    def hooks_at(self, event: HookEvent) -> tuple[HookRef, ...]:
        """The hooks dispatched at ``event``, in call order."""
        return tuple(i.ref for i in self._lists[HookEvent(event)])

    # --- calling one hookimpl ---------------------------------------------
    #
    # What a hook raises, and what it means (the guide's "When a hook raises";
    # `seamkit._engine._lifecycle.stops_the_run` decides which are moves of the run):
    # - an Exception (a hook's own TimeoutError included) is a hook failure,
    #   handled by its on_error; so is its time-out;
    # - KeyboardInterrupt and SystemExit are the process being asked to stop:
    #   they propagate whatever on_error says (the run ends as cancelled,
    #   on_completion fires, a session is saved, and the run re-raises them);
    # - CancelledError is a cancellation when the task running the hook was
    #   asked to cancel (the run was cancelled, or a time-out expired); raised
    #   otherwise (a hook awaiting something another task cancelled) it is a
    #   hook failure;
    # - GeneratorExit (and any other BaseException) is a hook failure, unless
    #   the coroutine running the hook is itself being closed.

    async def _call(self, impl: _Impl, event: HookEvent, args: tuple[Any, ...]) -> Any:
        picked = args if impl.picks is None else tuple(args[i] for i in impl.picks)
        timeout = impl.ref.timeout_seconds
        scope: asyncio.Timeout | None = None
        task = asyncio.current_task()
        try:
            if timeout is None:
                result = impl.fn(*picked)
                if impl.is_async:
                    result = await result
            else:
                # A time-out is only a time-out when this limit expired: a hook's
                # own TimeoutError is a failure like any other exception.
                async with asyncio.timeout(timeout) as scope:
                    if impl.is_async:
                        result = await impl.fn(*picked)
                    else:
                        result = await asyncio.to_thread(impl.fn, *picked)
        except Exception as exc:
            if scope is not None and scope.expired():
                return self._failed(impl, event, args[0], f"timed out after {timeout:g}s", None)
            if scope is not None and (late := self._blocked(impl, event, args[0], scope)):
                return self._failed(impl, event, args[0], late, None)
            return self._failed(impl, event, args[0], f"{type(exc).__name__}: {exc}", exc)
        except BaseException as exc:
            if stops_the_run(exc, task):
                self._interrupted(impl, event, args[0], exc)
                raise
            return self._failed(impl, event, args[0], _describe(exc), exc)
        late = (
            "" if scope is None or scope.expired() else self._blocked(impl, event, args[0], scope)
        )
        return self._failed(impl, event, args[0], late, None) if late else result

    def _blocked(self, impl: _Impl, event: HookEvent, ctx: Any, scope: asyncio.Timeout) -> str:
        """When a hook outlived its time-out that never fired (an ``async``
        hook that blocked the event loop, so the loop could not cancel it):
        report it (a ``hook_blocked`` diagnostic and a warning) and say what
        the hook's failure is, a time-out; ``""`` when it kept its limit."""
        deadline = scope.when()
        now = asyncio.get_running_loop().time()
        if deadline is None or now <= deadline:
            return ""
        limit = impl.ref.timeout_seconds or 0.0
        took = now - deadline + limit
        name = impl.ref.name
        message = (
            f"hook {name!r} blocked the event loop for {took:.1f}s at {event.value}, so its "
            f"timeout_seconds={limit:g} could not be enforced (an async hook must not make "
            f"blocking calls such as time.sleep)"
        )
        log.warning("%s", message)
        _diagnose(ctx, "hook_blocked", message, event, (name,))
        return f"timed out after {limit:g}s (it blocked the event loop for {took:.1f}s)"

    def _interrupted(self, impl: _Impl, event: HookEvent, ctx: Any, exc: BaseException) -> None:
        """Report a hook that stopped the run by raising KeyboardInterrupt or
        SystemExit (a cancellation passes unreported: the run reports it)."""
        if not isinstance(exc, INTERRUPTS):
            return
        name = impl.ref.name
        message = self._redactor(impl, ctx)(
            f"hook {name!r} raised {_describe(exc)} at {event.value}: the run stops as "
            f"cancelled (unless it had ended) and re-raises it"
        )
        log.warning("%s", message)
        _diagnose(ctx, "hook_interrupted", message, event, (name,))

    def _failed(
        self, impl: _Impl, event: HookEvent, ctx: Any, what: str, exc: BaseException | None
    ) -> Any:
        name = impl.ref.name
        what = self._redactor(impl, ctx)(what)
        if impl.ref.on_error == "fail":
            raise HookError(
                f"hook {name!r} failed at {event.value}: {what}",
                hook=name,
                event=event.value,
                hint="set on_error: skip on the hook to log and go on",
            ) from exc
        log.warning("hook %r failed at %s (skipped): %s", name, event.value, what)
        _diagnose(
            ctx, "hook_skipped", f"hook {name!r} failed and was skipped: {what}", event, (name,)
        )
        return None

    @staticmethod
    def _redactor(impl: _Impl, ctx: Any) -> Redactor:
        """The run's redactor plus the secrets of the hook's own config."""
        redactor = ctx.redactor if isinstance(ctx, HookContext) else Redactor()
        return redactor.extend(impl.ref.secrets)

    @staticmethod
    def _bad_flow(impl: _Impl, event: HookEvent, result: Any) -> HookError:
        flow_name = type(result).__name__
        allowed = ", ".join(t.__name__ for t in EVENTS[event].flows)
        return HookError(
            f"hook {impl.ref.name!r} returned {flow_name} at {event.value}, which accepts "
            f"only {allowed}",
            hook=impl.ref.name,
            event=event.value,
            flow=flow_name,
        )

    @staticmethod
    def _checked(impl: _Impl, event: HookEvent, result: Any) -> type:
        """The type of a flow ``event`` accepts with a well-formed payload;
        raises the `HookError` naming hook, event, flow and field otherwise
        (whatever the hook's ``on_error``: a malformed flow is a bug, as a
        flow the event does not accept is)."""
        kind = type(result)
        if kind not in EVENTS[event].flows:
            raise Dispatcher._bad_flow(impl, event, result)
        problem = payload_problem(result)
        if problem is not None:
            raise HookError(
                f"hook {impl.ref.name!r} returned a malformed {kind.__name__} at "
                f"{event.value}: {problem}",
                hook=impl.ref.name,
                event=event.value,
                flow=kind.__name__,
                hint=f"see seamkit.flow.{kind.__name__} for what it holds",
            )
        return kind

    # --- composition ------------------------------------------------------

    async def dispatch(self, event: HookEvent, ctx: HookContext, *args: object) -> Dispatched:
        """Run ``event``'s hooks with arguments ``(ctx, *args)``; return the net flow."""
        impls = self._lists[event]
        if not impls:
            return NOTHING
        mode = EVENTS[event].composition
        full = (ctx, *args)
        if mode is Composition.FIRST:
            return await self._first(event, impls, full)
        if mode is Composition.CHAIN:
            return await self._chain(event, impls, full)
        if mode is Composition.ACCUMULATE:
            return await self._accumulate(event, impls, full)
        if mode is Composition.HOLD:
            return await self._hold(event, impls, full)
        await self._all(event, impls, full)
        return NOTHING

    @staticmethod
    def _unmatched(impl: _Impl, args: tuple[Any, ...]) -> bool:
        """Whether a hook with ``match`` patterns skips this tool call."""
        return impl.matcher is not None and impl.matcher(args[1].name) is None

    async def _first(
        self, event: HookEvent, impls: tuple[_Impl, ...], args: tuple[Any, ...]
    ) -> Dispatched:
        for impl in impls:
            if self._unmatched(impl, args):
                continue
            result = (
                self._call_simple(impl, event, args)
                if impl.simple
                else await self._call(impl, event, args)
            )
            if result is None:
                continue
            if self._checked(impl, event, result) is not F.Continue:
                return Dispatched(result, impl.ref.name)
        return NOTHING

    async def _chain(
        self, event: HookEvent, impls: tuple[_Impl, ...], args: tuple[Any, ...]
    ) -> Dispatched:
        rewritten: Any = None
        rewriter: str | None = None
        asked: Dispatched | None = None
        current = list(args)
        for impl in impls:
            if self._unmatched(impl, args):
                continue
            call_args = tuple(current)
            result = (
                self._call_simple(impl, event, call_args)
                if impl.simple
                else await self._call(impl, event, call_args)
            )
            if result is None:
                continue
            kind = self._checked(impl, event, result)
            if kind is F.Continue:
                continue
            if kind is F.Skip or kind is F.Terminate or kind is F.Retry:
                return Dispatched(result, impl.ref.name)
            if kind is F.RequireApproval:
                # The first asker is remembered and the chain goes on: a
                # later Skip or Terminate still wins, a RewriteArgs applies.
                if asked is None:
                    asked = Dispatched(result, impl.ref.name)
                if result.arguments is None:
                    continue
            rewritten = result
            # A RewriteOutput replaces the value whole: its last hook alone decided it.
            rewriter = impl.ref.name if kind is F.RewriteOutput else None
            _thread(event, current, result)
        if asked is not None:
            assert type(asked.flow) is F.RequireApproval
            arguments = None if rewritten is None else dict(current[1].arguments)
            return Dispatched(F.RequireApproval(asked.flow.reason, arguments), asked.hook)
        return Dispatched(rewritten, rewriter) if rewritten is not None else NOTHING

    async def _hold(
        self, event: HookEvent, impls: tuple[_Impl, ...], args: tuple[Any, ...]
    ) -> Dispatched:
        ctx, text, final = args
        held = Held.of(text)
        touched = False
        for impl in impls:
            call_args = (ctx, held.text, final)
            result = (
                self._call_simple(impl, event, call_args)
                if impl.simple
                else await self._call(impl, event, call_args)
            )
            if result is None:
                continue
            kind = self._checked(impl, event, result)
            if kind is F.Terminate:
                return Dispatched(result, impl.ref.name)
            if kind is not F.Continue:
                held = held.then(result)
                touched = True
        return Dispatched(held.flow()) if touched else NOTHING

    async def _accumulate(
        self, event: HookEvent, impls: tuple[_Impl, ...], args: tuple[Any, ...]
    ) -> Dispatched:
        merged: RequestPatch | None = None
        writers: dict[str, str] = {}
        narrowers: list[str] = []
        for impl in impls:
            result = (
                await self._call(impl, event, args)
                if not impl.simple
                else (self._call_simple(impl, event, args))
            )
            if result is None:
                continue
            kind = self._checked(impl, event, result)
            if kind is F.Terminate:
                return Dispatched(result, impl.ref.name)
            if kind is F.PatchRequest:
                patch = result.patch
                _note_writers(args[0], event, impl.ref.name, patch, writers, narrowers)
                merged = patch if merged is None else merged | patch
        if merged is None or merged.is_empty():
            return NOTHING
        if merged.active_tools is not None and not merged.active_tools:
            message = "active_tools came out empty: no tool is advertised this turn"
            log.warning("%s (set by %s)", message, ", ".join(narrowers))
            _diagnose(args[0], "active_tools_empty", message, event, tuple(narrowers))
        return Dispatched(F.PatchRequest(merged))

    def _call_simple(self, impl: _Impl, event: HookEvent, args: tuple[Any, ...]) -> Any:
        """Call a plain hookimpl without a time-out inline (the hot path)."""
        try:
            if impl.picks is None:
                return impl.fn(*args)
            return impl.fn(*(args[i] for i in impl.picks))
        except Exception as exc:
            return self._failed(impl, event, args[0], f"{type(exc).__name__}: {exc}", exc)
        except BaseException as exc:
            # Plain code is never cancelled or closed from outside: only
            # KeyboardInterrupt and SystemExit propagate (see _call).
            if isinstance(exc, INTERRUPTS):
                self._interrupted(impl, event, args[0], exc)
                raise
            return self._failed(impl, event, args[0], _describe(exc), exc)

    async def _all(self, event: HookEvent, impls: tuple[_Impl, ...], args: tuple[Any, ...]) -> None:
        for impl in impls:
            try:
                result = await self._call(impl, event, args)
            except HookError as exc:  # a policy cannot fail the run here
                log.warning("%s", exc.message)
                _diagnose(args[0], "hook_skipped", exc.message, event, (impl.ref.name,))
                continue
            except asyncio.CancelledError:
                # on_completion's deadline, or a second cancellation of the run
                message = f"hook {impl.ref.name!r} was cancelled at {event.value}"
                log.warning("%s", message)
                _diagnose(args[0], "hook_cancelled", message, event, (impl.ref.name,))
                raise
            if result is not None and type(result) is not F.Continue:
                message = (
                    f"hook {impl.ref.name!r} returned {type(result).__name__} at "
                    f"{event.value}, which accepts only Continue; ignored"
                )
                log.warning("%s", message)
                _diagnose(args[0], "flow_ignored", message, event, (impl.ref.name,))


def _describe(exc: BaseException) -> str:
    """``Type: message`` of what a hook raised; ``SystemExit(code)`` for an exit."""
    if isinstance(exc, SystemExit):
        return f"SystemExit({exc.code!r})"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _thread(event: HookEvent, current: list[Any], result: Any) -> None:
    """Feed a chained rewrite into the arguments the next hook sees (the
    events table says which argument each rewriting flow replaces)."""
    index = EVENTS[event].threads[type(result)]
    current[index] = result.applied_to(current[index])


def _note_writers(
    ctx: Any,
    event: HookEvent,
    hook: str,
    patch: RequestPatch,
    writers: dict[str, str],
    narrowers: list[str],
) -> None:
    for name in LAST_WRITER_WINS:
        if getattr(patch, name) is None:
            continue
        earlier = writers.get(name)
        if earlier is not None and earlier != hook:
            message = f"hooks {earlier!r} and {hook!r} both set {name}; {hook!r} wins"
            log.warning("%s", message)
            _diagnose(ctx, "patch_conflict", message, event, (earlier, hook))
        writers[name] = hook
    if patch.active_tools is not None:
        narrowers.append(hook)


def _impls(pm: pluggy.PluginManager, spec: str) -> list[pluggy.HookImpl]:
    caller = getattr(pm.hook, spec, None)
    return [] if caller is None else list(caller.get_hookimpls())


def _diagnose(ctx: Any, code: str, message: str, event: HookEvent, hooks: tuple[str, ...]) -> None:
    sink = getattr(ctx, "diagnostics", None)
    if sink is not None:
        sink.append(
            Diagnostic(
                code=code,
                message=message,
                event=event.value,
                hooks=hooks,
                turn=getattr(ctx, "turn", None),
            )
        )


def _masks(hook: object) -> tuple[str, ...]:
    """The ``redact_patterns`` a hook object (a configured entry's, a
    stack's members') asks the run's redactor to mask: regular expressions
    its logs, diagnostics and outcomes never show a match of."""
    if isinstance(hook, HookStack):
        return hook.redact_patterns
    target = hook.hook if isinstance(hook, ConfiguredHook) else hook
    found = getattr(target, "redact_patterns", ())
    if isinstance(found, str) or not isinstance(found, Iterable):
        return ()
    return tuple(p for p in found if isinstance(p, str))


def _prepare(hook: object) -> Iterable[tuple[HookEvent, list[_Impl]]]:
    """The prepared impls of one hook: a configured entry (its event only), a
    stack (its members, flattened), or a hook object (every marked method)."""
    if isinstance(hook, ConfiguredHook):
        yield from _prepare_configured(hook)
        return
    if isinstance(hook, HookStack):
        for event in HookEvent:
            yield event, list(hook.impls_at(event))
        return
    found = impls_of(hook)
    if not found and _observer_of(hook) is None:
        raise PluginError(
            f"{type(hook).__name__} has no method marked @seamkit.hookimpl for any event",
            hint="mark methods named after events, e.g. on_pre_llm, with @seamkit.hookimpl",
        )
    name = str(getattr(hook, "name", None) or type(hook).__name__)
    timeout = getattr(hook, "timeout_seconds", None)
    on_error: OnError = getattr(hook, "on_error", None) or "fail"
    match = getattr(hook, "match", None)
    for event, method in found.items():
        ref = HookRef(
            name,
            "code",
            timeout_seconds=timeout,
            on_error=_policy_for(event, on_error),
            match=tuple(match) if match is not None else None,
        )
        yield event, [_Impl(method, ref, event)]


def _prepare_configured(entry: ConfiguredHook) -> Iterable[tuple[HookEvent, list[_Impl]]]:
    config = entry.config
    event = HookEvent(config.event)
    if isinstance(entry.hook, HookStack):
        yield event, list(entry.hook.impls_at(event))
        return
    method = impls_of(entry.hook).get(event)
    if method is None:
        raise PluginError(
            f"hook {entry.name!r} ({config.kind}) is configured on {event.value}, but "
            f"{type(entry.hook).__name__} has no {event.value} method marked @seamkit.hookimpl",
            hint="the kind's factory must return an object with a hookimpl for the event",
        )
    ref = HookRef(
        entry.name,
        "configured",
        timeout_seconds=config.timeout_seconds,
        on_error=config.error_policy,
        match=tuple(config.match) if config.match is not None else None,
        secrets=tuple(secret_texts(config)),
    )
    yield event, [_Impl(method, ref, event)]


class HookStack:
    """Several hooks combined into one; a stack behaves exactly as its members
    inlined (nested = flat).

    Pass hook objects (anything with ``@seamkit.hookimpl`` methods named after
    events), other stacks, or :class:`ConfiguredHook` entries. Used as a hook,
    each event method returns the stack's net flow.
    """

    def __init__(self, hooks: Sequence[object] = (), *, name: str | None = None) -> None:
        self.name = name or "HookStack"
        self._dispatcher = Dispatcher(hooks=hooks)

    def impls_at(self, event: HookEvent) -> tuple[_Impl, ...]:
        """The members' prepared hookimpls at ``event``, flattened."""
        return self._dispatcher.impls_at(event)

    @property
    def observers(self) -> tuple[Observer, ...]:
        """The members' run observers."""
        return self._dispatcher.observers

    @property
    def redact_patterns(self) -> tuple[str, ...]:
        """What the members ask the run's redactor to mask."""
        return self._dispatcher.redact_patterns

    async def dispatch(self, event: HookEvent, ctx: HookContext, *args: object) -> Dispatched:
        """Run the stack's hooks at ``event``; the net flow and the deciding hook."""
        return await self._dispatcher.dispatch(HookEvent(event), ctx, *args)

    async def _net(self, event: HookEvent, ctx: HookContext, *args: object) -> Any:
        flow = (await self._dispatcher.dispatch(event, ctx, *args)).flow
        return None if type(flow) is F.Continue else flow

    @hookimpl
    async def on_request_start(
        self, ctx: HookContext, messages: tuple[Message, ...]
    ) -> F.RequestStartFlow:
        """Net flow of the members at ``on_request_start``."""
        flow: F.RequestStartFlow = await self._net(HookEvent.ON_REQUEST_START, ctx, messages)
        return flow

    @hookimpl
    async def on_pre_llm(self, ctx: HookContext, request: ModelRequest) -> F.PreLlmFlow:
        """Net flow of the members at ``on_pre_llm``."""
        flow: F.PreLlmFlow = await self._net(HookEvent.ON_PRE_LLM, ctx, request)
        return flow

    @hookimpl
    async def on_text_delta(self, ctx: HookContext, text: str, final: bool) -> F.TextDeltaFlow:
        """Net flow of the members at ``on_text_delta``."""
        flow: F.TextDeltaFlow = await self._net(HookEvent.ON_TEXT_DELTA, ctx, text, final)
        return flow

    @hookimpl
    async def on_model_turn_finished(
        self, ctx: HookContext, turn: ModelTurn
    ) -> F.ModelTurnFinishedFlow:
        """Net flow of the members at ``on_model_turn_finished``."""
        flow: F.ModelTurnFinishedFlow = await self._net(HookEvent.ON_MODEL_TURN_FINISHED, ctx, turn)
        return flow

    @hookimpl
    async def on_pre_tool_use(self, ctx: HookContext, call: ToolCall) -> F.PreToolUseFlow:
        """Net flow of the members at ``on_pre_tool_use``."""
        flow: F.PreToolUseFlow = await self._net(HookEvent.ON_PRE_TOOL_USE, ctx, call)
        return flow

    @hookimpl
    async def on_post_tool_use(
        self, ctx: HookContext, call: ToolCall, result: ToolResult
    ) -> F.PostToolUseFlow:
        """Net flow of the members at ``on_post_tool_use``."""
        flow: F.PostToolUseFlow = await self._net(HookEvent.ON_POST_TOOL_USE, ctx, call, result)
        return flow

    @hookimpl
    async def on_invalid_tool_call(
        self, ctx: HookContext, call: ToolCall, error: str, available_tools: tuple[str, ...]
    ) -> F.InvalidToolCallFlow:
        """Net flow of the members at ``on_invalid_tool_call``."""
        flow: F.InvalidToolCallFlow = await self._net(
            HookEvent.ON_INVALID_TOOL_CALL, ctx, call, error, available_tools
        )
        return flow

    @hookimpl
    async def on_iteration_end(
        self, ctx: HookContext, messages: tuple[Message, ...]
    ) -> F.IterationEndFlow:
        """Net flow of the members at ``on_iteration_end``."""
        flow: F.IterationEndFlow = await self._net(HookEvent.ON_ITERATION_END, ctx, messages)
        return flow

    @hookimpl
    async def on_output(self, ctx: HookContext, output: object) -> F.OutputFlow:
        """Net flow of the members at ``on_output``."""
        flow: F.OutputFlow = await self._net(HookEvent.ON_OUTPUT, ctx, output)
        return flow

    @hookimpl
    async def on_completion(self, ctx: HookContext, result: RunResult) -> F.CompletionFlow:
        """Run every member at ``on_completion``."""
        flow: F.CompletionFlow = await self._net(HookEvent.ON_COMPLETION, ctx, result)
        return flow

    def __repr__(self) -> str:
        return f"HookStack({self.name!r})"
