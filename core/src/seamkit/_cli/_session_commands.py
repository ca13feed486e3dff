"""``seamkit sessions``: inspect and repair a session store from the command
line: ``list``, ``show``, ``export``, ``import`` and ``delete``.

The store is found as ``seamkit run`` finds it: ``--store PATH|URL`` (a
relative path is relative to the working directory, see
`command_line_store`), else the ``sessions.store`` of the manifest given with
``--app`` (relative to the manifest), else ``sessions.sqlite`` in seamkit's
data directory. ``export`` and ``import``
speak the JSON of a recovery file, so a transcript a failed save left behind
goes back with ``seamkit sessions import FILE``; they carry a session's
pending calls (in its state) and the journal of a run that did not finish,
which ``show`` lists as pending and in-doubt calls."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import click

from .._engine._parts import open_store
from .._errors import SessionBusy, SessionError
from .._loader import get_registry
from .._manifest import AppConfig
from .._persistence._journal import JournalEntry, JournalStore
from .._persistence._recovery import read_session_document, session_document, store_location
from .._persistence._sessions import (
    CLIENT_TOOLS_KEY,
    PENDING_KEY,
    RawSessionReader,
    SessionStore,
    StoredSession,
)
from .._types import Message
from ._session_calls import session_calls

__all__ = ["command_line_store", "sessions_command"]

T = TypeVar("T")

_LOCK_WAIT = 10.0
"""Seconds ``delete`` and ``import`` wait for a run that holds the session."""

F = TypeVar("F", bound=Callable[..., None])


def _store_options(command: F) -> F:
    """The options that name the store, as ``seamkit run`` takes them."""
    command = click.option(
        "--app",
        metavar="APP",
        type=click.Path(dir_okay=False),
        help="Use the store named in this manifest's sessions.store.",
    )(command)
    return click.option(
        "--store",
        metavar="PATH|URL",
        help="The session store: a SQLite path, sqlite:///PATH, or a URL a plugin serves "
        "(postgresql://...); default: --app's sessions.store, else sessions.sqlite in "
        "the user's data directory.",
    )(command)


def command_line_store(spec: str | None) -> str | None:
    """``--store`` as given on a command line, with a relative SQLite path
    (plain or ``sqlite:///``) made absolute from the working directory, as
    any path on a command line is read; only the manifest's
    ``sessions.store`` is relative to the manifest."""
    if spec is None:
        return None
    scheme, sep, rest = spec.partition("://")
    if not sep or len(scheme) < 2:  # a plain path (a Windows drive letter too)
        return str(Path(spec).absolute())
    if scheme == "sqlite" and not Path(rest.removeprefix("/")).is_absolute():
        return f"sqlite:///{Path(rest.removeprefix('/')).absolute()}"
    return spec


def _open(app: str | None, store: str | None) -> SessionStore:
    """The store the options name (see the module's docstring)."""
    registry = get_registry()
    base_dir = None
    spec = command_line_store(store)
    if app is not None:
        config = AppConfig.load(app, registry=registry)
        base_dir = Path(app).resolve().parent
        if spec is None:
            spec = config.sessions.store
    return open_store(spec, registry=registry, base_dir=base_dir)


def _with_store(
    app: str | None, store: str | None, work: Callable[[SessionStore], Awaitable[T]]
) -> T:
    """``work`` on the store, in one event loop (a plugin's store keeps its
    connections in the loop that opened them)."""

    async def main() -> T:
        return await work(_open(app, store))

    return asyncio.run(main())


def _missing(held: SessionStore, name: str) -> SessionError:
    """The error for a session that is not in the store."""
    return SessionError(
        f"no session {name!r} in {store_location(held)}",
        hint="`seamkit sessions list` shows the sessions (with the same --store or --app)",
    )


async def _journal(held: SessionStore, name: str) -> list[JournalEntry]:
    """The journal of ``name`` (``[]`` when the store keeps none)."""
    return await held.journal_read(name) if isinstance(held, JournalStore) else []


async def _load(held: SessionStore, name: str) -> tuple[StoredSession, list[JournalEntry]]:
    """The session ``name`` and its journal; `SessionError` when there is
    neither (a session whose first run stopped short has only a journal)."""
    found = await held.load(name)
    journal = await _journal(held, name)
    if found is None and not journal:
        raise _missing(held, name)
    return found or StoredSession(), journal


async def _running(held: SessionStore, name: str) -> bool | None:
    """Whether a run holds the session ``name`` now (``None``: the store
    cannot tell, a read-only one say)."""
    try:
        async with held.lock(name, 0.0):
            return False
    except SessionBusy:
        return True
    except SessionError:
        return None


@click.group("sessions")
def sessions_command() -> None:
    """Inspect and repair a session store: list, show, export, import, delete."""


@sessions_command.command("list")
@_store_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def list_command(app: str | None, store: str | None, as_json: bool) -> None:
    """List the sessions: name, number of messages, the last user message.
    A session whose stored row does not parse shows as unreadable."""

    async def rows(held: SessionStore) -> tuple[str, list[dict[str, object]]]:
        try:
            names = await held.list()
        except NotImplementedError:
            raise SessionError(
                f"the store {store_location(held)} cannot list its sessions"
            ) from None
        out: list[dict[str, object]] = []
        for name in names:
            try:
                found = await held.load(name)
            except SessionError as exc:
                out.append({"name": name, "messages": None, "error": exc.message})
                continue
            transcript = found.transcript if found is not None else ()
            last = next((m.text for m in reversed(transcript) if m.from_user), "")
            out.append({"name": name, "messages": len(transcript), "last_user": last})
        return store_location(held), out

    location, found = _with_store(app, store, rows)
    if as_json:
        click.echo(json.dumps(found, indent=2, ensure_ascii=False))
        return
    if not found:
        click.echo(f"no sessions in {location}", err=True)
        return
    table = [("NAME", "MESSAGES", "LAST USER MESSAGE")]
    for row in found:
        if row.get("error") is not None:
            table.append((str(row["name"]), "?", "unreadable: see `seamkit sessions show NAME`"))
        else:
            table.append((str(row["name"]), str(row["messages"]), _short(str(row["last_user"]))))
    widths = [max(len(r[i]) for r in table) for i in range(2)]
    for name, count, last in table:
        click.echo(f"{name.ljust(widths[0])}  {count.rjust(widths[1])}  {last}".rstrip())


@sessions_command.command("show")
@click.argument("name")
@_store_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def show_command(name: str, app: str | None, store: str | None, as_json: bool) -> None:
    """Print the transcript of session NAME, one message after another, then
    its calls waiting for a decision (pending) and the calls a run that
    stopped short started without recording their result (in doubt)."""

    async def load(
        held: SessionStore,
    ) -> tuple[str, StoredSession, list[JournalEntry], bool | None]:
        found, journal = await _load(held, name)
        running = await _running(held, name) if journal else False
        return store_location(held), found, journal, running

    location, found, journal, running = _with_store(app, store, load)
    calls = session_calls(found.state, journal)
    state = {k: v for k, v in found.state.items() if k not in (PENDING_KEY, CLIENT_TOOLS_KEY)}
    if as_json:
        document = {
            "session": name,
            "store": location,
            "transcript": [m.model_dump(mode="json", exclude_none=True) for m in found.transcript],
            "state": state,
            **calls.as_json(),
            "running": running,
        }
        click.echo(json.dumps(document, indent=2, ensure_ascii=False))
        return
    count = len(found.transcript)
    click.secho(
        f"session {name!r} in {location}: {count} message{'' if count == 1 else 's'}",
        dim=True,
    )
    for line in _transcript_lines(found.transcript):
        click.echo(line)
    if state:
        click.secho(f"state: {json.dumps(state, ensure_ascii=False)}", dim=True)
    for line in calls.lines(name, running):
        click.echo(line)


@sessions_command.command("export")
@click.argument("name")
@_store_options
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, writable=True),
    help="Write the JSON to this file instead of standard output.",
)
@click.option(
    "--raw",
    is_flag=True,
    help="Export the stored texts as they are, even when they do not parse (to repair by "
    "hand and import).",
)
def export_command(
    name: str, app: str | None, store: str | None, output: str | None, raw: bool
) -> None:
    """Print session NAME as JSON ({session, transcript, state}, and journal:
    the record of a run that did not finish, when there is one), the form
    `seamkit sessions import` reads."""

    async def export(held: SessionStore) -> dict[str, object]:
        if not raw:
            found, journal = await _load(held, name)
            return session_document(name, found.transcript, found.state, journal=journal)
        if not isinstance(held, RawSessionReader):
            raise SessionError(
                f"the store {store_location(held)} cannot export its rows as they are",
                hint="export without --raw",
            )
        row = await held.load_raw(name)
        if row is None:
            raise _missing(held, name)
        document: dict[str, object] = {
            "session": name,
            "transcript": _json_or_text(row.transcript),
            "state": _json_or_text(row.state),
        }
        try:
            journal = await _journal(held, name)
        except SessionError as exc:  # keep what can be kept: the row above
            click.echo(f"warning: the journal is left out: {exc.message}", err=True)
            journal = []
        if journal:
            document["journal"] = [entry.model_dump(mode="json") for entry in journal]
        return document

    document = _with_store(app, store, export)
    text = json.dumps(document, indent=2, ensure_ascii=False)
    if output is None:
        click.echo(text)
        return
    try:
        Path(output).write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        raise SessionError(f"cannot write {output}: {exc.strerror or exc}") from None
    click.echo(f"session {name!r} written to {output}", err=True)


@sessions_command.command("import")
@click.argument("file", type=click.Path(dir_okay=False))
@_store_options
@click.option("--name", help="Import under this name instead of the one in FILE.")
@click.option(
    "--replace",
    is_flag=True,
    help="Replace a stored session even when FILE does not continue it.",
)
def import_command(
    file: str, app: str | None, store: str | None, name: str | None, replace: bool
) -> None:
    """Put a session from FILE (an export, or a recovery file a failed save
    wrote) into the store, with the journal of its unfinished run when FILE
    has one. A stored session is replaced only when FILE continues its
    transcript, or with --replace."""
    try:
        text = Path(file).read_text(encoding="utf-8")
    except OSError as exc:
        raise SessionError(f"cannot read {file}: {exc.strerror or exc}") from None
    document = read_session_document(text, file)
    session, journal = document.session, document.journal
    target = name or document.name
    if not target:
        raise SessionError(f"{file} names no session", hint="give one with --name NAME")

    async def put(held: SessionStore) -> str:
        if journal and not isinstance(held, JournalStore):
            raise SessionError(
                f"{file} holds the journal of a run that did not finish ({len(journal)} "
                f"entries), and the store {store_location(held)} keeps no journal",
                hint="import it into a store that keeps one (SQLite, PostgreSQL); or, to "
                "give up that run's record, remove the file's \"journal\" key",
            )
        async with held.lock(target, _LOCK_WAIT):
            try:
                stored = await held.load(target)
            except SessionError:
                if not replace:
                    raise
                stored = None
            if stored is not None and not replace:
                before = stored.transcript
                if session.transcript[: len(before)] != before:
                    raise SessionError(
                        f"session {target!r} holds {len(before)} messages that {file} does "
                        "not start with",
                        hint="--replace to overwrite it, or --name OTHER to import beside it",
                    )
            await held.save(target, session.transcript, session.state)
            if journal and isinstance(held, JournalStore):  # after the save, which drops one
                await held.journal_append(target, journal)
        return store_location(held)

    location = _with_store(app, store, put)
    count = len(session.transcript)
    carried = f" and {len(journal)} journal entr{'y' if len(journal) == 1 else 'ies'}"
    click.echo(
        f"session {target!r} in {location}: {count} message{'' if count == 1 else 's'}"
        f"{carried if journal else ''} imported",
        err=True,
    )


@sessions_command.command("delete")
@click.argument("names", nargs=-1, required=True, metavar="NAME...")
@_store_options
@click.option("--yes", is_flag=True, help="Delete without asking.")
def delete_command(names: tuple[str, ...], app: str | None, store: str | None, yes: bool) -> None:
    """Delete sessions by name, unreadable ones included. Asks first on a
    terminal; elsewhere needs --yes."""
    if not yes:
        listed = ", ".join(repr(n) for n in names)
        if not sys.stdin.isatty():
            raise SessionError(
                f"not deleting {listed} without --yes",
                hint=f"seamkit sessions delete {' '.join(names)} --yes",
            )
        click.confirm(f"delete session{'s' if len(names) > 1 else ''} {listed}?", abort=True)

    async def delete(held: SessionStore) -> str:
        stored = set(await held.list())
        missing = [n for n in names if n not in stored]
        if missing:
            raise SessionError(
                f"no session {missing[0]!r} in {store_location(held)}; nothing deleted",
                hint="`seamkit sessions list` shows the sessions",
            )
        for name in names:
            async with held.lock(name, _LOCK_WAIT):
                await held.delete(name)
        return store_location(held)

    location = _with_store(app, store, delete)
    for name in names:
        click.echo(f"deleted session {name!r} from {location}", err=True)


def _transcript_lines(transcript: tuple[Message, ...]) -> list[str]:
    """The transcript for a reader: ``role: text`` per message, tool calls as
    ``→ name(arguments)``, tool results with the tool's name, continuation
    lines indented."""
    names: dict[str, str] = {}
    lines: list[str] = []

    def add(head: str, text: str) -> None:
        first, *rest = text.splitlines() or [""]
        lines.append(f"{head}: {first}".rstrip())
        lines.extend(f"  {line}" for line in rest)

    for message in transcript:
        if message.role == "tool":
            tool = names.get(message.tool_call_id or "", "?")
            add(f"tool {tool} [{message.tool_call_id}]", message.text)
            continue
        if message.text or not message.tool_calls:
            add(message.role, message.text)
        for call in message.tool_calls or ():
            names[call.id] = call.function.name
            lines.append(
                f"{message.role}: → {call.function.name}({call.function.arguments}) [{call.id}]"
            )
    return lines


def _json_or_text(text: str) -> object:
    """``text`` parsed when it is JSON, else as it is."""
    try:
        parsed: object = json.loads(text)
    except ValueError:
        return text
    return parsed


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
