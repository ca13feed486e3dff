"""Sessions: a conversation's whole transcript, and a small state mapping for
hooks, kept between runs.

`SessionStore` is the protocol every store implements; `SQLiteSessionStore`
is the built-in one (one SQLite file, by default ``sessions.sqlite`` in the
user's data directory); plugins add stores for URL schemes
(``register_session_stores``). A finished run replaces its session's
transcript and state in one transaction; runs on one session are serialised
by ``lock``, which fails with `SessionBusy` after the wait.

The SQLite store checks, when a run takes the lock, that it can write (a
read-only file or directory is a `SessionError` before anything runs), and
locks by the file's real path, so that runs reaching one store through
different paths (a symlink) still take turns. A stored row that does not
parse is a `SessionError` naming the session and the commands that export or
delete it; a store that cannot be written is still readable, for ``seamkit
sessions export``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import (
    AbstractAsyncContextManager,
    AbstractContextManager,
    asynccontextmanager,
    closing,
    contextmanager,
)
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import filelock
from pydantic import TypeAdapter

from .._approval import PendingCall
from .._errors import SessionBusy, SessionError
from .._types import Message, ToolSpec
from ._journal import JournalEntry

__all__ = [
    "CLIENT_TOOLS_KEY",
    "PENDING_KEY",
    "RawSession",
    "RawSessionReader",
    "SQLiteSessionStore",
    "SessionStore",
    "StoredSession",
    "default_store_path",
]

_REPAIR_HINT = (
    "keep what is stored with `seamkit sessions export {name} --raw`, then remove it with "
    "`seamkit sessions delete {name} --yes` (both take --store like seamkit run)"
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    name TEXT PRIMARY KEY,
    transcript TEXT NOT NULL,
    updated_at REAL NOT NULL,
    state TEXT NOT NULL DEFAULT '{}'
)
"""

_JOURNAL_SCHEMA = """
CREATE TABLE IF NOT EXISTS journal (
    seq INTEGER PRIMARY KEY,
    session TEXT NOT NULL,
    run_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    call_id TEXT,
    data TEXT NOT NULL
)
"""

_UPSERT = (
    "INSERT INTO sessions (name, transcript, updated_at, state) VALUES (?, ?, ?, ?) "
    "ON CONFLICT(name) DO UPDATE SET transcript = excluded.transcript, "
    "updated_at = excluded.updated_at, state = excluded.state"
)


PENDING_KEY = "seamkit.pending"
"""Where a session's state keeps the calls that wait for a decision (the
kernel hides it from hooks; `StoredSession.pending` reads it)."""

CLIENT_TOOLS_KEY = "seamkit.client_tools"
"""Where a suspended session keeps the run's client tools, so that its
decisions continue it with them (hidden from hooks, like `PENDING_KEY`)."""

_PENDING = TypeAdapter(tuple[PendingCall, ...])
_SPECS = TypeAdapter(tuple[ToolSpec, ...])


@dataclass(frozen=True, slots=True)
class StoredSession:
    """One stored session: its whole ``transcript`` and its ``state``, a small
    JSON mapping hooks keep between runs (injection freshness, say)."""

    transcript: tuple[Message, ...] = ()
    state: Mapping[str, Any] = field(default_factory=dict)

    @property
    def pending(self) -> tuple[PendingCall, ...]:
        """The calls of the session's suspended run that wait for a decision
        (decided ones that did not run yet included); ``()`` when none does.
        Decisions a journal stored since are not applied here."""
        raw = self.state.get(PENDING_KEY)
        return _PENDING.validate_python(raw) if raw else ()

    @property
    def client_tools(self) -> tuple[ToolSpec, ...]:
        """The client tools of the session's suspended run (``()``: none)."""
        raw = self.state.get(CLIENT_TOOLS_KEY)
        return _SPECS.validate_python(raw) if raw else ()

    @classmethod
    def parse(
        cls, name: str, transcript: str, state: str, *, location: str | None = None
    ) -> StoredSession:
        """The session ``name`` from its stored JSON texts (a store's
        ``load`` calls this). A row that does not parse raises `SessionError`
        naming the session and the commands that export or delete it, never
        a bare JSON or validation error."""
        try:
            messages = json.loads(transcript)
            if not isinstance(messages, list):
                raise ValueError(f"the transcript is a JSON {type(messages).__name__}, not a list")
            parsed = tuple(Message.model_validate(m) for m in messages)
            mapping = json.loads(state)
            if not isinstance(mapping, dict):
                raise ValueError(f"the state is a JSON {type(mapping).__name__}, not an object")
        except ValueError as exc:  # json and pydantic errors both are ValueErrors
            reason = " ".join(str(exc).split())
            where = f" in {location}" if location else ""
            raise SessionError(
                f"session {name!r}{where} cannot be read: "
                f"{reason if len(reason) <= 200 else reason[:199] + '…'}",
                location=location,
                hint=_REPAIR_HINT.format(name=name),
            ) from None
        return cls(parsed, mapping)


@dataclass(frozen=True, slots=True)
class RawSession:
    """One stored session as its store holds it: the ``transcript`` and
    ``state`` JSON texts, unparsed (what ``seamkit sessions export --raw``
    writes when a row no longer parses)."""

    transcript: str
    state: str


@runtime_checkable
class RawSessionReader(Protocol):
    """A store that can hand out a session's stored texts as they are. Not
    part of `SessionStore`: a store that has it gives ``seamkit sessions
    export --raw`` something to save from a row that does not parse."""

    async def load_raw(self, name: str) -> RawSession | None:
        """The stored texts of ``name``, or ``None`` when there is none."""
        ...


@runtime_checkable
class SessionStore(Protocol):
    """Where sessions live. Implement it to keep them elsewhere (a plugin
    registers a URL scheme for it with ``register_session_stores``).

    A store that also implements the journal methods (`seamkit.JournalStore`:
    ``journal_append``, ``journal_read``, and a ``save`` that drops the
    session's journal in the same transaction) gives its runs exactly-once
    effects across a crash; one without them still works, at-least-once.
    ``seamkit.testing.check_session_store`` checks both."""

    async def load(self, name: str) -> StoredSession | None:
        """The session ``name``, or ``None`` when there is none."""
        ...

    async def save(
        self, name: str, transcript: Sequence[Message], state: Mapping[str, Any]
    ) -> None:
        """Replace the transcript and state of ``name``, atomically."""
        ...

    def lock(self, name: str, wait_seconds: float) -> AbstractAsyncContextManager[None]:
        """Hold ``name`` for one run; raise `SessionBusy` after ``wait_seconds``."""
        ...

    async def list(self) -> list[str]:
        """Every stored session's name, sorted."""
        ...

    async def delete(self, name: str) -> None:
        """Forget the session ``name`` (nothing happens when there is none)."""
        ...


def default_store_path() -> Path:
    """``$SEAMKIT_HOME/sessions.sqlite``, else ``sessions.sqlite`` in the
    user's data directory (``platformdirs.user_data_dir("seamkit")``)."""
    home = os.environ.get("SEAMKIT_HOME")
    if home:
        return Path(home) / "sessions.sqlite"
    import platformdirs  # lazy: only when no SEAMKIT_HOME is set

    return Path(platformdirs.user_data_dir("seamkit")) / "sessions.sqlite"


class SQLiteSessionStore:
    """Sessions in one SQLite file; runs on a session are serialised with a
    lock file beside the file's real path (released by the OS if the process
    dies). A store that cannot be written (a read-only file or directory)
    still opens, for reading; taking the lock for a run then fails with a
    `SessionError` saying why, before anything runs."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_store_path()
        self._read_only: str | None = None  # why it cannot be written, when found on opening
        self._durable: sqlite3.Connection | None = None  # the journal's, synchronous=FULL
        self._durable_lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            _while_locked(self._create)
        except (OSError, sqlite3.Error) as exc:
            self._read_only = self._why_read_only()
            if self._read_only is None or not self.path.is_file():
                raise SessionError(
                    f"cannot open the session store {str(self.path)!r}: {self._read_only or exc}",
                    location=str(self.path),
                    hint="pass --store PATH with a writable location",
                ) from None
            with self._failing("open"), closing(self._connect()) as db:
                db.execute("SELECT name FROM sessions LIMIT 1").fetchall()

    def __repr__(self) -> str:
        return f"SQLiteSessionStore({str(self.path)!r})"

    @property
    def location(self) -> str:
        """The store's path, as given."""
        return str(self.path)

    def _why_read_only(self) -> str | None:
        """Why this process cannot write the store, or ``None`` when it can:
        SQLite needs the file and, for its journal, its directory writable."""
        real = Path(os.path.realpath(self.path))
        if real.exists() and not os.access(real, os.W_OK):
            return f"the file {str(real)!r} is read-only"
        if not os.access(real.parent, os.W_OK):
            return (
                f"its directory {str(real.parent)!r} is not writable "
                "(SQLite writes its journal and lock files there)"
            )
        return None

    def _check_writable(self, then: str = "") -> None:
        """Raise `SessionError` when the store cannot be written (``then``
        says what that means to the caller). A store found read-only when
        opened that can be written now goes back to ordinary connections."""
        reason = self._why_read_only()
        if reason is None:
            self._read_only = None
        else:
            raise SessionError(
                f"the session store {str(self.path)!r} is read-only: {reason}{then}",
                location=str(self.path),
                hint="make it writable, or use another store with --store PATH "
                "(or sessions.store in the manifest)",
            )

    def _create(self) -> None:
        """The table, in WAL mode (the columns of an older store added)."""
        with closing(self._connect()) as db, db:
            db.execute(_SCHEMA)
            db.execute(_JOURNAL_SCHEMA)
            db.execute("CREATE INDEX IF NOT EXISTS journal_session ON journal (session, seq)")
            columns = {row[1] for row in db.execute("PRAGMA table_info(sessions)")}
            if "state" not in columns:  # a store written before sessions had state
                db.execute("ALTER TABLE sessions ADD COLUMN state TEXT NOT NULL DEFAULT '{}'")

    def _connect(self) -> sqlite3.Connection:
        if self._read_only is None:
            db = sqlite3.connect(self.path, timeout=30)
            db.execute("PRAGMA journal_mode=WAL")
            return db
        uri = Path(os.path.realpath(self.path)).as_uri()
        db = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=30)
        try:
            db.execute("PRAGMA schema_version").fetchone()
        except sqlite3.Error:  # WAL in a read-only directory: nobody can be writing it
            db.close()
            db = sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True)
        return db

    @contextmanager
    def _failing(self, doing: str) -> Iterator[None]:
        """Turn an SQLite error into a `SessionError` saying what failed where
        and what to do about it."""
        try:
            yield
        except sqlite3.Error as exc:
            text = str(exc)
            if "full" in text:
                hint = "free some disk space where the store is, or use another --store PATH"
            elif "not a database" in text or "malformed" in text:
                hint = "the file is damaged or not a session store: move it aside"
            elif "readonly" in text or "read-only" in text:
                hint = "make the store writable, or use another --store PATH"
            elif "locked" in text:
                hint = "another process kept the store busy too long; try again"
            else:
                hint = "pass --store PATH with a writable location"
            raise SessionError(
                f"cannot {doing} the session store {str(self.path)!r}: {text}",
                location=str(self.path),
                hint=hint,
            ) from None

    def _reading(self, doing: str) -> AbstractContextManager[sqlite3.Connection]:
        """A connection to read on: the store's open one (a query costs µs,
        opening a connection most of a millisecond), or, for a store this
        process cannot write (`seamkit sessions export` of a read-only one),
        one of its own."""
        if self._durable is None and self._why_read_only() is not None:
            return closing(self._connect())
        return self._durably(doing)

    def _row(self, name: str) -> tuple[str, str] | None:
        doing = f"load session {name!r} from"
        with self._failing(doing), self._reading(doing) as db:
            row = db.execute(
                "SELECT transcript, state FROM sessions WHERE name = ?", (name,)
            ).fetchone()
        return None if row is None else (_text(row[0]), _text(row[1]))

    def _load(self, name: str) -> StoredSession | None:
        row = self._row(name)
        if row is None:
            return None
        return StoredSession.parse(name, row[0], row[1], location=str(self.path))

    def _save(self, name: str, transcript: Sequence[Message], state: Mapping[str, Any]) -> None:
        text = json.dumps([m.model_dump(mode="json", exclude_none=True) for m in transcript])
        self._check_writable()
        with self._failing(f"save session {name!r} in"), closing(self._connect()) as db, db:
            db.execute(_UPSERT, (name, text, time.time(), json.dumps(dict(state))))
            db.execute("DELETE FROM journal WHERE session = ?", (name,))  # what it covered

    # --- the journal (seamkit._persistence._journal) -----------------------

    @contextmanager
    def _durably(self, doing: str) -> Iterator[sqlite3.Connection]:
        """The journal's connection (one per store, ``synchronous=FULL``:
        each commit is on disk before it returns), in a transaction."""
        with self._durable_lock, self._failing(doing):
            db = self._durable
            if db is None:
                self._check_writable()
                db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=FULL")
                self._durable = db
            with db:
                yield db

    def _journal_append(self, name: str, entries: Sequence[JournalEntry]) -> None:
        rows = [(name, e.run_id, e.kind, e.call_id, json.dumps(e.data)) for e in entries]
        with self._durably(f"journal session {name!r} in") as db:
            db.executemany(
                "INSERT INTO journal (session, run_id, kind, call_id, data) VALUES (?, ?, ?, ?, ?)",
                rows,
            )

    def _journal_read(self, name: str) -> list[JournalEntry]:
        doing = f"read the journal of {name!r} in"
        with self._failing(doing), self._reading(doing) as db:
            rows = db.execute(
                "SELECT run_id, kind, call_id, data FROM journal WHERE session = ? ORDER BY seq",
                (name,),
            ).fetchall()
        return [JournalEntry.model_validate(_journal_row(*row)) for row in rows]

    async def journal_append(self, name: str, entries: Sequence[JournalEntry]) -> None:
        """Append ``entries`` to the journal of ``name``, on disk before it returns."""
        await asyncio.to_thread(self._journal_append, name, entries)

    async def journal_read(self, name: str) -> list[JournalEntry]:
        """The journal of ``name``, oldest first."""
        return await asyncio.to_thread(self._journal_read, name)

    def _list(self) -> list[str]:
        with self._failing("list the sessions of"), closing(self._connect()) as db:
            return [r[0] for r in db.execute("SELECT name FROM sessions ORDER BY name")]

    def _delete(self, name: str) -> None:
        self._check_writable()
        with self._failing(f"delete session {name!r} from"), closing(self._connect()) as db, db:
            db.execute("DELETE FROM sessions WHERE name = ?", (name,))
            db.execute("DELETE FROM journal WHERE session = ?", (name,))

    async def load(self, name: str) -> StoredSession | None:
        """The session ``name``, or ``None`` when there is none; `SessionError`
        when its row does not parse."""
        return await asyncio.to_thread(self._load, name)

    async def load_raw(self, name: str) -> RawSession | None:
        """The stored texts of ``name`` as they are, parsed or not."""
        row = await asyncio.to_thread(self._row, name)
        return None if row is None else RawSession(*row)

    async def save(
        self, name: str, transcript: Sequence[Message], state: Mapping[str, Any]
    ) -> None:
        """Replace the transcript and state of ``name`` and drop its journal,
        in one transaction."""
        await asyncio.to_thread(self._save, name, transcript, state)

    async def list(self) -> list[str]:
        """Every stored session's name, sorted."""
        return await asyncio.to_thread(self._list)

    async def delete(self, name: str) -> None:
        """Forget the session ``name``."""
        await asyncio.to_thread(self._delete, name)

    @asynccontextmanager
    async def lock(self, name: str, wait_seconds: float = 10.0) -> AsyncIterator[None]:
        """Hold the session ``name`` for one run; wait up to ``wait_seconds``
        for another run to release it, then raise `SessionBusy`. Raises
        `SessionError` at once when the store cannot be written. The lock
        file goes beside the store's real path, so that every path to one
        store (a symlink, a relative path) takes the same lock."""
        self._check_writable("; nothing was run or changed")
        real = os.path.realpath(self.path)
        digest = hashlib.sha256(name.encode()).hexdigest()[:16]
        lock_path = f"{real}.{digest}.lock"
        held = filelock.FileLock(lock_path)
        deadline = time.monotonic() + wait_seconds
        while True:
            try:
                held.acquire(timeout=0)
                break
            except filelock.Timeout:
                if time.monotonic() >= deadline:
                    raise SessionBusy(name, wait_seconds) from None
                await asyncio.sleep(0.05)
            except OSError as exc:
                raise SessionError(
                    f"cannot lock session {name!r}: cannot create {lock_path!r}: "
                    f"{exc.strerror or exc}",
                    location=str(self.path),
                    hint="make the store's directory writable, or use another --store PATH",
                ) from None
        try:
            yield
        finally:
            held.release()


def _journal_row(run_id: object, kind: object, call_id: object, data: object) -> dict[str, Any]:
    """A journal row as `JournalEntry` fields; a row that does not parse is
    a `SessionError` (via ValueError) like a session row."""
    try:
        parsed = json.loads(_text(data))
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        raise SessionError(
            "a journal row of the session store cannot be read",
            hint="export what is readable with `seamkit sessions export --raw`",
        )
    return {"run_id": run_id, "kind": kind, "call_id": call_id, "data": parsed}


def _text(value: object) -> str:
    """A stored column as text, whatever SQLite's dynamic typing kept there."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return "null" if value is None else str(value)


_OPEN_SECONDS = 30.0
"""How long opening a store waits for other processes that open it at once."""


def _while_locked(create: Callable[[], None]) -> None:
    """``create()``, again while SQLite says the file is locked: processes that
    open a new store at once (the workers of ``seamkit serve``) race to switch
    it to WAL, and SQLite answers that switch "database is locked" at once,
    without waiting for its busy time-out."""
    deadline = time.monotonic() + _OPEN_SECONDS
    pause = 0.005
    while True:
        try:
            create()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)
