"""One secret, everywhere it can go, found nowhere it must not be.

The canary goes through the manifest (``${secret:VAULT_KEY}`` in a hook's
config), the request context, tool arguments (a hook's ``RewriteArgs``), a
raising hook and a raising tool (each putting it in its message, one as a
Basic-auth header). Then stdout, stderr, ``--json``, the logs at DEBUG,
the session store and every diagnostic are searched for it, after decoding
the base64 and URL-encoded tokens in them (``base64("user:" + secret)``
does not contain ``base64(secret)``): 0 occurrences.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote_plus

import pytest
import seamkit
from seamkit import Secret, flow, stream as S
from seamkit.testing import ScriptedModel

SEAMKIT = Path(sys.executable).parent / "seamkit"
CANARY = "cAnary-9f2e71-key"

TOOLS = '''
import base64
from typing import Annotated

import seamkit


@seamkit.tool
def login(api_key: str) -> str:
    """Log in with the shop's key (and fail, saying it)."""
    raise PermissionError(f"key {api_key} was refused")


@seamkit.tool
def fetch(path: str, token: Annotated[str, seamkit.Injected("token")]) -> str:
    """Fetch ``path`` with the caller's token (and fail, with its header)."""
    header = base64.b64encode(f"user:{token}".encode()).decode()
    raise ConnectionError(f"GET {path} with Authorization: Basic {header} failed")
'''

MANIFEST = """
name: vault
model: scripted:script.yaml
tools:
  - kind: function
    ref: vault_tools
hooks:
  - kind: tool_call
    name: login
    event: on_request_start
    tool_name: login
    arguments: {api_key: "${secret:VAULT_KEY}"}
"""

BASIC = base64.b64encode(f"user:{CANARY}".encode()).decode()
ECHO = f"Nothing could be fetched with {CANARY} (Basic {BASIC})."
"""The model's answer: it echoes the secret, plain and in a Basic-auth header."""
ECHO_DELTAS = [ECHO[:36], ECHO[36:40], ECHO[40:70], ECHO[70:]]
"""Streamed in pieces that cut both forms of the secret."""

SCRIPT = f"""
each_run: true
turns:
  - tool_calls:
      - {{id: call_1, name: fetch, arguments: '{{"path": "/orders"}}'}}
  - text: "{ECHO}"
    deltas: {json.dumps(ECHO_DELTAS)}
"""


def revealed(text: str) -> list[str]:
    """Where the canary shows in ``text``: as it is, URL-decoded, or inside
    a base64 token (at any alignment)."""
    found = []
    if CANARY in text:
        found.append("plain")
    if CANARY in unquote_plus(text):
        found.append("url")
    for run in re.findall(r"[A-Za-z0-9+/_=-]{8,}", text):
        for decode in (base64.b64decode, base64.urlsafe_b64decode):
            for start in range(4):
                piece = run[start:]
                try:
                    decoded = decode(piece + "=" * (-len(piece) % 4))
                except ValueError:
                    continue
                if CANARY.encode() in decoded:
                    found.append(f"base64 {run!r}")
    return found


@pytest.fixture
def app(tmp_path: Path) -> Path:
    (tmp_path / "vault_tools.py").write_text(TOOLS)
    (tmp_path / "script.yaml").write_text(SCRIPT)
    (tmp_path / "app.yaml").write_text(MANIFEST)
    return tmp_path / "app.yaml"


def _cli(app: Path, *args: str) -> subprocess.CompletedProcess[str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("SEAMKIT_", "OTEL_"))}
    env["VAULT_KEY"] = CANARY
    env["SEAMKIT_HOME"] = str(app.parent / "home")
    return subprocess.run(
        [str(SEAMKIT), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_command_line_never_shows_the_secret(app: Path) -> None:
    store = app.parent / "sessions.sqlite"
    common = ["--context", f"token={CANARY}", "--session", "s", "--store", str(store)]
    streamed = _cli(app, "--debug", "run", str(app), "what is there?", *common)
    as_json = _cli(app, "run", str(app), "and now?", *common, "--json")
    shown = _cli(app, "sessions", "show", "s", "--store", str(store))
    exported = _cli(app, "sessions", "export", "s", "--store", str(store))
    for done in (streamed, as_json, shown, exported):
        assert done.returncode == 0, done.stderr
    assert "key *** was refused" in streamed.stderr  # it was said...
    assert re.search(r"Basic [A-Za-z0-9+/=]*\*\*\*", streamed.stderr)
    assert "DEBUG" in streamed.stderr  # ...at DEBUG too...
    assert "Nothing could be fetched with *** (Basic " in streamed.stdout  # the echo, masked
    outputs = {
        "stdout": streamed.stdout,
        "stderr": streamed.stderr,
        "--json": as_json.stdout + as_json.stderr,
        "sessions show": shown.stdout,
        "sessions export": exported.stdout,
        "the store": store.read_bytes().decode("utf-8", "replace"),
    }
    assert {name: revealed(text) for name, text in outputs.items()} == {
        name: [] for name in outputs
    }  # ...and the canary is nowhere


class Leaky:
    """Puts the secret into a tool's arguments, then fails with it."""

    on_error = "skip"

    @seamkit.hookimpl
    def on_pre_tool_use(self, ctx: seamkit.HookContext, call: seamkit.ToolCall) -> flow.Flow:
        return flow.RewriteArgs({**call.arguments, "path": Secret(f"/private/{CANARY}")})

    @seamkit.hookimpl
    def on_post_tool_use(self, ctx: seamkit.HookContext) -> None:
        raise RuntimeError(f"could not audit the call made with {CANARY}")


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "stream"])
def test_a_run_keeps_the_secret_out_of_logs_diagnostics_results_and_the_store(
    app: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, streamed: bool
) -> None:
    monkeypatch.setenv("VAULT_KEY", CANARY)
    monkeypatch.syspath_prepend(str(app.parent))
    store = seamkit.SQLiteSessionStore(app.parent / "in-process.sqlite")
    caplog.set_level(logging.DEBUG)
    events: list[object] = []

    async def go() -> seamkit.RunResult:
        model = ScriptedModel(
            [
                {"tool_calls": [{"id": "c1", "name": "fetch", "arguments": '{"path": "/a"}'}]},
                {"text": ECHO, "deltas": ECHO_DELTAS},  # the model echoes the secret
            ]
        )
        options: dict[str, Any] = {"context": {"token": Secret(CANARY)}, "session": "s"}
        async with await seamkit.Agent.load(app, model=model, hooks=[Leaky()]) as agent:
            if not streamed:
                return await agent.run("go", **options, store=store)
            async for event in agent.stream("go", **options, store=store):
                events.append(event)
            assert isinstance(events[-1], S.RunFinished)
            return events[-1].result

    result = asyncio.run(go())
    assert result.outcome.kind == "completed", result.outcome
    assert result.output == seamkit.redact(ECHO, [CANARY])  # the echo, masked
    assert str(result.output).startswith("Nothing could be fetched with *** (Basic ")
    stored = asyncio.run(store.load("s"))
    assert stored is not None
    outputs = {
        "logs": caplog.text,
        "diagnostics": "\n".join(d.model_dump_json() for d in result.diagnostics),
        "result": result.model_dump_json(),
        "the store": (app.parent / "in-process.sqlite").read_bytes().decode("utf-8", "replace"),
    }
    if streamed:
        deltas = [e.text for e in events if isinstance(e, S.TextDelta)]
        assert "".join(deltas) == result.output  # the echo streamed, masked
        outputs |= {f"TextDelta #{i}": text for i, text in enumerate(deltas)}
        outputs |= {
            f"{type(e).__name__} #{i}": e.text if isinstance(e, S.ToolOutputDelta) else repr(e)
            for i, e in enumerate(events)
        }
    assert "could not audit the call made with ***" in outputs["diagnostics"]
    assert {name: revealed(text) for name, text in outputs.items()} == {
        name: [] for name in outputs
    }


STALLING_CLI = """
import sys, time
import seamkit
from seamkit._cli._group import main
from seamkit.plugins import PluginInfo, add_plugin, get_registry


class Stall:
    @seamkit.hookimpl
    def on_iteration_end(self, ctx, messages):
        print("STALLED", file=sys.stderr, flush=True)
        time.sleep(60)  # blocks the event loop: only the watchdog can end the run


add_plugin(get_registry(), Stall(), PluginInfo(name="stall"))
main(sys.argv[1:])
"""


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_the_watchdogs_recovery_file_never_shows_the_secret(app: Path) -> None:
    """A signal while a hook blocks the event loop: the watchdog writes the
    run's transcript to a recovery file and quits (issue 26). What it writes
    is the run as far as it got (the failed fetch, its header masked), and
    the canary is in none of it, nor in what the command printed."""
    import os
    import signal
    import time

    child = app.parent / "stalling_cli.py"
    child.write_text(STALLING_CLI)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SEAMKIT_", "OTEL_"))}
    env.update(VAULT_KEY=CANARY, SEAMKIT_HOME=str(app.parent / "home"))
    store = app.parent / "sessions.sqlite"
    argv = [sys.executable, str(child), "run", str(app), "what is there?", "--context"]
    argv += [f"token={CANARY}", "--session", "s", "--store", str(store)]
    err = app.parent / "stderr.txt"
    with err.open("wb") as stderr:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=stderr, env=env)
    try:
        deadline = time.monotonic() + 60
        while "STALLED" not in err.read_text():
            assert proc.poll() is None, err.read_text()
            assert time.monotonic() < deadline, err.read_text()
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGINT)
        stdout, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err.read_text()
    (recovery,) = (app.parent / "home" / "recovery").glob("*.json")
    written = recovery.read_text()
    assert "with Authorization: Basic" in written  # the run's progress is there...
    outputs = {"stdout": stdout.decode(), "stderr": err.read_text(), "recovery": written}
    assert {name: revealed(text) for name, text in outputs.items()} == {
        name: [] for name in outputs
    }  # ...and the canary is nowhere
