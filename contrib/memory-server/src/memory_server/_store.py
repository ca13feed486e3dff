"""The memories on disk: one SQLite file (stdlib ``sqlite3``, WAL), a row per
memory, kept per user in the order they were saved.

Each operation opens its own short-lived connection, so the store can be used
from the worker threads the MCP SDK runs synchronous tools in, and from more
than one server process on the same file.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Literal

__all__ = ["DEFAULT_DB", "DEFAULT_MAX_MEMORIES", "MemoryStore", "SaveOutcome"]

DEFAULT_DB = "memories.sqlite"
"""The database file used when neither ``--db`` nor ``MEMORY_DB`` names one
(relative, so it lands in the server's current directory)."""

DEFAULT_MAX_MEMORIES = 50
"""How many of a user's most recent memories ``get_memories`` returns by default."""

SaveOutcome = Literal["saved", "duplicate", "empty"]
"""What `MemoryStore.save` did: stored the text, skipped it because it equals
the user's last memory, or skipped it because it was blank."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    user       TEXT    NOT NULL,
    text       TEXT    NOT NULL,
    created_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX IF NOT EXISTS memories_user_id ON memories (user, id);
"""


class MemoryStore:
    """Per-user memories in one SQLite file.

    Creating a store creates the file (and its table) when missing and switches
    the database to WAL journaling. Texts are stored stripped of surrounding
    whitespace; users are compared exactly.
    """

    def __init__(self, path: str | os.PathLike[str] = DEFAULT_DB) -> None:
        self.path = Path(path)
        with self._connect() as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(_SCHEMA)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """A fresh connection in autocommit mode (transactions are explicit),
        closed on exit."""
        conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        with closing(conn):
            yield conn

    @staticmethod
    def _check_user(user: str) -> None:
        if not user:
            raise ValueError("a user is needed")

    def save(self, user: str, text: str) -> SaveOutcome:
        """Store ``text`` as ``user``'s newest memory.

        Blank text is skipped (``"empty"``), and so is a text identical to the
        user's last memory (``"duplicate"``): a hook that saves every run's
        message does not pile up repeats. The check and the insert happen in
        one write transaction, so concurrent savers cannot both insert.
        """
        self._check_user(user)
        text = text.strip()
        if not text:
            return "empty"
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                row = conn.execute(
                    "SELECT text FROM memories WHERE user = ? ORDER BY id DESC LIMIT 1",
                    (user,),
                ).fetchone()
                if row is not None and row[0] == text:
                    conn.execute("ROLLBACK")
                    return "duplicate"
                conn.execute("INSERT INTO memories (user, text) VALUES (?, ?)", (user, text))
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        return "saved"

    def recent(self, user: str, limit: int = DEFAULT_MAX_MEMORIES) -> list[str]:
        """``user``'s last ``limit`` memories, oldest first (empty when none)."""
        self._check_user(user)
        if limit <= 0:
            return []
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT text FROM ("
                "  SELECT id, text FROM memories WHERE user = ? ORDER BY id DESC LIMIT ?"
                ") ORDER BY id",
                (user, limit),
            ).fetchall()
        return [str(text) for (text,) in rows]

    def count(self, user: str) -> int:
        """How many memories ``user`` has in all."""
        self._check_user(user)
        with self._connect() as conn:
            (n,) = conn.execute("SELECT COUNT(*) FROM memories WHERE user = ?", (user,)).fetchone()
        return int(n)
