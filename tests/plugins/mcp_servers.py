"""MCP servers for the tests of seamkit-mcp, one process each:

    python -m tests.plugins.mcp_servers NAME [stdio | http PORT]

run from the repository root (``tests`` importable). ``NAME`` is

- ``main``: an SDK `MCPServer` with the tools below, over stdio (the
  default) or streamable HTTP on 127.0.0.1:PORT at ``/mcp``; over HTTP every
  request must carry ``Authorization: Bearer $MCP_TEST_TOKEN`` when that
  variable is set (401 otherwise); over https when ``$MCP_TEST_TLS_CERT``
  names its certificate and key (one PEM file), requiring a client
  certificate signed by the CA of ``$MCP_TEST_TLS_CLIENT_CA`` when that is set;
- ``garbage``: writes lines that are not JSON-RPC to stdout and never answers;
- ``silent``: reads stdin and never answers (``initialize`` included).

The servers that never answer exit when their stdin closes.

`tiny_entry` starts `tiny_server` instead: a server of the standard library
alone, which answers ``initialize`` within milliseconds (an SDK server takes
about a second), for the tests that start many servers or time them out.

The tests start them through manifest entries (`stdio_entry`), each tagged
with an environment variable so that `tagged` finds any process left behind.
"""

from __future__ import annotations

import asyncio
import base64
import inspect
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
    "tiny_entry",
    "tiny_server",
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


def tiny_server() -> None:
    """A minimal MCP server over stdio (JSON-RPC lines, standard library
    only), run by `tiny_entry` as ``python -c``. Its arguments:

    - none: it serves the tools ``echo`` (says ``text`` back), ``secret``
      (writes ``$MCP_TEST_SECRET`` to stderr and says it), ``whoami`` (the
      ``seamkit/user`` of the request's ``_meta``), ``meta`` (the request's
      whole ``_meta``, as JSON), ``die`` (exits in the middle of the call) and
      ``pid`` (its process id);
    - ``once MARKER``: serves as above when the file ``MARKER`` does not
      exist (and creates it); when it does, never answers (a restart hangs);
    - ``leak``: writes ``$MCP_TEST_SECRET`` to stderr and exits before
      ``initialize``.

    A server that never answers exits when its stdin closes.
    """
    import json
    import os
    import sys

    args = sys.argv[1:]
    if args[:1] == ["leak"]:
        sys.stderr.write(f"starting with secret={os.environ.get('MCP_TEST_SECRET')}\n")
        sys.stderr.flush()
        raise SystemExit(3)
    if args[:1] == ["once"]:
        if os.path.exists(args[1]):
            for _ in sys.stdin:  # never answers
                pass
            return
        open(args[1], "w").close()
    text_argument = {"type": "object", "properties": {"text": {"type": "string"}}}
    tools = [
        {"name": "echo", "description": "Say the text back.", "inputSchema": text_argument},
        {"name": "secret", "description": "Tell the secret.", "inputSchema": {"type": "object"}},
        {"name": "whoami", "description": "The user.", "inputSchema": {"type": "object"}},
        {"name": "meta", "description": "The _meta.", "inputSchema": {"type": "object"}},
        {"name": "die", "description": "Exit mid-call.", "inputSchema": {"type": "object"}},
        {"name": "pid", "description": "The process id.", "inputSchema": {"type": "object"}},
    ]
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:  # a notification
            continue
        method, params = message.get("method"), message.get("params") or {}
        result: dict[str, object]
        if method == "initialize":
            result = {
                "protocolVersion": params.get("protocolVersion", "2025-11-25"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "tiny", "version": "0"},
            }
        elif method == "tools/list":
            result = {"tools": tools}
        elif method == "tools/call":
            name, arguments = params.get("name"), params.get("arguments") or {}
            if name == "die":
                os._exit(1)
            if name == "secret":
                secret = os.environ.get("MCP_TEST_SECRET")
                sys.stderr.write(f"telling secret={secret}\n")
                sys.stderr.flush()
                text = f"the secret is {secret}"
            elif name == "pid":
                text = str(os.getpid())
            elif name == "whoami":
                text = f"you are {(params.get('_meta') or {}).get('seamkit/user')}"
            elif name == "meta":
                text = json.dumps(params.get("_meta"))
            else:
                text = str(arguments.get("text", ""))
            result = {"content": [{"type": "text", "text": text}], "isError": False}
        else:
            result = {}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}))
        sys.stdout.write("\n")
        sys.stdout.flush()


TINY_SOURCE = inspect.getsource(tiny_server) + "\ntiny_server()\n"


def tiny_entry(tag: str, *args: str, **fields: Any) -> dict[str, Any]:
    """A manifest entry (kind ``mcp``) that starts `tiny_server` with
    ``args``, its environment tagged with ``tag`` (more variables in
    ``env``)."""
    env = {TAG_VARIABLE: tag, **fields.pop("env", {})}
    return {
        "kind": "mcp",
        "command": sys.executable,
        "args": ["-c", TINY_SOURCE, *args],
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
    tls: dict[str, Any] = {}
    cert = os.environ.get("MCP_TEST_TLS_CERT")
    if cert:
        import ssl

        tls = {"ssl_certfile": cert, "ssl_keyfile": cert}
        client_ca = os.environ.get("MCP_TEST_TLS_CLIENT_CA")
        if client_ca:
            tls |= {"ssl_ca_certs": client_ca, "ssl_cert_reqs": ssl.CERT_REQUIRED}
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", **tls)


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
