"""Sessions: the whole transcript kept between runs, runs on one session
serialised, and `seamkit run` with and without a session."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import seamkit
from click.testing import CliRunner
from seamkit import Agent, Message, SessionBusy, SQLiteSessionStore
from seamkit._cli._group import cli
from seamkit.testing import ScriptedModel

ROOT = Path(__file__).resolve().parents[2]
HELLO = ROOT / "docs" / "examples" / "hello" / "app.yaml"


def test_a_session_continues_the_conversation(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "s.sqlite")
    agent = Agent(model=ScriptedModel([{"text": "one"}, {"text": "two"}]), plugin_hooks=False)
    first = agent.run_sync("hi", session="chat", store=store)
    second = agent.run_sync("again", session="chat", store=store)
    assert [m.text for m in first.transcript] == ["hi", "one"]
    assert [m.text for m in second.transcript] == ["hi", "one", "again", "two"]
    assert _stored(store, "chat") == list(second.transcript)
    assert asyncio.run(store.list()) == ["chat"]
    assert _stored(store, "other") == []


def test_a_finished_run_replaces_the_stored_transcript_rewrites_included(tmp_path: Path) -> None:
    class Forget:
        @seamkit.hookimpl
        def on_request_start(self, ctx: Any, messages: Any) -> Any:
            return seamkit.flow.RewriteMessages(list(messages)[-1:])

    store = SQLiteSessionStore(tmp_path / "s.sqlite")
    asyncio.run(store.save("chat", [Message.user("old"), Message.assistant("older")], {}))
    agent = Agent(model=ScriptedModel([{"text": "new"}]), hooks=[Forget()], plugin_hooks=False)
    agent.run_sync("now", session="chat", store=store)
    assert [m.text for m in _stored(store, "chat")] == ["now", "new"]


def test_a_second_run_waits_then_fails_with_session_busy(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "s.sqlite")
    agent = Agent(
        model=ScriptedModel([{"text": "x"}]),
        settings={"session_wait_seconds": 0.1},
        plugin_hooks=False,
    )

    async def go() -> None:
        async with store.lock("chat", 10):
            with pytest.raises(SessionBusy, match="session 'chat' busy"):
                await agent.run("hi", session="chat", store=store)

    asyncio.run(go())
    assert _stored(store, "chat") == []  # nothing ran


def test_concurrent_runs_on_one_session_take_turns_and_lose_nothing(tmp_path: Path) -> None:
    class Slow:
        async def complete(self, request: Any) -> Any:
            await asyncio.sleep(0.05)
            return seamkit.ModelTurn(message=Message.assistant(f"re: {request.messages[-1].text}"))

        async def stream(self, request: Any) -> Any:
            yield await self.complete(request)

    store = SQLiteSessionStore(tmp_path / "s.sqlite")
    agent = Agent(model=Slow(), plugin_hooks=False)

    async def go() -> None:
        await asyncio.gather(*(agent.run(f"m{i}", session="chat", store=store) for i in range(4)))

    asyncio.run(go())
    texts = [m.text for m in _stored(store, "chat")]
    assert sorted(t for t in texts if not t.startswith("re:")) == ["m0", "m1", "m2", "m3"]
    assert len(texts) == 8
    for i in range(0, 8, 2):  # each answer follows its own question
        assert texts[i + 1] == f"re: {texts[i]}"


def test_a_session_busy_across_processes(tmp_path: Path) -> None:
    store_path = tmp_path / "s.sqlite"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import asyncio, sys, seamkit\n"
            "async def main():\n"
            f"    async with seamkit.SQLiteSessionStore({str(store_path)!r}).lock('chat', 10):\n"
            "        print('held', flush=True)\n"
            "        await asyncio.sleep(30)\n"
            "asyncio.run(main())\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        agent = Agent(
            model=ScriptedModel([{"text": "x"}]),
            settings={"session_wait_seconds": 0.2},
            plugin_hooks=False,
        )
        with pytest.raises(SessionBusy):
            agent.run_sync("hi", session="chat", store=SQLiteSessionStore(store_path))
    finally:
        holder.kill()
        holder.wait()
    # The OS released the dead holder's lock.
    agent = Agent(model=ScriptedModel([{"text": "x"}]), plugin_hooks=False)
    assert agent.run_sync("hi", session="chat", store=SQLiteSessionStore(store_path)).output == "x"


# --- seamkit run --------------------------------------------------------------------


def test_seamkit_run_streams_the_answer_and_shows_tools() -> None:
    result = CliRunner().invoke(cli, ["run", str(HELLO), "add 2 and 3"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "2 + 3 = 5.\n"
    lines = [re.sub(r" \(\d+\.\d\ds\)", " (T)", line) for line in result.stderr.splitlines()]
    assert lines == [
        '→ calc_add({"a": 2, "b": 3})',  # printed when the tool starts
        "← calc_add (T): 5",  # with the time it took
        "[completed · 2 model calls · 5 in / 2 out tokens]",
    ]


def test_seamkit_run_json_prints_the_run_result() -> None:
    result = CliRunner().invoke(cli, ["run", "--json", str(HELLO), "add 2 and 3"])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    parsed = seamkit.RunResult.model_validate(data)
    assert parsed.output == "2 + 3 = 5." and parsed.outcome.kind == "completed"
    assert [m.role for m in parsed.transcript] == ["user", "assistant", "tool", "assistant"]


def test_seamkit_run_shows_hooks_and_a_failed_run_exits_1(tmp_path: Path) -> None:
    (tmp_path / "script.yaml").write_text("- text: hi\n")
    app = tmp_path / "app.yaml"
    app.write_text("name: x\nmodel: scripted:script.yaml\nsettings: {max_turns: 1}\n")
    result = CliRunner().invoke(cli, ["run", str(app), "hello", "--context", "user=ann"])
    assert result.exit_code == 0 and result.stdout == "hi\n"
    result = CliRunner().invoke(cli, ["run", str(app), "hello", "--context", "user"])
    assert result.exit_code == 1
    assert "error: --context 'user' is not KEY=VALUE" in result.output
    (tmp_path / "script.yaml").write_text("[]\n")
    result = CliRunner().invoke(cli, ["run", str(app), "hello"])
    assert result.exit_code == 1
    assert "[failed: model script" in result.stderr and "ran out after 0 turns" in result.stderr


def test_seamkit_run_keeps_a_session_across_processes(tmp_path: Path) -> None:
    (tmp_path / "script.yaml").write_text("- text: noted\n")
    app = tmp_path / "app.yaml"
    app.write_text("name: x\nmodel: scripted:script.yaml\n")
    store = tmp_path / "store.sqlite"
    seamkit_bin = Path(sys.executable).parent / "seamkit"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEAMKIT_")}
    for message in ("first", "second"):
        out = subprocess.run(
            [str(seamkit_bin), "run", str(app), message, "--session", "s1", "--store", str(store)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout == "noted\n"
    transcript = _stored(SQLiteSessionStore(store), "s1")
    assert [m.text for m in transcript] == ["first", "noted", "second", "noted"]


def test_seamkit_now_must_be_an_instant(tmp_path: Path) -> None:
    result = CliRunner(env={"SEAMKIT_NOW": "2026-11-22T09:00:00"}).invoke(
        cli, ["run", str(HELLO), "x"]
    )
    assert result.exit_code == 1
    assert "error: SEAMKIT_NOW='2026-11-22T09:00:00' has no UTC offset" in result.output


def _stored(store: seamkit.SessionStore, name: str) -> list[seamkit.Message]:
    import asyncio as _asyncio

    found = _asyncio.run(store.load(name))
    return [] if found is None else list(found.transcript)


def _open_at_once(path: str, barrier: Any) -> str:
    barrier.wait()
    try:
        SQLiteSessionStore(path)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return "ok"


def test_processes_that_open_a_new_store_at_once_all_open_it(tmp_path: Path) -> None:
    """The workers of ``seamkit serve`` open one new SQLite store together;
    SQLite answers their race to switch it to WAL "database is locked" at
    once (before, about 1 trial in 4 of six processes failed to start)."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager, context.Pool(6) as pool:
        for trial in range(8):
            barrier = manager.Barrier(6)
            path = str(tmp_path / f"s{trial}.sqlite")
            assert pool.starmap(_open_at_once, [(path, barrier)] * 6) == ["ok"] * 6
