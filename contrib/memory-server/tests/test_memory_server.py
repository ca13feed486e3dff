"""The memory server: its SQLite store (per-user isolation, the dedupe of an
identical last memory, the limit), how a call finds its user, and the
installed ``seamkit-memory-server`` command end to end with the MCP SDK's own
client, over stdio and over streamable HTTP.

Run ``pytest`` in this package's folder (with ``pip install -e ".[test]"``),
or ``python -m pytest contrib/memory-server/tests`` from the repository root.
Nothing here comes from the repository's own test suite.
"""

from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar, cast

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, RequestParamsMeta, TextContent
from memory_server import (
    ALREADY_SAVED,
    DEFAULT_MAX_MEMORIES,
    NO_MEMORIES,
    SAVED,
    USER_META_KEY,
    MemoryStore,
    format_memories,
    resolve_user,
)

SERVER = Path(sys.executable).parent / "seamkit-memory-server"
TIMEOUT = 30.0

T = TypeVar("T")


def run(fn: Callable[[], Awaitable[T]]) -> T:
    """Run an async test body, bounded so a hung server fails the test."""

    async def bounded() -> T:
        with anyio.fail_after(TIMEOUT):
            return await fn()

    return anyio.run(bounded)


def seamkit_meta(user: str) -> RequestParamsMeta:
    """A request ``_meta`` naming the user, as seamkit's mcp plugin sends it."""
    return cast("RequestParamsMeta", {USER_META_KEY: user})


def text_of(result: CallToolResult) -> str:
    assert all(isinstance(block, TextContent) for block in result.content)
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


# --- the store ----------------------------------------------------------------------


def test_memories_are_kept_per_user_oldest_first(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "m.sqlite")
    assert store.save("alice", "likes tea") == "saved"
    assert store.save("bob", "likes coffee") == "saved"
    assert store.save("alice", "  lives in Lyon\n") == "saved"
    assert store.recent("alice") == ["likes tea", "lives in Lyon"]
    assert store.recent("bob") == ["likes coffee"]
    assert store.recent("carol") == []


def test_a_text_identical_to_the_last_memory_is_skipped(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "m.sqlite")
    assert store.save("alice", "likes tea") == "saved"
    assert store.save("alice", "likes tea ") == "duplicate"
    assert store.save("bob", "likes tea") == "saved"  # another user's last memory
    assert store.save("alice", "likes cake") == "saved"
    assert store.save("alice", "likes tea") == "saved"  # not the last one any more
    assert store.recent("alice") == ["likes tea", "likes cake", "likes tea"]


def test_blank_text_is_not_stored_and_a_user_is_required(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "m.sqlite")
    assert store.save("alice", " \n ") == "empty"
    assert store.count("alice") == 0
    with pytest.raises(ValueError):
        store.save("", "something")
    with pytest.raises(ValueError):
        store.recent("")


def test_recent_returns_the_last_n_in_chronological_order(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "m.sqlite")
    for i in range(DEFAULT_MAX_MEMORIES + 5):
        store.save("alice", f"fact {i}")
    assert store.recent("alice", 3) == ["fact 52", "fact 53", "fact 54"]
    assert store.recent("alice", 0) == []
    assert len(store.recent("alice")) == DEFAULT_MAX_MEMORIES
    assert store.recent("alice")[0] == "fact 5"
    assert store.count("alice") == DEFAULT_MAX_MEMORIES + 5


def test_the_store_is_one_wal_file_that_persists(tmp_path: Path) -> None:
    path = tmp_path / "memories.sqlite"
    MemoryStore(path).save("alice", "likes tea")
    assert MemoryStore(path).recent("alice") == ["likes tea"]  # reopening keeps the table
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


# --- the user and the answer's text -------------------------------------------------


def test_the_user_comes_from_the_argument_then_the_meta() -> None:
    meta = {USER_META_KEY: "from-meta"}
    assert resolve_user("alice", meta) == "alice"
    assert resolve_user("  ", meta) == "from-meta"
    for argument, bad_meta in [("", None), ("", {}), ("  ", {USER_META_KEY: " "})]:
        with pytest.raises(ToolError, match="user is needed"):
            resolve_user(argument, bad_meta)
    with pytest.raises(ToolError):
        resolve_user("", {USER_META_KEY: 42})


def test_memories_are_one_per_line() -> None:
    assert format_memories([]) == NO_MEMORIES
    assert format_memories(["likes tea", "two\nlines"]) == "likes tea\ntwo lines"


# --- over stdio ---------------------------------------------------------------------


@contextmanager
def errlog(tmp_path: Path) -> Iterator[Any]:
    """A real file for the server's stderr (stdio_client needs a fileno)."""
    with open(tmp_path / "stderr.log", "w") as f:
        yield f


def stdio_params(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    return StdioServerParameters(command=str(SERVER), args=list(args), env=env, cwd=tmp_path)


def test_the_command_is_installed_next_to_the_interpreter() -> None:
    assert SERVER.is_file(), (
        'install this package: `pip install -e ".[test]"` (`python3 -m uv sync` in seamkit)'
    )


def test_over_stdio_the_tools_save_and_return_memories(tmp_path: Path) -> None:
    db = tmp_path / "mem.sqlite"
    unexpected: list[Any] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, Exception):  # e.g. a line on stdout that is not JSON-RPC
            unexpected.append(message)

    async def body() -> None:
        with errlog(tmp_path) as log:
            async with (
                stdio_client(stdio_params(tmp_path, "--db", str(db)), errlog=log) as (r, w),
                ClientSession(r, w, read_timeout_seconds=TIMEOUT, message_handler=on_message) as s,
            ):
                init = await s.initialize()
                assert init.server_info.name == "memory_server"

                tools = {tool.name: tool for tool in (await s.list_tools()).tools}
                assert set(tools) == {"get_memories", "save_memory"}
                get_schema = tools["get_memories"].input_schema
                save_schema = tools["save_memory"].input_schema
                assert set(get_schema["properties"]) == {"user"}
                assert get_schema.get("required", []) == []
                assert set(save_schema["properties"]) == {"text", "user"}
                assert save_schema["required"] == ["text"]
                assert save_schema["properties"]["text"]["type"] == "string"
                assert tools["get_memories"].description

                # the user as an argument
                empty = await s.call_tool("get_memories", {"user": "alice"})
                assert (empty.is_error, text_of(empty)) == (False, NO_MEMORIES)
                saved = await s.call_tool("save_memory", {"user": "alice", "text": "likes tea"})
                assert (saved.is_error, text_of(saved)) == (False, SAVED)
                again = await s.call_tool("save_memory", {"user": "alice", "text": "likes tea"})
                assert text_of(again) == ALREADY_SAVED
                await s.call_tool("save_memory", {"user": "alice", "text": "lives in Lyon"})
                got = await s.call_tool("get_memories", {"user": "alice"})
                assert text_of(got) == "likes tea\nlives in Lyon"

                # the user from _meta["seamkit/user"]; an argument wins over it
                bob = seamkit_meta("bob")
                saved = await s.call_tool("save_memory", {"text": "likes coffee"}, meta=bob)
                assert text_of(saved) == SAVED
                assert text_of(await s.call_tool("get_memories", {}, meta=bob)) == "likes coffee"
                by_arg = await s.call_tool("get_memories", {"user": "alice"}, meta=bob)
                assert text_of(by_arg).startswith("likes tea")

                # no user at all: an error result
                for name, arguments in [("get_memories", {}), ("save_memory", {"text": "x"})]:
                    failed = await s.call_tool(name, arguments)
                    assert failed.is_error
                    assert "user is needed" in text_of(failed)
                    assert USER_META_KEY in text_of(failed)
                # text is required
                assert (await s.call_tool("save_memory", {"user": "alice"})).is_error

    run(body)
    assert unexpected == []
    assert MemoryStore(db).recent("alice") == ["likes tea", "lives in Lyon"]
    assert MemoryStore(db).recent("bob") == ["likes coffee"]


def test_over_stdio_max_memories_limits_get_memories(tmp_path: Path) -> None:
    db = tmp_path / "mem.sqlite"
    store = MemoryStore(db)
    for fact in ["one", "two", "three"]:
        store.save("alice", fact)

    async def body() -> str:
        with errlog(tmp_path) as log:
            params = stdio_params(tmp_path, "--db", str(db), "--max-memories", "2")
            async with (
                stdio_client(params, errlog=log) as (r, w),
                ClientSession(r, w, read_timeout_seconds=TIMEOUT) as s,
            ):
                await s.initialize()
                return text_of(await s.call_tool("get_memories", {"user": "alice"}))

    assert run(body) == "two\nthree"


def test_the_database_comes_from_memory_db_else_the_current_directory(tmp_path: Path) -> None:
    # The server creates its file on start and exits when stdin closes.
    from_env = tmp_path / "from-env.sqlite"
    done = subprocess.run(
        [str(SERVER)],
        input=b"",
        cwd=tmp_path,
        env={"MEMORY_DB": str(from_env)},
        capture_output=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert from_env.is_file()
    assert not (tmp_path / "memories.sqlite").exists()

    done = subprocess.run(
        [sys.executable, "-m", "memory_server"],
        input=b"",
        cwd=tmp_path,
        env={},
        capture_output=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert (tmp_path / "memories.sqlite").is_file()


def test_stdout_carries_only_protocol_messages_and_logs_go_to_stderr(tmp_path: Path) -> None:
    requests: list[dict[str, Any]] = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "save_memory", "arguments": {"user": "a", "text": "hi"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "get_memories", "arguments": {}},  # an error result
        },
    ]
    proc = subprocess.Popen(
        [str(SERVER), "--db", str(tmp_path / "m.sqlite"), "--log-level", "DEBUG"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    assert proc.stdin is not None and proc.stdout is not None
    answers: dict[int, Any] = {}
    try:
        for request in requests:
            proc.stdin.write(json.dumps(request).encode() + b"\n")
            proc.stdin.flush()
            if "id" in request:
                line = proc.stdout.readline()
                message = json.loads(line)  # every stdout line is a JSON-RPC message
                assert message["jsonrpc"] == "2.0"
                answers[message["id"]] = message
        out, err = proc.communicate(timeout=TIMEOUT)  # closes stdin: the server exits
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert out == b""  # nothing after the answers either
    assert proc.returncode == 0
    assert sorted(answers) == [1, 2, 3, 4]
    assert answers[3]["result"]["content"][0]["text"] == SAVED
    assert answers[4]["result"]["isError"] is True
    assert b"DEBUG" in err  # the logs went to stderr


# --- over streamable HTTP -----------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for_port(proc: subprocess.Popen[bytes], port: int) -> None:
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the server exited before listening"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"nothing listening on port {port}")


def test_over_streamable_http(tmp_path: Path) -> None:
    port = free_port()
    db = tmp_path / "mem.sqlite"
    stdout_path, stderr_path = tmp_path / "stdout.log", tmp_path / "stderr.log"
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        proc = subprocess.Popen(
            [str(SERVER), "--transport", "streamable-http", "--port", str(port), "--db", str(db)],
            stdout=out,
            stderr=err,
            cwd=tmp_path,
        )
    try:
        wait_for_port(proc, port)

        async def body() -> tuple[set[str], str, str, CallToolResult]:
            url = f"http://127.0.0.1:{port}/mcp"
            async with (
                streamable_http_client(url) as (r, w),
                ClientSession(r, w, read_timeout_seconds=TIMEOUT) as s,
            ):
                await s.initialize()
                names = {tool.name for tool in (await s.list_tools()).tools}
                meta = seamkit_meta("carol")
                saved = await s.call_tool("save_memory", {"text": "likes jazz"}, meta=meta)
                got = await s.call_tool("get_memories", {"user": "carol"})
                failed = await s.call_tool("get_memories", {})
                return names, text_of(saved), text_of(got), failed

        names, saved, got, failed = run(body)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert names == {"get_memories", "save_memory"}
    assert (saved, got) == (SAVED, "likes jazz")
    assert failed.is_error and "user is needed" in text_of(failed)
    assert MemoryStore(db).recent("carol") == ["likes jazz"]
    # uvicorn's startup and access logs went to stderr, not stdout
    assert stdout_path.read_bytes() == b""
    assert b"POST /mcp" in stderr_path.read_bytes()
