"""The README's main job: the memory app over MCP, three `seamkit run
--session` processes in a row, each starting the MCP memory server over
stdio; memories saved by one run are injected into the next."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT

EXAMPLE = ROOT / "docs" / "examples" / "memory-mcp"
BIN = Path(sys.executable).parent


def seamkit_run(
    app: Path, message: str, store: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEAMKIT_")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"  # as `uv run` sets it
    command = [str(BIN / "seamkit"), "run", str(app), message, "--session", "demo"]
    command += ["--store", str(store), "--context", "user=alice", *extra]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)


def servers_running(directory: Path) -> list[str]:
    """Command lines of memory servers still running in ``directory``."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            line = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            cwd = (proc / "cwd").resolve()
        except OSError:
            continue
        if "memory-server" in line and cwd == directory.resolve():
            found.append(line)
    return found


@pytest.mark.slow
def test_three_runs_remember_through_the_mcp_server(tmp_path: Path) -> None:
    example = tmp_path / "memory-mcp"
    shutil.copytree(EXAMPLE, example, ignore=shutil.ignore_patterns("memories.sqlite*"))
    app, store = example / "app.yaml", tmp_path / "sessions.sqlite"
    for message in ("I like green tea", "My cat is called Miso"):
        done = seamkit_run(app, message, store)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "Noted. I keep what you tell me."
        assert "· on_request_start: memories → RewriteMessages" in done.stderr
        assert "· on_completion: remember → Continue" in done.stderr
    done = seamkit_run(app, "What do you know about me?", store, "--json")
    assert done.returncode == 0, done.stderr
    transcript: list[dict[str, Any]] = json.loads(done.stdout)["transcript"]
    injected = [m["content"] for m in transcript if m["role"] == "tool"]
    assert injected[0] == "No memories yet."
    assert injected[-1] == "I like green tea\nMy cat is called Miso"
    assert transcript[-3]["tool_calls"][0]["function"]["name"] == "memory_server_get_memories"
    assert (example / "memories.sqlite").exists()
    assert servers_running(example) == []  # every run stopped its server
