"""The worker's half of a run that runs elsewhere: hooks, model turns and
tool bodies done for a `RunExecutor` on another process, and what crosses.

A durable runner runs the drive loop in one place (a workflow) and its I/O on
workers. What crosses is JSON: a run's hook context as a `ContextState` (the
scratchpad, session state and diagnostics its hooks may change, which come
back with each answer), a hook dispatch as a `HookCall` answered by a
`HookAnswer`, and a model turn's answer as an `Asked`. `Remote` (from
`Agent.remote`) does each on the worker's agent, with the kernel's own code:
the dispatcher, the model turn with its text guards, the tool body.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import is_dataclass
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ConfigDict, JsonValue, TypeAdapter, ValidationError
from pydantic_core import to_jsonable_python

from .. import flow as F
from .._context import ActionContext, CallInfo, HookContext, Scratchpad
from .._errors import HookError, SeamkitError
from .._events import EVENTS, HookEvent
from .._patch import RequestPatch
from .._secret import Redactor
from .._tool import Tool
from .._types import Diagnostic, Message, ModelRequest, ModelTurn, RunResult, ToolCall, ToolResult
from ._dispatch import Dispatched
from ._drive import Emit, RunPlan, RunState, ask_here
from ._executor import TextStop
from ._release import TextStopped
from ._structured import Structured

__all__ = ["Asked", "ContextState", "HookAnswer", "HookCall", "Remote"]

_FROZEN = ConfigDict(frozen=True, extra="forbid")
_JSON: TypeAdapter[dict[str, JsonValue]] = TypeAdapter(dict[str, JsonValue])


class ContextState(BaseModel):
    """What a run's `seamkit.HookContext` holds that hooks on a worker read
    and change: sent with each call, and back with each answer."""

    model_config = _FROZEN

    run_id: str
    turn: int
    is_streaming: bool
    context_id: str
    context: dict[str, JsonValue]
    """The run's `seamkit.ActionContext` properties (JSON: a `seamkit.Secret` cannot cross)."""
    scratchpad: dict[str, JsonValue]
    session_state: dict[str, JsonValue]
    diagnostics: tuple[Diagnostic, ...]

    @classmethod
    def of(cls, ctx: HookContext) -> ContextState:
        """``ctx`` as it stands; `SeamkitError` naming the place that holds
        something that is not JSON (it cannot cross to a worker)."""
        return cls(
            run_id=ctx.run_id,
            turn=ctx.turn,
            is_streaming=ctx.is_streaming,
            context_id=ctx.action_context.context_id,
            context=_json("the run's context", dict(ctx.action_context)),
            scratchpad=_json("the scratchpad", ctx.scratchpad.snapshot()),
            session_state=_json("the session state", ctx.session_state),
            diagnostics=tuple(ctx.diagnostics),
        )

    def apply_to(self, ctx: HookContext) -> None:
        """Make ``ctx`` hold what the hooks left in this state."""
        pad = ctx.scratchpad
        for key in set(pad.snapshot()) - set(self.scratchpad):
            pad.remove(key)
        for key, value in self.scratchpad.items():
            pad.insert(key, value)
        ctx.session_state.clear()
        ctx.session_state.update(self.session_state)
        ctx.diagnostics[:] = self.diagnostics


def _json(what: str, value: Mapping[str, Any]) -> dict[str, JsonValue]:
    try:
        return _JSON.validate_python(dict(value), strict=True)
    except ValidationError as exc:
        where = ".".join(str(p) for p in exc.errors()[0]["loc"][:1])
        raise SeamkitError(
            f"{what} holds a value that is not JSON (under {where!r}): it cannot cross to a worker",
            hint="keep JSON values there (a Secret stays on the worker: give it in "
            "the manifest or the worker's environment)",
        ) from None


def _state_or(ctx: HookContext, before: ContextState) -> ContextState:
    """``ctx``'s state, or ``before`` when it cannot cross (the failure
    that goes with it already ends the run)."""
    try:
        return ContextState.of(ctx)
    except SeamkitError:
        return before


# --- what crosses: a hook dispatch ---------------------------------------------

_TYPES: dict[str, Any] = {
    "tuple[Message, ...]": tuple[Message, ...],
    "ModelRequest": ModelRequest,
    "str": str,
    "bool": bool,
    "ModelTurn": ModelTurn,
    "ToolCall": ToolCall,
    "ToolResult": ToolResult,
    "tuple[str, ...]": tuple[str, ...],
    "object": JsonValue,
    "RunResult": RunResult,
}
"""The Python type of each argument type the events table spells."""

_ARGS: dict[HookEvent, tuple[TypeAdapter[Any], ...]] = {
    event: tuple(TypeAdapter(_TYPES[t]) for t in tuple(spec.params.values())[1:])
    for event, spec in EVENTS.items()
}
_FLOWS: dict[str, type] = {
    name: kind
    for name in F.__all__
    if is_dataclass(kind := getattr(F, name)) and isinstance(kind, type)
}
_NAMESPACE: dict[str, Any] = {
    "Message": Message,
    "RequestPatch": RequestPatch,
    "ToolCall": ToolCall,
    "ToolResult": ToolResult,
}
"""What the flows' annotations name (`seamkit.flow` imports them for type checkers only)."""


def _flow_adapter(kind: type) -> TypeAdapter[Any]:
    adapter: TypeAdapter[Any] = TypeAdapter(kind)
    adapter.rebuild(_types_namespace=_NAMESPACE)
    return adapter


_FLOW_ADAPTERS: dict[str, TypeAdapter[Any]] = {n: _flow_adapter(k) for n, k in _FLOWS.items()}


def _plain(value: object) -> object:
    """A read-only mapping (a patch's ``additional_params``) as the dict it shows."""
    if isinstance(value, MappingProxyType):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


class HookCall(BaseModel):
    """One event's hooks to run on a worker: the event, its arguments (as
    JSON) and the run's context."""

    model_config = _FROZEN

    event: HookEvent
    args: tuple[JsonValue, ...]
    state: ContextState

    @classmethod
    def of(cls, event: HookEvent, ctx: HookContext, args: tuple[object, ...]) -> HookCall:
        adapters = _ARGS[event]
        data = tuple(a.dump_python(v, mode="json") for a, v in zip(adapters, args, strict=True))
        return cls(event=event, args=data, state=ContextState.of(ctx))

    def arguments(self) -> tuple[object, ...]:
        """The arguments as the hooks take them."""
        return tuple(
            a.validate_python(v) for a, v in zip(_ARGS[self.event], self.args, strict=True)
        )


class HookAnswer(BaseModel):
    """What one event's hooks decided on a worker: the net flow (its type's
    name and fields), the hook that decided, the context they left, or the
    failure of a hook that failed closed."""

    model_config = _FROZEN

    flow: str
    value: JsonValue = None
    hook: str | None = None
    state: ContextState
    failed: str | None = None
    """A hook failed closed: `HookError`'s message (``hook`` names it)."""
    flow_name: str | None = None
    hint: str | None = None

    @classmethod
    def of(cls, decided: Dispatched, ctx: HookContext) -> HookAnswer:
        name = type(decided.flow).__name__
        value = to_jsonable_python(decided.flow, fallback=_plain)
        return cls(flow=name, value=value, hook=decided.hook, state=ContextState.of(ctx))

    def dispatched(self, ctx: HookContext, event: HookEvent) -> Dispatched:
        """The flow as the run takes it, after applying the state to ``ctx``;
        raises the `HookError` of a hook that failed closed."""
        self.state.apply_to(ctx)
        if self.failed is not None:
            raise HookError(
                self.failed,
                hook=self.hook or "?",
                event=event.value,
                flow=self.flow_name,
                hint=self.hint,
            )
        flow = _FLOW_ADAPTERS[self.flow].validate_python(self.value)
        return Dispatched(flow, self.hook)


# --- what crosses: a model turn ------------------------------------------------


class Asked(BaseModel):
    """A model turn asked on a worker: the turn as its text guards released
    it, or the guard's stop, or the run's failure; and the context after."""

    model_config = _FROZEN

    turn: ModelTurn | None = None
    stop_reason: str | None = None
    stop_hook: str | None = None
    released: str = ""
    error: str | None = None
    """Why the turn failed (the model's error, as the run reports it)."""
    state: ContextState

    def answer(self, ctx: HookContext) -> ModelTurn | TextStop:
        """The turn or the stop, after applying the state to ``ctx``; raises
        `SeamkitError` with the failure's text when the model failed."""
        self.state.apply_to(ctx)
        if self.error is not None:
            raise SeamkitError(self.error)
        if self.stop_reason is not None:
            return TextStop(self.stop_reason, self.stop_hook, self.released)
        assert self.turn is not None
        return self.turn


class Remote:
    """A run's hooks, model turns and tool bodies done on this process for a
    `RunExecutor` elsewhere, with this agent's plan (`Agent.remote`)."""

    __slots__ = ("_clock", "_name", "_plan", "_redactor", "_sections", "_structured")

    def __init__(
        self,
        plan: RunPlan,
        redactor: Redactor,
        sections: Mapping[str, BaseModel],
        structured: Callable[[], Structured | None],
    ) -> None:
        self._plan = plan
        self._name = plan.name
        self._clock = plan.clock
        self._redactor = redactor
        self._sections = sections
        self._structured = structured

    def context(self, state: ContextState) -> HookContext:
        """A hook context holding ``state``, on this agent."""
        pad = Scratchpad()
        for key, value in state.scratchpad.items():
            pad.insert(key, value)
        ctx = HookContext(
            run_id=state.run_id,
            agent_name=self._name,
            is_streaming=state.is_streaming,
            action_context=ActionContext(state.context, context_id=state.context_id),
            tools=self._plan.tools,
            clock=self._clock,
            turn=state.turn,
            scratchpad=pad,
            session_state=dict(state.session_state),
            redactor=self._redactor,
            sections=self._sections,
        )
        ctx.diagnostics.extend(state.diagnostics)
        return ctx

    async def dispatch(self, call: HookCall) -> HookAnswer:
        """Run ``call``'s hooks here; what they decided and left."""
        ctx = self.context(call.state)
        try:
            decided = await self._plan.dispatcher.dispatch(call.event, ctx, *call.arguments())
        except HookError as exc:
            return HookAnswer(
                flow="Continue",
                hook=exc.hook,
                state=_state_or(ctx, call.state),
                failed=exc.message,
                flow_name=exc.flow,
                hint=exc.hint,
            )
        try:
            return HookAnswer.of(decided, ctx)
        except SeamkitError as exc:  # a hook left what cannot cross: the run fails, once
            # (raised, the dispatch would be retried: its hooks, and their tools, again)
            return HookAnswer(
                flow="Continue",
                hook=decided.hook,
                state=call.state,
                failed=f"{call.event.value}: {exc.message}",
                hint=exc.hint,
            )

    async def ask(
        self,
        request: ModelRequest,
        state: ContextState,
        emit: Emit | None = None,
    ) -> Asked:
        """One model turn here, its events to ``emit`` (the text as it
        streams, when the run streams) through the run's text guards, as a run
        in process asks it."""
        ctx = self.context(state)
        run = RunState(self._plan, ctx, [], emit, structured=self._structured())
        try:
            turn = await ask_here(run, request)
        except TextStopped as stop:
            return Asked(
                stop_reason=stop.reason,
                stop_hook=stop.hook,
                released=stop.released,
                state=ContextState.of(ctx),
            )
        except SeamkitError as exc:  # (its text may hold a secret: it goes into a record)
            return Asked(error=ctx.redactor(str(exc)), state=_state_or(ctx, state))
        except Exception as exc:  # the model's own failure: the run reports it
            text = ctx.redactor(f"{type(exc).__name__}: {exc}")
            return Asked(error=text, state=_state_or(ctx, state))
        assert isinstance(turn, ModelTurn)
        try:
            return Asked(turn=turn, state=ContextState.of(ctx))
        except SeamkitError as exc:  # a hook left what cannot cross: the run fails, once
            # (raised, the turn would be asked again, its text streamed again)
            return Asked(error=str(exc), state=state)

    async def invoke(
        self,
        call: ToolCall,
        state: ContextState,
        info: CallInfo | None,
        on_chunk: Callable[[str], None] | None = None,
    ) -> ToolResult:
        """``call``'s tool body here (its arguments validated again), its
        result masked of every secret the run knows."""
        tool = self.tool(call.name)
        ctx = self.context(state)
        values = tool.validate(call.arguments)
        result = await tool.invoke(
            values,
            ctx.action_context,
            call_id=call.id,
            agent=self._plan.agent,
            redactor=ctx.redactor,
            on_chunk=on_chunk,
            call_info=info,
        )
        masked = ctx.redactor(result.content)
        return result if masked == result.content else result.model_copy(update={"content": masked})

    def tool(self, name: str) -> Tool:
        """The agent's tool ``name``; `SeamkitError` when this worker has none."""
        found = self._plan.tools.get(name)
        if found is None:
            raise SeamkitError(f"this worker's agent has no tool {name!r}")
        return found
