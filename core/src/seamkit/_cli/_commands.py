"""The ``seamkit`` commands that read an app: ``schema``, ``validate``,
``tools`` and ``run`` (shown on a terminal by `seamkit._cli._present`; what a
signal does to a run: see `seamkit._cli._interrupt`); `Invocation`
and the options ``run`` shares with ``seamkit resume``
(`seamkit._cli._resume`), which runs the same way; what both do with calls
that wait for a decision is in `seamkit._cli._pending`.

They are registered on the group by name in `seamkit._cli._group` and imported only
when invoked, because building agents needs far more than listing plugins."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NoReturn, TypeVar

import click

from .. import stream as S
from .._approval import Decisions
from .._context import HookContext
from .._engine._agent import Agent
from .._errors import ManifestError, ResumeError, SeamkitError
from .._events import hookimpl
from .._loader import get_registry
from .._manifest import manifest_schema
from .._output import Output
from .._persistence._recovery import write_recovery
from .._timeline import Timeline
from .._toolmap import ToolMap
from .._types import Message, RunResult, Suspended
from . import _pending
from ._interrupt import Interrupts
from ._output_file import read_output_file
from ._pending import DecideCommand, ask, resume_command
from ._present import RunPresenter
from ._session_commands import command_line_store

__all__ = [
    "Invocation",
    "context_option",
    "json_option",
    "model_option",
    "no_input_option",
    "run_command",
    "schema_command",
    "session_option",
    "store_option",
    "tools_command",
    "trace_option",
    "validate_command",
]


@click.command("schema")
@click.option("--indent", default=2, show_default=True, help="JSON indentation.")
def schema_command(indent: int) -> None:
    """Print the JSON Schema of the app manifest, with every installed kind."""
    click.echo(json.dumps(manifest_schema(get_registry()), indent=indent))


@click.command("validate")
@click.argument("app", type=click.Path(dir_okay=False))
def validate_command(app: str) -> None:
    """Check an app manifest and resolve its tools; print every error with its
    location (exit 1 on any)."""
    config, tools = _load_with_tools(app)
    entries, hooks = len(config.tools), len(config.hooks)
    # An entry with `events: [a, b]` gives one hook per event.
    hook_entries = len(set(config.hook_entries))
    of = f" from {hook_entries} {'entry' if hook_entries == 1 else 'entries'}"
    click.echo(
        f"{app}: ok ({entries} tool {'entry' if entries == 1 else 'entries'} giving "
        f"{len(tools)} tool{'' if len(tools) == 1 else 's'}, "
        f"{hooks} hook{'' if hooks == 1 else 's'}{of if hook_entries != hooks else ''})"
    )


@click.command("tools")
@click.argument("app", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the tools as JSON.")
def tools_command(app: str, as_json: bool) -> None:
    """List the tools an app resolves to, as the model sees them."""
    _, tools = _load_with_tools(app)
    if as_json:
        rows = [
            {
                **t.spec.model_dump(),
                "origin": tools.origin(name),
                "tags": sorted(t.tags),
                "terminal": t.terminal,
                "timeout_seconds": t.timeout_seconds,
            }
            for name, t in tools.items()
        ]
        click.echo(json.dumps(rows, indent=2))
        return
    for name, t in tools.items():
        args = ", ".join(t.parameters.get("properties", {}))
        summary = t.description.splitlines()[0] if t.description else ""
        click.echo(f"{name}({args})  [{tools.origin(name)}]")
        if summary:
            click.echo(f"    {summary}")


def _load_with_tools(app: str) -> tuple[Any, Any]:
    """The manifest and its resolved tools (the agent is built, so the model
    and the hooks are checked too); every problem printed, exit 1 on any."""

    async def build() -> tuple[Any, Any]:
        async with await Agent.load(app) as agent:
            return agent.config, agent.tools

    try:
        return asyncio.run(build())
    except ManifestError as exc:
        click.echo(exc.format(), err=True)
        count = len(exc.problems)
        click.echo(f"{app}: {count} error{'s' if count != 1 else ''}", err=True)
        sys.exit(1)


F = TypeVar("F", bound=Callable[..., None])

# The options ``seamkit run`` and ``seamkit resume`` share (defined once).
json_option = click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the RunResult as JSON, no streaming; a suspended run's calls are under "
    "`pending` (nothing is asked).",
)
store_option = click.option(
    "--store",
    metavar="PATH|URL",
    help="The session store: a SQLite path (relative to the working directory), "
    "sqlite:///PATH, or a URL a plugin serves (postgresql://...); default: the manifest's "
    "sessions.store, else sessions.sqlite in the user's data directory.",
)
model_option = click.option(
    "--model",
    "model_spec",
    metavar="SPEC",
    help="Use this model instead of the manifest's, e.g. openai:gpt-4o-mini.",
)
context_option = click.option(
    "--context",
    "context_items",
    multiple=True,
    metavar="KEY=VALUE",
    help="A property of the run's ActionContext (repeatable).",
)
trace_option = click.option(
    "--trace",
    is_flag=True,
    help="After the run, print its timeline to standard error: the run, its turns, "
    "model calls, tool calls (concurrent ones side by side) and the hooks that fired, "
    "each with its duration.",
)
no_input_option = click.option(
    "--no-input",
    is_flag=True,
    help="Never ask: when calls wait for a decision, list them with the `seamkit resume` "
    "commands that decide them and exit 3 (what happens anyway when standard input or "
    "output is not a terminal).",
)


def session_option(*, required: bool, help: str) -> Callable[[F], F]:
    """The ``--session NAME`` option (optional for ``run``, required for ``resume``)."""
    return click.option("--session", metavar="NAME", required=required, help=help)


@click.command("run")
@click.argument("app", type=click.Path(dir_okay=False))
@click.argument("message")
@json_option
@session_option(required=False, help="Keep the conversation under NAME between runs.")
@store_option
@model_option
@context_option
@trace_option
@no_input_option
@click.option(
    "--output-schema",
    "output_schema",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="The answer this run must give, replacing the manifest's output: a JSON or YAML "
    "file with a JSON Schema, or with an output mapping as in the manifest ({schema: ... "
    "| ref: 'module:Name', mode, retries, name, description, strict}).",
)
@click.option(
    "--record",
    "record_file",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="Record every model exchange of the run (request, streamed deltas, turn or error; "
    "the manifest's secrets masked) to FILE, a cassette that `model: replay:FILE` plays "
    "back without the network.",
)
def run_command(
    app: str,
    message: str,
    as_json: bool,
    session: str | None,
    store: str | None,
    model_spec: str | None,
    context_items: tuple[str, ...],
    trace: bool,
    no_input: bool,
    output_schema: str | None,
    record_file: str | None,
) -> None:
    """Run APP on MESSAGE: stream the answer to standard output, and show each
    hook that fired and each tool call on standard error.

    The exit status is 0 when the run completed or a hook ended it on
    purpose, 1 when it failed or hit max_turns, 3 when calls wait for a
    decision, 130 when it was cancelled.
    A run with a declared output (the manifest's output, or --output-schema)
    prints the validated value as JSON when it completes; an answer that
    keeps failing validation ends the run failed (OutputInvalid), exit 1.
    When calls wait for approval, on a terminal each is asked about
    (approve, reject with a reason, or edit its arguments in $EDITOR) and
    the run goes on; otherwise (or with --no-input, --json) they are
    listed with the `seamkit resume` commands that decide them.
    Ctrl-C (SIGINT) or SIGTERM cancels the run: on_completion fires, the
    session is saved, and the exit status is 130 (SIGINT) or 143 (SIGTERM);
    a second signal cuts on_completion short, a third quits at once (as does
    the first when a tool or hook blocks the run for more than a second),
    leaving the transcript in a recovery file.
    SEAMKIT_NOW (an ISO 8601 instant) fixes the agent's clock.
    """
    output: Output[Any] | None = None
    if output_schema is not None:
        try:
            output = read_output_file(output_schema)
        except SeamkitError as exc:
            click.echo(f"error: {exc.message}", err=True)
            if exc.hint:
                click.echo(f"hint: {exc.hint}", err=True)
            sys.exit(2)
    invocation = Invocation(
        app,
        session,
        store,
        model_spec,
        context_items,
        as_json,
        trace,
        no_input,
        output,
        record_file,
    )
    invocation.execute(message)


@dataclass(frozen=True, slots=True)
class Invocation:
    """What ``seamkit run`` or ``seamkit resume`` was given: the app and the
    options each of its runs shares. `execute` runs, asks about the calls
    that wait for a decision and runs again, until the run ends."""

    app: str
    session: str | None
    store: str | None
    model_spec: str | None
    context_items: tuple[str, ...]
    as_json: bool
    trace: bool
    no_input: bool
    output: Output[Any] | None = None
    """The output this run must give instead of the manifest's (``--output-schema``)."""
    record: str | None = None
    """The cassette every model exchange is recorded to (``--record``)."""

    @property
    def resume_line(self) -> DecideCommand | None:
        """The ``seamkit resume`` command for this session (``None``: no session)."""
        if self.session is None:
            return None
        return resume_command(
            self.app, self.session, self.store, self.model_spec, self.context_items
        )

    def execute(self, given: str | Decisions | None) -> NoReturn:
        """Run on ``given`` (a message; decisions; nothing, to continue a
        session's run), then, while the run ends suspended and a person can be
        asked, ask and run on the decisions. Exits with the run's status."""
        context = _parse_context(self.context_items)
        clock = _clock_from_env()
        store = command_line_store(self.store)
        rounds = 0
        while True:
            result, tools, presenter = self._round(given, context, clock, store, rounds > 0)
            rounds += 1
            outcome = result.outcome
            if not isinstance(outcome, Suspended) or self.as_json:
                sys.exit(presenter.exit_code(result))  # (--json: the calls are in its `pending`)
            line = self.resume_line
            if line is None or not _pending.is_terminal(self.no_input):
                presenter.print_pending(outcome.pending)
                sys.exit(presenter.exit_code(result))
            try:
                given = ask(outcome.pending, tools)
            except click.Abort:
                click.echo(err=True)
                click.secho(
                    f"[nothing decided: the calls still wait; `{line.command()}` asks again]",
                    err=True,
                    dim=True,
                )
                sys.exit(presenter.exit_code(result))

    def _round(
        self,
        given: str | Decisions | None,
        context: dict[str, str],
        clock: Callable[[], datetime] | None,
        store: str | None,
        again: bool = False,
    ) -> tuple[RunResult, ToolMap | None, RunPresenter]:
        """One run, streamed (or, with --json, printed when it ends), under
        the command's signal handling: its result, the agent's tools and what
        showed the run. A run cut short by a signal, or that raised, exits
        here. ``again``: a later round, whose exchanges the cassette (``--record``)
        gets after the earlier rounds'."""
        session, model_spec, as_json = self.session, self.model_spec, self.as_json
        timeline = Timeline() if self.trace else None
        presenter = RunPresenter(as_json=as_json, output=self.output, decide=self.resume_line)
        recorder = _Recorder(presenter)
        hooks: list[object] = [recorder] if timeline is None else [recorder, timeline]
        tools: list[ToolMap] = []
        output = self.output

        async def work() -> None:
            async with await Agent.load(
                self.app, clock=clock, model=model_spec, store=store, hooks=hooks
            ) as agent:
                with ExitStack() as recording:
                    if self.record is not None:
                        from .._recording import record  # lazy: only a run with --record

                        recording.enter_context(record(agent, self.record, append=again))
                    await play(agent)

        async def play(agent: Agent) -> None:
            """The run itself, on the loaded agent (recorded with --record)."""
            tools.append(agent.tools)
            presenter.output = output if output is not None else agent.output
            if timeline is not None and agent.config is not None:
                spec = model_spec or agent.config.model.spec
                timeline.model_name = spec.partition(":")[2] or spec
            if as_json:
                await agent.run(given, context=context, session=session, store=store, output=output)
                return
            events = agent.stream(
                given, context=context, session=session, store=store, output=output
            )
            async for event in events:
                presenter.show(event)

        note = presenter.note

        def quit_now(code: int, finished: bool) -> None:
            cause = signals.signal_name or "a signal"
            if finished or session is None:
                note(f"[quit at once on {cause}]")
                return
            # The run did not get to save its session: keep what this process knows.
            kept = recorder.transcript or ([Message.user(given)] if isinstance(given, str) else [])
            if not kept:  # a continuation: its store's journal keeps what ran
                note(f"[quit at once on {cause}: session {session!r} may not be saved]")
                return
            where = store if store is not None and "@" not in store else None
            path = write_recovery(
                session, kept, {}, location=where, reason=f"quit at once on {cause}"
            )
            saved = f"its transcript is in {path}" if path is not None else "it was logged"
            note(f"[quit at once on {cause}: session {session!r} may not be saved; {saved}]")

        signals = Interrupts(note, quit_now)
        failure = signals.run(work())
        result = recorder.result
        if result is not None:  # (streamed: its end is out unless a signal cut the stream)
            presenter.finish(result, cause=signals.signal_name)
        elif signals.signal_name is not None:
            note(f"[cancelled: {signals.signal_name} · before the run started: nothing ran]")
        if timeline is not None:
            _print_timeline(timeline)
        if failure is not None:
            if isinstance(failure, ResumeError) and isinstance(given, str) and session:
                _refused(failure, self.resume_line)
            if signals.exit_code is None or not isinstance(failure, SeamkitError):
                raise failure
            click.echo(f"error: {failure.message}", err=True)
            if failure.hint:
                click.echo(f"hint: {failure.hint}", err=True)
        if signals.exit_code is not None:
            sys.exit(signals.exit_code)
        if result is None:
            sys.exit(1)
        return result, tools[0] if tools else None, presenter


def _refused(error: ResumeError, line: DecideCommand | None) -> NoReturn:
    """A new message to a session whose calls wait (or whose run a crash cut
    short): the error, and the command that decides or continues them."""
    click.echo(f"error: {error.message}", err=True)
    if line is not None:
        click.echo(
            f"hint: `{line.command()}` decides the waiting calls (it asks on a terminal, or "
            "lists them with the commands that decide them) or continues a run a crash cut "
            "short; then send your message again",
            err=True,
        )
    sys.exit(1)


class _Recorder:
    """Keeps the run's `RunResult` as observers get it (`RunFinished`), so
    that a run cut short by a signal, whose caller never gets a result, can
    still be summarised, printed as JSON and recovered; and, until then, the
    transcript as far as the run's events tell it (the messages of the first
    model call, then each turn and tool result), for a process that must
    quit before the run ends. It shows ``presenter`` what only observers
    see: a decision applied, a call in doubt after a crash, a journal
    replayed."""

    def __init__(self, presenter: RunPresenter) -> None:
        self.result: RunResult | None = None
        self.transcript: list[Message] = []
        self._presenter = presenter

    @hookimpl
    def on_run_event(self, ctx: HookContext, event: S.ObservedEvent) -> None:
        """Remember the result the run finished with, and the transcript so far."""
        if isinstance(event, S.ModelCallStarted):
            if not self.transcript:
                self.transcript = list(event.request.messages)
        elif isinstance(event, S.TurnFinished):
            self.transcript.append(event.model_turn.message)
        elif isinstance(event, S.ToolCompleted):
            self.transcript.append(
                Message.tool(event.call.id, event.result.content, is_error=event.result.is_error)
            )
        elif isinstance(event, S.RunFinished):
            self.result = event.result
            self.transcript = list(event.result.transcript)
        elif type(event) not in S.STREAMED:  # (the stream shows those)
            self._presenter.show(event)


def _print_timeline(timeline: Timeline) -> None:
    """The timeline on standard error, as wide as the terminal (at most 100
    columns; 80 when unknown), in ASCII when its encoding lacks the bars."""
    width = min(shutil.get_terminal_size((80, 24)).columns, 100) or 80
    encoding = getattr(sys.stderr, "encoding", None) or "ascii"
    try:
        "▕█▏·→✗…µ".encode(encoding)
    except (LookupError, UnicodeEncodeError):
        ascii_only = True
    else:
        ascii_only = False
    click.echo(timeline.render(width, ascii=ascii_only), err=True)


def _parse_context(items: tuple[str, ...]) -> dict[str, str]:
    context: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SeamkitError(
                f"--context {item!r} is not KEY=VALUE", hint="e.g. --context user_id=ann"
            )
        context[key] = value
    return context


def _clock_from_env() -> Callable[[], datetime] | None:
    raw = os.environ.get("SEAMKIT_NOW")
    if not raw:
        return None
    try:
        now = datetime.fromisoformat(raw)
    except ValueError:
        raise SeamkitError(
            f"SEAMKIT_NOW={raw!r} is not an ISO 8601 instant",
            hint="e.g. SEAMKIT_NOW=2026-11-22T09:00:00+01:00",
        ) from None
    if now.tzinfo is None:
        raise SeamkitError(
            f"SEAMKIT_NOW={raw!r} has no UTC offset",
            hint="add one, e.g. 2026-11-22T09:00:00Z or +01:00",
        )
    return lambda: now
