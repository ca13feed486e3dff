"""The fault matrix of sessions (issue 17): `seamkit run --session` in real
processes against a store that is read-only (file, directory, or turned so
mid-run), reached through symlinks, holding a corrupt row, full, written by
several processes at once; and runs hit by SIGINT or SIGTERM before the run,
before the model call, during a slow tool and during ``on_completion``.

Whatever the fault, no user input that a run accepted is lost: it is in the
store afterwards or in a recovery file the error named. A run the store
cannot serve is refused before it starts, with one line and a hint (no
traceback), and the `seamkit sessions` commands repair the store.

The child process is the real CLI with one extra in-process plugin: hooks
that stall at a named stage (printing ``STAGE <name>`` first, so the test
knows when to send a signal) and write a line per ``on_completion``, and a
``small://`` store scheme: SQLite with ``PRAGMA max_page_count``, the store
file on a disk that is full.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

SEAMKIT = Path(sys.executable).parent / "seamkit"

CHILD = """
import asyncio, os, sqlite3, sys
import seamkit
from seamkit._cli._group import main
from seamkit.plugins import PluginInfo, add_plugin, get_registry

STAGE = os.environ.get("STAGE", "")


class Small(seamkit.SQLiteSessionStore):
    # A store on a full disk: the file may not grow past PAGES pages.
    def _connect(self) -> sqlite3.Connection:
        db = super()._connect()
        db.execute(f"PRAGMA max_page_count = {os.environ['PAGES']}")
        return db


class Faults:
    @seamkit.hookimpl
    def register_session_stores(self, register):
        register("small", lambda url: Small(url.removeprefix("small://")))

    @seamkit.hookimpl
    async def on_pre_llm(self, ctx, request):
        if STAGE == "model" and ctx.turn == 1:
            print("STAGE model", file=sys.stderr, flush=True)
            await asyncio.sleep(60)

    @seamkit.hookimpl
    async def on_completion(self, ctx, result):
        if STAGE == "completion":
            print("STAGE completion", file=sys.stderr, flush=True)
            await asyncio.sleep(float(os.environ.get("COMPLETION_SECONDS", "2")))
        with open(os.environ["MARKER"], "a") as out:
            out.write(result.outcome.kind + "\\n")


add_plugin(get_registry(), Faults(), PluginInfo(name="faults"))
main(sys.argv[1:])
"""

TOOLS = """
import asyncio, os, sys
import seamkit


@seamkit.tool
async def slow() -> str:
    \"\"\"Take a while.\"\"\"
    print("STAGE tool", file=sys.stderr, flush=True)
    await asyncio.sleep(float(os.environ.get("TOOL_SECONDS", "0")))
    return "waited"
"""

SCRIPT = """
each_run: true
turns:
  - tool_calls: [{name: slow, arguments: {}}]
  - text: done
"""

APP = """
name: faults
model: scripted:script.yaml
tools:
  - {kind: function, ref: slow_tools}
settings: {session_wait_seconds: 30}
"""


@dataclass
class Finished:
    """One finished `seamkit` process."""

    code: int
    stdout: str
    stderr: str


@dataclass
class Running:
    """A `seamkit run` still running, its output going to files."""

    proc: subprocess.Popen[bytes]
    out: Path
    err: Path
    done: list[Finished]

    def wait_for(self, text: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.err.read_text():
            assert self.proc.poll() is None, f"exited before {text!r}: {self.err.read_text()}"
            assert time.monotonic() < deadline, f"no {text!r} in: {self.err.read_text()}"
            time.sleep(0.02)

    def signal(self, sig: int, times: int = 1) -> None:
        for _ in range(times):
            self.proc.send_signal(sig)
            time.sleep(0.3)

    def finish(self, timeout: float = 60) -> Finished:
        code = self.proc.wait(timeout)
        done = Finished(code, self.out.read_text(), self.err.read_text())
        self.done.append(done)
        return done


@dataclass
class Lab:
    """An app with a slow tool, a store, and the processes run against it."""

    root: Path
    done: list[Finished] = field(default_factory=list)
    count: int = 0

    @property
    def store(self) -> Path:
        return self.root / "store" / "sessions.sqlite"

    @property
    def home(self) -> Path:
        return self.root / "home"

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SEAMKIT_")}
        env.update(SEAMKIT_HOME=str(self.home), MARKER=str(self.root / "completions"))
        env.update(extra)
        return env

    def start(
        self, message: str, *args: str, store: Path | str | None = None, **env: str
    ) -> Running:
        self.count += 1
        out, err = self.root / f"{self.count}.out", self.root / f"{self.count}.err"
        where = str(store if store is not None else self.store)
        argv = [sys.executable, str(self.root / "child.py"), "run", str(self.root / "app.yaml")]
        argv += [message, "--session", "s", "--store", where, *args]
        with out.open("wb") as stdout, err.open("wb") as stderr:
            proc = subprocess.Popen(argv, stdout=stdout, stderr=stderr, env=self.env(**env))
        return Running(proc, out, err, self.done)

    def run(self, message: str, *args: str, **env: str) -> Finished:
        return self.start(message, *args, **env).finish()

    def cli(self, *args: str) -> Finished:
        out = subprocess.run(
            [str(SEAMKIT), *args], capture_output=True, text=True, env=self.env(), timeout=60
        )
        self.done.append(Finished(out.returncode, out.stdout, out.stderr))
        return self.done[-1]

    def completions(self) -> list[str]:
        path = self.root / "completions"
        return path.read_text().split() if path.exists() else []

    def stored(self, name: str = "s") -> list[str]:
        """The user messages of session ``name`` in the store."""
        with closing(sqlite3.connect(self.store)) as db:
            row = db.execute("SELECT transcript FROM sessions WHERE name = ?", (name,)).fetchone()
        return (
            [] if row is None else [m["content"] for m in json.loads(row[0]) if m["role"] == "user"]
        )

    def recovery_files(self) -> list[Path]:
        return sorted((self.home / "recovery").glob("*.json"))

    def recovered(self) -> list[str]:
        """The user messages in every recovery file."""
        return [
            m["content"]
            for path in self.recovery_files()
            for m in json.loads(path.read_text())["transcript"]
            if m["role"] == "user"
        ]


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    (tmp_path / "child.py").write_text(CHILD)
    (tmp_path / "slow_tools.py").write_text(TOOLS)
    (tmp_path / "script.yaml").write_text(SCRIPT)
    (tmp_path / "app.yaml").write_text(APP)
    (tmp_path / "store").mkdir()
    return Lab(tmp_path)


@contextmanager
def read_only(path: Path) -> Iterator[None]:
    """``path`` read-only for this process, even as root (which ignores
    permission bits: the immutable attribute then)."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(0o555 if path.is_dir() else 0o444)
        try:
            yield
        finally:
            path.chmod(mode)
        return
    if shutil.which("chattr") is None:
        pytest.fail("running as root without chattr: cannot make a file read-only to test it")
    done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.fail(f"running as root, and chattr +i failed (cannot test read-only): {done.stderr}")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


@dataclass
class Verdict:
    """What a fault scenario sent: ``(session, input)`` pairs whose runs
    started, so must be kept; and ``refused`` inputs, turned away before
    their run started."""

    sent: list[tuple[str, str]]
    refused: list[str] = field(default_factory=list)


def _ok(done: Finished) -> Finished:
    assert done.code == 0, done.stderr
    return done


# --- the store ------------------------------------------------------------------------


def read_only_file(lab: Lab) -> Verdict:
    _ok(lab.run("first"))
    with read_only(lab.store):
        refused = lab.run("second")
        assert refused.code == 1
        assert f"error: the session store '{lab.store}' is read-only" in refused.stderr
        assert "nothing was run or changed" in refused.stderr
        assert "hint: make it writable, or use another store with --store PATH" in refused.stderr
        assert lab.completions() == ["completed"]  # the second run never started
        exported = _ok(lab.cli("sessions", "export", "s", "--store", str(lab.store)))
        transcript = json.loads(exported.stdout)["transcript"]
        assert [m["content"] for m in transcript if m["role"] == "user"] == ["first"]
    _ok(lab.run("second"))
    return Verdict([("s", "first"), ("s", "second")])


def read_only_directory(lab: Lab) -> Verdict:
    _ok(lab.run("first"))
    with read_only(lab.store.parent):
        refused = lab.run("second")
        assert refused.code == 1
        assert "is read-only: its directory" in refused.stderr
        assert "nothing was run or changed" in refused.stderr
        assert lab.completions() == ["completed"]
        listed = _ok(lab.cli("sessions", "list", "--store", str(lab.store)))
        assert listed.stdout.splitlines()[1].split() == ["s", "4", "first"]
    _ok(lab.run("second"))
    return Verdict([("s", "first"), ("s", "second")])


def read_only_mid_run(lab: Lab) -> Verdict:
    _ok(lab.run("first"))
    running = lab.start("second", STAGE="tool", TOOL_SECONDS="1")
    running.wait_for("STAGE tool")
    with read_only(lab.store):
        failed = running.finish()
    assert failed.code == 1
    assert "done" in failed.stdout  # the run itself finished
    assert "error: session 's' not saved: the session store" in failed.stderr
    [recovery] = lab.recovery_files()
    assert f"its transcript is in {recovery}" in failed.stderr
    assert f"seamkit sessions import {recovery}" in failed.stderr
    assert lab.stored() == ["first"]
    _ok(lab.cli("sessions", "import", str(recovery), "--store", str(lab.store)))
    assert lab.stored() == ["first", "second"]
    return Verdict([("s", "first"), ("s", "second")])


def symlinked_paths(lab: Lab) -> Verdict:
    _ok(lab.run("writer 0"))
    file_link = lab.root / "link.sqlite"
    file_link.symlink_to(lab.store)
    dir_link = lab.root / "store-link"
    dir_link.symlink_to(lab.store.parent)
    paths = [lab.store, file_link, dir_link / lab.store.name]
    writers = [
        lab.start(f"writer {i}", store=paths[i % 3], TOOL_SECONDS="0.2") for i in range(1, 10)
    ]
    for writer in writers:
        _ok(writer.finish())
    assert sorted(lab.stored()) == sorted(f"writer {i}" for i in range(10))
    return Verdict([("s", f"writer {i}") for i in range(10)])


def corrupt_row(lab: Lab) -> Verdict:
    _ok(lab.run("first"))
    with closing(sqlite3.connect(lab.store)) as db, db:
        db.execute('UPDATE sessions SET transcript = \'[{"role": "user", "content": "first"\'')
    refused = lab.run("second")
    assert refused.code == 1
    assert f"error: session 's' in {lab.store} cannot be read: " in refused.stderr
    assert "seamkit sessions export s --raw" in refused.stderr
    assert "seamkit sessions delete s --yes" in refused.stderr
    store = ["--store", str(lab.store)]
    listed = _ok(lab.cli("sessions", "list", *store))
    assert "unreadable" in listed.stdout
    assert lab.cli("sessions", "show", "s", *store).code == 1
    raw = json.loads(_ok(lab.cli("sessions", "export", "s", "--raw", *store)).stdout)
    assert raw["transcript"] == '[{"role": "user", "content": "first"'  # kept as it was
    _ok(lab.cli("sessions", "delete", "s", "--yes", *store))
    _ok(lab.run("second"))
    return Verdict([("s", "second")], refused=["second"])


def disk_full(lab: Lab) -> Verdict:
    _ok(lab.run("first"))
    with closing(sqlite3.connect(lab.store)) as db:
        pages = db.execute("PRAGMA page_count").fetchone()[0]
    big = "x" * 50_000
    failed = lab.run(big, store=f"small://{lab.store}", PAGES=str(pages))
    assert failed.code == 1
    assert "database or disk is full" in failed.stderr
    assert "hint: free some disk space where the store is" in failed.stderr
    [recovery] = lab.recovery_files()
    assert f"its transcript is in {recovery}" in failed.stderr
    assert lab.stored() == ["first"]
    _ok(lab.cli("sessions", "import", str(recovery), "--store", str(lab.store)))
    assert lab.stored() == ["first", big]
    return Verdict([("s", "first"), ("s", big)])


def concurrent_writers(lab: Lab) -> Verdict:
    sent = [(f"s{i % 3}", f"message {i}") for i in range(9)]
    writers = []
    for name, message in sent:
        argv = [sys.executable, str(lab.root / "child.py"), "run", str(lab.root / "app.yaml")]
        argv += [message, "--session", name, "--store", str(lab.store)]
        writers.append(
            subprocess.Popen(
                argv,
                env=lab.env(TOOL_SECONDS="0.1"),
                text=True,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        )
    for writer in writers:
        out, err = writer.communicate(timeout=120)
        lab.done.append(_ok(Finished(writer.returncode, out, err)))
    for i in range(3):
        assert sorted(lab.stored(f"s{i}")) == sorted(m for n, m in sent if n == f"s{i}")
    return Verdict(sent)


# --- signals --------------------------------------------------------------------------


def _signalled(lab: Lab, stage: str, sig: int, times: int = 1, **env: str) -> Finished:
    running = lab.start(f"hello at {stage}", STAGE=stage, **env)
    running.wait_for(f"STAGE {stage}")
    running.signal(sig, times)
    return running.finish()


def _signal_at(stage: str, sig: int) -> Callable[[Lab], Verdict]:
    def scenario(lab: Lab) -> Verdict:
        done = _signalled(lab, stage, sig, TOOL_SECONDS="0" if stage == "completion" else "30")
        name = signal.Signals(sig).name
        assert done.code == 128 + sig
        if stage == "completion":  # the run had completed: on_completion finished it
            assert "[completed · 2 model calls" in done.stderr and done.stdout == "done\n"
            assert lab.completions() == ["completed"]
        else:
            assert f"[cancelled: {name} · " in done.stderr
            assert lab.completions() == ["cancelled"]
        assert lab.stored() == [f"hello at {stage}"]
        return Verdict([("s", f"hello at {stage}")])

    return scenario


def sigint_with_json(lab: Lab) -> Verdict:
    running = lab.start("hello json", "--json", STAGE="tool", TOOL_SECONDS="30")
    running.wait_for("STAGE tool")
    running.signal(signal.SIGINT)
    done = running.finish()
    assert done.code == 130
    result = json.loads(done.stdout)
    assert result["outcome"]["kind"] == "cancelled"
    assert result["transcript"][0]["content"] == "hello json"
    assert "[cancelled: SIGINT · 1 model call" in done.stderr
    return Verdict([("s", "hello json")])


def second_sigint_during_on_completion(lab: Lab) -> Verdict:
    done = _signalled(lab, "completion", signal.SIGINT, times=2)
    assert done.code == 130
    assert "stopping on_completion and saving the session" in done.stderr
    assert lab.completions() == []  # the second signal cut it short
    assert lab.stored() == ["hello at completion"]
    return Verdict([("s", "hello at completion")])


def signal_while_waiting_for_the_session(lab: Lab) -> Verdict:
    holder = lab.start("first", STAGE="tool", TOOL_SECONDS="3")
    holder.wait_for("STAGE tool")
    waiting = lab.start("second")
    time.sleep(1.5)  # loaded, and waiting for the session's lock
    waiting.signal(signal.SIGTERM)
    done = waiting.finish()
    assert done.code == 143
    assert "[cancelled: SIGTERM · before the run started: nothing ran]" in done.stderr
    _ok(holder.finish())
    assert lab.stored() == ["first"]
    return Verdict([("s", "first")], refused=["second"])


FAULTS: dict[str, Callable[[Lab], Verdict]] = {
    "read-only file": read_only_file,
    "read-only directory": read_only_directory,
    "read-only mid-run": read_only_mid_run,
    "symlinked paths": symlinked_paths,
    "corrupt row": corrupt_row,
    "disk full": disk_full,
    "concurrent writers": concurrent_writers,
    **{
        f"{signal.Signals(sig).name} at {stage}": _signal_at(stage, sig)
        for stage in ("model", "tool", "completion")
        for sig in (signal.SIGINT, signal.SIGTERM)
    },
    "SIGINT with --json": sigint_with_json,
    "second SIGINT during on_completion": second_sigint_during_on_completion,
    "SIGTERM waiting for the session": signal_while_waiting_for_the_session,
}


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and permissions")
@pytest.mark.parametrize("fault", FAULTS)
def test_no_user_input_is_lost(lab: Lab, fault: str) -> None:
    verdict = FAULTS[fault](lab)
    kept = {(name, text) for name, text in verdict.sent if text in lab.stored(name)}
    kept |= {(name, text) for name, text in verdict.sent if text in lab.recovered()}
    assert [pair for pair in verdict.sent if pair not in kept] == []  # 0 lost inputs
    for done in lab.done:
        assert "Traceback" not in done.stderr, done.stderr
        assert "Aborted!" not in done.stderr
