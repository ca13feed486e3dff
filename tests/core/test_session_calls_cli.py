"""`seamkit sessions show/export/import` and the work a session has left: the
pending calls of a suspended run (kept in its state) and the journal of a run
that did not finish (its in-doubt calls), shown, exported, imported and
continued where the file was imported. (tests/plugins/test_sessions_postgres_journal.py
does the same between PostgreSQL and SQLite.)"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import seamkit
from click.testing import CliRunner, Result
from seamkit import (
    Agent,
    Approve,
    Decisions,
    JournalEntry,
    Message,
    MessageToolCall,
    SQLiteSessionStore,
    StoredSession,
)
from seamkit._cli._group import cli
from seamkit.testing import ScriptedModel

PENDING_KEY = "seamkit.pending"


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("SEAMKIT_HOME", str(home))
    return home


def _sessions(*args: str) -> Result:
    return CliRunner().invoke(cli, ["sessions", *args])


refunded: list[int] = []


@seamkit.tool(approval=True)
def refund(order: str, amount: int) -> str:
    """Refund ``amount`` on ``order``."""
    refunded.append(amount)
    return f"refunded {amount}"


def _agent(*turns: dict[str, Any]) -> Agent:
    return Agent(model=ScriptedModel(list(turns)), tools=[refund], plugin_hooks=False)


def _suspend(path: Path, name: str = "ann") -> seamkit.PendingCall:
    """A session whose run waits for approval of one refund (call ``c1``)."""
    call = {"id": "c1", "name": "refund", "arguments": {"order": "42", "amount": 250}}
    store = SQLiteSessionStore(path)
    result = asyncio.run(_agent({"tool_calls": [call]}).run("refund 42", session=name, store=store))
    assert isinstance(result.outcome, seamkit.Suspended)
    (pending,) = result.outcome.pending
    return pending


def _started(call_id: str, amount: int, digest: str = "d1") -> JournalEntry:
    data = {
        "tool": "refund",
        "arguments": {"order": "43", "amount": amount},
        "digest": digest,
        "key": "k-" + call_id,
        "attempt": 1,
    }
    return JournalEntry(run_id="r1", kind="started", call_id=call_id, data=data)


def _cut_short(call_id: str = "c9") -> list[JournalEntry]:
    """The journal of a run that stopped while refund ``call_id`` was running."""
    call = MessageToolCall.make(call_id, "refund", {"order": "43", "amount": 80})
    dump = [m.model_dump(mode="json", exclude_none=True) for m in (Message.user("refund 43"),)]
    turn = Message.assistant(None, [call]).model_dump(mode="json", exclude_none=True)
    return [
        JournalEntry(run_id="r1", kind="start", data={"base": 0, "messages": dump}),
        JournalEntry(run_id="r1", kind="turn", data={"messages": [turn]}),
        _started(call_id, 80),
    ]


# --- show -----------------------------------------------------------------------------


def test_show_lists_the_pending_calls_of_a_suspended_run(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    pending = _suspend(path)
    result = _sessions("show", "ann", "--store", str(path))
    assert result.exit_code == 0, result.output
    asked = pending.requested_at.isoformat(timespec="seconds")
    assert result.stdout.splitlines() == [
        f"session 'ann' in {path}: 2 messages",
        "user: refund 42",
        'assistant: → refund({"order": "42", "amount": 250}) [c1]',
        'pending call c1: refund({"order": "42", "amount": 250})',
        f"  digest: {pending.digest}",
        "  reason: refund needs approval",
        "  asked by: the tool (its approval rule)",
        f"  asked at: {asked}",
        "  decision: none yet",
        "decide with `seamkit resume APP --session ann --approve ID[@DIGEST] "
        "--reject ID[=REASON] --edit ID=JSON`",
    ]
    shown = json.loads(_sessions("show", "ann", "--store", str(path), "--json").stdout)
    assert shown["state"] == {}  # the pending calls are listed, not shown as state
    assert shown["pending"] == [pending.model_dump(mode="json")]
    assert (shown["in_doubt"], shown["journal_entries"], shown["running"]) == ([], 0, False)


def test_show_lists_in_doubt_calls_and_the_decisions_a_journal_stored(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    pending = _suspend(path)
    store = SQLiteSessionStore(path)
    decided = JournalEntry(
        run_id="r2",
        kind="decided",
        call_id="c1",
        data={"decision": {"action": "approve", "digest": pending.digest, "by": "cli"}},
    )
    finished = JournalEntry(
        run_id="r2", kind="finished", call_id="c2", data={"content": "ok", "is_error": False}
    )
    entries = [decided, _started("c1", 250, pending.digest), _started("c2", 5), finished]
    asyncio.run(store.journal_append("ann", entries))
    result = _sessions("show", "ann", "--store", str(path))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[lines.index("  decision: approved by cli") - 5 :] == [
        'pending call c1: refund({"order": "42", "amount": 250})',
        f"  digest: {pending.digest}",
        "  reason: refund needs approval",
        "  asked by: the tool (its approval rule)",
        f"  asked at: {pending.requested_at.isoformat(timespec='seconds')}",
        "  decision: approved by cli",
        'in-doubt call c1: refund({"order": "43", "amount": 250})',
        f"  digest: {pending.digest}",
        "  started once, no result recorded: it may or may not have acted",
        "unfinished run: 4 journal entries; `seamkit resume APP --session ann` continues it",
    ]  # c2 finished: not in doubt; every pending call is decided: no "decide with"
    shown = json.loads(_sessions("show", "ann", "--store", str(path), "--json").stdout)
    assert shown["pending"][0]["decision"] == {
        "action": "approve",
        "digest": pending.digest,
        "by": "cli",
    }
    assert shown["in_doubt"] == [
        {
            "call_id": "c1",
            "tool": "refund",
            "arguments": {"order": "43", "amount": 250},
            "digest": pending.digest,
            "attempts": 1,
            "run_id": "r1",
        }
    ]
    assert (shown["journal_entries"], shown["running"]) == (4, False)


def test_show_says_when_a_run_holds_the_session(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    store = SQLiteSessionStore(path)
    asyncio.run(store.journal_append("ann", _cut_short()))

    async def while_held() -> Result:
        async with SQLiteSessionStore(path).lock("ann", 1):
            return await asyncio.to_thread(_sessions, "show", "ann", "--store", str(path))

    result = asyncio.run(while_held())
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == (
        "  started once, no result recorded: a run holds the session now, so it may still "
        "be running"
    )
    assert "unfinished run" not in result.stdout


def test_show_finds_a_session_whose_first_run_stopped_short(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    asyncio.run(SQLiteSessionStore(path).journal_append("ann", _cut_short()))
    result = _sessions("show", "ann", "--store", str(path))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"session 'ann' in {path}: 0 messages",
        'in-doubt call c9: refund({"order": "43", "amount": 80})',
        "  digest: d1",
        "  started once, no result recorded: it may or may not have acted",
        "unfinished run: 3 journal entries; `seamkit resume APP --session ann` continues it",
    ]


# --- export and import ----------------------------------------------------------------


def test_export_carries_pending_calls_and_import_lets_the_run_continue(tmp_path: Path) -> None:
    path, other = tmp_path / "s.sqlite", tmp_path / "other.sqlite"
    pending = _suspend(path)
    out = tmp_path / "ann.json"
    assert _sessions("export", "ann", "--store", str(path), "-o", str(out)).exit_code == 0
    document = json.loads(out.read_text())
    assert document["state"][PENDING_KEY] == [pending.model_dump(mode="json")]
    assert "journal" not in document  # the run suspended cleanly: no journal
    imported = _sessions("import", str(out), "--store", str(other))
    assert imported.exit_code == 0, imported.output
    assert imported.stderr == f"session 'ann' in {other}: 2 messages imported\n"
    # Decided where it was imported, the run goes on from the imported state.
    refunded.clear()
    agent = _agent({"text": "refunded"})
    decisions = Decisions({"c1": Approve(digest=pending.digest)})
    result = asyncio.run(agent.run(decisions, session="ann", store=SQLiteSessionStore(other)))
    assert (result.output, refunded) == ("refunded", [250])


def test_export_and_import_carry_the_journal_of_an_unfinished_run(tmp_path: Path) -> None:
    path, other = tmp_path / "s.sqlite", tmp_path / "other.sqlite"
    store = SQLiteSessionStore(path)
    asyncio.run(store.save("ann", [Message.user("earlier"), Message.assistant("ok")], {"k": 1}))
    journal = _cut_short()
    asyncio.run(store.journal_append("ann", journal))
    out = tmp_path / "ann.json"
    assert _sessions("export", "ann", "--store", str(path), "-o", str(out)).exit_code == 0
    document = json.loads(out.read_text())
    assert document["journal"] == [e.model_dump(mode="json") for e in journal]
    assert list(document) == ["session", "transcript", "state", "journal"]
    # An older copy of the session is there: save drops its journal, then the file's goes in.
    asyncio.run(SQLiteSessionStore(other).save("ann", [Message.user("earlier")], {}))
    asyncio.run(SQLiteSessionStore(other).journal_append("ann", [_started("old", 1)]))
    imported = _sessions("import", str(out), "--store", str(other))
    assert imported.exit_code == 0, imported.output
    assert imported.stderr == (
        f"session 'ann' in {other}: 2 messages and 3 journal entries imported\n"
    )
    there = SQLiteSessionStore(other)
    assert asyncio.run(there.journal_read("ann")) == journal
    assert asyncio.run(there.load("ann")) == asyncio.run(store.load("ann"))
    # The run continues there: the refund that may have acted is not run again.
    refunded.clear()
    result = asyncio.run(_agent({"text": "checked"}).run(None, session="ann", store=there))
    assert refunded == []
    assert result.transcript[-2].text.startswith("Error: InDoubt: the process stopped while refund")
    assert asyncio.run(there.journal_read("ann")) == []


def test_raw_export_carries_the_journal_too(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    store = SQLiteSessionStore(path)
    asyncio.run(store.save("ann", [Message.user("x")], {}))
    asyncio.run(store.journal_append("ann", _cut_short()))
    result = _sessions("export", "ann", "--store", str(path), "--raw")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["journal"] == [e.model_dump(mode="json") for e in _cut_short()]


@pytest.mark.parametrize(
    ("journal", "message"),
    [
        ({"run_id": "r"}, "'journal' is not a list"),
        (
            [{"run_id": "r", "kind": "begun"}],
            "journal entry 0 cannot be read: kind: Input should be",
        ),
        ([{"kind": "turn"}], "journal entry 0 cannot be read: run_id: Field required"),
    ],
)
def test_import_refuses_a_journal_that_does_not_read(
    tmp_path: Path, journal: object, message: str
) -> None:
    path = tmp_path / "ann.json"
    path.write_text(json.dumps({"session": "ann", "transcript": [], "journal": journal}))
    result = _sessions("import", str(path), "--store", str(tmp_path / "s.sqlite"))
    assert result.exit_code == 1
    assert f"error: {path}: {message}" in result.output
    assert asyncio.run(SQLiteSessionStore(tmp_path / "s.sqlite").list()) == []


def test_import_refuses_a_journal_a_store_cannot_keep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store without the journal methods (here: SQLite's, hidden) would lose it."""
    from seamkit._cli import _session_commands

    class Plain:
        def __init__(self, inner: SQLiteSessionStore) -> None:
            self.inner = inner
            self.location = inner.location

        async def load(self, name: str) -> StoredSession | None:
            return await self.inner.load(name)

        async def save(self, name: str, transcript: Any, state: Any) -> None:
            await self.inner.save(name, transcript, state)

        def lock(self, name: str, wait_seconds: float) -> Any:
            return self.inner.lock(name, wait_seconds)

        async def list(self) -> list[str]:
            return await self.inner.list()

        async def delete(self, name: str) -> None:
            await self.inner.delete(name)

    target = tmp_path / "s.sqlite"
    monkeypatch.setattr(
        _session_commands, "_open", lambda app, store: Plain(SQLiteSessionStore(target))
    )
    path = tmp_path / "ann.json"
    journal = [e.model_dump(mode="json") for e in _cut_short()]
    path.write_text(json.dumps({"session": "ann", "transcript": [], "journal": journal}))
    result = _sessions("import", str(path))
    assert result.exit_code == 1
    assert (
        f"error: {path} holds the journal of a run that did not finish (3 entries), and the "
        f"store {target} keeps no journal"
    ) in result.output
    assert 'remove the file\'s "journal" key' in result.output
    assert asyncio.run(SQLiteSessionStore(target).list()) == []
