"""How a run ends when something will not stop (issue 17): ``on_completion``'s
deadline, a second cancellation (or Ctrl-C) that always wins, interrupts from
hooks and tools, and results that survive all of it; the session is saved in
every case."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import seamkit
from seamkit import Agent, Message, SQLiteSessionStore
from seamkit.testing import Recorder, ScriptedModel

from tests.conftest import ROOT


@seamkit.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Hung:
    """An ``on_completion`` hook that never returns by itself."""

    name = "hung"

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = False

    @seamkit.hookimpl
    async def on_completion(self, ctx: Any, result: Any) -> None:
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise


def hung_agent(hook: object, **settings: Any) -> tuple[Agent, Recorder]:
    recorder = Recorder()
    agent = Agent(
        ScriptedModel([{"text": "one"}, {"text": "two"}]),
        hooks=[recorder, hook],
        settings=settings,
        plugin_hooks=False,
    )
    return agent, recorder


def others(current: asyncio.Task[Any] | None) -> list[asyncio.Task[Any]]:
    return [t for t in asyncio.all_tasks() if t is not current and not t.done()]


# --- on_completion's deadline ---------------------------------------------------------


def test_a_hung_on_completion_hook_is_cut_at_its_deadline() -> None:
    hung = Hung()
    agent, _ = hung_agent(hung, completion_timeout_seconds=0.05)

    async def go() -> tuple[seamkit.RunResult, list[Any]]:
        started = time.monotonic()
        result = await agent.run("go")
        assert time.monotonic() - started < 2
        return result, others(asyncio.current_task())

    result, pending = asyncio.run(go())
    assert pending == [] and hung.cancelled
    assert result.outcome == seamkit.Completed() and result.output == "one"  # unchanged
    codes = {d.code: d for d in result.diagnostics}
    assert "completion_timeout_seconds=0.05 passed" in codes["completion_cut"].message
    assert codes["hook_cancelled"].hooks == ("hung",)


def test_the_default_deadline_is_ten_seconds_and_none_means_no_limit() -> None:
    assert seamkit.Settings().completion_timeout_seconds == 10.0
    assert seamkit.Settings(completion_timeout_seconds=None).completion_timeout_seconds is None
    with pytest.raises(ValueError):
        seamkit.Settings(completion_timeout_seconds=0)


def test_the_run_timeout_does_not_eat_on_completion_s_time() -> None:
    seen: list[str] = []

    class Slow:
        @seamkit.hookimpl
        async def on_completion(self, ctx: Any, result: Any) -> None:
            await asyncio.sleep(0.1)
            seen.append(result.outcome.kind)

    class SlowModel:
        async def complete(self, request: Any) -> Any:
            await asyncio.sleep(10)

        async def stream(self, request: Any) -> Any:
            yield await self.complete(request)

    agent = Agent(
        SlowModel(),
        hooks=[Slow()],
        settings={"run_timeout_seconds": 0.05, "completion_timeout_seconds": 5},
        plugin_hooks=False,
    )
    result = agent.run_sync("go")
    assert result.outcome == seamkit.Cancelled() and seen == ["cancelled"]


# --- cancellation: the first lets on_completion finish, the second wins ---------------


def test_a_first_cancel_waits_for_on_completion_and_a_second_cuts_it(tmp_path: Path) -> None:
    hung = Hung()
    agent, recorder = hung_agent(hung, completion_timeout_seconds=None)  # no deadline at all
    store = SQLiteSessionStore(tmp_path / "s.sqlite")

    async def go() -> list[Any]:
        task = asyncio.ensure_future(agent.run("go", session="s", store=store))
        await hung.started.wait()
        task.cancel()  # the first: on_completion goes on
        await asyncio.sleep(0.05)
        assert not task.done()
        task.cancel()  # the second wins
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 2)
        return others(asyncio.current_task())

    assert asyncio.run(go()) == [] and hung.cancelled
    stored = asyncio.run(store.load("s"))
    assert stored is not None and [m.text for m in stored.transcript] == ["go", "one"]
    assert recorder.calls[-1].args[0].outcome == seamkit.Completed()


def test_a_run_cancelled_before_on_completion_is_cut_by_the_next_cancel(
    tmp_path: Path,
) -> None:
    hung = Hung()

    class Slow:
        async def complete(self, request: Any) -> Any:
            await asyncio.sleep(10)

        async def stream(self, request: Any) -> Any:
            yield await self.complete(request)

    agent = Agent(
        Slow(), hooks=[hung], settings={"completion_timeout_seconds": None}, plugin_hooks=False
    )
    store = SQLiteSessionStore(tmp_path / "s.sqlite")

    async def go() -> None:
        task = asyncio.ensure_future(agent.run("go", session="s", store=store))
        await asyncio.sleep(0.02)
        task.cancel()  # the run is cancelled: on_completion fires...
        await hung.started.wait()
        task.cancel()  # ...and the next cancellation is the second
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 2)

    asyncio.run(go())
    stored = asyncio.run(store.load("s"))
    assert stored is not None and [m.text for m in stored.transcript] == ["go"]


def test_a_hook_that_ignores_its_cancellation_is_left_after_a_grace(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(seamkit._engine._lifecycle, "CANCEL_GRACE_SECONDS", 0.05)

    class Stubborn:
        def __init__(self) -> None:
            self.done: asyncio.Event | None = None

        @seamkit.hookimpl
        async def on_completion(self, ctx: Any, result: Any) -> None:
            self.done = asyncio.Event()
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                await asyncio.sleep(3)  # ignores it, for a while
            self.done.set()

    hook = Stubborn()
    agent, _ = hung_agent(hook, completion_timeout_seconds=0.05)

    async def go() -> seamkit.RunResult:
        started = time.monotonic()
        result = await agent.run("go")
        assert time.monotonic() - started < 2  # the 0.05 s limit, not the hook's 3 s
        assert hook.done is not None and not hook.done.is_set()
        await hook.done.wait()  # it ends on its own: nothing is killed
        return result

    with caplog.at_level(logging.WARNING, logger="seamkit"):
        result = asyncio.run(go())
    assert result.outcome == seamkit.Completed()
    assert any("ignored its cancellation" in r.getMessage() for r in caplog.records)


_CTRL_C = textwrap.dedent(
    """
    import asyncio, os, signal, sys, threading
    import seamkit
    from seamkit import Agent, SQLiteSessionStore
    from seamkit.testing import ScriptedModel

    class Hung:
        @seamkit.hookimpl
        async def on_completion(self, ctx, result):
            print("on_completion", flush=True)
            def press():  # Ctrl-C twice, as a user would
                os.kill(os.getpid(), signal.SIGINT)
                threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
            threading.Timer(0.2, press).start()
            await asyncio.Event().wait()

    agent = Agent(ScriptedModel([{"text": "one"}]), hooks=[Hung()], plugin_hooks=False,
                  settings={"completion_timeout_seconds": None})
    store = SQLiteSessionStore(sys.argv[1])
    try:
        asyncio.run(agent.run("go", session="s", store=store))
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    stored = asyncio.run(store.load("s"))
    print("saved", [m.text for m in stored.transcript], flush=True)
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_twice_stops_a_hung_on_completion_and_the_session_is_saved(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _CTRL_C, str(tmp_path / "s.sqlite")],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=ROOT,
        env={**os.environ, "SEAMKIT_PLUGINS": "none"},
    )
    assert done.stdout.splitlines() == ["on_completion", "interrupted", "saved ['go', 'one']"], (
        done.stdout + done.stderr
    )


# --- interrupts from hooks and tools ------------------------------------------------------


def test_keyboard_interrupt_from_a_tool_cancels_the_run_and_is_re_raised(tmp_path: Path) -> None:
    @seamkit.tool
    def stop() -> str:
        """Stop."""
        raise KeyboardInterrupt

    for concurrency in (1, 3):
        recorder = Recorder()
        agent = Agent(
            ScriptedModel(
                [{"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}, {"name": "stop"}]}]
            ),
            tools=[add, stop],
            hooks=[recorder],
            settings={"tool_concurrency": concurrency},
            plugin_hooks=False,
        )
        store = SQLiteSessionStore(tmp_path / f"{concurrency}.sqlite")

        async def go(agent: Agent = agent, store: SQLiteSessionStore = store) -> None:
            with pytest.raises(KeyboardInterrupt):
                await agent.run("go", session="s", store=store)

        asyncio.run(go())
        result = recorder.calls[-1].args[0]
        assert result.outcome == seamkit.Cancelled()
        # add ran before the interrupt: its result is kept, and saved
        assert [m.text for m in result.transcript] == ["go", "", "3"]
        stored = asyncio.run(store.load("s"))
        assert stored is not None and stored.transcript == result.transcript


def test_system_exit_in_on_completion_is_re_raised_after_the_run_is_reported() -> None:
    class Exit:
        @seamkit.hookimpl
        def on_completion(self, ctx: Any, result: Any) -> None:
            sys.exit(4)

    finished: list[seamkit.RunResult] = []

    class Observer:
        @seamkit.hookimpl
        def on_run_event(self, ctx: Any, event: Any) -> None:
            if isinstance(event, seamkit.stream.RunFinished):
                finished.append(event.result)

    agent = Agent(ScriptedModel([{"text": "hi"}]), hooks=[Exit(), Observer()], plugin_hooks=False)
    with pytest.raises(SystemExit) as info:
        agent.run_sync("go")
    assert info.value.code == 4
    [result] = finished
    assert result.outcome == seamkit.Completed()
    [note] = [d for d in result.diagnostics if d.code == "hook_interrupted"]
    assert "raised SystemExit(4) at on_completion" in note.message


def test_a_cancelled_concurrent_batch_keeps_the_results_that_exist(tmp_path: Path) -> None:
    finished: list[int] = []

    @seamkit.tool
    async def slow(n: int) -> int:
        """Sleep n tenths of a second."""
        await asyncio.sleep(n / 10)
        finished.append(n)
        return n

    calls = [{"name": "slow", "arguments": {"n": n}} for n in (0, 50)]
    agent = Agent(
        ScriptedModel([{"tool_calls": calls}]),
        tools=[slow],
        settings={"tool_concurrency": 2},
        plugin_hooks=False,
    )
    store = SQLiteSessionStore(tmp_path / "s.sqlite")

    async def go() -> None:
        task = asyncio.ensure_future(agent.run("go", session="s", store=store))
        for _ in range(1000):  # the quick call (not a fixed time: the run may start late)
            if finished:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)  # its result is taken; the other call sleeps 5 s
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    stored = asyncio.run(store.load("s"))
    assert stored is not None
    assert [(m.role, m.text) for m in stored.transcript] == [
        ("user", "go"),
        ("assistant", ""),
        ("tool", "0"),  # the call that finished; the other one is answered next run
    ]
    again = Agent(ScriptedModel([{"text": "ok"}]), plugin_hooks=False)
    later = asyncio.run(again.run("again", session="s", store=store))
    assert [m.role for m in later.transcript] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "user",
        "assistant",
    ]
    assert later.transcript[3] == Message.tool("call_1_1", seamkit._engine._agent.UNANSWERED)
