"""The run options a server needs: ``defaults`` (the request every model call
starts from, which hooks then patch), ``state`` (a session-less run's own
``session_state``), and a `Continuation` input (computed from the stored
transcript under the session's lock; raising refuses the run and saves
nothing)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import seamkit
from seamkit import flow
from seamkit.testing import ScriptedModel


class Capture:
    """A model that records each request and answers ``ok``."""

    def __init__(self) -> None:
        self.requests: list[seamkit.ModelRequest] = []

    async def complete(self, request: seamkit.ModelRequest) -> seamkit.ModelTurn:
        self.requests.append(request)
        return seamkit.ModelTurn(message=seamkit.Message.assistant("ok"))

    async def stream(self, request: seamkit.ModelRequest) -> Any:
        yield await self.complete(request)


class Cap:
    """A hook that caps the token limit at 50."""

    name = "cap"

    @seamkit.hookimpl
    def on_pre_llm(self, ctx: Any, request: seamkit.ModelRequest) -> Any:
        return flow.PatchRequest(seamkit.RequestPatch(max_tokens=min(request.max_tokens or 50, 50)))


def test_defaults_are_the_baseline_that_hooks_patch() -> None:
    model = Capture()
    agent = seamkit.Agent(model, hooks=[Cap()], plugin_hooks=False)
    defaults = seamkit.RequestPatch(temperature=0.3, max_tokens=500)
    asyncio.run(agent.run("hi", defaults=defaults))
    asyncio.run(agent.run("hi"))
    first, second = model.requests
    assert (first.temperature, first.max_tokens) == (0.3, 50)  # the hook wins over the default
    assert (second.temperature, second.max_tokens) == (None, 50)  # defaults are per run


class Counter:
    """A hook that counts the runs it saw in ``session_state``."""

    name = "counter"

    @seamkit.hookimpl
    def on_request_start(self, ctx: Any, messages: Any) -> None:
        ctx.session_state["runs"] = ctx.session_state.get("runs", 0) + 1


def test_a_run_given_its_own_state_shares_nothing_with_the_agents() -> None:
    agent = seamkit.Agent(Capture(), hooks=[Counter()], plugin_hooks=False)
    asyncio.run(agent.run("hi"))
    asyncio.run(agent.run("hi"))
    own: dict[str, Any] = {}
    asyncio.run(agent.run("hi", state=own))
    assert own == {"runs": 1}
    fresh: dict[str, Any] = {}
    asyncio.run(agent.run("hi", state=fresh))
    assert fresh == {"runs": 1}


def test_a_continuation_sees_the_stored_transcript_under_the_lock(tmp_path: Path) -> None:
    store = seamkit.SQLiteSessionStore(tmp_path / "s.sqlite")
    agent = seamkit.Agent(ScriptedModel([{"text": "one"}, {"text": "two"}]), plugin_hooks=False)
    seen: list[tuple[seamkit.Message, ...]] = []

    def continuation(stored: tuple[seamkit.Message, ...]) -> str:
        seen.append(stored)
        return f"message {len(stored)}"

    asyncio.run(agent.run(continuation, session="s", store=store))
    result = asyncio.run(agent.run(continuation, session="s", store=store))
    assert [len(s) for s in seen] == [0, 2]
    assert [m.text for m in result.transcript] == ["message 0", "one", "message 2", "two"]


def test_a_continuation_that_raises_runs_nothing_and_saves_nothing(tmp_path: Path) -> None:
    store = seamkit.SQLiteSessionStore(tmp_path / "s.sqlite")
    agent = seamkit.Agent(ScriptedModel([{"text": "one"}]), plugin_hooks=False)
    asyncio.run(agent.run("first", session="s", store=store))

    def refuse(stored: tuple[seamkit.Message, ...]) -> str:
        raise seamkit.SessionError("the client's history contradicts the stored one")

    with pytest.raises(seamkit.SessionError, match="contradicts"):
        asyncio.run(agent.run(refuse, session="s", store=store))
    stored = asyncio.run(store.load("s"))
    assert stored is not None
    assert [m.text for m in stored.transcript] == ["first", "one"]
    # the lock was released: another run on the session is not kept waiting
    agent2 = seamkit.Agent(ScriptedModel([{"text": "again"}]), plugin_hooks=False)
    assert asyncio.run(agent2.run("more", session="s", store=store)).output == "again"


def test_a_continuation_without_a_session_gets_an_empty_transcript() -> None:
    agent = seamkit.Agent(Capture(), plugin_hooks=False)
    result = asyncio.run(agent.run(lambda stored: f"{len(stored)} stored"))
    assert result.transcript[0].text == "0 stored"


def test_a_script_played_each_run_serves_concurrent_runs(tmp_path: Path) -> None:
    script = tmp_path / "script.yaml"
    script.write_text(
        "each_run: true\nturns:\n"
        "  - tool_calls: [{name: add, arguments: {a: 2, b: 3}}]\n"
        "  - text: done\n"
    )

    @seamkit.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    agent = seamkit.Agent(f"scripted:{script}", tools=[add], plugin_hooks=False)

    async def many() -> list[seamkit.RunResult]:
        return list(await asyncio.gather(*(agent.run(f"q{i}") for i in range(20))))

    results = asyncio.run(many())
    assert {r.output for r in results} == {"done"}
    assert all(r.usage.requests == 2 for r in results)


class SlowSave(seamkit.SQLiteSessionStore):
    """A store whose save takes a while, and says when it starts."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.saving = asyncio.Event()

    async def save(self, name: str, transcript: Any, state: Any) -> None:
        self.saving.set()
        await asyncio.sleep(0.3)
        await super().save(name, transcript, state)


def test_a_run_cancelled_while_saving_keeps_the_session_until_saved(tmp_path: Path) -> None:
    store = SlowSave(tmp_path / "s.sqlite")
    agent = seamkit.Agent(ScriptedModel([{"text": "one"}, {"text": "two"}]), plugin_hooks=False)

    async def go() -> seamkit.RunResult:
        first = asyncio.ensure_future(agent.run("first", session="s", store=store))
        await store.saving.wait()
        first.cancel()  # while its save is under way
        second = await agent.run("second", session="s", store=store)
        with pytest.raises(asyncio.CancelledError):
            await first
        return second

    result = asyncio.run(go())
    # the second run waited for the first one's save, then loaded it
    assert [m.text for m in result.transcript] == ["first", "one", "second", "two"]
