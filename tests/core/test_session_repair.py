"""Sessions that go wrong, in-process: rows that do not parse, saves that
fail (the transcript goes to a recovery file the error names), locks taken
by the store's real path, and the `seamkit sessions` commands that inspect
and repair a store; `--debug` against `--debug-all`; Ctrl-C outside a run.
(tests/e2e/test_session_faults.py runs the same faults in real processes.)"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import stat
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, closing
from pathlib import Path
from typing import Any

import click
import pytest
import seamkit
from click.testing import CliRunner
from seamkit import (
    Agent,
    Message,
    SessionBusy,
    SessionError,
    SessionNotSaved,
    SQLiteSessionStore,
    StoredSession,
)
from seamkit._cli._group import _add_plugin_commands, cli
from seamkit.plugins import PluginInfo, RawSessionReader, add_plugin, get_registry
from seamkit.testing import ScriptedModel

from tests.e2e.test_session_faults import read_only


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """seamkit's data directory (the default store, recovery files) in tmp_path."""
    home = tmp_path / "home"
    monkeypatch.setenv("SEAMKIT_HOME", str(home))
    return home


def _agent(*turns: dict[str, Any]) -> Agent:
    return Agent(model=ScriptedModel(list(turns) or [{"text": "ok"}]), plugin_hooks=False)


# --- rows that do not parse -----------------------------------------------------------


@pytest.mark.parametrize(
    ("transcript", "state", "reason"),
    [
        ('[{"role": "user", "content": "hi"', "{}", "Expecting ',' delimiter"),
        ('{"role": "user"}', "{}", "the transcript is a JSON dict, not a list"),
        ('[{"role": "wizard", "content": "hi"}]', "{}", "role"),
        ("[]", "[1]", "the state is a JSON list, not an object"),
    ],
)
def test_a_row_that_does_not_parse_is_a_session_error_saying_what_to_do(
    transcript: str, state: str, reason: str
) -> None:
    with pytest.raises(SessionError) as caught:
        StoredSession.parse("ann", transcript, state, location="/x/s.sqlite")
    error = caught.value
    assert error.message.startswith("session 'ann' in /x/s.sqlite cannot be read: ")
    assert reason in error.message
    assert error.hint is not None
    assert "seamkit sessions export ann --raw" in error.hint
    assert "seamkit sessions delete ann --yes" in error.hint


def test_a_run_on_a_corrupt_row_is_refused_before_it_starts(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "s.sqlite")
    asyncio.run(store.save("ann", [Message.user("hi")], {}))
    with closing(sqlite3.connect(store.path)) as db, db:
        db.execute("UPDATE sessions SET transcript = x'00ff'")  # not even text
    ran: list[str] = []

    @seamkit.tool
    def probe() -> str:
        """Note that the run got this far."""
        ran.append("probe")
        return "x"

    agent = Agent(
        model=ScriptedModel([{"tool_calls": [{"name": "probe", "arguments": {}}]}]),
        tools=[probe],
        plugin_hooks=False,
    )
    with pytest.raises(SessionError, match=r"session 'ann' in .* cannot be read"):
        agent.run_sync("again", session="ann", store=store)
    assert ran == []
    raw = asyncio.run(store.load_raw("ann"))
    assert raw is not None and raw.transcript == "\x00\ufffd"
    assert isinstance(store, RawSessionReader)


# --- saves that fail ------------------------------------------------------------------


class Unwritable:
    """A store whose saves fail (a server gone away, say)."""

    def __init__(self) -> None:
        self.saved: list[str] = []
        self.location = "mem://unwritable"

    async def load(self, name: str) -> StoredSession | None:
        return StoredSession((Message.user("before"), Message.assistant("earlier")), {"k": 1})

    async def save(
        self, name: str, transcript: Sequence[Message], state: Mapping[str, Any]
    ) -> None:
        raise SessionError("the server went away", hint="start it again")

    def lock(self, name: str, wait_seconds: float) -> AbstractAsyncContextManager[None]:
        @asynccontextmanager
        async def held() -> AsyncIterator[None]:
            yield

        return held()

    async def list(self) -> list[str]:
        return []

    async def delete(self, name: str) -> None:
        return None


def test_a_failed_save_leaves_the_transcript_in_a_recovery_file_it_names(_home: Path) -> None:
    with pytest.raises(SessionNotSaved) as caught:
        _agent().run_sync("remember me", session="ann/1", store=Unwritable())
    error = caught.value
    assert isinstance(error, SessionError) and error.name == "ann/1"
    assert error.recovery is not None and error.recovery.parent == _home / "recovery"
    assert error.recovery.name.startswith("ann_1-")  # no path separator from the name
    assert error.message == (
        f"session 'ann/1' not saved: the server went away; its transcript is in {error.recovery}"
    )
    assert error.hint == (
        f"start it again; then put it back with `seamkit sessions import {error.recovery}` "
        "(and your --store)"
    )
    assert stat.S_IMODE(error.recovery.stat().st_mode) == 0o600
    document = json.loads(error.recovery.read_text())
    assert [m["content"] for m in document["transcript"]] == [
        "before",
        "earlier",
        "remember me",
        "ok",
    ]
    assert document["session"] == "ann/1" and document["state"] == {"k": 1}
    assert document["store"] == "mem://unwritable"
    assert document["reason"] == "the server went away"


def test_a_recovery_file_falls_back_to_the_temporary_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the data directory should be")
    monkeypatch.setenv("SEAMKIT_HOME", str(blocked))
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    with pytest.raises(SessionNotSaved) as caught:
        _agent().run_sync("hi", session="ann", store=Unwritable())
    assert caught.value.recovery is not None
    assert caught.value.recovery.parent == tmp_path / "tmp" / f"seamkit-recovery-{os.getuid()}"
    assert caught.value.recovery.parent.stat().st_mode & 0o777 == 0o700


def test_a_failed_save_is_reported_over_a_cancellation_and_to_a_closed_stream() -> None:
    gate = asyncio.Event()

    @seamkit.tool
    async def wait() -> str:
        """Wait for the test."""
        gate.set()
        await asyncio.sleep(60)
        return "x"

    agent = Agent(
        model=ScriptedModel([{"tool_calls": [{"name": "wait", "arguments": {}}]}] * 2),
        tools=[wait],
        plugin_hooks=False,
    )

    async def cancelled_run() -> BaseException | None:
        task = asyncio.ensure_future(agent.run("hi", session="a", store=Unwritable()))
        await gate.wait()
        task.cancel()
        results = await asyncio.gather(task, return_exceptions=True)
        return results[0]

    assert isinstance(asyncio.run(cancelled_run()), SessionNotSaved)

    async def closed_stream() -> None:
        gate.clear()
        events = agent.stream("hi", session="b", store=Unwritable())
        async for _ in events:
            if gate.is_set():
                break
        await events.aclose()  # type: ignore[attr-defined]

    with pytest.raises(SessionNotSaved):
        asyncio.run(closed_stream())


class Small(SQLiteSessionStore):
    """A SQLite store on a disk that is full: the file may not grow."""

    def _connect(self) -> sqlite3.Connection:
        db = super()._connect()
        db.execute("PRAGMA max_page_count = 6")  # the schema, no room for a transcript
        return db


def test_a_full_disk_sends_the_transcript_to_a_recovery_file(tmp_path: Path) -> None:
    store = Small(tmp_path / "s.sqlite")
    big = "x" * 50_000
    with pytest.raises(SessionNotSaved, match="database or disk is full") as caught:
        _agent().run_sync(big, session="ann", store=store)
    assert caught.value.hint is not None
    assert caught.value.hint.startswith("free some disk space where the store is")
    recovery = caught.value.recovery
    assert recovery is not None
    result = CliRunner().invoke(
        cli, ["sessions", "import", str(recovery), "--store", str(tmp_path / "big.sqlite")]
    )
    assert result.exit_code == 0, result.output
    stored = asyncio.run(SQLiteSessionStore(tmp_path / "big.sqlite").load("ann"))
    assert stored is not None and [m.text for m in stored.transcript] == [big, "ok"]


# --- locks by the real path -----------------------------------------------------------


def test_every_path_to_one_store_takes_the_same_lock(tmp_path: Path) -> None:
    real = SQLiteSessionStore(tmp_path / "real" / "s.sqlite")
    (tmp_path / "link.sqlite").symlink_to(real.path)
    (tmp_path / "dir").symlink_to(real.path.parent)
    others = [
        SQLiteSessionStore(tmp_path / "link.sqlite"),
        SQLiteSessionStore(tmp_path / "dir" / "s.sqlite"),
        SQLiteSessionStore(tmp_path / "real" / ".." / "real" / "s.sqlite"),
    ]

    async def main() -> None:
        async with real.lock("ann", 1):
            for other in others:
                with pytest.raises(SessionBusy):
                    async with other.lock("ann", 0.1):
                        pass
            async with others[0].lock("bob", 0.1):  # another session: free
                pass

    asyncio.run(main())


def test_a_store_made_read_only_refuses_runs_but_still_reads(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "s" / "s.sqlite")
    asyncio.run(store.save("ann", [Message.user("hi")], {}))
    with read_only(tmp_path / "s"):  # even as root (the immutable attribute then)
        reopened = SQLiteSessionStore(tmp_path / "s" / "s.sqlite")
        assert asyncio.run(reopened.list()) == ["ann"]
        with pytest.raises(SessionError, match="is read-only: its directory"):
            _agent().run_sync("again", session="ann", store=reopened)


# --- seamkit sessions -----------------------------------------------------------------


@pytest.fixture
def filled(tmp_path: Path) -> Path:
    """A store with two sessions, one with a tool call and some state."""
    path = tmp_path / "s.sqlite"
    store = SQLiteSessionStore(path)
    call = seamkit.MessageToolCall.make("c1", "lookup", {"q": "x"})
    ann = [
        Message.user("find x"),
        Message.assistant(None, [call]),
        Message.tool("c1", "found\nover two lines"),
        Message.assistant("x is here"),
    ]
    asyncio.run(store.save("ann", ann, {"fresh": {"k": 1}}))
    asyncio.run(store.save("bob", [Message.user("hello"), Message.assistant("hi")], {}))
    return path


def _sessions(*args: str) -> Any:
    return CliRunner().invoke(cli, ["sessions", *args])


def test_list_shows_each_session_its_size_and_last_user_message(filled: Path) -> None:
    result = _sessions("list", "--store", str(filled))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "NAME  MESSAGES  LAST USER MESSAGE",
        "ann          4  find x",
        "bob          2  hello",
    ]
    rows = json.loads(_sessions("list", "--store", str(filled), "--json").stdout)
    assert rows[0] == {"name": "ann", "messages": 4, "last_user": "find x"}


def test_list_of_the_default_store_when_it_is_empty(_home: Path) -> None:
    result = _sessions("list")
    assert result.exit_code == 0
    assert result.stderr == f"no sessions in {_home / 'sessions.sqlite'}\n"


def test_show_prints_the_transcript_readably(filled: Path) -> None:
    result = _sessions("show", "ann", "--store", str(filled))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"session 'ann' in {filled}: 4 messages",
        "user: find x",
        'assistant: → lookup({"q": "x"}) [c1]',
        "tool lookup [c1]: found",
        "  over two lines",
        "assistant: x is here",
        'state: {"fresh": {"k": 1}}',
    ]
    missing = _sessions("show", "carl", "--store", str(filled))
    assert missing.exit_code == 1
    assert missing.output == (
        f"error: no session 'carl' in {filled}\n"
        "hint: `seamkit sessions list` shows the sessions (with the same --store or --app)\n"
    )


def test_export_then_import_round_trips_a_session(filled: Path, tmp_path: Path) -> None:
    out = tmp_path / "ann.json"
    assert _sessions("export", "ann", "--store", str(filled), "-o", str(out)).exit_code == 0
    document = json.loads(out.read_text())
    assert document["session"] == "ann" and document["state"] == {"fresh": {"k": 1}}
    other = tmp_path / "other.sqlite"
    result = _sessions("import", str(out), "--store", str(other))
    assert result.exit_code == 0, result.output
    assert result.stderr == f"session 'ann' in {other}: 4 messages imported\n"
    assert asyncio.run(SQLiteSessionStore(other).load("ann")) == asyncio.run(
        SQLiteSessionStore(filled).load("ann")
    )


def test_import_replaces_a_session_only_when_the_file_continues_it(
    filled: Path, tmp_path: Path
) -> None:
    document = {"session": "bob", "transcript": [{"role": "user", "content": "other"}]}
    path = tmp_path / "bob.json"
    path.write_text(json.dumps(document))
    refused = _sessions("import", str(path), "--store", str(filled))
    assert refused.exit_code == 1
    assert f"error: session 'bob' holds 2 messages that {path} does not start with" in (
        refused.output
    )
    assert "hint: --replace to overwrite it, or --name OTHER" in refused.output
    assert _sessions("import", str(path), "--store", str(filled), "--name", "bob2").exit_code == 0
    assert _sessions("import", str(path), "--store", str(filled), "--replace").exit_code == 0
    stored = asyncio.run(SQLiteSessionStore(filled).load("bob"))
    assert stored is not None and [m.text for m in stored.transcript] == ["other"]
    path.write_text("[]")
    assert "has no transcript list" in _sessions("import", str(path)).output


def test_delete_needs_yes_away_from_a_terminal_and_an_existing_session(filled: Path) -> None:
    store = ["--store", str(filled)]
    refused = _sessions("delete", "ann", *store)
    assert refused.exit_code == 1
    assert refused.output == (
        "error: not deleting 'ann' without --yes\nhint: seamkit sessions delete ann --yes\n"
    )
    missing = _sessions("delete", "ann", "carl", "--yes", *store)
    assert missing.exit_code == 1 and "no session 'carl'" in missing.output
    assert asyncio.run(SQLiteSessionStore(filled).list()) == ["ann", "bob"]  # nothing deleted
    done = _sessions("delete", "ann", "bob", "--yes", *store)
    assert done.exit_code == 0, done.output
    assert asyncio.run(SQLiteSessionStore(filled).list()) == []


def test_sessions_find_the_store_as_run_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "app" / "script.yaml").parent.mkdir()
    (tmp_path / "app" / "script.yaml").write_text("- text: noted\n")
    app = tmp_path / "app" / "app.yaml"
    app.write_text("name: x\nmodel: scripted:script.yaml\nsessions: {store: kept.sqlite}\n")
    monkeypatch.chdir(tmp_path)
    assert CliRunner().invoke(cli, ["run", str(app), "hi", "--session", "m"]).exit_code == 0
    listed = _sessions("list", "--app", str(app))
    assert listed.stdout.splitlines()[1].split() == ["m", "2", "hi"]
    # --store PATH is relative to the working directory, for run and sessions alike.
    args = ["run", str(app), "hi", "--session", "w", "--store", "here.sqlite"]
    assert CliRunner().invoke(cli, args).exit_code == 0
    assert (tmp_path / "here.sqlite").exists()
    assert not (tmp_path / "app" / "here.sqlite").exists()
    assert "w " in _sessions("list", "--store", "here.sqlite").stdout
    assert "w " in _sessions("list", "--store", "sqlite:///here.sqlite").stdout


# --- the command line -----------------------------------------------------------------


LOGGING_CHILD = """
import logging, sys, types
import seamkit
from seamkit._cli._group import main
from seamkit.plugins import PluginInfo, add_plugin, get_registry

sys.modules["seamkit_fake"] = types.ModuleType("seamkit_fake")  # a plugin's package


class Talk:
    @seamkit.hookimpl
    def register_commands(self, cli):
        @cli.command("talk")
        def talk():
            logging.getLogger("httpx").debug("Authorization: Bearer sk-canary")
            logging.getLogger("seamkit.run").debug("kernel detail")
            logging.getLogger("seamkit_fake.inner").debug("plugin detail")


add_plugin(get_registry(), Talk(), PluginInfo(name="talk"))
main(sys.argv[1:])
"""


@pytest.mark.parametrize("flag", ["--debug", "--debug-all"])
def test_debug_logs_seamkit_and_debug_all_logs_every_library(flag: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", LOGGING_CHILD, flag, "talk"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "kernel detail" in out.stderr and "plugin detail" in out.stderr
    assert ("sk-canary" in out.stderr) is (flag == "--debug-all")


class Interrupted:
    @seamkit.hookimpl
    def register_commands(self, cli: click.Group) -> None:
        @cli.command("wait")
        def wait() -> None:
            raise KeyboardInterrupt


def test_ctrl_c_outside_a_run_exits_130_without_a_traceback() -> None:
    registry = get_registry()
    add_plugin(registry, Interrupted(), PluginInfo(name="interrupted"))
    group = type(cli)(commands=dict(cli.commands), params=cli.params, callback=cli.callback)
    _add_plugin_commands(group)
    result = CliRunner().invoke(group, ["wait"])
    assert result.exit_code == 130
    assert result.output == "[cancelled: SIGINT]\n"


def test_a_run_leaves_the_signal_handlers_as_it_found_them() -> None:
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    hello = Path(__file__).resolve().parents[2] / "docs" / "examples" / "hello" / "app.yaml"
    assert CliRunner().invoke(cli, ["run", str(hello), "add 2 and 3"]).exit_code == 0
    assert {sig: signal.getsignal(sig) for sig in before} == before
