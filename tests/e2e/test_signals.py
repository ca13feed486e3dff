"""What SIGINT and SIGTERM do to `seamkit run` when something blocks the
event loop (issue 26): a plain hook in ``time.sleep``, an ``async`` hook or
tool making a blocking call, a plain ``on_completion`` hook that hangs; and
the promises that hold when nothing blocks it: two Ctrl-Cs stop a hung
``on_completion``, a signal during the save lets it finish, ``sys.exit()`` in
a hook exits with its code and no traceback.

The child process is the real CLI with one in-process plugin whose hooks
stall at a named stage (printing ``STAGE <name>`` first, so that the test
sends its signal when the stage is reached), a tool that blocks the loop, and
a ``slow://`` store scheme (SQLite whose save can take a while).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

CHILD = """
import asyncio, os, sys, time
import seamkit
from seamkit._cli._group import main
from seamkit.plugins import PluginInfo, add_plugin, get_registry

STAGE = os.environ.get("STAGE", "")


def stage(name):
    print(f"STAGE {name}", file=sys.stderr, flush=True)


class Slow(seamkit.SQLiteSessionStore):
    async def save(self, name, transcript, state):
        if STAGE == "save":
            stage("save")
            await asyncio.sleep(1.5)
        await super().save(name, transcript, state)


class Faults:
    @seamkit.hookimpl
    def register_session_stores(self, register):
        register("slow", lambda url: Slow(url.removeprefix("slow://")))

    @seamkit.hookimpl
    def on_pre_tool_use(self, ctx, call):
        if STAGE == "sync_hook" and call.name == "wait":
            stage("sync_hook")
            time.sleep(60)
        if STAGE == "exit":
            sys.exit(3)

    @seamkit.hookimpl
    async def on_pre_llm(self, ctx, request):
        if STAGE == "async_hook" and ctx.turn == 2:
            stage("async_hook")
            time.sleep(60)  # blocks the event loop

    @seamkit.hookimpl
    async def on_completion(self, ctx, result):
        if STAGE == "completion_hung":
            stage("completion_hung")
            await asyncio.sleep(60)
        if STAGE == "completion_blocked":
            stage("completion_blocked")
            time.sleep(60)
        with open(os.environ["MARKER"], "a") as out:
            out.write(result.outcome.kind + "\\n")


add_plugin(get_registry(), Faults(), PluginInfo(name="faults"))
main(sys.argv[1:])
"""

TOOLS = """
import sys, time
import seamkit


@seamkit.tool
def add(a: int, b: int) -> int:
    \"\"\"Add two integers.\"\"\"
    return a + b


@seamkit.tool
async def wait() -> str:
    \"\"\"Wait, blocking the event loop when asked to.\"\"\"
    import os
    if os.environ.get("STAGE") == "async_tool":
        print("STAGE async_tool", file=sys.stderr, flush=True)
        time.sleep(60)
    return "waited"
"""

SCRIPT = """
each_run: true
turns:
  - tool_calls: [{name: add, arguments: {a: 2, b: 3}}]
  - tool_calls: [{name: wait, arguments: {}}]
  - text: done
"""

APP = """
name: signals
model: scripted:script.yaml
tools:
  - {kind: function, ref: signal_tools}
"""


@dataclass
class Ended:
    """A `seamkit run` that ended, and how long after the first signal."""

    code: int
    stdout: str
    stderr: str
    seconds: float


@dataclass
class Lab:
    root: Path

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SEAMKIT_")}
        env.update(SEAMKIT_HOME=str(self.root / "home"), MARKER=str(self.root / "completions"))
        return {**env, **extra}

    def run(self, stage: str, *signals: int, args: tuple[str, ...] = ()) -> Ended:
        """`seamkit run` with hooks stalling at ``stage``; once it is reached,
        send ``signals`` 0.3 s apart, and wait for the process to end."""
        err = self.root / f"{stage}.err"
        argv = [sys.executable, str(self.root / "child.py"), "run", str(self.root / "app.yaml")]
        argv += ["hello", "--session", "s", "--store", f"slow://{self.store}", *args]
        with err.open("wb") as stderr:
            proc = subprocess.Popen(
                argv, stdout=subprocess.PIPE, stderr=stderr, env=self.env(STAGE=stage)
            )
        try:
            deadline = time.monotonic() + 30
            while signals and f"STAGE {stage}" not in err.read_text():
                assert proc.poll() is None, f"exited before {stage}: {err.read_text()}"
                assert time.monotonic() < deadline, f"never reached {stage}: {err.read_text()}"
                time.sleep(0.02)
            first = time.monotonic()
            for number, sig in enumerate(signals):
                if number:
                    time.sleep(0.3)
                os.kill(proc.pid, sig)
            stdout, _ = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
        stderr_text = err.read_text()
        assert "Traceback" not in stderr_text, stderr_text
        assert "never retrieved" not in stderr_text, stderr_text
        return Ended(proc.returncode, stdout.decode(), stderr_text, time.monotonic() - first)

    @property
    def store(self) -> Path:
        return self.root / "sessions.sqlite"

    def stored(self) -> list[dict[str, object]]:
        if not self.store.exists():
            return []
        with closing(sqlite3.connect(self.store)) as db:
            row = db.execute("SELECT transcript FROM sessions WHERE name = 's'").fetchone()
        return [] if row is None else list(json.loads(row[0]))

    def recovered(self) -> list[dict[str, object]]:
        [path] = sorted((self.root / "home" / "recovery").glob("*.json"))
        return list(json.loads(path.read_text())["transcript"])

    def completions(self) -> list[str]:
        path = self.root / "completions"
        return path.read_text().split() if path.exists() else []


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    (tmp_path / "child.py").write_text(CHILD)
    (tmp_path / "signal_tools.py").write_text(TOOLS)
    (tmp_path / "script.yaml").write_text(SCRIPT)
    (tmp_path / "app.yaml").write_text(APP)
    return Lab(tmp_path)


# --- something blocks the event loop: the watchdog quits after a second ----------------


@pytest.mark.parametrize(
    ("stage", "sig"),
    [
        ("sync_hook", signal.SIGINT),
        ("sync_hook", signal.SIGTERM),
        ("async_hook", signal.SIGINT),
        ("async_tool", signal.SIGTERM),
    ],
)
def test_a_signal_quits_within_the_grace_when_the_loop_is_blocked(
    lab: Lab, stage: str, sig: int
) -> None:
    ended = lab.run(stage, sig)
    assert ended.code == 128 + sig
    assert 0.9 < ended.seconds < 5  # the grace is a second; the hook would take 60
    name = signal.Signals(sig).name
    assert f"the event loop did not act on {name} within 1s" in ended.stderr
    assert f"[quit at once on {name}: session 's' may not be saved" in ended.stderr
    # The recovery file holds the transcript as far as the run had got.
    recovered = lab.recovered()
    assert [m["role"] for m in recovered][:3] == ["user", "assistant", "tool"]
    assert recovered[0]["content"] == "hello" and recovered[2]["content"] == "5"
    assert lab.completions() == []


def test_a_signal_while_a_plain_on_completion_hook_blocks_keeps_the_finished_transcript(
    lab: Lab,
) -> None:
    ended = lab.run("completion_blocked", signal.SIGINT)
    assert ended.code == 130 and ended.seconds < 5
    assert ended.stdout == "done\n"  # the run had completed
    recovered = lab.recovered()
    assert recovered[0]["content"] == "hello" and recovered[-1]["content"] == "done"


# --- the loop responds: the documented counts -------------------------------------------


def test_two_sigints_stop_a_hung_on_completion_and_the_session_is_saved(lab: Lab) -> None:
    ended = lab.run("completion_hung", signal.SIGINT, signal.SIGINT)
    assert ended.code == 130
    assert ended.seconds < 3  # not the 10 s of completion_timeout_seconds
    assert "stopping on_completion and saving the session" in ended.stderr
    assert "[completed · 3 model calls" in ended.stderr
    assert lab.completions() == []  # cut short
    roles = ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert [m["role"] for m in lab.stored()] == roles
    assert not (lab.root / "home" / "recovery").exists()


def test_a_signal_during_the_save_lets_it_finish(lab: Lab) -> None:
    ended = lab.run("save", signal.SIGTERM)
    assert ended.code == 143
    assert lab.completions() == ["completed"]
    assert lab.stored()[-1]["content"] == "done"
    assert not (lab.root / "home" / "recovery").exists()


def test_a_third_signal_quits_at_once_and_leaves_the_transcript_in_a_recovery_file(
    lab: Lab,
) -> None:
    ended = lab.run("save", signal.SIGINT, signal.SIGINT, signal.SIGINT)
    assert ended.code == 130 and ended.seconds < 3  # the save would take 1.5 s more
    assert "[quit at once on SIGINT: session 's' may not be saved" in ended.stderr
    assert lab.recovered()[-1]["content"] == "done"


@pytest.mark.parametrize("args", [(), ("--json",)])
def test_sys_exit_in_a_hook_exits_with_its_code_and_no_traceback(
    lab: Lab, args: tuple[str, ...]
) -> None:
    ended = lab.run("exit", args=args)  # (the run itself checks: no traceback)
    assert ended.code == 3
    assert "raised SystemExit(3) at on_pre_tool_use" in ended.stderr
    assert lab.completions() == ["cancelled"]  # on_completion fired
    assert [m["content"] for m in lab.stored()][:1] == ["hello"]  # and the session was saved
