"""MCP servers for the tests of seamkit-mcp, one process each:

    python -m tests.plugins.mcp_servers NAME [stdio | http PORT]

run from the repository root (``tests`` importable). ``NAME`` is

- ``main``: an SDK `MCPServer` with the tools below, over stdio (the
  default) or streamable HTTP on 127.0.0.1:PORT at ``/mcp``; over HTTP every
  request must carry ``Authorization: Bearer $MCP_TEST_TOKEN`` when that
  variable is set (401 otherwise);
- ``garbage``: writes lines that are not JSON-RPC to stdout and never answers;
- ``silent``: reads stdin and never answers (``initialize`` included).

The servers that never answer exit when their stdin closes.

The tests start them through manifest entries (`stdio_entry`), each tagged
with an environment variable so that `tagged` finds any process left behind.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult

__all__ = [
    "BIN",
    "PNG",
    "ROOT",
    "TAG_VARIABLE",
    "TOKEN_VARIABLE",
    "main_server",
    "new_tag",
    "stdio_entry",
    "tagged",
]

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
"""The virtual environment's scripts (mcp-server-time, mcp-server-fetch, seamkit)."""
TAG_VARIABLE = "MCP_TEST_TAG"
TOKEN_VARIABLE = "MCP_TEST_TOKEN"
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
"""A 1x1 PNG (70 bytes)."""


def new_tag() -> str:
    """A value for `TAG_VARIABLE` no other test uses."""
    return uuid.uuid4().hex


def stdio_entry(name: str, tag: str, **fields: Any) -> dict[str, Any]:
    """A manifest entry (kind ``mcp``) that starts server ``name`` of this
    module over stdio, its environment tagged with ``tag``."""
    env = {"PYTHONPATH": str(ROOT), TAG_VARIABLE: tag}
    return {
        "kind": "mcp",
        "command": sys.executable,
        "args": ["-m", "tests.plugins.mcp_servers", name, "stdio"],
        "cwd": str(ROOT),
        "env": env,
        **fields,
    }


def tagged(tag: str) -> list[int]:
    """The live processes whose environment holds ``TAG_VARIABLE=tag``
    (a scan of /proc; zombies show no environment)."""
    needle = f"{TAG_VARIABLE}={tag}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:  # gone meanwhile, or not ours
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def main_server() -> MCPServer:
    """The ``main`` server: a fresh `MCPServer` with every test tool."""
    server = MCPServer("seamkit-test", version="0.1")

    @server.tool()
    def echo(text: str) -> str:
        """Say the text back."""
        return text

    @server.tool()
    async def slow(seconds: float) -> str:
        """Answer after some seconds."""
        await asyncio.sleep(seconds)
        return f"slept {seconds:g}s"

    @server.tool()
    def fail(message: str) -> str:
        """Always fails (an isError result saying ``message``)."""
        raise ToolError(message)

    @server.tool()
    def picture() -> Image:
        """A tiny PNG."""
        return Image(data=PNG, format="png")

    @server.tool()
    def structured() -> CallToolResult:
        """Structured content only, no content blocks."""
        return CallToolResult(content=[], structured_content={"answer": 42, "unit": "widgets"})

    @server.tool()
    async def whoami(ctx: Context) -> str:
        """The user the client named in the request's ``_meta``."""
        meta = ctx.request_context.meta or {}
        return json.dumps({"user": meta.get("seamkit/user")})

    @server.tool()
    def pid() -> int:
        """This server's process id."""
        return os.getpid()

    @server.tool()
    def die() -> str:
        """Stops the server in the middle of the call."""
        os._exit(1)

    @server.tool()
    async def grow(ctx: Context) -> str:
        """Adds the tool ``grown`` and says the tool list changed."""

        def grown(x: int) -> int:
            """Twice x."""
            return 2 * x

        server.add_tool(grown, name="grown")
        await ctx.session.send_tool_list_changed()
        return "grown"

    return server


def token_check(app: ASGIApp, token: str) -> ASGIApp:
    """``app`` behind a bearer-token check (401 without the token)."""
    expected = f"Bearer {token}".encode()

    async def checked(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != expected:
            start = {"type": "http.response.start", "status": 401, "headers": []}
            await send(start)
            await send({"type": "http.response.body", "body": b"bad or missing token"})
            return
        await app(scope, receive, send)

    return checked


def serve_http(server: MCPServer, port: int) -> None:
    import uvicorn  # lazy: only the HTTP server needs it

    app: ASGIApp = server.streamable_http_app()
    token = os.environ.get(TOKEN_VARIABLE)
    if token:
        app = token_check(app, token)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def never_answer(banner: list[str]) -> None:
    for line in banner:
        sys.stdout.write(line + "\n")
    sys.stdout.flush()
    for _ in sys.stdin:  # until the client closes stdin
        pass


def main(argv: list[str]) -> None:
    name, transport = argv[0], argv[1] if len(argv) > 1 else "stdio"
    if name == "garbage":
        never_answer(["Welcome to the garbage server!", "{not json", "<html>nope</html>"])
    elif name == "silent":
        never_answer([])
    elif name == "main" and transport == "stdio":
        main_server().run()
    elif name == "main" and transport == "http":
        serve_http(main_server(), int(argv[2]))
    else:
        raise SystemExit(
            f"usage: python -m tests.plugins.mcp_servers NAME [stdio|http PORT]: {argv}"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
