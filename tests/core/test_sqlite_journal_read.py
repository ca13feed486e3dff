"""Reading a SQLite store's journal costs a query, not a connection: every
run with a session reads its journal first (effects or not), and opening a
SQLite connection (then closing it, which may checkpoint the WAL) costs
most of a millisecond, measured by ``tests/benchmarks/bench_journal.py``."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from seamkit import JournalEntry, SQLiteSessionStore

from tests.e2e.test_session_faults import read_only

ENTRY = JournalEntry(run_id="r", kind="started", call_id="c1", data={"key": "k"})


def test_journal_reads_share_the_journal_s_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SQLiteSessionStore(tmp_path / "s.sqlite")
    opened: list[object] = []
    connect = sqlite3.connect

    def counting(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        opened.append(args[0])
        made: sqlite3.Connection = connect(*args, **kwargs)
        return made

    monkeypatch.setattr(sqlite3, "connect", counting)

    async def go() -> None:
        assert await store.journal_read("s") == []
        await store.journal_append("s", [ENTRY])
        for _ in range(3):
            assert await store.journal_read("s") == [ENTRY]

    asyncio.run(go())
    assert len(opened) == 1, "the journal's one connection, for its reads and its appends"


def test_a_read_only_store_still_reads_its_journal(tmp_path: Path) -> None:
    path = tmp_path / "s" / "s.sqlite"
    asyncio.run(SQLiteSessionStore(path).journal_append("s", [ENTRY]))
    with read_only(tmp_path / "s"):  # even as root (the immutable attribute then)
        store = SQLiteSessionStore(path)
        assert asyncio.run(store.journal_read("s")) == [ENTRY]
