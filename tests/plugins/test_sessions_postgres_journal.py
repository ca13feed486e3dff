"""The journal of the PostgreSQL session store (`seamkit-sessions-postgres`)
against a real server the fixture starts: the store keeps every law of
`seamkit.testing.check_session_store`; a database made before the journal
gets its table; an append is one statement, committed before the call it
records runs; a run whose lease was taken over cannot journal; a run a crash
cut short continues from the journal; `seamkit sessions export/import`
carry the journal between PostgreSQL and SQLite."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
import pytest
import seamkit
from click.testing import CliRunner
from seamkit import (
    Agent,
    JournalEntry,
    Message,
    MessageToolCall,
    SessionError,
    SQLiteSessionStore,
)
from seamkit._cli._group import cli
from seamkit.testing import ScriptedModel, check_session_store
from seamkit_sessions_postgres import PostgresSessionStore

if TYPE_CHECKING:
    from tests.plugins.postgres_server import PostgresServer

pytest_plugins = ["tests.plugins.postgres_server"]

OLD_SCHEMA = """\
CREATE TABLE seamkit_sessions (
    name        text PRIMARY KEY,
    transcript  json NOT NULL,
    state       json NOT NULL DEFAULT '{}',
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE seamkit_session_locks (
    name        text PRIMARY KEY,
    holder      text NOT NULL,
    expires_at  timestamptz NOT NULL
);
"""
"""The schema before the journal (what databases made by 0.1 hold)."""


@pytest.fixture
def db(postgres: PostgresServer) -> str:
    """A fresh, empty database."""
    return postgres.new_database()


def _dump(*messages: Message) -> list[dict[str, Any]]:
    return [m.model_dump(mode="json", exclude_none=True) for m in messages]


def _started(call_id: str, tool: str, arguments: dict[str, Any]) -> JournalEntry:
    data = {"tool": tool, "arguments": arguments, "digest": "d1", "key": "k1", "attempt": 1}
    return JournalEntry(run_id="r1", kind="started", call_id=call_id, data=data)


def _cut_short(call: MessageToolCall) -> list[JournalEntry]:
    """The journal of a run that stopped while ``call`` was running."""
    return [
        JournalEntry(
            run_id="r1", kind="start", data={"base": 0, "messages": _dump(Message.user("pay 5"))}
        ),
        JournalEntry(
            run_id="r1", kind="turn", data={"messages": _dump(Message.assistant(None, [call]))}
        ),
        _started(call.id, call.function.name, json.loads(call.function.arguments)),
    ]


def test_the_postgres_store_keeps_every_law(postgres: PostgresServer, db: str) -> None:
    url = postgres.url(db, lease_seconds=1)
    check_session_store(lambda: PostgresSessionStore(url))
    assert postgres.query(db, "SELECT count(*) FROM seamkit_session_journal") == [(0,)]


def test_a_database_made_before_the_journal_gets_its_table(
    postgres: PostgresServer, db: str
) -> None:
    postgres.query(db, OLD_SCHEMA)
    postgres.query(
        db,
        "INSERT INTO seamkit_sessions (name, transcript) VALUES ('ann', %s::json)",
        json.dumps(_dump(Message.user("hi"))),
    )
    store = PostgresSessionStore(postgres.url(db))

    async def go() -> list[JournalEntry]:
        await store.journal_append("ann", [_started("c1", "pay", {"amount": 5})])
        return await store.journal_read("ann")

    assert asyncio.run(go()) == [_started("c1", "pay", {"amount": 5})]
    stored = asyncio.run(store.load("ann"))
    assert stored is not None and [m.text for m in stored.transcript] == ["hi"]
    url = postgres.url(db)
    check_session_store(lambda: PostgresSessionStore(url))


def test_an_append_is_one_statement_whatever_its_entries(
    postgres: PostgresServer, db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = PostgresSessionStore(postgres.url(db))
    asyncio.run(store.list())  # the tables exist
    sent: list[str] = []
    execute = psycopg.AsyncConnection.execute

    async def counting(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        if str(query).strip():  # the pool's check sends an empty query
            sent.append(str(query))
        return await execute(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.AsyncConnection, "execute", counting)
    entries = [JournalEntry(run_id="r", kind="turn", data={"n": i}) for i in range(50)]

    async def go() -> list[JournalEntry]:
        await store.journal_append("ann", entries)
        assert len(sent) == 1 and sent[0].lstrip().startswith("INSERT")
        async with store.lock("ann", 1):
            sent.clear()
            await store.journal_append("ann", entries[:3])  # with the lease check
            assert len(sent) == 1 and sent[0].lstrip().startswith("INSERT")
        return await store.journal_read("ann")

    assert asyncio.run(go()) == [*entries, *entries[:3]]


def test_a_call_s_start_is_committed_before_it_runs_and_the_save_drops_the_journal(
    postgres: PostgresServer, db: str
) -> None:
    seen: list[list[tuple[object, ...]]] = []

    @seamkit.tool
    def pay(amount: int) -> str:
        """Pay ``amount``."""
        seen.append(
            postgres.query(
                db, "SELECT kind, call_id FROM seamkit_session_journal ORDER BY seq"
            )  # another connection: only what was committed
        )
        return "paid"

    turns = [
        {"tool_calls": [{"id": "c1", "name": "pay", "arguments": {"amount": 5}}]},
        {"text": "done"},
    ]
    agent = Agent(model=ScriptedModel(turns), tools=[pay], plugin_hooks=False)
    store = PostgresSessionStore(postgres.url(db))
    result = asyncio.run(agent.run("pay 5", session="ann", store=store))
    assert result.output == "done"
    assert seen == [[("start", None), ("turn", None), ("started", "c1")]]
    assert postgres.query(db, "SELECT count(*) FROM seamkit_session_journal") == [(0,)]


def test_a_run_whose_lease_was_taken_over_cannot_journal(postgres: PostgresServer, db: str) -> None:
    url = postgres.url(db, lease_seconds=0.6)
    stalled, newer = PostgresSessionStore(url), PostgresSessionStore(url)

    async def go() -> list[JournalEntry]:
        async with stalled.lock("chat", 1):
            await stalled.journal_append("chat", [_started("c1", "pay", {"amount": 1})])
            await asyncio.to_thread(
                postgres.query,
                db,
                "UPDATE seamkit_session_locks SET expires_at = now() - interval '1 second'",
            )
            async with newer.lock("chat", 1):
                with pytest.raises(SessionError, match="not journaled: this run's lease"):
                    await stalled.journal_append("chat", [_started("c2", "pay", {"amount": 2})])
                return await newer.journal_read("chat")
        raise AssertionError("unreachable")

    assert asyncio.run(go()) == [_started("c1", "pay", {"amount": 1})]


def test_a_run_cut_short_continues_from_its_journal(postgres: PostgresServer, db: str) -> None:
    paid: list[int] = []

    @seamkit.tool
    def pay(amount: int) -> str:
        """Pay ``amount``."""
        paid.append(amount)
        return "paid"

    call = MessageToolCall.make("c1", "pay", {"amount": 5})
    store = PostgresSessionStore(postgres.url(db))
    asyncio.run(store.journal_append("ann", _cut_short(call)))
    agent = Agent(model=ScriptedModel([{"text": "sorry"}]), tools=[pay], plugin_hooks=False)
    result = asyncio.run(agent.run(None, session="ann", store=store))
    assert paid == []  # `once` effects: never run again
    assert [m.text for m in result.transcript] == [
        "pay 5",
        "",
        "Error: InDoubt: the process stopped while pay was running; it may or may not have acted",
        "sorry",
    ]
    assert asyncio.run(store.journal_read("ann")) == []


def test_export_and_import_carry_the_journal_between_postgres_and_sqlite(
    postgres: PostgresServer, db: str, tmp_path: Path
) -> None:
    url = postgres.url(db)
    call = MessageToolCall.make("c1", "pay", {"amount": 5})
    asyncio.run(PostgresSessionStore(url).journal_append("ann", _cut_short(call)))
    out = tmp_path / "ann.json"
    exported = CliRunner().invoke(
        cli, ["sessions", "export", "ann", "--store", url, "-o", str(out)]
    )
    assert exported.exit_code == 0, exported.output
    assert postgres.password not in out.read_text()
    other = tmp_path / "s.sqlite"
    imported = CliRunner().invoke(cli, ["sessions", "import", str(out), "--store", str(other)])
    assert imported.exit_code == 0, imported.output
    assert "and 3 journal entries imported" in imported.stderr
    assert asyncio.run(SQLiteSessionStore(other).journal_read("ann")) == _cut_short(call)
    back = CliRunner().invoke(
        cli, ["sessions", "import", str(out), "--store", url, "--name", "bob"]
    )
    assert back.exit_code == 0, back.output
    shown = CliRunner().invoke(cli, ["sessions", "show", "bob", "--store", url, "--json"])
    assert shown.exit_code == 0, shown.output
    assert [c["call_id"] for c in json.loads(shown.stdout)["in_doubt"]] == ["c1"]
