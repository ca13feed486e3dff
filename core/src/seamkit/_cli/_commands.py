"""The ``seamkit`` commands that read an app: ``schema``, ``validate``,
``tools`` and ``run`` (with the printer that shows a run on a terminal, and
what a signal does to a run: see `seamkit._cli._interrupt`).

They are registered on the group by name in `seamkit._cli._group` and imported only
when invoked, because building agents needs far more than listing plugins."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import click

from .. import stream as S
from .._context import HookContext
from .._engine._agent import Agent
from .._errors import ManifestError, SeamkitError
from .._events import hookimpl
from .._loader import get_registry
from .._manifest import manifest_schema
from .._persistence._recovery import write_recovery
from .._timeline import Timeline
from .._types import Cancelled, Failed, Message, RunResult, Terminated
from ._interrupt import Interrupts
from ._session_commands import command_line_store

__all__ = ["run_command", "schema_command", "tools_command", "validate_command"]


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


_EXIT = {"completed": 0, "terminated": 0, "max_turns": 1, "failed": 1, "cancelled": 130}


@click.command("run")
@click.argument("app", type=click.Path(dir_okay=False))
@click.argument("message")
@click.option("--json", "as_json", is_flag=True, help="Print the RunResult as JSON, no streaming.")
@click.option("--session", metavar="NAME", help="Keep the conversation under NAME between runs.")
@click.option(
    "--store",
    metavar="PATH|URL",
    help="The session store: a SQLite path (relative to the working directory), "
    "sqlite:///PATH, or a URL a plugin serves (postgresql://...); default: the manifest's "
    "sessions.store, else sessions.sqlite in the user's data directory.",
)
@click.option(
    "--model",
    "model_spec",
    metavar="SPEC",
    help="Use this model instead of the manifest's, e.g. openai:gpt-4o-mini.",
)
@click.option(
    "--context",
    "context_items",
    multiple=True,
    metavar="KEY=VALUE",
    help="A property of the run's ActionContext (repeatable).",
)
@click.option(
    "--trace",
    is_flag=True,
    help="After the run, print its timeline to standard error: the run, its turns, "
    "model calls, tool calls (concurrent ones side by side) and the hooks that fired, "
    "each with its duration.",
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
) -> None:
    """Run APP on MESSAGE: stream the answer to standard output, and show each
    hook that fired and each tool call on standard error.

    The exit status is 0 when the run completed or a hook ended it on
    purpose, 1 when it failed or hit max_turns, 130 when it was cancelled.
    Ctrl-C (SIGINT) or SIGTERM cancels the run: on_completion fires, the
    session is saved, and the exit status is 130 (SIGINT) or 143 (SIGTERM);
    a second signal cuts on_completion short, a third quits at once (as does
    the first when a tool or hook blocks the run for more than a second),
    leaving the transcript in a recovery file.
    SEAMKIT_NOW (an ISO 8601 instant) fixes the agent's clock.
    """
    context = _parse_context(context_items)
    clock = _clock_from_env()
    store = command_line_store(store)
    timeline = Timeline() if trace else None
    recorder = _Recorder()
    hooks: list[object] = [recorder] if timeline is None else [recorder, timeline]
    printer = None if as_json else _Printer()

    async def work() -> None:
        async with await Agent.load(
            app, clock=clock, model=model_spec, store=store, hooks=hooks
        ) as agent:
            if timeline is not None and agent.config is not None:
                spec = model_spec or agent.config.model.spec
                timeline.model_name = spec.partition(":")[2] or spec
            if printer is None:
                await agent.run(message, context=context, session=session, store=store)
                return
            events = agent.stream(message, context=context, session=session, store=store)
            async for event in events:
                printer.show(event)

    def note(text: str) -> None:
        if printer is not None:
            printer.note(text)
        else:
            click.secho(text, err=True, dim=True)

    def quit_now(code: int, finished: bool) -> None:
        cause = signals.signal_name or "a signal"
        if finished or session is None:
            note(f"[quit at once on {cause}]")
            return
        # The run did not get to save its session: keep what this process knows.
        kept = recorder.transcript or [Message.user(message)]
        where = store if store is not None and "@" not in store else None
        path = write_recovery(session, kept, {}, location=where, reason=f"quit at once on {cause}")
        saved = f"its transcript is in {path}" if path is not None else "it was logged"
        note(f"[quit at once on {cause}: session {session!r} may not be saved; {saved}]")

    signals = Interrupts(note, quit_now)
    failure = signals.run(work())
    result = recorder.result
    if as_json and result is not None:
        click.echo(result.model_dump_json(indent=2, exclude_none=True))
    if signals.signal_name is not None:
        if result is None:
            note(f"[cancelled: {signals.signal_name} · before the run started: nothing ran]")
        elif printer is None or not printer.finished:
            note(_summary(result, signals.signal_name))
    if timeline is not None:
        _print_timeline(timeline)
    if failure is not None:
        if signals.exit_code is None or not isinstance(failure, SeamkitError):
            raise failure
        click.echo(f"error: {failure.message}", err=True)
        if failure.hint:
            click.echo(f"hint: {failure.hint}", err=True)
    if signals.exit_code is not None:
        sys.exit(signals.exit_code)
    sys.exit(_EXIT.get(result.outcome.kind, 1) if result is not None else 1)


class _Recorder:
    """Keeps the run's `RunResult` as observers get it (`RunFinished`), so
    that a run cut short by a signal, whose caller never gets a result, can
    still be summarised, printed as JSON and recovered; and, until then, the
    transcript as far as the run's events tell it (the messages of the first
    model call, then each turn and tool result), for a process that must
    quit before the run ends."""

    def __init__(self) -> None:
        self.result: RunResult | None = None
        self.transcript: list[Message] = []

    @hookimpl
    def on_run_event(self, ctx: HookContext, event: S.ObservedEvent) -> None:
        """Remember the result the run finished with, and the transcript so far."""
        if isinstance(event, S.ModelCallStarted):
            if not self.transcript:
                self.transcript = list(event.request.messages)
        elif isinstance(event, S.TurnFinished):
            self.transcript.append(event.model_turn.message)
        elif isinstance(event, S.ToolCompleted):
            self.transcript.append(Message.tool(event.call.id, event.result.content))
        elif isinstance(event, S.RunFinished):
            self.result = event.result
            self.transcript = list(event.result.transcript)


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


class _Printer:
    """Text to standard output as it streams; hooks and tools, compactly, to
    standard error: a tool's line when it starts, its result with the time it
    took when the batch commits."""

    def __init__(self) -> None:
        self.outcome = "failed"
        self.finished = False
        """Whether the run's summary line is out."""
        self._open_line = False
        self._turn = 0
        self._turn_text = ""
        self._started: dict[str, float] = {}

    def note(self, text: str) -> None:
        """A line to standard error, after the text streamed so far."""
        if self._open_line:
            click.echo()
            self._open_line = False
        click.secho(text, err=True, dim=True)

    def show(self, event: S.Event) -> None:
        if isinstance(event, S.TextDelta):
            if event.turn != self._turn:
                self._turn, self._turn_text = event.turn, ""
            self._turn_text += event.text
            click.echo(event.text, nl=False)
            self._open_line = True
        elif isinstance(event, S.HookFired):
            by = f" by {event.hook}" if event.hook else ""
            self.note(f"· {event.event}: {', '.join(event.hooks)} → {event.flow}{by}")
        elif isinstance(event, S.ToolExecutionStart):
            self._started[event.call.id] = time.monotonic()
            self.note(f"→ {event.call.name}({_short(event.call.raw_arguments)})")
        elif isinstance(event, S.ToolCompleted):
            mark = "✗" if event.result.is_error else "←"
            began = self._started.pop(event.call.id, None)
            took = f" ({time.monotonic() - began:.2f}s)" if began is not None else ""
            self.note(f"{mark} {event.call.name}{took}: {_short(event.result.content)}")
        elif isinstance(event, S.RunFinished):
            result = event.result
            self.outcome = result.outcome.kind
            if self._open_line:
                click.echo()
                self._open_line = False
            if result.outcome.kind == "completed" and result.output not in (None, self._turn_text):
                click.echo(result.output)  # a terminal tool's result: never streamed
            self.note(_summary(result))
            self.finished = True


def _summary(result: RunResult, cause: str | None = None) -> str:
    """The run's last line: ``[outcome: detail · model calls · tokens]``;
    ``cause`` names the signal that cancelled it."""
    outcome = result.outcome
    detail = ""
    if isinstance(outcome, Terminated):
        detail = f": {outcome.reason}" + (f" (hook {outcome.hook})" if outcome.hook else "")
    elif isinstance(outcome, Failed):
        detail = f": {outcome.error}"
    elif isinstance(outcome, Cancelled) and cause:
        detail = f": {cause}"
    usage = result.usage
    return (
        f"[{outcome.kind}{detail} · {usage.requests} model call"
        f"{'' if usage.requests == 1 else 's'} · {usage.input_tokens} in / "
        f"{usage.output_tokens} out tokens]"
    )


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


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
