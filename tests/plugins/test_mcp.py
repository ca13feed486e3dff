"""The tool kind ``mcp`` of seamkit-mcp, end to end: real third-party
servers (``mcp-server-time`` injected by a ``tool_call`` hook,
``mcp-server-fetch`` on a page served here), the SDK's own ``MCPServer`` over
streamable HTTP (headers with secrets, include/exclude, time-outs, every kind
of result, the run's user in ``_meta``), ``tools/list_changed`` between runs,
a server that dies, and no process left behind.

Bad input is in ``test_mcp_failures.py``; the servers written for the tests
in ``mcp_servers.py``.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import seamkit
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp.types import CONNECTION_CLOSED
from seamkit.testing import ScriptedModel
from seamkit_mcp import MCPServerError, MCPToolConfig, to_result
from seamkit_mcp._connection import Connection

from tests.plugins.mcp_servers import (
    BIN,
    ROOT,
    TAG_VARIABLE,
    TOKEN_VARIABLE,
    new_tag,
    stdio_entry,
    tagged,
    tiny_entry,
)

TIME = BIN / "mcp-server-time"
FETCH = BIN / "mcp-server-fetch"
SEAMKIT = BIN / "seamkit"
CANARY = "canary-mcp-7d41c0e2-token"
"""The HTTP server's bearer token: it must never show in logs, transcripts or errors."""


# --- helpers ---------------------------------------------------------------------


Call = tuple[str, dict[str, Any]]


def turns(*steps: list[Call] | str) -> list[dict[str, Any]]:
    """Model turns: a list of (tool, arguments) calls, or a final text.
    The calls get the ids c1, c2, ... in order."""
    count = 0
    out: list[dict[str, Any]] = []
    for step in steps:
        if isinstance(step, str):
            out.append({"text": step})
            continue
        calls = []
        for name, arguments in step:
            count += 1
            calls.append({"id": f"c{count}", "name": name, "arguments": arguments})
        out.append({"tool_calls": calls})
    return out


def results(result: seamkit.RunResult) -> dict[str, str]:
    """The content of each tool result by call id."""
    return {m.tool_call_id or "": m.text for m in result.transcript if m.role == "tool"}


def manifest(*entries: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"name": "mcp-test", "model": "scripted:inline", "tools": list(entries), **fields}


def run_once(
    app: dict[str, Any], *steps: list[Call] | str, user: str | None = "ann"
) -> seamkit.RunResult:
    """One run of ``app`` on ``steps`` (ending in ``done``); the agent is
    closed after it."""

    async def go() -> seamkit.RunResult:
        model = ScriptedModel(turns(*steps, "done"))
        async with await seamkit.Agent.load(app, model=model) as agent:
            context = {"user": user} if user is not None else {}
            return await agent.run("hi", context=context)

    result = asyncio.run(go())
    assert result.outcome.kind == "completed" and result.output == "done", result.outcome
    return result


def seamkit_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SEAMKIT), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        cwd=ROOT,
    )


def time_entry(tag: str, **fields: Any) -> dict[str, Any]:
    """``mcp-server-time`` over stdio, its environment tagged."""
    return {"kind": "mcp", "command": str(TIME), "env": {TAG_VARIABLE: tag}, **fields}


# --- mcp-server-time: listed, called, injected -----------------------------------

INJECT_NOW = {
    "kind": "tool_call",
    "name": "now",
    "event": "on_request_start",
    "toolset_name": "time",
    "tool_name": "get_current_time",
    "arguments": {"timezone": "UTC"},
    "frequency": "always",
}


async def raw_tools(command: Path, *args: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """The server's own listing, through the SDK: description and input
    schema by tool name."""
    params = StdioServerParameters(command=str(command), args=list(args))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = await session.list_tools()
    return {t.name: (t.description or "", dict(t.input_schema)) for t in listed.tools}


@pytest.fixture(scope="module")
def time_app() -> dict[str, Any]:
    """One agent on mcp-server-time with the ``now`` hook, run once: what
    it showed, what the model was asked, and the processes around it."""
    tag = new_tag()
    app = manifest(time_entry(tag, toolset="time"), hooks=[INJECT_NOW])
    convert = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
    model = ScriptedModel(turns([("time_convert_time", convert)], "done"))

    async def go() -> dict[str, Any]:
        async with await seamkit.Agent.load(app, model=model) as agent:
            specs = {name: tool.spec for name, tool in agent.tools.items()}
            result = await agent.run("What time is it in Tokyo at noon UTC?")
            during = tagged(tag)
        raw = await raw_tools(TIME)
        return {"specs": specs, "result": result, "during": during, "raw": raw}

    out = asyncio.run(go())
    out["after"], out["requests"] = tagged(tag), model.requests
    return out


def test_time_tools_are_listed_with_the_servers_names_schemas_and_descriptions(
    time_app: dict[str, Any],
) -> None:
    specs, raw = time_app["specs"], time_app["raw"]
    assert set(raw) == {"get_current_time", "convert_time"}
    assert set(specs) == {"time_get_current_time", "time_convert_time"}
    for name, (description, schema) in raw.items():
        spec = specs[f"time_{name}"]
        assert spec.description == description and description
        assert spec.parameters == schema
    assert specs["time_get_current_time"].parameters["required"] == ["timezone"]


def test_the_hook_injects_the_current_time_into_the_first_request(
    time_app: dict[str, Any],
) -> None:
    first = time_app["requests"][0].messages
    assert [m.role for m in first] == ["user", "assistant", "tool"]
    [call] = first[1].tool_calls
    assert call.function.name == "time_get_current_time"
    assert json.loads(call.function.arguments) == {"timezone": "UTC"}
    assert first[2].tool_call_id == call.id
    now = json.loads(first[2].text)
    assert now["timezone"] == "UTC" and now["datetime"].endswith("+00:00")
    assert {"time_get_current_time", "time_convert_time"} <= {
        t.name for t in time_app["requests"][0].tools
    }


def test_a_time_tool_called_by_the_model_answers_from_the_server(
    time_app: dict[str, Any],
) -> None:
    result = time_app["result"]
    assert result.outcome.kind == "completed" and result.output == "done"
    converted = json.loads(results(result)["c1"])
    assert converted["target"]["timezone"] == "Asia/Tokyo"
    assert converted["target"]["datetime"][11:16] == "21:00"
    assert converted["time_difference"] == "+9.0h"


def test_the_server_runs_while_the_agent_is_open_and_is_gone_after(
    time_app: dict[str, Any],
) -> None:
    assert len(time_app["during"]) == 1
    assert time_app["after"] == []


# --- mcp-server-fetch on a page served here --------------------------------------

PAGE = (
    b"<html><head><title>Harbour notes</title></head><body><article>"
    b"<h1>Quiet harbour</h1><p>The lighthouse keeper counts 417 gulls every morning, "
    b"then writes the number in a blue notebook.</p></article></body></html>"
)


class _Site(BaseHTTPRequestHandler):
    asked: list[str] = []

    def do_GET(self) -> None:
        self.asked.append(self.path)
        if self.path == "/robots.txt":
            body, kind = b"User-agent: *\nAllow: /\n", "text/plain"
        elif self.path == "/harbour":
            body, kind = PAGE, "text/html; charset=utf-8"
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    """A page and a robots.txt on 127.0.0.1: the base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join(10)


def test_fetch_reads_a_local_page_as_markdown(site: str) -> None:
    # Only the venv's bin dir on PATH: readabilipy finds no node, so it runs no
    # `npm install` (network, seconds) and uses its pure-Python path.
    assert shutil.which("node", path=str(BIN)) is None
    tag = new_tag()
    entry = {
        "kind": "mcp",
        "toolset": "web",
        "command": str(FETCH),
        "args": ["--allow-private-ips"],
        "env": {"PATH": str(BIN), TAG_VARIABLE: tag},
    }
    _Site.asked.clear()
    result = run_once(manifest(entry), [("web_fetch", {"url": f"{site}/harbour"})])
    page = results(result)["c1"]
    assert page.startswith(f"Contents of {site}/harbour:")
    assert "# Quiet harbour" in page
    assert "The lighthouse keeper counts 417 gulls every morning" in page
    assert "<p>" not in page
    assert _Site.asked == ["/robots.txt", "/harbour"]
    assert tagged(tag) == []


# --- the SDK's MCPServer over streamable HTTP --------------------------------------


@pytest.fixture(scope="module")
def http_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``python -m tests.plugins.mcp_servers main http PORT``, which wants
    ``Authorization: Bearer CANARY``: its endpoint URL."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = tmp_path_factory.mktemp("mcp-http") / "server.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT), TOKEN_VARIABLE: CANARY}
    command = [sys.executable, "-m", "tests.plugins.mcp_servers", "main", "http", str(port)]
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, f"the server never listened:\n{log.read_text()}"
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def http_entry(url: str, **fields: Any) -> dict[str, Any]:
    return {
        "kind": "mcp",
        "toolset": "web",
        "url": url,
        "headers": {"Authorization": "Bearer ${secret:MCP_TEST_KEY}"},
        "exclude": ["die", "grow"],
        **fields,
    }


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_TEST_KEY", CANARY)


@pytest.mark.usefixtures("key")
def test_http_results_of_every_kind_reach_the_model_readably(
    http_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    result = run_once(
        manifest(http_entry(http_url)),
        [
            ("web_echo", {"text": "héllo"}),
            ("web_fail", {"message": "the disk is full"}),
            ("web_picture", {}),
            ("web_structured", {}),
            ("web_whoami", {}),
        ],
    )
    got = results(result)
    assert got["c1"] == "héllo"
    assert got["c2"] == "Error executing tool fail: the disk is full"
    assert got["c3"] == "[image: image/png, 70 bytes; not shown to the model]"
    assert json.loads(got["c4"]) == {"answer": 42, "unit": "widgets"}
    assert json.loads(got["c5"]) == {"user": "ann"}
    # the secret header reached the server (it answered), and nothing else
    assert CANARY not in result.model_dump_json()
    assert CANARY not in caplog.text


@pytest.mark.usefixtures("key")
def test_http_a_run_without_a_user_sends_no_user_meta(http_url: str) -> None:
    result = run_once(manifest(http_entry(http_url)), [("web_whoami", {})], user=None)
    assert json.loads(results(result)["c1"]) == {"user": None}


@pytest.mark.usefixtures("key")
def test_http_include_and_exclude_pick_tools_by_glob(http_url: str) -> None:
    async def names(**fields: Any) -> set[str]:
        app = manifest(http_entry(http_url, **fields))
        async with await seamkit.Agent.load(app, model=ScriptedModel([])) as agent:
            return set(agent.tools)

    every = {"echo", "slow", "fail", "picture", "structured", "whoami", "pid", "die", "grow"}
    assert asyncio.run(names(exclude=[])) == {f"web_{n}" for n in every}
    assert asyncio.run(names()) == {f"web_{n}" for n in every - {"die", "grow"}}
    picked = asyncio.run(names(include=["s*", "echo"], exclude=["slow"]))
    assert picked == {"web_structured", "web_echo"}
    assert asyncio.run(names(include=["nothing-*"])) == set()


@pytest.mark.usefixtures("key")
def test_http_a_slow_tool_times_out_quickly_and_the_session_goes_on(http_url: str) -> None:
    started = time.monotonic()
    result = run_once(
        manifest(http_entry(http_url, timeout_seconds=0.5)),
        [("web_slow", {"seconds": 8})],
        [("web_echo", {"text": "still here"})],
    )
    assert time.monotonic() - started < 6  # the 0.5 s time-out, not the tool's 8 s
    got = results(result)
    assert got["c1"] == "Error: MCP server 'web' did not answer 'slow' within 0.5s"
    assert got["c2"] == "still here"


def test_http_a_wrong_token_is_a_build_error_that_does_not_show_it(
    http_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    wrong = "canary-mcp-wrong-5be0a9"
    monkeypatch.setenv("MCP_TEST_KEY", wrong)
    caplog.set_level(logging.DEBUG)

    async def go() -> None:
        await seamkit.Agent.load(manifest(http_entry(http_url)), model=ScriptedModel([]))

    with pytest.raises(seamkit.ManifestError) as info:
        asyncio.run(go())
    error = info.value
    [problem] = error.problems
    assert problem.location == ("tools", 0)
    assert f"MCP server 'web' ({http_url}) failed to start" in problem.message
    for text in (str(error), error.format(), repr(error), caplog.text):
        assert wrong not in text and CANARY not in text


def test_http_through_the_cli_the_secret_stays_hidden(http_url: str, tmp_path: Path) -> None:
    script = turns([("web_echo", {"text": "over http"}), ("web_whoami", {})], "done")
    (tmp_path / "script.json").write_text(json.dumps(script))
    app = {**manifest(http_entry(http_url)), "model": "scripted:script.json"}
    path = tmp_path / "app.json"
    path.write_text(json.dumps(app))
    env = {"MCP_TEST_KEY": CANARY}
    for command in (["validate", str(path)], ["tools", "--json", str(path)]):
        done = seamkit_cli(*command, env=env)
        assert done.returncode == 0, done.stderr
        assert CANARY not in done.stdout + done.stderr
    done = seamkit_cli("run", "--json", str(path), "hi", "--context", "user=cli-user", env=env)
    assert done.returncode == 0, done.stderr
    assert CANARY not in done.stdout + done.stderr
    got = results(seamkit.RunResult.model_validate_json(done.stdout))
    assert got["c1"] == "over http" and json.loads(got["c2"]) == {"user": "cli-user"}


# --- tools/list_changed -----------------------------------------------------------


def test_a_tool_list_change_is_seen_by_the_next_run_not_the_current_one() -> None:
    tag = new_tag()
    app = manifest(stdio_entry("main", tag, toolset="dyn"))
    model = ScriptedModel(
        [
            *turns([("dyn_grow", {})], [("dyn_grown", {"x": 2})], "first"),
            {"tool_calls": [{"id": "c3", "name": "dyn_grown", "arguments": {"x": 21}}]},
            {"text": "second"},
        ]
    )

    async def go() -> tuple[seamkit.RunResult, seamkit.RunResult, set[str], set[str]]:
        async with await seamkit.Agent.load(app, model=model) as agent:
            first = await agent.run("one")
            between = set(agent.tools)
            second = await agent.run("two")
            return first, second, between, set(agent.tools)

    first, second, between, after = asyncio.run(go())
    got = {**results(first), **results(second)}
    assert got["c1"] == "grown"
    assert "dyn_grown" in got["c2"] and got["c2"].startswith("unknown tool"), got["c2"]
    assert got["c3"] == "42"
    assert "dyn_grown" not in between and "dyn_grown" in after
    offered = [{t.name for t in r.tools} for r in model.requests]
    assert all("dyn_grown" not in names for names in offered[:3])  # the first run's
    assert all("dyn_grown" in names for names in offered[3:])  # the second run's
    grown = next(t for t in model.requests[3].tools if t.name == "dyn_grown")
    assert grown.description == "Twice x."
    assert tagged(tag) == []


# --- a server that dies -------------------------------------------------------------


def test_a_server_that_dies_is_restarted_once_then_its_tools_fail_and_the_run_goes_on() -> None:
    tag = new_tag()
    app = manifest(
        stdio_entry("main", tag, toolset="d"),
        time_entry(tag, toolset="time"),
        settings={"tool_concurrency": 2},
    )
    result = run_once(
        app,
        [("d_pid", {})],
        [("d_die", {}), ("d_slow", {"seconds": 5})],  # slow is in flight when it dies
        [("d_pid", {})],
        [("d_die", {})],
        [("d_echo", {"text": "anyone?"}), ("time_get_current_time", {"timezone": "UTC"})],
    )
    got = results(result)
    restarted = "stopped during the call to {!r}; it is started again for the next call"
    assert got["c2"].startswith("Error: MCP server 'd' " + restarted.format("die")), got["c2"]
    assert got["c3"].startswith("Error: MCP server 'd' " + restarted.format("slow")), got["c3"]
    assert int(got["c4"]) != int(got["c1"])  # a new process
    failed = "Error: MCP server 'd' stopped twice, so its tools fail from now on"
    assert got["c5"].startswith(failed) and got["c6"].startswith(failed)
    assert json.loads(got["c7"])["timezone"] == "UTC"  # the other server is unharmed
    assert tagged(tag) == []


def test_a_restart_that_fails_counts_as_the_second_stop(tmp_path: Path) -> None:
    tag = new_tag()
    marker = str(tmp_path / "started")  # the second process of this entry never answers
    entry = tiny_entry(tag, "once", marker, toolset="t", startup_timeout_seconds=1)
    started = time.monotonic()
    result = run_once(
        manifest(entry),
        [("t_die", {})],
        [("t_echo", {"text": "again?"})],  # its restart hangs, and times out
        [("t_echo", {"text": "and again?"})],  # fails at once: no second wait
    )
    assert time.monotonic() - started < 4
    got = results(result)
    restarted = "Error: MCP server 't' stopped during the call to 'die'; it is started again"
    assert got["c1"].startswith(restarted), got["c1"]
    failed = (
        "Error: MCP server 't' stopped, and could not be started again, so its tools fail "
        "from now on: MCP server 't' did not answer initialize within 1s"
    )
    assert got["c2"] == got["c3"] == failed, got
    assert tagged(tag) == []


def test_a_late_stop_of_the_old_session_leaves_the_new_one_alone() -> None:
    """A call on the session of a server that stopped learns it late, after
    the next call started the server again: the new session stays, and
    counts as no second stop."""
    tag = new_tag()
    connection = Connection(MCPToolConfig(**tiny_entry(tag, toolset="t")), None)

    async def go() -> tuple[str, seamkit.ToolResult | str, seamkit.ToolResult | str]:
        old = await connection.session()
        release = asyncio.Event()
        real = old.call_tool

        async def closed_late(name: str, *args: Any, **kwargs: Any) -> Any:
            if name != "echo":
                return await real(name, *args, **kwargs)
            await release.wait()
            raise MCPError(CONNECTION_CLOSED, "Connection closed")

        old.call_tool = closed_late  # type: ignore[method-assign]
        late = asyncio.create_task(connection.call("echo", {"text": "late"}, None))
        await asyncio.sleep(0.05)  # the late call waits on the old session
        with pytest.raises(MCPServerError, match="stopped during the call to 'die'"):
            await connection.call("die", {}, None)
        first = to_result(await connection.call("pid", {}, None))  # the new session
        release.set()
        with pytest.raises(MCPServerError) as info:
            await late
        second = to_result(await connection.call("pid", {}, None))
        await connection.aclose()
        return info.value.message, first, second

    message, first, second = asyncio.run(go())
    assert "stopped during the call to 'echo'; it is started again" in message, message
    assert first == second  # the new session, and its process, went on
    assert tagged(tag) == []


def test_concurrent_calls_on_a_server_that_never_answers_initialize_each_get_an_error(
    tmp_path: Path,
) -> None:
    """Built in one event loop (the first process answers), run in another,
    where the entry's server never answers initialize: three runs call it
    0.2 s apart, all three wait for the one start, and each gets the error
    (none is cancelled when the first wait times out)."""
    tag = new_tag()
    marker = str(tmp_path / "started")
    entry = tiny_entry(tag, "once", marker, toolset="t", startup_timeout_seconds=1)
    calls = [[("t_echo", {"text": str(i)})] for i in range(3)]
    model = ScriptedModel(turns(*calls, "done", "done", "done"))
    agent = asyncio.run(seamkit.Agent.load(manifest(entry), model=model))

    async def staggered() -> list[seamkit.RunResult]:
        async def one(i: int) -> seamkit.RunResult:
            await asyncio.sleep(i * 0.2)
            return await agent.run(f"run {i}")

        return await asyncio.gather(*(one(i) for i in range(3)))

    try:
        started = time.monotonic()
        runs = asyncio.run(staggered())
        elapsed = time.monotonic() - started
    finally:
        asyncio.run(agent.aclose())
    late = "Error: MCP server 't' did not answer initialize within 1s"
    for i, result in enumerate(runs):
        assert result.outcome.kind == "completed" and result.output == "done", result.outcome
        assert results(result) == {f"c{i + 1}": late}
    assert elapsed < 4
    assert tagged(tag) == []


def test_runs_each_in_an_event_loop_of_its_own_leave_no_file_or_loop_behind() -> None:
    tag = new_tag()
    steps = [step for i in range(5) for step in ([("t_echo", {"text": f"run {i}"})], "done")]
    agent = asyncio.run(
        seamkit.Agent.load(
            manifest(tiny_entry(tag, toolset="t")), model=ScriptedModel(turns(*steps))
        )
    )

    def dead_loops() -> int:
        gc.collect()
        return sum(
            1
            for o in gc.get_objects()
            if isinstance(o, asyncio.AbstractEventLoop) and o.is_closed()
        )

    try:
        counts = []
        dead_loops()  # what earlier tests left (a store's connection) is collected first
        for i in range(5):
            result = agent.run_sync("hi")  # a session (a server) in the run's own loop
            assert results(result) == {f"c{i + 1}": f"run {i}"}
            assert tagged(tag) == []  # stopped as its loop ended
            counts.append((len(os.listdir("/proc/self/fd")), dead_loops()))
    finally:
        asyncio.run(agent.aclose())
    assert counts[-1][0] == counts[0][0], counts  # no file left open per run
    assert counts[-1][1] <= counts[0][1], counts  # no ended loop kept alive
    assert tagged(tag) == []


def test_secrets_in_env_and_context_are_masked_in_results_errors_and_logs(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("MCP_TEST_KEY", CANARY)
    caplog.set_level(logging.DEBUG)
    tag = new_tag()
    entry = tiny_entry(tag, toolset="t", env={"MCP_TEST_SECRET": "${secret:MCP_TEST_KEY}"})
    user = "canary-mcp-user-51c9e0"
    model = ScriptedModel(turns([("t_secret", {})], [("t_whoami", {})], [("t_die", {})], "done"))

    async def go() -> seamkit.RunResult:
        async with await seamkit.Agent.load(manifest(entry), model=model) as agent:
            return await agent.run("hi", context={"user": seamkit.Secret(user)})

    result = asyncio.run(go())
    got = results(result)
    assert got["c1"] == "the secret is ***"  # the server's secret, said back
    assert got["c2"] == "you are ***"  # the run's secret, said back
    assert got["c3"].startswith("Error: MCP server 't' stopped during the call to 'die'")
    assert got["c3"].endswith("its stderr ends: telling secret=***"), got["c3"]
    for text in (result.model_dump_json(), caplog.text):
        assert CANARY not in text and user not in text
    assert tagged(tag) == []


# --- no process left behind by the CLI; start-up cost -------------------------------


def test_seamkit_run_leaves_no_server_behind(tmp_path: Path) -> None:
    tag = new_tag()
    script = turns([("time_get_current_time", {"timezone": "Europe/Paris"})], "done")
    (tmp_path / "script.json").write_text(json.dumps(script))
    app = {
        **manifest(time_entry(tag, toolset="time"), stdio_entry("main", tag, toolset="m")),
        "model": "scripted:script.json",
        "hooks": [INJECT_NOW],
    }
    (tmp_path / "app.json").write_text(json.dumps(app))
    done = seamkit_cli("run", str(tmp_path / "app.json"), "hi")
    assert done.returncode == 0, done.stderr
    assert "Europe/Paris" in done.stderr and done.stdout.strip() == "done"
    assert tagged(tag) == []


def test_seamkit_run_of_an_app_without_mcp_never_imports_the_sdk() -> None:
    hello = str(ROOT / "docs/examples/hello/app.yaml")
    probe = (
        "import atexit, sys\n"
        "def report():\n"
        "    sdk = sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'mcp_')))\n"
        "    print('PROBE', 'seamkit_mcp' in sys.modules, sdk, file=sys.stderr)\n"
        "atexit.register(report)\n"
        "from seamkit._cli._group import main\n"
        f"main(['run', {hello!r}, 'What is 2 + 3?'])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2 + 3 = 5."
    assert "PROBE True []" in done.stderr  # the plugin is loaded, its SDK is not
