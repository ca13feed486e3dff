"""Structured output with sessions: a run saves its whole transcript (the
feedback on a rejected answer too) and the next run on the session works;
a crash after the accepted answer was journaled, and before the save,
continues to the validated value (native and tool mode, a real SIGKILL);
and a run suspended for an approval before its answer continues to it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import seamkit
from pydantic import BaseModel
from seamkit import Approve, Decisions
from seamkit.testing import ScriptedModel


class Record(BaseModel):
    name: str
    age: int


ACCEPTED = {"name": "Ann", "age": 31}
MODES = ["native", "tool"]


def run(agent: seamkit.Agent, input: Any, **options: Any) -> seamkit.RunResult:
    return asyncio.run(agent.run(input, **options))


@pytest.mark.parametrize("mode", MODES)
def test_a_structured_run_saves_its_feedback_and_the_next_run_continues(
    tmp_path: Path, mode: seamkit.OutputMode
) -> None:
    script = [{"output": {"name": "Ann"}}, {"output": ACCEPTED}]
    agent = seamkit.Agent(
        ScriptedModel(script, each_run=True),
        output=seamkit.Output(Record, mode=mode),
        plugin_hooks=False,
        store=tmp_path / "s.sqlite",
    )
    first = run(agent, "Who?", session="s")
    assert first.output == Record(**ACCEPTED)
    stored = asyncio.run(agent.session_store().load("s"))  # type: ignore[union-attr]
    assert stored is not None
    told = [m for m in stored.transcript if m.role in ("user", "tool") and not m.from_user]
    assert any("age" in m.text for m in told)  # the feedback is in the saved transcript
    second = run(agent, "And now?", session="s")
    assert second.output == Record(**ACCEPTED)
    assert [m.text for m in second.transcript if m.from_user] == ["Who?", "And now?"]


# --- a crash between the journaled answer and the save ------------------------------

_APP = """
import asyncio, json, os, signal, sys

import seamkit
from pydantic import BaseModel
from seamkit.testing import ScriptedModel


class Record(BaseModel):
    name: str
    age: int


@seamkit.tool(effects="once")
def charge(amount: int) -> str:
    # an effect: the session keeps a journal
    return "charged"


class Crash:
    # dies once the answer was journaled, before the run saves
    @seamkit.hookimpl
    def on_output(self, ctx, output):
        if os.environ.get("CRASH"):
            os.kill(os.getpid(), signal.SIGKILL)


async def main():
    store, mode = sys.argv[1], sys.argv[2]
    script = [{"output": {"name": "Ann"}}, {"output": {"name": "Ann", "age": 31}}]
    model = ScriptedModel([] if len(sys.argv) > 3 else script)  # a resumed run asks nothing
    agent = seamkit.Agent(
        model, tools=[charge], hooks=[Crash()], plugin_hooks=False, store=store,
        output=seamkit.Output(Record, mode=mode),
    )
    result = await agent.run(None if len(sys.argv) > 3 else "Who?", session="s")
    texts = [[m.role, m.text] for m in result.transcript]
    print(json.dumps({"outcome": result.outcome.kind, "output": result.output.model_dump(),
                      "transcript": texts}))


asyncio.run(main())
"""


@pytest.mark.parametrize("mode", MODES)
def test_a_crash_after_the_answer_was_journaled_resumes_to_the_validated_value(
    tmp_path: Path, mode: seamkit.OutputMode
) -> None:
    app = tmp_path / "app.py"
    app.write_text(textwrap.dedent(_APP), encoding="utf-8")
    store = str(tmp_path / "s.sqlite")

    def child(*args: str, crash: bool) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "CRASH": "1" if crash else ""}
        command = [sys.executable, str(app), store, mode, *args]
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)

    crashed = child(crash=True)
    assert crashed.returncode == -9, crashed.stderr  # killed in on_output
    assert asyncio.run(seamkit.SQLiteSessionStore(store).load("s")) is None  # never saved
    resumed = child("resume", crash=False)
    assert resumed.returncode == 0, resumed.stderr
    shown = json.loads(resumed.stdout)
    assert shown["outcome"] == "completed" and shown["output"] == ACCEPTED
    roles = [role for role, _ in shown["transcript"]]
    assert roles.count("assistant") == 2  # the rejected answer and the accepted one, once each
    stored = asyncio.run(seamkit.SQLiteSessionStore(store).load("s"))
    assert stored is not None and len(stored.transcript) == len(shown["transcript"])


# --- an approval before the answer ---------------------------------------------------


@seamkit.tool(approval=True)
def lookup(person: str) -> str:
    """Look a person up (needs approval)."""
    return f"{person} is 31"


@pytest.mark.parametrize("mode", MODES)
def test_a_run_suspended_before_its_answer_continues_to_the_validated_value(
    tmp_path: Path, mode: seamkit.OutputMode
) -> None:
    script = [
        {"tool_calls": [{"id": "c1", "name": "lookup", "arguments": {"person": "Ann"}}]},
        {"output": {"name": "Ann", "age": "unknown"}},
        {"output": ACCEPTED},
    ]
    agent = seamkit.Agent(
        ScriptedModel(script),
        tools=[lookup],
        output=seamkit.Output(Record, mode=mode),
        plugin_hooks=False,
        store=tmp_path / "s.sqlite",
    )
    suspended = run(agent, "How old is Ann?", session="s")
    assert isinstance(suspended.outcome, seamkit.Suspended)
    assert suspended.output is None
    (pending,) = suspended.outcome.pending
    resumed = run(agent, Decisions({"c1": Approve(digest=pending.digest)}), session="s")
    assert resumed.outcome.kind == "completed"
    assert resumed.output == Record(**ACCEPTED)
    assert any(m.role == "tool" and m.text == "Ann is 31" for m in resumed.transcript)
