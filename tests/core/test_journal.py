"""The journal: a run killed at any point (a real process, dying at once)
continues from its session without asking a recorded model turn again,
without running a finished call again, reporting a ``once`` call it cut short
as in doubt and re-running an ``idempotent`` one with its first key."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

APP = Path(__file__).parents[1] / "fixtures" / "journal" / "app.py"


class Trial:
    """One session of the journal app, driven in child processes."""

    def __init__(self, tmp_path: Path) -> None:
        self.store = str(tmp_path / "s.sqlite")
        self.effects = tmp_path / "effects.txt"
        self.asked = tmp_path / "asked.txt"
        self.effects.touch()
        self.asked.touch()

    def run(self, text: str | None, kill: str = "") -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "KILL": kill, "EFFECTS": str(self.effects), "ASKED": str(self.asked)}
        args = [sys.executable, str(APP), self.store, "s", *([text] if text else [])]
        return subprocess.run(args, env=env, capture_output=True, text=True, timeout=60)

    def lines(self, path: Path) -> list[str]:
        return path.read_text().splitlines()

    def transcript(self) -> list[tuple[str, str]]:
        import asyncio

        import seamkit

        stored = asyncio.run(seamkit.SQLiteSessionStore(self.store).load("s"))
        assert stored is not None
        return [(m.role, m.text) for m in stored.transcript]


def killed_then_resumed(tmp_path: Path, kill: str) -> Trial:
    trial = Trial(tmp_path)
    first = trial.run("go", kill=kill)
    assert first.returncode == 9, first.stderr  # it died where it was told
    resumed = trial.run(None)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout) == {"outcome": "completed", "output": "done"}
    return trial


def test_a_once_call_cut_short_is_in_doubt_and_never_run_again(tmp_path: Path) -> None:
    trial = killed_then_resumed(tmp_path, "pay-after")
    effects = trial.lines(trial.effects)
    assert [e for e in effects if e.startswith("pay")] == ["pay 5"]
    tools = [text for role, text in trial.transcript() if role == "tool"]
    assert tools[0] == (
        "Error: InDoubt: the process stopped while pay was running; it may or may not have acted"
    )
    assert tools[1:] == ["shipped A1", "order A1"]
    assert trial.lines(trial.asked) == ["1", "2"]  # the recorded turn was not asked again


def test_a_once_call_killed_before_its_effect_is_in_doubt_all_the_same(tmp_path: Path) -> None:
    # The journal knows it started, not how far it got: it may have acted.
    trial = killed_then_resumed(tmp_path, "pay-before")
    assert not [e for e in trial.lines(trial.effects) if e.startswith("pay")]
    tools = [text for role, text in trial.transcript() if role == "tool"]
    assert tools[0].startswith("Error: InDoubt: the process stopped while pay was running")


def test_calls_that_never_started_run_once(tmp_path: Path) -> None:
    trial = killed_then_resumed(tmp_path, "after-turn")
    assert trial.lines(trial.effects) == ["pay 5", "ship A1 " + _key(trial) + " 1", "peek A1"]
    assert trial.lines(trial.asked) == ["1", "2"]


def _key(trial: Trial) -> str:
    return next(e.split()[2] for e in trial.lines(trial.effects) if e.startswith("ship"))


def test_an_idempotent_call_cut_short_runs_again_with_its_first_key(tmp_path: Path) -> None:
    trial = killed_then_resumed(tmp_path, "ship-after")
    ships = [e.split() for e in trial.lines(trial.effects) if e.startswith("ship")]
    assert len(ships) == 2
    assert ships[0][2] == ships[1][2]  # the same idempotency key
    assert [s[3] for s in ships] == ["1", "2"]  # attempts
    assert [e for e in trial.lines(trial.effects) if e.startswith("pay")] == ["pay 5"]


@pytest.mark.parametrize("kill", ["ask-2", "after-finished", "before-save"])
def test_finished_calls_and_recorded_turns_are_never_repeated(tmp_path: Path, kill: str) -> None:
    trial = killed_then_resumed(tmp_path, kill)
    effects = trial.lines(trial.effects)
    assert [e for e in effects if e.startswith("pay")] == ["pay 5"]
    assert len([e for e in effects if e.startswith("ship")]) == 1
    asked = trial.lines(trial.asked)
    assert asked.count("1") == 1  # the first turn, recorded, was never asked again
    if kill == "before-save":
        assert asked == ["1", "2"]  # the answer too was recorded: nothing asked again
    roles = [r for r, _ in trial.transcript()]
    assert roles == ["user", "assistant", "tool", "tool", "tool", "assistant"]


def test_a_new_message_after_a_crash_is_refused_until_the_run_is_continued(
    tmp_path: Path,
) -> None:
    trial = Trial(tmp_path)
    assert trial.run("go", kill="pay-after").returncode == 9
    refused = trial.run("something else")
    assert refused.returncode != 0
    assert "ResumeError" in refused.stderr and "crash cut short" in refused.stderr
    assert [e for e in trial.lines(trial.effects) if e.startswith("pay")] == ["pay 5"]


def test_a_crash_before_anything_was_recorded_leaves_the_session_as_it_was(
    tmp_path: Path,
) -> None:
    trial = Trial(tmp_path)
    assert trial.run("go", kill="ask-1").returncode == 9
    assert trial.lines(trial.effects) == []
    again = trial.run("go")
    assert json.loads(again.stdout)["outcome"] == "completed"


def test_a_call_id_a_model_reuses_in_a_later_turn_is_not_taken_for_the_earlier_call(
    tmp_path: Path,
) -> None:
    import asyncio

    import seamkit
    from seamkit import JournalEntry, Message, MessageToolCall
    from seamkit.testing import ScriptedModel

    ran: list[int] = []

    @seamkit.tool
    def pay(amount: int) -> str:
        ran.append(amount)
        return f"paid {amount}"

    store = seamkit.SQLiteSessionStore(tmp_path / "s.sqlite")
    first = Message(
        role="assistant", tool_calls=(MessageToolCall.make("c1", "pay", {"amount": 1}),)
    )
    second = Message(
        role="assistant", tool_calls=(MessageToolCall.make("c1", "pay", {"amount": 2}),)
    )
    entries = [
        JournalEntry(
            run_id="r",
            kind="start",
            data={"base": 0, "messages": [{"role": "user", "content": "go"}]},
        ),
        JournalEntry(run_id="r", kind="turn", data={"messages": [first.model_dump(mode="json")]}),
        JournalEntry(run_id="r", kind="started", call_id="c1", data={"key": "k1", "attempt": 1}),
        JournalEntry(run_id="r", kind="finished", call_id="c1", data={"content": "paid 1"}),
        JournalEntry(
            run_id="r",
            kind="turn",
            data={
                "messages": [
                    Message.tool("c1", "paid 1").model_dump(mode="json"),
                    second.model_dump(mode="json"),
                ]
            },
        ),
        JournalEntry(run_id="r", kind="started", call_id="c1", data={"key": "k2", "attempt": 1}),
    ]
    asyncio.run(store.journal_append("s", entries))
    agent = seamkit.Agent(
        ScriptedModel([{"text": "done"}]), tools=[pay], plugin_hooks=False, store=store
    )
    result = asyncio.run(agent.run(None, session="s"))
    assert result.outcome.kind == "completed" and ran == []
    tools = [m.text for m in result.transcript if m.role == "tool"]
    assert tools[0] == "paid 1" and tools[1].startswith(
        "Error: InDoubt: the process stopped while pay"
    )
    assert [d.code for d in result.diagnostics] == ["in_doubt"]
    assert asyncio.run(store.journal_read("s")) == []  # the save dropped it
