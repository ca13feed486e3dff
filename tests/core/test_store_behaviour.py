"""What every session store must do, checked the same way against each: the
built-in SQLite store and the PostgreSQL one (`seamkit-sessions-postgres`,
against a real server the fixture starts).

A round trip keeps transcript and state exactly; list and delete; runs on one
session exclude each other and the loser gets `SessionBusy` after its wait;
concurrent runs on one session lose no message; a worker killed mid-run
leaves the session loadable as the last finished run saved it, and free for
the next run (for PostgreSQL once the dead worker's lease expires).
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import seamkit
from seamkit import Agent, Message, SessionBusy, SessionStore, SQLiteSessionStore

if TYPE_CHECKING:
    from tests.plugins.postgres_server import PostgresServer

pytest_plugins = ["tests.plugins.postgres_server"]

LEASE = 1.0  # the PostgreSQL store's lease here: a killed worker's lock frees this fast


@dataclass
class Where:
    """A fresh store location: ``spec`` as a run or the CLI names it, and
    ``open()`` for a new store object on it (another process would make its own)."""

    kind: str
    spec: str

    def open(self) -> SessionStore:
        if self.kind == "sqlite":
            return SQLiteSessionStore(self.spec)
        from seamkit_sessions_postgres import PostgresSessionStore

        return PostgresSessionStore(self.spec)


@pytest.fixture(params=["sqlite", "postgresql"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Where:
    if request.param == "sqlite":
        return Where("sqlite", str(tmp_path / "sessions.sqlite"))
    server: PostgresServer = request.getfixturevalue("postgres")
    return Where("postgresql", server.url(server.new_database(), lease_seconds=LEASE))


class Echo:
    """A model that answers ``re: <last message>`` after a short pause."""

    def __init__(self, pause: float = 0.005) -> None:
        self.pause = pause

    async def complete(self, request: seamkit.ModelRequest) -> seamkit.ModelTurn:
        await asyncio.sleep(self.pause)
        return seamkit.ModelTurn(message=Message.assistant(f"re: {request.messages[-1].text}"))

    async def stream(self, request: seamkit.ModelRequest) -> AsyncIterator[seamkit.ModelTurn]:
        yield await self.complete(request)


def _agent(**settings: Any) -> Agent:
    return Agent(model=Echo(), settings=settings, plugin_hooks=False)


TRANSCRIPT = (
    Message.user("hello — ünïcödé, emoji 🎉, a NUL \x00 and a quote '\""),
    Message.assistant(
        None,
        [seamkit.MessageToolCall.make("call_1", "lookup", {"z": 1, "a": [1, {"b": None}]})],
    ),
    Message.tool("call_1", '{"found": true}'),
    Message.assistant("done"),
)
STATE = {"fresh": {"tool_call:memories": {"at": "2026-11-22T09:00:00Z", "n": 3}}, "z": 1, "a": [1]}


# --- the store on its own -------------------------------------------------------------


def test_save_then_load_gives_back_transcript_and_state_exactly(where: Where) -> None:
    store = where.open()

    async def go() -> tuple[Any, Any, Any]:
        missing = await store.load("chat")
        await store.save("chat", TRANSCRIPT, STATE)
        first = await store.load("chat")
        await store.save("chat", TRANSCRIPT[:1], {})  # a save replaces both
        return missing, first, await store.load("chat")

    missing, first, second = asyncio.run(go())
    assert missing is None
    assert first.transcript == TRANSCRIPT
    assert first.state == STATE
    assert list(first.state) == list(STATE)  # key order too
    assert second.transcript == TRANSCRIPT[:1] and second.state == {}


def test_list_is_sorted_and_delete_forgets_one(where: Where) -> None:
    store = where.open()
    names = ["b", "a", "B", "ä", "a b", "🎉", "z"]

    async def go() -> tuple[list[str], list[str]]:
        for name in names:
            await store.save(name, [Message.user(name)], {})
        before = await store.list()
        await store.delete("a")
        await store.delete("never-there")
        return before, await store.list()

    before, after = asyncio.run(go())
    assert before == sorted(names)
    assert after == sorted(set(names) - {"a"})
    assert asyncio.run(store.load("a")) is None


def test_a_second_locker_waits_then_gets_session_busy(where: Where) -> None:
    first, second = where.open(), where.open()  # as two workers would

    async def go() -> float:
        async with first.lock("chat", 5):
            async with second.lock("other", 0):  # another session is not blocked
                pass
            started = time.monotonic()
            with pytest.raises(SessionBusy, match="session 'chat' busy") as caught:
                async with second.lock("chat", 0.3):
                    pytest.fail("took a held session")
            assert caught.value.name == "chat"
            return time.monotonic() - started

    waited = asyncio.run(go())
    assert 0.3 <= waited < 3


def test_a_waiting_locker_gets_the_session_when_it_is_released(where: Where) -> None:
    first, second = where.open(), where.open()
    order: list[str] = []

    async def go() -> None:
        held = asyncio.Event()

        async def hold() -> None:
            async with first.lock("chat", 5):
                order.append("first in")
                held.set()
                await asyncio.sleep(0.3)
                order.append("first out")

        async def wait() -> None:
            await held.wait()  # not a fixed time: taking the lock may be slow
            async with second.lock("chat", 5):
                order.append("second in")

        await asyncio.gather(hold(), wait())

    asyncio.run(go())
    assert order == ["first in", "first out", "second in"]


# --- runs on a session ----------------------------------------------------------------


def test_concurrent_runs_on_one_session_lose_no_message(where: Where) -> None:
    store = where.open()
    agent = _agent(session_wait_seconds=60)
    count = 20

    async def go() -> list[seamkit.RunResult]:
        runs = (agent.run(f"m{i}", session="chat", store=store) for i in range(count))
        return await asyncio.gather(*runs)

    results = asyncio.run(go())
    assert all(r.outcome.kind == "completed" for r in results)
    stored = asyncio.run(store.load("chat"))
    assert stored is not None
    texts = [m.text for m in stored.transcript]
    assert len(texts) == 2 * count
    assert sorted(texts[0::2]) == sorted(f"m{i}" for i in range(count))
    assert texts[1::2] == [f"re: {q}" for q in texts[0::2]]  # each answer after its question


def test_a_run_that_waits_too_long_gets_session_busy_and_saves_nothing(where: Where) -> None:
    store = where.open()
    agent = _agent(session_wait_seconds=0.2)

    async def go() -> None:
        async with where.open().lock("chat", 5):
            with pytest.raises(SessionBusy):
                await agent.run("hi", session="chat", store=store)

    asyncio.run(go())
    assert asyncio.run(store.load("chat")) is None


def test_the_store_is_named_by_its_spec_as_a_run_or_the_cli_would(where: Where) -> None:
    agent = _agent()
    first = agent.run_sync("one", session="chat", store=where.spec)
    second = agent.run_sync("two", session="chat", store=where.spec)
    assert [m.text for m in first.transcript] == ["one", "re: one"]
    assert [m.text for m in second.transcript] == ["one", "re: one", "two", "re: two"]


DOOMED = """
import asyncio, sys, seamkit

class Hang:
    async def complete(self, request):
        print("running", flush=True)
        await asyncio.sleep(120)

    async def stream(self, request):
        yield await self.complete(request)

agent = seamkit.Agent(model=Hang(), plugin_hooks=False)
asyncio.run(agent.run("doomed", session="chat", store=sys.argv[1]))
"""


def test_a_worker_killed_mid_run_leaves_the_session_loadable_and_free(where: Where) -> None:
    store = where.open()
    before = (Message.user("before"), Message.assistant("kept"))
    asyncio.run(store.save("chat", before, {"n": 1}))
    worker = subprocess.Popen(
        [sys.executable, "-c", DOOMED, where.spec], stdout=subprocess.PIPE, text=True
    )
    try:
        assert worker.stdout is not None
        assert worker.stdout.readline().strip() == "running"  # it holds the session now
        with pytest.raises(SessionBusy):
            asyncio.run(_agent(session_wait_seconds=0.1).run("x", session="chat", store=store))
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        if worker.stdout is not None:
            worker.stdout.close()
    stored = asyncio.run(where.open().load("chat"))
    assert stored is not None
    assert stored.transcript == before and stored.state == {"n": 1}  # as last saved
    started = time.monotonic()
    result = _agent(session_wait_seconds=LEASE + 10).run_sync(
        "after", session="chat", store=where.open()
    )
    assert result.outcome.kind == "completed"
    assert [m.text for m in result.transcript] == ["before", "kept", "after", "re: after"]
    assert time.monotonic() - started < LEASE + 5  # freed by the OS, or by the lease's expiry
