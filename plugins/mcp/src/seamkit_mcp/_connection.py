"""One MCP server as an agent uses it: a `ClientSession` held open, per
event loop, by a task of its own (the SDK's transports must be entered and
left in one task), started when first needed and closed with the agent.

A server that stops is started again once, for the next call; the calls in
flight end with a clear error. After a second stop its tools fail with a
clear error and the agent goes on. ``tools/list_changed`` from the server
marks the tool list stale; the toolset lists again between runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import tempfile
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO, cast

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, Tool as MCPTool, ToolListChangedNotification
from mcp_types import RequestParamsMeta
from mcp_types.jsonrpc import CONNECTION_CLOSED, REQUEST_TIMEOUT
from seamkit import Secret

from ._config import MCPToolConfig
from ._errors import MCPServerError

__all__ = ["Connection"]

log = logging.getLogger("seamkit_mcp")

_CLOSE_SECONDS = 6.0
"""How long closing may take: the SDK gives a stdio server 2 s after stdin
closes, then 2 s after SIGTERM, before SIGKILL."""


class _QuietParseErrors(logging.Filter):
    """Turns the SDK's traceback for each stdout line that is not JSON-RPC
    into a debug record: seamkit reports the first such line in its own
    error, once, without a traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.getMessage().startswith("Failed to parse JSONRPC message"):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            record.exc_info, record.exc_text = None, None
        return True


logging.getLogger("mcp.client.stdio").addFilter(_QuietParseErrors())


def _plain(values: Mapping[str, str | Secret[str]]) -> dict[str, str]:
    return {k: v.get_secret_value() if isinstance(v, Secret) else v for k, v in values.items()}


def _leaf(exc: BaseException) -> BaseException:
    """The first exception inside (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _bad_line(exc: Exception) -> str:
    """The stdout line the SDK could not parse (its pydantic error holds it)."""
    try:
        line = repr(exc.errors()[0]["input"])  # type: ignore[attr-defined]
    except Exception:  # not a pydantic error: its own first line
        line = (str(exc).splitlines() or [type(exc).__name__])[0]
    return line[:200]


class _Session:
    """A session held open by its own task until `close`."""

    def __init__(self, config: MCPToolConfig, base_dir: Path | None, owner: Connection) -> None:
        self._config = config
        self._base_dir = base_dir
        self._owner = owner
        loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self._ready: asyncio.Future[ClientSession] = loop.create_future()
        # the server's stderr, kept for error messages (closed in close())
        self._errlog: TextIO = tempfile.TemporaryFile(  # noqa: SIM115
            "w+", encoding="utf-8", errors="replace"
        )
        self._task = loop.create_task(self._hold(), name=f"mcp server {config.label}")

    async def _hold(self) -> None:
        config = self._config
        try:
            async with contextlib.AsyncExitStack() as stack:
                if config.command is not None:
                    cwd = Path(config.cwd) if config.cwd else None
                    if cwd is not None and not cwd.is_absolute() and self._base_dir is not None:
                        cwd = self._base_dir / cwd
                    params = StdioServerParameters(
                        command=config.command, args=config.args, env=_plain(config.env), cwd=cwd
                    )
                    streams = await stack.enter_async_context(
                        stdio_client(params, errlog=self._errlog)
                    )
                else:
                    http = await stack.enter_async_context(
                        create_mcp_http_client(headers=_plain(config.headers))
                    )
                    streams = await stack.enter_async_context(
                        streamable_http_client(config.url or "", http_client=http)
                    )
                session = await stack.enter_async_context(
                    ClientSession(
                        streams[0],
                        streams[1],
                        read_timeout_seconds=config.startup_timeout_seconds,  # calls set theirs
                        message_handler=self._on_message,
                    )
                )
                await session.initialize()
                self._ready.set_result(session)
                await self._stop.wait()
        except BaseException as exc:  # the SDK wraps what its task groups raise
            if not self._ready.done():
                self._ready.set_exception(self._owner.failure(_leaf(exc), self.stderr()))
            if isinstance(exc, asyncio.CancelledError):
                raise

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, ToolListChangedNotification):
            self._owner.changed = True
        elif isinstance(message, Exception):  # a line on stdout that is not JSON-RPC
            self._owner.garbage = self._owner.garbage or _bad_line(message)

    def stderr(self) -> str:
        """The last lines the server wrote to its standard error."""
        try:
            self._errlog.seek(0)
            lines = self._errlog.read().strip().splitlines()
        except (OSError, ValueError):
            return ""
        return "\n".join(lines[-5:])

    async def ready(self, timeout: float) -> ClientSession:
        """The session once initialised; `MCPServerError` if it is not
        within ``timeout`` seconds."""
        ready = self._ready
        if ready.done() and not ready.cancelled() and ready.exception() is None:
            return ready.result()  # the common case: no timer, no extra loop turns
        try:
            return await asyncio.wait_for(asyncio.shield(ready), timeout)
        except TimeoutError:
            tail = self.stderr()
            await self.close()
            garbage = self._owner.garbage
            raise MCPServerError(
                f"MCP server {self._config.label!r} did not answer initialize within {timeout:g}s"
                + (f"; it wrote to stdout what is not MCP: {garbage}" if garbage else "")
                + (f"; its stderr ends: {tail}" if tail else ""),
                server=self._config.label,
                hint="check the command and its arguments (run it by hand: it should wait "
                "for JSON-RPC on stdin), or raise startup_timeout_seconds",
            ) from None

    async def close(self) -> None:
        """Stop the session and wait (boundedly) until the server is gone."""
        self._stop.set()
        if not self._ready.done():  # still starting: it never waits on _stop
            self._ready.cancel()  # (and no error is left unretrieved)
            self._task.cancel()
        if not self._task.done():
            done, _ = await asyncio.wait({self._task}, timeout=_CLOSE_SECONDS)
            if not done:
                self._task.cancel()
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(self._task, _CLOSE_SECONDS)
        with contextlib.suppress(BaseException):
            self._task.result()
        if self._ready.done() and not self._ready.cancelled():
            self._ready.exception()  # seen: a start that failed unawaited is no warning
        self._errlog.close()


class Connection:
    """The MCP server of one manifest entry: its sessions (one per event
    loop), how often it stopped, and whether its tool list changed."""

    def __init__(self, config: MCPToolConfig, base_dir: Path | None) -> None:
        self.config = config
        self._base_dir = base_dir
        self._sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Session] = (
            weakref.WeakKeyDictionary()
        )
        self.stops = 0
        self.failed: str | None = None
        self.changed = False
        """Set when the server said its tools changed (``tools/list_changed``)."""
        self.garbage: str | None = None
        """The first line the server wrote to stdout that was not MCP."""

    def failure(self, exc: BaseException, stderr: str) -> MCPServerError:
        """What starting the server met, as an error a user can act on."""
        label = self.config.label
        if isinstance(exc, FileNotFoundError | NotADirectoryError | PermissionError):
            what = self.config.cwd if exc.filename == self.config.cwd else self.config.command
            return MCPServerError(
                f"cannot start MCP server {label!r}: {exc.strerror}: {what}",
                server=label,
                hint="check 'command' (on PATH, or a path) and 'cwd'",
            )
        detail = exc.message if isinstance(exc, MCPError) else f"{type(exc).__name__}: {exc}"
        where = self.config.url or self.config.command
        return MCPServerError(
            f"MCP server {label!r} ({where}) failed to start: {detail}"
            + (f"; its stderr ends: {stderr}" if stderr else ""),
            server=label,
            hint="check that the server runs and speaks MCP (stdio or streamable HTTP)",
        )

    async def session(self) -> ClientSession:
        """The running loop's session, started if need be."""
        if self.failed is not None:
            raise MCPServerError(self.failed, server=self.config.label)
        loop = asyncio.get_running_loop()
        current = self._sessions.get(loop)
        if current is None:
            current = self._sessions[loop] = _Session(self.config, self._base_dir, self)
        try:
            return await current.ready(self.config.startup_timeout_seconds)
        except MCPServerError:
            self._sessions.pop(loop, None)
            raise

    async def list_tools(self) -> list[MCPTool]:
        """Every tool the server offers, page by page."""
        from mcp.types import PaginatedRequestParams  # lazy only for the rare second page

        session = await self.session()
        timeout = self.config.startup_timeout_seconds
        tools: list[MCPTool] = []
        cursor: str | None = None
        while True:
            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            try:
                listed = await session.list_tools(params=params)  # bounded by the session
            except MCPError as exc:
                raise MCPServerError(
                    f"MCP server {self.config.label!r} did not list its tools"
                    + (f" within {timeout:g}s" if exc.code == REQUEST_TIMEOUT else "")
                    + f": {exc.message}",
                    server=self.config.label,
                ) from None
            tools.extend(listed.tools)
            cursor = listed.next_cursor
            if not cursor:
                return tools

    async def call(
        self, name: str, arguments: dict[str, Any], meta: dict[str, Any] | None
    ) -> CallToolResult:
        """``tools/call``; raises `MCPServerError` for a server that fails."""
        session = await self.session()
        label, timeout = self.config.label, self.config.timeout_seconds
        try:
            return await session.call_tool(
                name,
                arguments,
                read_timeout_seconds=timeout,
                meta=cast("RequestParamsMeta", meta) if meta else None,
            )
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                raise MCPServerError(
                    f"MCP server {label!r} did not answer {name!r} within {timeout:g}s",
                    server=label,
                ) from None
            if exc.code == CONNECTION_CLOSED:
                raise await self._stopped(name) from None
            raise MCPServerError(
                f"MCP server {label!r} refused {name!r}: {exc.message}", server=label
            ) from None

    async def _stopped(self, name: str) -> MCPServerError:
        """The server stopped: forget its session (the next call starts it
        again), or, the second time, fail its tools for good."""
        label = self.config.label
        session = self._sessions.pop(asyncio.get_running_loop(), None)
        tail = ""
        if session is not None:
            tail = session.stderr()
            self.stops += 1
            await session.close()
        log.warning("MCP server %r stopped during a call to %r", label, name)
        stderr = f"; its stderr ends: {tail}" if tail else ""
        if self.stops >= 2:
            self.failed = (
                f"MCP server {label!r} stopped twice, so its tools fail from now on{stderr}"
            )
            return MCPServerError(self.failed, server=label)
        self.changed = True  # list again from the new process
        return MCPServerError(
            f"MCP server {label!r} stopped during the call to {name!r}; it is started again "
            f"for the next call{stderr}",
            server=label,
        )

    async def aclose(self) -> None:
        """Close the running loop's session (sessions of loops that ended
        were closed as their loops cancelled their tasks)."""
        session = self._sessions.pop(asyncio.get_running_loop(), None)
        if session is not None:
            await session.close()
