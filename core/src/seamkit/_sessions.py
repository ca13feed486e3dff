"""Sessions: a conversation's whole transcript kept between runs, in SQLite.

A `SessionStore` is one SQLite file (by default ``sessions.sqlite`` in the
user's data directory). A finished run replaces its session's transcript in
one transaction. Runs on one session are serialised with a lock file per
session (released by the OS if the process dies); a run that cannot get the
lock within ``wait_seconds`` fails with `SessionBusy` before it starts.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, closing
from pathlib import Path

from ._errors import SeamkitError
from ._messages import Message

__all__ = ["SessionBusy", "SessionStore", "default_store_path"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    name TEXT PRIMARY KEY,
    transcript TEXT NOT NULL,
    updated_at REAL NOT NULL
)
"""


class SessionBusy(SeamkitError):
    """Raised when another run holds the session for longer than the wait.

    Carries the session ``name``; nothing was run and nothing was lost.
    """

    def __init__(self, name: str, waited: float) -> None:
        super().__init__(
            f"session {name!r} busy: another run still holds it after {waited:g}s",
            hint="wait for the other run to finish, or use another --session",
        )
        self.name = name


def default_store_path() -> Path:
    """``$SEAMKIT_HOME/sessions.sqlite``, else ``sessions.sqlite`` in the
    user's data directory (``platformdirs.user_data_dir("seamkit")``)."""
    home = os.environ.get("SEAMKIT_HOME")
    if home:
        return Path(home) / "sessions.sqlite"
    import platformdirs

    return Path(platformdirs.user_data_dir("seamkit")) / "sessions.sqlite"


class SessionStore:
    """Transcripts by session name, in one SQLite file."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_store_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with closing(self._connect()) as db, db:
                db.execute(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise SeamkitError(
                f"cannot open the session store {str(self.path)!r}: {exc}",
                hint="pass --store PATH with a writable location",
            ) from None

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30)
        db.execute("PRAGMA journal_mode=WAL")
        return db

    def load(self, name: str) -> list[Message]:
        """The stored transcript of ``name`` (empty for a new session)."""
        with closing(self._connect()) as db:
            row = db.execute("SELECT transcript FROM sessions WHERE name = ?", (name,)).fetchone()
        if row is None:
            return []
        return [Message.model_validate(m) for m in json.loads(row[0])]

    def save(self, name: str, transcript: Sequence[Message]) -> None:
        """Replace the transcript of ``name``, atomically."""
        text = json.dumps([m.model_dump(mode="json", exclude_none=True) for m in transcript])
        with closing(self._connect()) as db, db:
            db.execute(
                "INSERT INTO sessions (name, transcript, updated_at) VALUES (?, ?, ?) "
                "ON CONFLICT(name) DO UPDATE SET transcript = excluded.transcript, "
                "updated_at = excluded.updated_at",
                (name, text, time.time()),
            )

    def names(self) -> list[str]:
        """Every stored session, by name."""
        with closing(self._connect()) as db:
            return [r[0] for r in db.execute("SELECT name FROM sessions ORDER BY name")]

    @asynccontextmanager
    async def hold(self, name: str, *, wait_seconds: float = 10.0) -> AsyncIterator[None]:
        """Hold the session ``name`` for one run; wait up to ``wait_seconds``
        for another run to release it, then raise `SessionBusy`."""
        import filelock

        digest = hashlib.sha256(name.encode()).hexdigest()[:16]
        lock = filelock.FileLock(self.path.with_name(f"{self.path.name}.{digest}.lock"))
        deadline = time.monotonic() + wait_seconds
        while True:
            try:
                lock.acquire(timeout=0)
                break
            except filelock.Timeout:
                if time.monotonic() >= deadline:
                    raise SessionBusy(name, wait_seconds) from None
                await asyncio.sleep(0.05)
        try:
            yield
        finally:
            lock.release()
