"""A cancellation that arrives while a journal write is under way: the write
ends before the run saves, so the save (which drops the journal) is the last
word, and the session is free for a new message at once.

A store that writes in a worker thread (the SQLite store does) cannot stop a
write it began: without that wait, the write lands after the save, and the
session looks like a run a crash cut short (``seamkit serve`` answered the
next message of a client that had disconnected mid-stream with a 409)."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from seamkit import Agent, Approve, Completed, Decisions, JournalEntry, SQLiteSessionStore, tool
from seamkit.testing import ScriptedModel

WRITE_SECONDS = 0.5


class ThreadedStore(SQLiteSessionStore):
    """The SQLite store, its journal writes slowed in their worker thread:
    once begun, a write lands whatever happens to the task that awaits it."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.writing = asyncio.Event()

    async def journal_append(self, name: str, entries: Sequence[JournalEntry]) -> None:
        began = functools.partial(asyncio.get_running_loop().call_soon_threadsafe, self.writing.set)
        await asyncio.to_thread(self._slow_write, name, list(entries), began)

    def _slow_write(
        self, name: str, entries: list[JournalEntry], began: Callable[[], object]
    ) -> None:
        began()  # the thread has the write: cancelling the task no longer stops it
        time.sleep(WRITE_SECONDS)
        asyncio.run(SQLiteSessionStore.journal_append(self, name, entries))


@tool
def pay(amount: int) -> str:
    """Pay (a tool with effects: what makes a run keep a journal)."""
    return f"paid {amount}"


async def _cancel_mid_write(agent: Agent, store: ThreadedStore, input: str | Decisions) -> None:
    """Run ``input`` on session ``s``, cancelled once a journal write is in
    its worker thread; the caller sees the cancellation."""
    task = asyncio.ensure_future(agent.run(input, session="s", store=store))
    await store.writing.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_a_run_cancelled_mid_journal_write_leaves_no_journal_behind(tmp_path: Path) -> None:
    store = ThreadedStore(tmp_path / "s.sqlite")
    model = ScriptedModel([{"text": "first"}, {"text": "second"}])
    agent = Agent(model, tools=[pay], plugin_hooks=False)
    asyncio.run(_cancel_mid_write(agent, store, "go"))  # (which waits for every worker thread)
    assert asyncio.run(store.journal_read("s")) == []
    stored = asyncio.run(store.load("s"))
    assert stored is not None and [m.text for m in stored.transcript][:1] == ["go"]
    # the session takes a new message at once
    result = asyncio.run(agent.run("again", session="s", store=SQLiteSessionStore(store.path)))
    assert isinstance(result.outcome, Completed)


def test_decisions_cancelled_mid_write_are_recorded_before_the_caller_hears(
    tmp_path: Path,
) -> None:
    call = {"name": "pay", "arguments": {"amount": 5}}
    model = ScriptedModel([{"tool_calls": [call]}, {"text": "done"}])
    agent = Agent(model, tools=[pay.replace(approval=True)], plugin_hooks=False)
    plain = SQLiteSessionStore(tmp_path / "s.sqlite")
    asyncio.run(agent.run("go", session="s", store=plain))  # suspended for approval
    stored = asyncio.run(plain.load("s"))
    assert stored is not None and stored.pending
    decisions = Decisions({stored.pending[0].call_id: Approve()})
    store = ThreadedStore(tmp_path / "s.sqlite")

    async def cancelled() -> list[str]:
        await _cancel_mid_write(agent, store, decisions)
        return [e.kind for e in await store.journal_read("s")]  # no thread waited for yet

    assert asyncio.run(cancelled()) == ["decided"]
