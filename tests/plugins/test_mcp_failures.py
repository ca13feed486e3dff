"""Bad ``mcp`` entries: each is a clear error naming its entry, at its
file:line:col, from `seamkit.Agent.load` (a `ManifestError`) and from the
``seamkit`` CLI; and the agent never starts half-built: no server process is
left running once the build failed.

The servers the entries start are in ``mcp_servers.py``; each test tags
their environment and scans /proc for the tag afterwards.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import seamkit
from seamkit.testing import ScriptedModel

from tests.plugins.mcp_servers import (
    BIN,
    ROOT,
    TAG_VARIABLE,
    new_tag,
    stdio_entry,
    tagged,
    tiny_entry,
)

SEAMKIT = BIN / "seamkit"
TIME = BIN / "mcp-server-time"


def refused_url() -> str:
    """An URL on 127.0.0.1 where nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/mcp"


def write_app(directory: Path, entries: list[dict[str, Any]]) -> Path:
    """An app.yaml whose tool entry ``i`` is on line ``4 + i`` (column 5),
    beside an empty model script."""
    (directory / "script.yaml").write_text("- text: done\n")
    lines = ["name: bad-mcp", "model: scripted:script.yaml", "tools:"]
    lines += [f"  - {json.dumps(entry)}" for entry in entries]
    path = directory / "app.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def load(path: Path) -> seamkit.ManifestError:
    """The `ManifestError` building the agent of ``path`` raises."""

    async def go() -> None:
        agent = await seamkit.Agent.load(path, model=ScriptedModel([]))
        await agent.aclose()
        raise AssertionError("the agent was built")

    with pytest.raises(seamkit.ManifestError) as info:
        asyncio.run(go())
    return info.value


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SEAMKIT), *args], capture_output=True, text=True, timeout=120, cwd=ROOT
    )


def seamkit_lines(stderr: str, path: Path) -> list[str]:
    """The error lines seamkit printed about ``path`` (not the hint lines,
    nor what the SDK logs about a server's stdout)."""
    return [line for line in stderr.splitlines() if line.startswith(f"{path}:")]


def time_entry(tag: str, **fields: Any) -> dict[str, Any]:
    return {"kind": "mcp", "command": str(TIME), "env": {TAG_VARIABLE: tag}, **fields}


# --- servers that cannot start ------------------------------------------------------


def unstartable(tag: str) -> tuple[list[dict[str, Any]], list[str]]:
    """A good entry, then four that cannot start: the entries, and the
    start of each error line (after ``file:``)."""
    down = refused_url()
    entries = [
        time_entry(tag, toolset="ok"),
        {"kind": "mcp", "toolset": "nope", "command": "/no/such/mcp-server"},
        stdio_entry("garbage", tag, toolset="junk", startup_timeout_seconds=2),
        stdio_entry("silent", tag, toolset="mute", startup_timeout_seconds=1),
        {"kind": "mcp", "toolset": "down", "url": down},
    ]
    expected = [
        "5:5: tools[1]: cannot start MCP server 'nope': No such file or directory: "
        "/no/such/mcp-server",
        "6:5: tools[2]: MCP server 'junk' did not answer initialize within 2s; "
        "it wrote to stdout what is not MCP: 'Welcome to the garbage server!'",
        "7:5: tools[3]: MCP server 'mute' did not answer initialize within 1s",
        f"8:5: tools[4]: MCP server 'down' ({down}) failed to start: ConnectError",
    ]
    return entries, expected


def test_servers_that_cannot_start_are_errors_at_their_entries(tmp_path: Path) -> None:
    tag = new_tag()
    entries, expected = unstartable(tag)
    path = write_app(tmp_path, entries)
    started = time.monotonic()
    error = load(path)
    assert time.monotonic() - started < 20  # the 2 s and 1 s time-outs, not the 30 s default
    assert [p.location for p in error.problems] == [("tools", i) for i in (1, 2, 3, 4)]
    lines = [p.format(error.source).splitlines()[0] for p in error.problems]
    for line, start in zip(lines, expected, strict=True):
        assert line.startswith(f"{path}:{start}"), line
    assert all(p.hint for p in error.problems)
    assert tagged(tag) == []  # the good server and the ones that hung were all stopped


@pytest.mark.slow
def test_seamkit_validate_prints_every_server_that_cannot_start(tmp_path: Path) -> None:
    tag = new_tag()
    entries, expected = unstartable(tag)
    path = write_app(tmp_path, entries)
    done = cli("validate", str(path))
    assert done.returncode == 1, done.stderr
    lines = seamkit_lines(done.stderr, path)
    assert lines[-1] == f"{path}: 4 errors"
    for line, start in zip(lines[:-1], expected, strict=True):
        assert line.startswith(f"{path}:{start}"), line
    assert "hint: check 'command' (on PATH, or a path) and 'cwd'" in done.stderr
    assert tagged(tag) == []


def test_seamkit_run_stops_at_a_server_that_cannot_start(tmp_path: Path) -> None:
    tag = new_tag()
    down = refused_url()
    entries = [
        time_entry(tag, toolset="ok"),
        {"kind": "mcp", "toolset": "nope", "command": "no-such-mcp-server-on-path"},
        {"kind": "mcp", "toolset": "down", "url": down},
    ]
    path = write_app(tmp_path, entries)
    done = cli("run", str(path), "hi")
    assert done.returncode != 0 and done.stdout == ""
    assert "Traceback" not in done.stderr
    assert seamkit_lines(done.stderr, path) == [
        f"{path}:5:5: tools[1]: cannot start MCP server 'nope': No such file or directory: "
        "no-such-mcp-server-on-path",
        f"{path}:6:5: tools[2]: MCP server 'down' ({down}) failed to start: ConnectError: "
        "All connection attempts failed",
    ]
    assert tagged(tag) == []


def test_a_secret_a_server_writes_to_stderr_is_masked_in_its_build_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "canary-mcp-env-0b6f2d"
    monkeypatch.setenv("MCP_TEST_KEY", secret)
    caplog.set_level(logging.DEBUG)
    tag = new_tag()
    env = {"MCP_TEST_SECRET": "${secret:MCP_TEST_KEY}"}
    path = write_app(tmp_path, [tiny_entry(tag, "leak", toolset="leaky", env=env)])
    error = load(path)  # the server writes the secret to stderr, then exits
    [problem] = error.problems
    assert problem.message.startswith("MCP server 'leaky' ("), problem.message
    assert problem.message.endswith("its stderr ends: starting with secret=***"), problem.message
    for text in (str(error), error.format(), repr(error), caplog.text):
        assert secret not in text
    assert tagged(tag) == []


# --- entries that are wrong as written ----------------------------------------------


def test_command_and_url_both_or_neither_are_manifest_errors(tmp_path: Path) -> None:
    tag = new_tag()
    entries = [
        {**time_entry(tag, toolset="a"), "url": "http://127.0.0.1:1/mcp"},
        {"kind": "mcp", "toolset": "b"},
        {"kind": "mcp", "toolset": "c", "url": "ftp://example.org/mcp"},
    ]
    path = write_app(tmp_path, entries)
    error = load(path)
    one = "an mcp entry needs exactly one of 'command' (stdio) and 'url' (streamable HTTP)"
    assert [(p.location, p.line, p.column, p.message) for p in error.problems] == [
        (("tools", 0), 4, 5, one),
        (("tools", 1), 5, 5, one),
        (("tools", 2), 6, 5, "url 'ftp://example.org/mcp' is not an http(s) URL"),
    ]
    done = cli("validate", str(path))
    assert done.returncode == 1
    assert seamkit_lines(done.stderr, path) == [
        f"{path}:4:5: tools[0]: {one}",
        f"{path}:5:5: tools[1]: {one}",
        f"{path}:6:5: tools[2]: url 'ftp://example.org/mcp' is not an http(s) URL",
        f"{path}: 3 errors",
    ]
    assert tagged(tag) == []  # nothing was started


def test_tool_names_colliding_across_entries_are_errors_and_both_servers_stop(
    tmp_path: Path,
) -> None:
    tag = new_tag()
    path = write_app(tmp_path, [time_entry(tag), time_entry(tag)])
    error = load(path)
    messages = sorted(p.message for p in error.problems)
    assert messages == [
        f"two tools are named {name!r}: one from tools[0] and one from tools[1]"
        for name in ("convert_time", "get_current_time")
    ]
    assert {(p.location, p.line, p.column) for p in error.problems} == {(("tools", 1), 5, 5)}
    assert all("toolset" in (p.hint or "") for p in error.problems)
    assert tagged(tag) == []
