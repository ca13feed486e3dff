"""Sessions: a conversation's whole transcript, and a small state mapping for
hooks, kept between runs.

`SessionStore` is the protocol every store implements; `SQLiteSessionStore`
is the built-in one (one SQLite file, by default ``sessions.sqlite`` in the
user's data directory); plugins add stores for URL schemes
(``register_session_stores``). A finished run replaces its session's
transcript and state in one transaction; runs on one session are serialised
by ``lock``, which fails with `SessionBusy` after the wait.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import filelock

from ._errors import SessionBusy, SessionError
from ._types import Message

__all__ = [
    "SQLiteSessionStore",
    "SessionStore",
    "StoredSession",
    "default_store_path",
]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    name TEXT PRIMARY KEY,
    transcript TEXT NOT NULL,
    updated_at REAL NOT NULL,
    state TEXT NOT NULL DEFAULT '{}'
)
"""


@dataclass(frozen=True, slots=True)
class StoredSession:
    """One stored session: its whole ``transcript`` and its ``state``, a small
    JSON mapping hooks keep between runs (injection freshness, say)."""

    transcript: tuple[Message, ...] = ()
    state: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class SessionStore(Protocol):
    """Where sessions live. Implement it to keep them elsewhere (a plugin
    registers a URL scheme for it with ``register_session_stores``)."""

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
    lock file beside it (released by the OS if the process dies)."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_store_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with closing(self._connect()) as db, db:
                db.execute(_SCHEMA)
                columns = {row[1] for row in db.execute("PRAGMA table_info(sessions)")}
                if "state" not in columns:  # a store written before sessions had state
                    db.execute("ALTER TABLE sessions ADD COLUMN state TEXT NOT NULL DEFAULT '{}'")
        except (OSError, sqlite3.Error) as exc:
            raise SessionError(
                f"cannot open the session store {str(self.path)!r}: {exc}",
                location=str(self.path),
                hint="pass --store PATH with a writable location",
            ) from None

    def __repr__(self) -> str:
        return f"SQLiteSessionStore({str(self.path)!r})"

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30)
        db.execute("PRAGMA journal_mode=WAL")
        return db

    def _load(self, name: str) -> StoredSession | None:
        with closing(self._connect()) as db:
            row = db.execute(
                "SELECT transcript, state FROM sessions WHERE name = ?", (name,)
            ).fetchone()
        if row is None:
            return None
        transcript = tuple(Message.model_validate(m) for m in json.loads(row[0]))
        return StoredSession(transcript, json.loads(row[1]))

    def _save(self, name: str, transcript: Sequence[Message], state: Mapping[str, Any]) -> None:
        text = json.dumps([m.model_dump(mode="json", exclude_none=True) for m in transcript])
        with closing(self._connect()) as db, db:
            db.execute(
                "INSERT INTO sessions (name, transcript, updated_at, state) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(name) DO UPDATE SET transcript = excluded.transcript, "
                "updated_at = excluded.updated_at, state = excluded.state",
                (name, text, time.time(), json.dumps(dict(state))),
            )

    def _list(self) -> list[str]:
        with closing(self._connect()) as db:
            return [r[0] for r in db.execute("SELECT name FROM sessions ORDER BY name")]

    def _delete(self, name: str) -> None:
        with closing(self._connect()) as db, db:
            db.execute("DELETE FROM sessions WHERE name = ?", (name,))

    async def load(self, name: str) -> StoredSession | None:
        """The session ``name``, or ``None`` when there is none."""
        return await asyncio.to_thread(self._load, name)

    async def save(
        self, name: str, transcript: Sequence[Message], state: Mapping[str, Any]
    ) -> None:
        """Replace the transcript and state of ``name`` in one transaction."""
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
        for another run to release it, then raise `SessionBusy`."""
        digest = hashlib.sha256(name.encode()).hexdigest()[:16]
        held = filelock.FileLock(self.path.with_name(f"{self.path.name}.{digest}.lock"))
        deadline = time.monotonic() + wait_seconds
        while True:
            try:
                held.acquire(timeout=0)
                break
            except filelock.Timeout:
                if time.monotonic() >= deadline:
                    raise SessionBusy(name, wait_seconds) from None
                await asyncio.sleep(0.05)
        try:
            yield
        finally:
            held.release()
