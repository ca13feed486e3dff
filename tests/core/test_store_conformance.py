"""`seamkit.testing.check_session_store`, the conformance check any session
store can run: the built-in SQLite store passes it; stores that break one law
each fail it with an AssertionError naming that law; a third-party store
without the journal methods passes the protocol's laws and still runs
sessions, with a one-time warning that its effects are at-least-once.
(tests/plugins/test_sessions_postgres.py runs the check on PostgreSQL.)"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import sqlite3
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, closing
from pathlib import Path
from typing import Any

import pytest
import seamkit
from hypothesis import given, settings, strategies as st
from seamkit import (
    Agent,
    JournalEntry,
    JournalStore,
    Message,
    SessionBusy,
    SessionStore,
    SQLiteSessionStore,
    StoredSession,
)
from seamkit.testing import ScriptedModel, acheck_session_store, check_session_store
from seamkit.testing._store_checks import JOURNAL_LAWS, STORE_LAWS


def test_the_sqlite_store_keeps_every_law(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite"
    check_session_store(lambda: SQLiteSessionStore(path))
    assert asyncio.run(SQLiteSessionStore(path).list()) == []  # it cleaned up after itself


def test_the_check_runs_on_a_store_that_holds_sessions_and_leaves_them(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite"
    store = SQLiteSessionStore(path)
    asyncio.run(store.save("ann", [Message.user("hi")], {"k": 1}))
    check_session_store(lambda: SQLiteSessionStore(path))
    assert asyncio.run(store.list()) == ["ann"]
    assert asyncio.run(store.load("ann")) == StoredSession((Message.user("hi"),), {"k": 1})


async def test_an_async_test_awaits_the_check(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite"
    await acheck_session_store(lambda: SQLiteSessionStore(path))


def test_make_store_must_open_a_new_object_each_time(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "sessions.sqlite")
    with pytest.raises(AssertionError, match="make_store\\(\\) returned a store object"):
        check_session_store(lambda: store)


# --- stores that break one law each ---------------------------------------------------


class SaveKeepsJournal(SQLiteSessionStore):
    def _save(self, name: str, transcript: Sequence[Message], state: Mapping[str, Any]) -> None:
        with closing(sqlite3.connect(self.path)) as db, db:
            db.execute(
                "INSERT OR REPLACE INTO sessions (name, transcript, updated_at, state) "
                "VALUES (?, ?, 0, ?)",
                (
                    name,
                    _dumps([m.model_dump(mode="json", exclude_none=True) for m in transcript]),
                    _dumps(dict(state)),
                ),
            )


class DeleteKeepsJournal(SQLiteSessionStore):
    def _delete(self, name: str) -> None:
        with closing(sqlite3.connect(self.path)) as db, db:
            db.execute("DELETE FROM sessions WHERE name = ?", (name,))


class ReversedJournal(SQLiteSessionStore):
    async def journal_read(self, name: str) -> list[JournalEntry]:
        return list(reversed(await super().journal_read(name)))


class SharedJournal(SQLiteSessionStore):
    """Reads every session's journal as one."""

    def _journal_read(self, name: str) -> list[JournalEntry]:
        with closing(sqlite3.connect(self.path)) as db:
            rows = db.execute("SELECT run_id, kind, call_id, data FROM journal ORDER BY seq")
            return [
                JournalEntry(run_id=r, kind=k, call_id=c, data=_loads(d)) for r, k, c, d in rows
            ]


class JournalInMemory(SQLiteSessionStore):
    """Keeps its journal in the object: another process would never see it."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.kept: dict[str, list[JournalEntry]] = {}

    async def journal_append(self, name: str, entries: Sequence[JournalEntry]) -> None:
        self.kept.setdefault(name, []).extend(entries)

    async def journal_read(self, name: str) -> list[JournalEntry]:
        return list(self.kept.get(name, []))

    async def save(
        self, name: str, transcript: Sequence[Message], state: Mapping[str, Any]
    ) -> None:
        await super().save(name, transcript, state)
        self.kept.pop(name, None)

    async def delete(self, name: str) -> None:
        await super().delete(name)
        self.kept.pop(name, None)


class UnsortedList(SQLiteSessionStore):
    async def list(self) -> list[str]:
        return list(reversed(await super().list()))


class LossySave(SQLiteSessionStore):
    """Drops NUL characters from the transcript."""

    async def save(
        self, name: str, transcript: Sequence[Message], state: Mapping[str, Any]
    ) -> None:
        cleaned = [
            m.model_copy(update={"content": (m.text or "").replace("\x00", "")}) for m in transcript
        ]
        await super().save(name, cleaned, state)


class TornSave(SQLiteSessionStore):
    """Writes the transcript, then the state, in two transactions."""

    async def save(
        self, name: str, transcript: Sequence[Message], state: Mapping[str, Any]
    ) -> None:
        before = await self.load(name)
        await super().save(name, transcript, before.state if before else {})
        await asyncio.sleep(0.005)
        await super().save(name, transcript, state)


class NoLock(SQLiteSessionStore):
    @asynccontextmanager
    async def lock(self, name: str, wait_seconds: float = 10.0) -> AsyncIterator[None]:
        yield


class ImpatientLock(SQLiteSessionStore):
    """Gives up at once, whatever the wait."""

    def lock(self, name: str, wait_seconds: float = 10.0) -> Any:
        return super().lock(name, 0.0)


class StealingLock(SQLiteSessionStore):
    """Takes a session it waited for over 0.05s as if its holder were gone
    (when it was told to wait for more than a second)."""

    @asynccontextmanager
    async def lock(self, name: str, wait_seconds: float = 10.0) -> AsyncIterator[None]:
        try:
            async with super().lock(name, wait_seconds if wait_seconds < 1 else 0.05):
                yield
        except SessionBusy:
            if wait_seconds < 1:
                raise
            yield


class LockKeptOnError(SQLiteSessionStore):
    """Leaves the session held when the block raises."""

    kept: list[object] = []  # the held locks, never collected (which would release them)

    @asynccontextmanager
    async def lock(self, name: str, wait_seconds: float = 10.0) -> AsyncIterator[None]:
        manager = super().lock(name, wait_seconds)
        self.kept.append(manager)
        await manager.__aenter__()
        yield
        await manager.__aexit__(None, None, None)


def _dumps(value: object) -> str:
    return json.dumps(value)


def _loads(text: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(text)
    return loaded


@pytest.mark.parametrize(
    ("store", "law"),
    [
        (SaveKeepsJournal, "save drops the journal of that session only"),
        (DeleteKeepsJournal, "delete drops the journal"),
        (ReversedJournal, "journal entries come back in append order with their data"),
        (SharedJournal, "journals of two sessions are separate"),
        (JournalInMemory, "appended entries are visible to another store object"),
        (UnsortedList, "list is sorted and names every saved session"),
        (LossySave, "save then load gives back the transcript and state"),
        (TornSave, "save is atomic: a load sees one whole save or another"),
        (NoLock, "lock raises SessionBusy after the wait"),
        (ImpatientLock, "lock raises SessionBusy after the wait"),
        (StealingLock, "lock serialises runs on one session, across store objects"),
        (LockKeptOnError, "lock is released when its block raises"),
    ],
)
def test_a_store_that_breaks_a_law_fails_naming_it(
    store: Callable[[Path], SessionStore], law: str, tmp_path: Path
) -> None:
    assert law in STORE_LAWS or any(known.startswith(law) for known in JOURNAL_LAWS)
    path = tmp_path / "sessions.sqlite"
    with pytest.raises(AssertionError) as caught:
        check_session_store(lambda: store(path))
    assert f": law broken: {law}" in str(caught.value)


# --- a store without the journal ------------------------------------------------------


class Shelf:
    """Where a `ShelfStore` keeps its sessions (its "location")."""

    def __init__(self) -> None:
        self.rows: dict[str, tuple[tuple[Message, ...], dict[str, Any]]] = {}
        self.locks: dict[str, asyncio.Lock] = {}


class ShelfStore:
    """A third-party store in memory with the `SessionStore` methods only."""

    def __init__(self, shelf: Shelf) -> None:
        self.shelf = shelf

    async def load(self, name: str) -> StoredSession | None:
        row = self.shelf.rows.get(name)
        return None if row is None else StoredSession(row[0], copy.deepcopy(row[1]))

    async def save(
        self, name: str, transcript: Sequence[Message], state: Mapping[str, Any]
    ) -> None:
        self.shelf.rows[name] = (tuple(transcript), copy.deepcopy(dict(state)))

    @asynccontextmanager
    async def lock(self, name: str, wait_seconds: float) -> AsyncIterator[None]:
        held = self.shelf.locks.setdefault(name, asyncio.Lock())
        try:
            await asyncio.wait_for(held.acquire(), max(wait_seconds, 0.001))
        except TimeoutError:
            raise SessionBusy(name, wait_seconds) from None
        try:
            yield
        finally:
            held.release()

    async def list(self) -> list[str]:
        return sorted(self.shelf.rows)

    async def delete(self, name: str) -> None:
        self.shelf.rows.pop(name, None)


def test_a_store_without_the_journal_keeps_the_protocol_s_laws() -> None:
    shelf = Shelf()
    assert not isinstance(ShelfStore(shelf), JournalStore)
    check_session_store(lambda: ShelfStore(shelf))


def test_a_store_without_the_journal_runs_sessions_and_warns_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    @seamkit.tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    shelf = Shelf()
    turns = [
        {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]},
        {"text": "5"},
        {"text": "again"},
    ]
    agent = Agent(model=ScriptedModel(turns), tools=[add], plugin_hooks=False)
    with caplog.at_level(logging.WARNING, logger="seamkit.run"):
        first = asyncio.run(agent.run("add 2 and 3", session="ann", store=ShelfStore(shelf)))
        second = asyncio.run(agent.run("and now?", session="ann", store=ShelfStore(shelf)))
    assert (first.output, second.output) == ("5", "again")
    assert [m.role for m in shelf.rows["ann"][0]] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]
    warnings = [r.getMessage() for r in caplog.records if "keeps no journal" in r.getMessage()]
    assert warnings == [
        "session store ShelfStore keeps no journal: a run a crash cuts short may run a tool "
        "call again (effects are at-least-once with it)"
    ]


# --- the journal as a list per session, drawn by hypothesis ---------------------------

_SESSIONS = ("a", "b")
_DATA = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
_ENTRY = st.builds(
    JournalEntry,
    run_id=st.text(min_size=1, max_size=6),
    kind=st.sampled_from(["start", "turn", "started", "finished", "decided"]),
    call_id=st.none() | st.text(max_size=6),
    data=st.dictionaries(st.text(max_size=6), _DATA, max_size=3),
)
_OPS = st.lists(
    st.tuples(st.sampled_from(_SESSIONS), st.just("append"), st.lists(_ENTRY, max_size=4))
    | st.tuples(st.sampled_from(_SESSIONS), st.sampled_from(["save", "delete"]), st.just([])),
    max_size=12,
)


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory: pytest.TempPathFactory) -> SQLiteSessionStore:
    return SQLiteSessionStore(tmp_path_factory.mktemp("journal") / "sessions.sqlite")


_RUNS = iter(range(1_000_000))


@settings(max_examples=60)
@given(_OPS)
def test_the_sqlite_journal_is_a_list_per_session(
    shared_store: SQLiteSessionStore, ops: list[tuple[str, str, list[JournalEntry]]]
) -> None:
    prefix = f"p{next(_RUNS)}-"
    model: dict[str, list[JournalEntry]] = {s: [] for s in _SESSIONS}

    async def go() -> dict[str, list[JournalEntry]]:
        for session, action, entries in ops:
            if action == "append":
                await shared_store.journal_append(prefix + session, entries)
                model[session] += entries
            elif action == "save":
                await shared_store.save(prefix + session, [Message.user("x")], {})
                model[session] = []
            else:
                await shared_store.delete(prefix + session)
                model[session] = []
        other = SQLiteSessionStore(shared_store.path)
        return {s: await other.journal_read(prefix + s) for s in _SESSIONS}

    assert asyncio.run(go()) == model
