"""`Agent`: a model, tools and hooks, and the runs made with them."""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import datetime, timedelta
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from .._approval import Decisions, PendingCall
from .._client import ClientResults, client_results, client_specs
from .._config import ModelConfig, Settings
from .._context import ActionContext, HookContext, system_clock
from .._errors import (
    ManifestError,
    OutputDefinitionError,
    Problem,
    ResumeError,
    SessionNotSaved,
)
from .._events import HookEvent
from .._loader import get_registry
from .._output import Output
from .._patch import RequestPatch
from .._persistence._journal import JournalEntry, JournalStore
from .._persistence._recovery import save_or_recover
from .._persistence._sessions import SessionStore, StoredSession
from .._registry import BuildContext, Registry
from .._secret import Redactor, secret_texts
from .._tool import Tool
from .._toolmap import ToolMap
from .._types import Cancelled, Diagnostic, Message, Model, RunResult, Suspended, ToolSpec
from ..stream import Event
from ._dispatch import Dispatcher, Observer
from ._drive import RunPlan, RunState, drive, emitter
from ._executor import RunExecutor
from ._journaling import RunJournal
from ._lifecycle import INTERRUPTS, Interrupt, to_its_end
from ._parts import (
    ToolEntry,
    build_model,
    build_parts,
    current_tools,
    model_spec,
    open_store,
    source_notes,
)
from ._remote import Remote
from ._resume import (
    SEALED_DAYS,
    Resume,
    Sealed,
    decide,
    decided_entry,
    expire,
    open_calls,
    rebuild,
    seal,
    state_key,
    unanswered,
    unseal,
    with_decided,
    with_pending,
)
from ._structured import Structured

if TYPE_CHECKING:
    from .._manifest import AppConfig

__all__ = ["Agent", "Continuation", "Input", "OutputDeclaration"]

log = logging.getLogger("seamkit.run")

Input = str | Message | Sequence[Message]
"""What a run answers: the user's text, a message, or messages."""

Continuation = Callable[[tuple[Message, ...]], "Input | ClientResults"]
"""A run's input as a function of its session's stored transcript: called
under the session's lock, once the transcript is loaded (with ``()`` for a new
session or a run without one). Raise to refuse the run: nothing is saved.
It may return `ClientResults` for the calls the stored run handed back."""

UNANSWERED = "Not run: the previous run ended before this call was answered."

OutputDeclaration = Output[Any] | type | Mapping[str, Any]
"""What ``output=`` takes: an `Output`, or a type or JSON Schema mapping
(an `Output` with the defaults)."""


@dataclass(frozen=True, slots=True)
class _RunOptions:
    """The keyword options of one `Agent.run` or `Agent.stream`."""

    context: ActionContext | Mapping[str, Any] | None
    history: Sequence[Message]
    session: str | None
    store: SessionStore | str | None
    defaults: RequestPatch | None
    state: dict[str, Any] | None
    suspended: str | None = None
    output: OutputDeclaration | None = None
    client_tools: Sequence[ToolSpec] = ()
    executor: RunExecutor | None = None


class Agent:
    """A model, its tools and its hooks: the thing that runs requests.

    Build it in code, ``Agent(model=..., tools=[...], hooks=[...])``, or from
    a manifest with ``await Agent.load(path_or_config)``. Use ``async with
    agent:`` (or ``await agent.aclose()``) to close what tool kinds opened.
    One agent serves any number of runs, concurrent ones included.
    """

    def __init__(
        self,
        model: Model | str | ModelConfig,
        *,
        name: str = "agent",
        preamble: str | None = None,
        tools: ToolMap | Iterable[Tool | Callable[..., Any]] = (),
        hooks: Sequence[object] = (),
        settings: Settings | Mapping[str, Any] | None = None,
        clock: Callable[[], datetime] | None = None,
        plugin_hooks: bool = True,
        registry: Registry | None = None,
        base_dir: str | PathLike[str] | None = None,
        store: SessionStore | str | None = None,
        exit_stack: AsyncExitStack | None = None,
        config: AppConfig | None = None,
        tool_entries: Sequence[ToolEntry] = (),
        output: OutputDeclaration | None = None,
    ) -> None:
        self.registry = registry if registry is not None else get_registry()
        self.name = name
        self.preamble = preamble
        self.settings = (
            settings if isinstance(settings, Settings) else Settings(**dict(settings or {}))
        )
        self.clock = clock if clock is not None else system_clock
        self.base_dir = Path(base_dir) if base_dir is not None else None
        self.config = config
        """The manifest this agent was loaded from (``None`` when built in code)."""
        self.redactor = Redactor(secret_texts(config, model))
        """Masks the secrets of the manifest and the model config and what
        the hooks' ``redact_patterns`` match; each run's ``ctx.redactor`` adds
        the run's context secrets."""
        self._sections = _plugin_sections(config, self.registry) if config is not None else {}
        self.exit_stack = exit_stack if exit_stack is not None else AsyncExitStack()
        """Where tool kinds register what ``async with agent`` closes."""
        build = BuildContext(
            name,
            self.registry,
            base_dir=self.base_dir,
            clock=clock,
            exit_stack=self.exit_stack,
            settings=self.settings,
        )
        self._model: Model = build_model(model, build)
        self.model_spec = model_spec(model, self.model)
        """The model as ``"<provider>:<name>"`` (or its class's name)."""
        self._store_spec = store
        self._state: dict[str, Any] = {}  # session_state of runs without a session
        self._store: SessionStore | None = store if isinstance(store, SessionStore) else None
        code = ToolMap.of(tools)
        self._entries = tuple(tool_entries)
        from_entries = {final for entry in self._entries for final, *_ in entry.found()}
        self._code = tuple(t for n, t in code.items() if n not in from_entries)
        self._dispatcher = Dispatcher(self.registry.plugin_manager if plugin_hooks else None, hooks)
        self.redactor = self.redactor.extend(patterns=self._dispatcher.redact_patterns)
        self._plan = self._make_plan(code)
        self.output: Output[Any] | None = None if output is None else Output.of(output)
        """The declared output of every run (``None``: the output is text);
        a run's ``output=`` replaces it."""
        if self.output is not None:
            self._structured(self.output)  # an output tool's name an app tool has

    def _structured(self, output: Output[Any], tools: ToolMap | None = None) -> Structured:
        """A run's view of ``output``; `OutputDefinitionError` when its
        output tool would take the name of one of ``tools``."""
        structured = Structured.of(output, self._model)
        names = self._plan.tools if tools is None else tools
        if structured.mode == "tool" and output.name in names:
            raise OutputDefinitionError(
                f"the output tool {output.name!r} has the name of a tool of agent {self.name!r}",
                hint="give the output another name: Output(T, name=...) (manifest output.name)",
            )
        return structured

    def _make_plan(self, tools: ToolMap) -> RunPlan:
        return RunPlan(
            name=self.name,
            model=self._model,
            preamble=self.preamble,
            tools=tools,
            specs=tuple(t.spec for t in tools.values()),
            dispatcher=self._dispatcher,
            hooked=frozenset(e for e in HookEvent if self._dispatcher.hooks_at(e)),
            settings=self.settings,
            clock=self.clock,
            agent=self,
            model_spec=self.model_spec,
            effectful=any(t.effects != "none" for t in tools.values()),
        )

    # --- building -------------------------------------------------------------

    @classmethod
    async def load(
        cls,
        source: AppConfig | str | PathLike[str] | Mapping[str, Any],
        *,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        hooks: Sequence[object] = (),
        model: Model | str | ModelConfig | None = None,
        clock: Callable[[], datetime] | None = None,
        registry: Registry | None = None,
        store: SessionStore | str | None = None,
    ) -> Agent:
        """Build an agent from a manifest (a path, a dict or an `AppConfig`).

        Awaits every tool kind's ``resolve`` and builds every configured hook,
        once. ``tools`` and ``hooks`` add code tools and hooks; ``model``
        replaces the manifest's model; ``store`` the manifest's session store.
        The manifest's ``output:`` becomes `Agent.output` (a ``ref`` imported
        here). Raises :class:`seamkit.ManifestError` listing every problem,
        each naming its manifest entry.
        """
        from .._manifest import (  # lazy: YAML and the manifest machinery, for load only
            AppConfig,
            build_output,
            locate_problems,
        )

        registry = registry if registry is not None else get_registry()
        app = AppConfig.load(source, registry=registry)
        base_dir = Path(app.source).resolve().parent if app.source else None
        stack = AsyncExitStack()
        sections = _plugin_sections(app, registry)
        build = BuildContext(
            app.name, registry, ToolMap(), base_dir, clock, stack, sections, app.settings
        )

        def refuse(found: Sequence[Problem], before: Sequence[Problem] = ()) -> ManifestError:
            located = locate_problems(found, None, source=app.source)
            return ManifestError([*before, *located], source=app.source)

        try:
            output = None if app.output is None else build_output(app.output, base_dir)
            problems = [output] if isinstance(output, Problem) else []
            try:
                parts = await build_parts(app, build, model=model, tools=tools, hooks=hooks)
            except ManifestError as exc:
                raise (refuse(problems, exc.problems) if problems else exc) from None
            if problems:
                raise refuse(problems)
            try:
                return cls(
                    parts.model,
                    name=app.name,
                    preamble=app.preamble,
                    tools=parts.tools,
                    hooks=parts.hooks,
                    settings=app.settings,
                    clock=clock,
                    registry=registry,
                    base_dir=base_dir,
                    store=store if store is not None else app.sessions.store,
                    exit_stack=stack,
                    config=app,
                    tool_entries=parts.entries,
                    output=None if isinstance(output, Problem) else output,
                )
            except OutputDefinitionError as exc:  # its output tool's name is an app tool's
                raise refuse([Problem(("output", "name"), exc.message, exc.hint)]) from None
        except BaseException:
            await stack.aclose()
            raise

    @property
    def model(self) -> Model:
        """The model the next runs use. Setting it swaps the model of the
        runs that start after (runs already going keep theirs); observers
        still name it by `model_spec` (`seamkit.testing.record` wraps it)."""
        return self._model

    @model.setter
    def model(self, model: Model) -> None:
        self._model = model
        self._plan = self._make_plan(self._plan.tools)

    @property
    def tools(self) -> ToolMap:
        """The tools the next run uses, by final name."""
        return self._plan.tools

    @property
    def observers(self) -> tuple[Observer, ...]:
        """The run observers (``on_run_event`` hookimpls) in call order."""
        return self._dispatcher.observers

    def hooks_at(self, event: HookEvent | str) -> tuple[str, ...]:
        """The names of the hooks at ``event``, in call order."""
        return tuple(r.name for r in self._dispatcher.hooks_at(HookEvent(event)))

    def remote(self) -> Remote:
        """This agent's half of a run that runs elsewhere: the hooks, model
        turns and tool bodies a durable runner's worker does for the run's
        `seamkit.plugins.RunExecutor` (`seamkit.plugins.Remote`)."""
        output = self.output
        return Remote(
            self._plan,
            self.redactor,
            self._sections,
            lambda: None if output is None else self._structured(output),
        )

    def session_store(self) -> SessionStore:
        """The store runs with ``session=`` use when they name none: the one
        given to the agent, the manifest's ``sessions.store``, or the default
        SQLite file."""
        if self._store is None:
            self._store = open_store(
                self._store_spec, registry=self.registry, base_dir=self.base_dir
            )
        return self._store

    async def refresh_tools(self) -> tuple[Diagnostic, ...]:
        """Ask the tool sources for their current tools and swap in the new
        map (runs call this at their start). A set that does not hold keeps
        the old map; the diagnostics say why."""
        if not any(entry.source is not None for entry in self._entries):
            return ()
        refreshed = await current_tools(self._entries, self._code)
        notes = source_notes(self._entries)  # what the sources left out, and why
        if isinstance(refreshed, list):
            return notes + tuple(
                Diagnostic(code="tools_not_refreshed", message=p.format(None)) for p in refreshed
            )
        entries, tool_map = refreshed
        if list(tool_map.items()) != list(self._plan.tools.items()):
            self._entries = entries
            self._plan = self._make_plan(tool_map)
        return notes

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

    async def _start(
        self,
        input: Input,
        context: ActionContext | Mapping[str, Any] | None,
        history: Sequence[Message],
        streaming: bool,
        stream: Callable[[Event], None] | None,
        session: str | None,
        state: dict[str, Any],
        defaults: RequestPatch | None,
        *,
        resume: Resume | None = None,
        journal: RunJournal | None = None,
        output: OutputDeclaration | None = None,
        client_tools: Sequence[ToolSpec] = (),
        executor: RunExecutor | None = None,
    ) -> RunState:
        notes = await (self.refresh_tools() if executor is None else executor.refresh())
        plan = self._plan
        declared = self.output if output is None else Output.of(output)
        structured = None if declared is None else self._structured(declared, plan.tools)
        reserved = (
            structured.spec.name if structured is not None and structured.mode == "tool" else None
        )
        client = client_specs(client_tools, plan.tools, reserved) if client_tools else ()
        action_context = _action_context(context)
        ctx = HookContext(
            run_id=None if executor is None else executor.new_id(),
            agent_name=self.name,
            is_streaming=streaming,
            action_context=action_context,
            tools=plan.tools,
            clock=self.clock if executor is None else executor.now,
            session_state=state,
            redactor=self.redactor,
            sections=self._sections,
        )
        ctx.diagnostics.extend(notes)
        if resume is not None:  # its open calls are answered by the run, not here
            messages = list(history)
        else:
            messages = [*_answer_dangling(history), *_messages(input)]
        if journal is not None and not plan.effectful and resume is None:
            journal = None  # nothing it could run twice: nothing to journal
        emit = emitter(ctx, stream, plan.dispatcher.observers, executor)
        return RunState(
            plan,
            ctx,
            messages,
            emit,
            session,
            defaults,
            journal,
            resume,
            structured,
            client,
            executor,
        )

    async def _execute(
        self,
        input: Input | Continuation | Decisions | ClientResults | None,
        options: _RunOptions,
        streaming: bool,
        stream: Callable[[Event], None] | None,
    ) -> RunResult:
        session, context, history = options.session, options.context, options.history
        if session is None:
            return await self._execute_alone(input, options, streaming, stream)
        store = options.store
        held = (
            self.session_store()
            if store is None
            else open_store(store, registry=self.registry, base_dir=self.base_dir)
        )
        journaled = held if isinstance(held, JournalStore) else None
        if journaled is None and options.executor is None:  # (an executor's record is one)
            _warn_unjournaled(held)
        async with held.lock(session, self.settings.session_wait_seconds):
            stored = await held.load(session) or StoredSession()
            state = with_pending(copy.deepcopy(dict(stored.state)), ())
            entries = await journaled.journal_read(session) if journaled is not None else []
            resume: Resume | None = None
            transcript: Sequence[Message] = stored.transcript
            messages: Input = ()
            client_tools = options.client_tools
            if input is None or isinstance(input, Decisions) or _nothing(input):
                decisions = input if isinstance(input, Decisions) else None
                # a suspended run goes on with its client tools unless given others
                client_tools = client_tools or stored.client_tools
                resume = await self._continued(
                    decisions, session, held, stored, entries, _clock(self, options)
                )
                transcript = resume.transcript
            elif stored.pending or entries:
                raise ResumeError(
                    _undecided(session, stored.pending),
                    session=session,
                    hint=f"decide them first: `seamkit resume APP --session {session}` "
                    "(or Agent.run(Decisions({...}), session=...)); a run a crash cut "
                    "short continues with no new input",
                )
            else:
                given = input(stored.transcript) if callable(input) else input
                if isinstance(given, ClientResults):
                    resume = self._resume(stored.transcript, (), ())
                    names = (t.name for t in options.client_tools)
                    resume.results = client_results(given, resume.calls, names, session)
                    transcript = resume.transcript
                else:
                    messages = given
            journal = (
                RunJournal(journaled, session, uuid.uuid4().hex, transcript)
                if journaled is not None
                else None
            )
            run = await self._start(
                messages,
                context,
                [*transcript, *history],
                streaming,
                stream,
                session,
                state,
                options.defaults,
                resume=resume,
                journal=journal,
                output=options.output,
                client_tools=client_tools,
                executor=options.executor,
            )
            try:
                result = await drive(run)
            finally:
                # Whatever the outcome (cancelled included), the run's whole
                # transcript replaces the stored one: no message is lost.
                # The save ends before the lock is released, even when the run
                # is cancelled meanwhile: the next run must load what it saved.
                # A save that fails leaves the transcript in a recovery file,
                # and that failure is the news the caller gets (even over a
                # cancellation: it must learn where its transcript went).
                run.life.save()
                saved = with_pending(
                    _storable(state, with_pending(stored.state, ())),
                    _still_pending(run),
                    run.client,
                )
                not_saved = await run.life.shielded(
                    save_or_recover(held, session, run.transcript, saved)
                )
                run.life.saved(not_saved)  # raises what the run kept, if anything
            return result

    async def _continued(
        self,
        input: Decisions | Sequence[Message] | None,
        session: str,
        held: SessionStore,
        stored: StoredSession,
        entries: Sequence[JournalEntry],
        now: Callable[[], datetime],
    ) -> Resume:
        """How a session's run continues (no new input, or decisions): its
        pending calls, expired ones rejected, with the decisions recorded
        (stored before anything runs: a crash from here on loses none of
        them); `ResumeError` when there is nothing to continue or a
        decision does not fit."""
        pending = expire(list(stored.pending), now(), self.settings.approval_expires_seconds)
        if isinstance(input, Decisions):
            if not pending:
                raise ResumeError(
                    f"session {session!r} has no call waiting for a decision", session=session
                )
            pending = with_decided(pending, rebuild((), entries).decided)
            before = {p.call_id for p in pending if p.decision is not None}
            pending = decide(pending, input, self.tools, session=session)
            fresh = [p for p in pending if p.decision and p.call_id not in before]
            if isinstance(held, JournalStore):
                run_id = uuid.uuid4().hex
                decided = [decided_entry(run_id, p) for p in fresh]
                await to_its_end(held.journal_append(session, decided))
            else:
                state = with_pending(stored.state, pending)
                await to_its_end(held.save(session, stored.transcript, state))
        elif not pending and not entries:
            raise ResumeError(
                f"session {session!r} has nothing to continue: no call waits for a "
                "decision and no run was cut short",
                session=session,
                hint="send a message to start a new run",
            )
        return self._resume(stored.transcript, entries, pending)

    def _resume(
        self,
        saved: Sequence[Message],
        entries: Sequence[JournalEntry],
        pending: Sequence[PendingCall],
    ) -> Resume:
        """How a run continues from ``saved``, its journal and its pending calls."""
        rebuilt = rebuild(saved, entries)
        pending = with_decided(pending, rebuilt.decided)
        return Resume(
            transcript=rebuilt.transcript,
            calls=open_calls(rebuilt.transcript, self.settings.max_argument_depth),
            pending={p.call_id: p for p in pending},
            records=rebuilt.records,
            turns=rebuilt.turns,
            usage=rebuilt.usage,
            replayed=bool(entries),
            waiting=any(p.decision is None for p in pending),
        )

    async def _execute_alone(
        self,
        input: Input | Continuation | Decisions | ClientResults | None,
        options: _RunOptions,
        streaming: bool,
        stream: Callable[[Event], None] | None,
    ) -> RunResult:
        """A run without a session; one that continues a suspended state."""
        context, history = options.context, options.history
        state = self._state if options.state is None else options.state
        key = state_key(self.settings.state_key)
        resume: Resume | None = None
        messages: Input = ()
        if callable(input):
            input = input(())
        if isinstance(input, ClientResults):
            resume = self._resume(history, (), ())
            names = (t.name for t in options.client_tools)
            resume.results = client_results(input, resume.calls, names, None)
            history = resume.transcript
        elif isinstance(input, Decisions) or options.suspended is not None:
            if options.suspended is None or not isinstance(input, Decisions | None):
                raise ResumeError(
                    "continue a suspended run with Decisions and the suspended state it "
                    "returned: run(Decisions({...}), suspended=result.suspended)",
                )
            action_context = _action_context(context)
            now = _clock(self, options)()
            sealed = unseal(options.suspended, key, action_context, now)
            pending = expire(list(sealed.pending), now, self.settings.approval_expires_seconds)
            if input is not None:
                pending = decide(pending, input, self.tools, session=None)
            state = dict(sealed.state)
            resume = self._resume(sealed.transcript, (), pending)
            context = action_context
            history = [*resume.transcript, *history]
        elif input is None:
            raise ResumeError(
                "no input and nothing to continue: a run without a session continues "
                "only a suspended state (run(Decisions(...), suspended=...))",
            )
        else:
            messages = input
        run = await self._start(
            messages,
            context,
            history,
            streaming,
            stream,
            None,
            state,
            options.defaults,
            resume=resume,
            output=options.output,
            client_tools=options.client_tools,
            executor=options.executor,
        )
        result = await drive(run)
        if isinstance(result.outcome, Suspended):
            result = self._sealed(run, result, key, _clock(self, options)())
        run.life.end()  # raises the cancellation or interrupt the run kept
        return result

    def _sealed(
        self, run: RunState, result: RunResult, key: bytes | None, now: datetime
    ) -> RunResult:
        """``result`` with the signed state that continues it (none without
        ``settings.state_key``: a diagnostic says so)."""
        assert isinstance(result.outcome, Suspended)
        if key is None:
            note = Diagnostic(
                code="suspended_without_state_key",
                message="the run is suspended but cannot be resumed: it has no session and "
                "settings.state_key is not set",
            )
            return result.model_copy(update={"diagnostics": (*result.diagnostics, note)})
        limit = self.settings.approval_expires_seconds
        expires = now + (
            timedelta(seconds=limit) if limit is not None else timedelta(days=SEALED_DAYS)
        )
        token = seal(
            Sealed(tuple(run.transcript), dict(run.ctx.session_state), result.outcome.pending),
            key,
            run.ctx.action_context,
            expires,
        )
        return result.model_copy(update={"suspended": token})

    async def run(
        self,
        input: Input | Continuation | Decisions | ClientResults | None,
        *,
        context: ActionContext | Mapping[str, Any] | None = None,
        history: Sequence[Message] = (),
        session: str | None = None,
        store: SessionStore | str | None = None,
        defaults: RequestPatch | None = None,
        state: dict[str, Any] | None = None,
        suspended: str | None = None,
        output: OutputDeclaration | None = None,
        client_tools: Sequence[ToolSpec] = (),
        executor: RunExecutor | None = None,
    ) -> RunResult:
        """Run one request to the end and return its `RunResult`.

        ``input`` is the user's text, a message or messages; ``history`` goes
        before it. ``context`` is the run's `ActionContext` (a mapping is
        wrapped). With ``session``, the stored transcript of that session goes
        first, and the run's transcript replaces it at the end; ``store`` is a
        `SessionStore`, a path or a URL (by default :meth:`session_store`).
        Runs on one session take turns, and one that waits longer than
        ``settings.session_wait_seconds`` raises `SessionBusy`; a store that
        cannot be written, or a stored session that does not parse, raises
        `SessionError` before the run starts. A save that fails at the end
        writes the transcript to a recovery file and raises `SessionNotSaved`
        naming it. A failing model, tool or hook never raises here: the
        outcome says what happened.
        Cancelling the task ends the run as ``cancelled`` (``on_completion``
        fires) and re-raises.

        ``input`` may be a `Continuation`: a function of the session's stored
        transcript that returns the input (a server matching what a client
        sent against what it stored, say). ``defaults`` is a `RequestPatch`
        every model call starts from, before the hooks patch it (a client's
        temperature and token limit). ``state`` is the ``session_state`` of a
        run without a session; by default the agent keeps one that all its
        session-less runs share (pass ``{}`` to give a run its own).

        ``output`` declares what the answer must be for this run (an
        `Output`, a type or a JSON Schema mapping), in place of the agent's:
        ``result.output`` is then the validated value, ``result.text`` the
        model's final text.

        ``client_tools`` are tools the caller runs: advertised to the model
        beside the agent's (a name the agent's tools or the output tool
        have is a `ToolDefinitionError`), never run here. A turn that calls
        them ends the run `Deferred` with those calls, once the turn's other
        calls ran (a turn that also needs an approval suspends first, and
        defers once decided). Continue it with ``ClientResults({call_id:
        result})`` as ``input`` and the same ``client_tools`` (and the
        session, or ``history=result.transcript`` without one): each result
        passes ``on_post_tool_use`` before the model sees it.

        ``executor`` (`seamkit.plugins.RunExecutor`) runs the run's I/O
        elsewhere and gives it its clock and ids (a durable runner passes one:
        ``seamkit-temporal``); by default the run does it all here.
        """
        options = _RunOptions(
            context,
            history,
            session,
            store,
            defaults,
            state,
            suspended,
            output,
            client_tools,
            executor,
        )
        return await self._execute(input, options, False, None)

    async def stream(
        self,
        input: Input | Continuation | Decisions | ClientResults | None,
        *,
        context: ActionContext | Mapping[str, Any] | None = None,
        history: Sequence[Message] = (),
        session: str | None = None,
        store: SessionStore | str | None = None,
        defaults: RequestPatch | None = None,
        state: dict[str, Any] | None = None,
        suspended: str | None = None,
        output: OutputDeclaration | None = None,
        client_tools: Sequence[ToolSpec] = (),
        executor: RunExecutor | None = None,
    ) -> AsyncIterator[Event]:
        """Run one request, yielding `seamkit.stream` events; the last is
        `RunFinished` with the `RunResult`. Same arguments as :meth:`run`.
        Closing the iterator early cancels the run cleanly."""
        queue: asyncio.Queue[Any] = asyncio.Queue()
        done = object()
        options = _RunOptions(
            context,
            history,
            session,
            store,
            defaults,
            state,
            suspended,
            output,
            client_tools,
            executor,
        )
        interrupted: list[Interrupt] = []

        async def execute() -> None:
            # A KeyboardInterrupt or SystemExit raised in this task would stop
            # the event loop ("Task exception was never retrieved"): it is
            # handed to the consumer, who raises it in its own task.
            try:
                await self._execute(input, options, True, queue.put_nowait)
            except INTERRUPTS as exc:
                interrupted.append(exc)

        task = asyncio.ensure_future(execute())
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
                while not task.done():  # the run ends (and saves) before the stream closes
                    try:
                        await asyncio.wait((task,))
                    except asyncio.CancelledError:
                        task.cancel()  # the consumer's next cancellation is the run's
                # A transcript that went to a recovery file is news even to a
                # consumer that stopped listening: it must learn where.
                failure = None if task.cancelled() else task.exception()
                if isinstance(failure, SessionNotSaved):
                    raise failure
            if interrupted:
                raise interrupted[0]

    def run_sync(
        self, input: Input | Decisions | ClientResults | None, **options: Any
    ) -> RunResult:
        """:meth:`run` for scripts: runs its own event loop."""
        return asyncio.run(self.run(input, **options))


def _clock(agent: Agent, options: _RunOptions) -> Callable[[], datetime]:
    """The run's clock: its executor's, else the agent's."""
    return agent.clock if options.executor is None else options.executor.now


def _action_context(context: ActionContext | Mapping[str, Any] | None) -> ActionContext:
    if context is None:
        return ActionContext()
    return context if isinstance(context, ActionContext) else ActionContext(context)


def _nothing(input: object) -> bool:
    """Whether ``input`` is no new input at all (``()``, ``[]``)."""
    return isinstance(input, list | tuple) and not input


def _undecided(session: str, pending: Sequence[PendingCall]) -> str:
    if not pending:
        return (
            f"session {session!r} has a run that a crash cut short; continue it before "
            "sending a new message"
        )
    waiting = ", ".join(f"{p.call_id} ({p.tool})" for p in pending if p.decision is None)
    return (
        f"session {session!r} has calls waiting for a decision: {waiting or 'decided, not run'}; "
        "decide them before sending a new message"
    )


def _still_pending(run: RunState) -> tuple[PendingCall, ...]:
    """What the session keeps waiting after the run: a suspension's pending
    calls; after a cancelled continuation, its decided calls still open."""
    outcome = run.outcome
    if isinstance(outcome, Suspended):
        return outcome.pending
    if isinstance(outcome, Cancelled) and run.resume is not None:
        answered = {m.tool_call_id for m in run.transcript if m.role == "tool"}
        return tuple(p for p in run.resume.pending.values() if p.call_id not in answered)
    return ()


_warned: set[type] = set()


def _warn_unjournaled(store: SessionStore) -> None:
    """Say once per store type that its runs are not journaled."""
    kind = type(store)
    if kind in _warned:
        return
    _warned.add(kind)
    log.warning(
        "session store %s keeps no journal: a run a crash cuts short may run a tool "
        "call again (effects are at-least-once with it)",
        kind.__name__,
    )


def _plugin_sections(app: AppConfig, registry: Registry) -> dict[str, BaseModel]:
    """The sections of ``app`` that the registry's plugins own, by key."""
    return {key: value for key in registry.sections if (value := app.section(key)) is not None}


def _answer_dangling(history: Sequence[Message]) -> list[Message]:
    """``history`` with a tool message for each call its last model turn left
    unanswered (a run that a hook stopped mid-batch ends that way), so that
    the next request is one every OpenAI-compatible API accepts."""
    return [*history, *(Message.tool(call.id, UNANSWERED) for call in unanswered(history))]


def _messages(input: Input) -> list[Message]:
    if isinstance(input, str):
        return [Message.user(input)]
    if isinstance(input, Message):
        return [input]
    return list(input)


def _storable(state: dict[str, Any], before: Mapping[str, Any]) -> Mapping[str, Any]:
    """``state`` when it is JSON, else the state the run started from: a hook
    that put something else there must not cost the session its transcript."""
    try:
        json.dumps(state)
    except (TypeError, ValueError) as exc:
        log.warning(
            "session state not saved: a hook stored a value that is not JSON (%s); "
            "the transcript is saved with the state the run started from",
            type(exc).__name__,
        )
        return before
    return state
