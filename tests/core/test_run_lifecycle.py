"""The run's lifecycle (`seamkit._engine._lifecycle`): one test per transition of
`TRANSITIONS`, each named ``test_<from>__<move>__<to>`` and made by a real
run, which shows the move in its debug log and what the move means in what
the caller sees; plus the table in the guide, checked against the code."""

from __future__ import annotations

import asyncio
import logging
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import seamkit
from seamkit import Agent, SQLiteSessionStore
from seamkit._engine._lifecycle import TRANSITIONS, Lifecycle, Move, Phase
from seamkit.testing import Recorder, ScriptedModel

from tests.conftest import ROOT

Moves = Callable[[], list[str]]


@pytest.fixture
def moves(caplog: pytest.LogCaptureFixture) -> Iterator[Moves]:
    """The moves runs made so far, as ``from --move--> to``."""
    caplog.set_level(logging.DEBUG, logger="seamkit.run")

    def read() -> list[str]:
        return [
            r.getMessage().split(": ", 1)[1]
            for r in caplog.records
            if r.name == "seamkit.run" and "--> " in r.getMessage()
        ]

    yield read


async def moved(moves: Moves, move: str) -> None:
    """Wait (up to ~5 s) until a run has made ``move``: a cancellation that
    must come after it is not sent on a fixed time."""
    for _ in range(500):
        if move in moves():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never moved {move!r}: {moves()}")


class SlowModel:
    """A model that never answers by itself."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()

    def asked_then(self, do: Callable[[], Any]) -> None:
        """Call ``do`` (in a task of its own) once the model is asked."""

        async def wait() -> None:
            await self.asked.wait()
            do()

        self._then = asyncio.ensure_future(wait())

    async def complete(self, request: Any) -> Any:
        self.asked.set()
        await asyncio.Event().wait()

    async def stream(self, request: Any) -> Any:
        yield await self.complete(request)


class Hung:
    """An ``on_completion`` hook that waits for ``release`` (or forever)."""

    name = "hung"

    def __init__(self, on_cancel: Callable[[], Any] | None = None) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.finished = False
        self.cancelled = False
        self.on_cancel = on_cancel

    @seamkit.hookimpl
    async def on_completion(self, ctx: Any, result: Any) -> None:
        self.started.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled = True
            if self.on_cancel is not None:
                await self.on_cancel()
            raise
        self.finished = True


def agent_with(*hooks: object, model: Any = None, **settings: Any) -> Agent:
    return Agent(
        model if model is not None else ScriptedModel([{"text": "one"}]),
        hooks=list(hooks),
        settings=settings,
        plugin_hooks=False,
    )


def outcome_seen(recorder: Recorder) -> str:
    """The outcome the on_completion hooks received."""
    return str(recorder.calls[-1].args[0].outcome.kind)


# --- running -----------------------------------------------------------------------------


def test_running__finish__completing(moves: Moves) -> None:
    result = agent_with().run_sync("go")
    assert result.outcome == seamkit.Completed()
    assert moves()[0] == "running --finish--> completing"


def test_running__time_out__completing(moves: Moves) -> None:
    recorder = Recorder()
    agent = agent_with(recorder, model=SlowModel(), run_timeout_seconds=0.05)
    result = agent.run_sync("go")  # the run's own deadline: nothing is raised
    assert result.outcome == seamkit.Cancelled() and outcome_seen(recorder) == "cancelled"
    assert "run_timeout" in {d.code for d in result.diagnostics}
    assert moves()[:2] == ["running --time_out--> completing", "completing --complete--> reported"]


def test_running__cancel__completing_cancelled(moves: Moves) -> None:
    recorder, model = Recorder(), SlowModel()
    agent = agent_with(recorder, model=model)

    async def go() -> None:
        task = asyncio.ensure_future(agent.run("go"))
        await model.asked.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    assert outcome_seen(recorder) == "cancelled"  # on_completion fired
    assert moves()[0] == "running --cancel--> completing_cancelled"


def test_running__interrupt__completing_cancelled(moves: Moves) -> None:
    class Stop:
        @seamkit.hookimpl
        def on_pre_llm(self, ctx: Any, request: Any) -> None:
            raise KeyboardInterrupt

    recorder = Recorder()
    with pytest.raises(KeyboardInterrupt):
        agent_with(Stop(), recorder).run_sync("go")
    assert outcome_seen(recorder) == "cancelled"
    assert moves() == [
        "running --interrupt--> completing_cancelled",
        "completing_cancelled --complete--> reported",
        "reported --end--> ended",
    ]


# --- completing ----------------------------------------------------------------------------


def test_completing__cancel__completing_cancelled(moves: Moves) -> None:
    hung = Hung()

    async def go() -> None:
        task = asyncio.ensure_future(agent_with(hung).run("go"))
        await hung.started.wait()
        task.cancel()  # the first: on_completion goes on
        await asyncio.sleep(0.02)
        assert not task.done()
        hung.release.set()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    assert hung.finished and not hung.cancelled
    assert moves()[1:3] == [
        "completing --cancel--> completing_cancelled",
        "completing_cancelled --complete--> reported",
    ]


def test_completing_cancelled__cancel__cut(moves: Moves) -> None:
    hung = Hung()

    async def go() -> seamkit.RunResult | None:
        task = asyncio.ensure_future(agent_with(hung, completion_timeout_seconds=None).run("go"))
        await hung.started.wait()
        task.cancel()
        await moved(moves, "completing --cancel--> completing_cancelled")
        await asyncio.sleep(0.02)
        task.cancel()  # the second cuts on_completion
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 2)
        return None

    asyncio.run(go())
    assert hung.cancelled
    assert moves()[1:4] == [
        "completing --cancel--> completing_cancelled",
        "completing_cancelled --cancel--> cut",
        "cut --complete--> reported",
    ]


def test_completing__deadline__cut(moves: Moves) -> None:
    hung = Hung()
    result = agent_with(hung, completion_timeout_seconds=0.05).run_sync("go")
    assert hung.cancelled and result.outcome == seamkit.Completed()
    assert "completion_cut" in {d.code for d in result.diagnostics}
    assert moves()[1:3] == ["completing --deadline--> cut", "cut --complete--> reported"]


def test_completing_cancelled__deadline__cut(moves: Moves) -> None:
    hung, model = Hung(), SlowModel()

    async def go() -> None:
        agent = agent_with(hung, model=model, completion_timeout_seconds=0.05)
        task = asyncio.ensure_future(agent.run("go"))
        await model.asked.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 2)

    asyncio.run(go())
    assert hung.cancelled
    assert moves()[:2] == [
        "running --cancel--> completing_cancelled",
        "completing_cancelled --deadline--> cut",
    ]


def test_completing__interrupt__completing(moves: Moves) -> None:
    class Exit:
        @seamkit.hookimpl
        def on_completion(self, ctx: Any, result: Any) -> None:
            sys.exit(4)

    after = Recorder()
    with pytest.raises(SystemExit) as info:
        agent_with(Exit(), after).run_sync("go")
    assert info.value.code == 4
    assert "on_completion" not in after.events  # the hooks after it are skipped
    assert moves()[1:3] == [
        "completing --interrupt--> completing",
        "completing --complete--> reported",
    ]


def test_completing_cancelled__interrupt__completing_cancelled(moves: Moves) -> None:
    model = SlowModel()

    class Stop:
        @seamkit.hookimpl
        def on_completion(self, ctx: Any, result: Any) -> None:
            raise KeyboardInterrupt

    async def go() -> None:
        # (in this task: an interrupt raised in a task of its own would stop the loop)
        main = asyncio.current_task()
        assert main is not None
        model.asked_then(main.cancel)
        with pytest.raises(KeyboardInterrupt):  # the interrupt wins over the cancellation
            await agent_with(Stop(), model=model).run("go")

    asyncio.run(go())
    assert moves()[1] == "completing_cancelled --interrupt--> completing_cancelled"


def test_completing__complete__reported(moves: Moves) -> None:
    recorder = Recorder()
    agent_with(recorder).run_sync("go")
    assert outcome_seen(recorder) == "completed"
    assert moves()[1] == "completing --complete--> reported"


def test_completing_cancelled__complete__reported(moves: Moves) -> None:
    recorder, model = Recorder(), SlowModel()

    async def go() -> None:
        task = asyncio.ensure_future(agent_with(recorder, model=model).run("go"))
        await model.asked.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    assert outcome_seen(recorder) == "cancelled"
    assert moves()[1] == "completing_cancelled --complete--> reported"


# --- cut -----------------------------------------------------------------------------------


def test_cut__complete__reported(moves: Moves) -> None:
    hung = Hung()
    result = agent_with(hung, completion_timeout_seconds=0.05).run_sync("go")
    assert hung.cancelled  # it ended within the grace
    assert {"completion_cut", "hook_cancelled"} <= {d.code for d in result.diagnostics}
    assert moves()[2] == "cut --complete--> reported"


def test_cut__interrupt__cut(moves: Moves) -> None:
    async def exit_now() -> None:
        raise KeyboardInterrupt  # while it cleans up

    hung = Hung(on_cancel=exit_now)
    with pytest.raises(KeyboardInterrupt):
        agent_with(hung, completion_timeout_seconds=0.05).run_sync("go")
    assert moves()[2:4] == ["cut --interrupt--> cut", "cut --complete--> reported"]


def test_cut__cancel__cut(moves: Moves, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(seamkit._engine._lifecycle, "CANCEL_GRACE_SECONDS", 30)

    async def stubborn() -> None:
        await asyncio.Event().wait()  # ignores its cancellation

    hung = Hung(on_cancel=stubborn)

    async def go() -> None:
        agent = agent_with(hung, completion_timeout_seconds=None)
        task = asyncio.ensure_future(agent.run("go"))
        await hung.started.wait()
        task.cancel()
        await moved(moves, "completing --cancel--> completing_cancelled")
        await asyncio.sleep(0.02)
        task.cancel()  # cut: a grace of 30 s begins...
        await moved(moves, "completing_cancelled --cancel--> cut")
        await asyncio.sleep(0.02)
        task.cancel()  # ...and a further cancellation ends it at once
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 2)

    asyncio.run(go())
    assert moves()[2:5] == [
        "completing_cancelled --cancel--> cut",
        "cut --cancel--> cut",
        "cut --abandon--> reported",
    ]


def test_cut__abandon__reported(
    moves: Moves, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(seamkit._engine._lifecycle, "CANCEL_GRACE_SECONDS", 0.05)

    async def stubborn() -> None:
        await asyncio.sleep(0.2)

    hung = Hung(on_cancel=stubborn)
    result = agent_with(hung, completion_timeout_seconds=0.05).run_sync("go")
    assert result.outcome == seamkit.Completed()
    assert any("ignored its cancellation" in r.getMessage() for r in caplog.records)
    assert moves()[2] == "cut --abandon--> reported"


# --- reported, saving, ended ---------------------------------------------------------------


def test_reported__save__saving(moves: Moves, tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "s.sqlite")
    asyncio.run(agent_with().run("go", session="s", store=store))
    assert moves()[2] == "reported --save--> saving"


@pytest.mark.parametrize("phase", ["running", "completing", "completing_cancelled", "cut"])
def test_any_earlier_phase__save__saving(
    phase: str, moves: Moves, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An exception that leaves the drive loop early (a KeyboardInterrupt a
    # signal handler raised between two lines, a bug) still saves the session.
    import seamkit._engine._drive as drive

    async def broken(run: Any, result: Any) -> None:
        if phase == "completing_cancelled":
            run.life.cancel(asyncio.CancelledError())
        elif phase == "cut":
            run.life.deadline()
        raise KeyboardInterrupt

    class Unprintable(Exception):
        def __str__(self) -> str:
            raise KeyboardInterrupt  # as if Ctrl-C landed while the run handled it

    class Failing:
        async def complete(self, request: Any) -> Any:
            raise Unprintable

        async def stream(self, request: Any) -> Any:
            yield await self.complete(request)

    model: Any = None
    if phase == "running":
        model = Failing()
    else:
        monkeypatch.setattr(drive, "_complete", broken)
    store = SQLiteSessionStore(tmp_path / "s.sqlite")
    with pytest.raises((KeyboardInterrupt, asyncio.CancelledError)):
        asyncio.run(agent_with(model=model).run("go", session="s", store=store))
    stored = asyncio.run(store.load("s"))
    expected = ["go"] if phase == "running" else ["go", "one"]
    assert stored is not None and [m.text for m in stored.transcript] == expected
    assert f"{phase} --save--> saving" in moves()


class SlowStore(SQLiteSessionStore):
    """A store whose save waits for ``release``."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.saving = asyncio.Event()
        self.release = asyncio.Event()

    async def save(self, name: str, transcript: Any, state: Any) -> None:
        self.saving.set()
        await self.release.wait()
        await super().save(name, transcript, state)


def test_saving__cancel__saving(moves: Moves, tmp_path: Path) -> None:
    async def go() -> None:
        store = SlowStore(tmp_path / "s.sqlite")
        task = asyncio.ensure_future(agent_with().run("go", session="s", store=store))
        await store.saving.wait()
        task.cancel()  # the save is never cut short...
        await asyncio.sleep(0.02)
        assert not task.done()
        store.release.set()
        with pytest.raises(asyncio.CancelledError):  # ...and the cancellation comes after
            await task
        stored = await store.load("s")
        assert stored is not None and [m.text for m in stored.transcript] == ["go", "one"]

    asyncio.run(go())
    assert moves()[3:5] == ["saving --cancel--> saving", "saving --saved--> ended"]


def test_saving__saved__ended(moves: Moves, tmp_path: Path) -> None:
    # The lock is released after the save: a second run on the session, which
    # waited for it, loads what the first saved.
    async def go() -> list[str]:
        store = SlowStore(tmp_path / "s.sqlite")
        agent = Agent(ScriptedModel([{"text": "one"}, {"text": "two"}]), plugin_hooks=False)
        first = asyncio.ensure_future(agent.run("a", session="s", store=store))
        await store.saving.wait()
        second = asyncio.ensure_future(agent.run("b", session="s", store=store))
        await asyncio.sleep(0.05)
        store.release.set()
        await first
        result = await second
        return [m.text for m in result.transcript]

    assert asyncio.run(go()) == ["a", "one", "b", "two"]
    assert moves()[2:4] == ["reported --save--> saving", "saving --saved--> ended"]


def test_reported__end__ended(moves: Moves) -> None:
    agent_with().run_sync("go")
    assert moves() == [
        "running --finish--> completing",
        "completing --complete--> reported",
        "reported --end--> ended",
    ]


# --- the table -----------------------------------------------------------------------------


def test_every_transition_has_its_test() -> None:
    names = set(globals())
    missing = []
    for (phase, move), to in TRANSITIONS.items():
        name = f"test_{phase.value}__{move.value}__{to.value}"
        if name not in names and not (move is Move.SAVE and phase is not Phase.REPORTED):
            missing.append(name)
    assert missing == []


def test_a_move_the_table_lacks_is_a_kernel_bug() -> None:
    life = Lifecycle("r")
    with pytest.raises(RuntimeError, match="no move 'deadline' from 'running'"):
        life.deadline()
    assert life.phase is Phase.RUNNING


def test_the_guide_s_table_is_the_code_s() -> None:
    guide = (ROOT / "docs" / "guide.md").read_text()
    section = guide.split("#### The run's lifecycle", 1)[1].split("\n#", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| `(\w+)` \| `(\w+)` \|", section, re.MULTILINE)
    documented = {(Phase(a), Move(m)): Phase(b) for a, m, b in rows}
    assert documented == TRANSITIONS
