"""One MCP server as an agent uses it: a `ClientSession` held open, per
event loop, by a task of its own (the SDK's transports must be entered and
left in one task), started when first needed and closed with the agent (or
with its event loop: the sessions of loops that ended are forgotten).

A server that stops is started again once, for the next call; the calls in
flight end with a clear error. After a second stop, or when that restart
fails, its tools fail with a clear error and the agent goes on.
``tools/list_changed`` from the server marks the tool list stale; the
toolset lists again between runs.

The secrets of the entry (``env``, ``headers``) are masked in everything the
server says back: its stderr in errors, error messages, results. An https
server is verified (and given a client certificate) as its ``tls`` says:
one SSL context per entry, made when the connection is (a TLS file that
cannot be read is an error then, naming the entry).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO, cast

import httpx2
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import (
    CONNECTION_CLOSED,
    REQUEST_TIMEOUT,
    CallToolResult,
    RequestParamsMeta,
    Tool as MCPTool,
    ToolListChangedNotification,
)
from seamkit import Secret, redact
from seamkit.plugins import secret_texts

from ._config import MCPTls, MCPToolConfig
from ._errors import MCPServerError

__all__ = ["Connection"]

log = logging.getLogger("seamkit_mcp")

_CLOSE_SECONDS = 6.0
"""How long closing may take: the SDK gives a stdio server 2 s after stdin
closes, then 2 s after SIGTERM, before SIGKILL."""

_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)
"""The MCP SDK's own HTTP time-outs: 30 s to connect, write and wait for a
pooled connection; 300 s to read (a server may hold a response stream open)."""


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


def _ssl_context(config: MCPToolConfig, base_dir: Path | None) -> ssl.SSLContext | bool:
    """How to verify the server of ``config`` (``tls``, its files relative
    to ``base_dir``): the default (`True`) without ``tls``. Raises
    `MCPServerError` for a file that cannot be read."""
    tls = config.tls
    if tls is None or tls == MCPTls():
        return True

    def where(name: str | None) -> str | None:
        if name is None or base_dir is None or Path(name).is_absolute():
            return name
        return str(base_dir / name)

    try:
        context = ssl.create_default_context(cafile=where(tls.ca_file))
        if not tls.verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if tls.cert_file:
            context.load_cert_chain(where(tls.cert_file) or "", where(tls.key_file))
    except (OSError, ssl.SSLError) as exc:
        label = config.label
        raise MCPServerError(
            f"cannot load the TLS files of MCP server {label!r}: {type(exc).__name__}: {exc}",
            server=label,
            hint="check tls.ca_file, tls.cert_file and tls.key_file (relative to the manifest)",
        ) from None
    return context


def _tls_failure(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) is a failed TLS handshake."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ssl.SSLError):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


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
    """A session held open by its own task until `close` (or until its
    event loop ends)."""

    def __init__(self, config: MCPToolConfig, base_dir: Path | None, owner: Connection) -> None:
        self._config = config
        self._base_dir = base_dir
        self._owner = owner
        self._verify = owner.verify
        loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self._ready: asyncio.Future[ClientSession] = loop.create_future()
        # the server's stderr, kept for error messages (closed when _hold ends)
        self._errlog: TextIO = tempfile.TemporaryFile(  # noqa: SIM115
            "w+", encoding="utf-8", errors="replace"
        )
        self._tail: str | None = None
        """The stderr tail as it was when the errlog was closed."""
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
                        httpx2.AsyncClient(
                            headers=_plain(config.headers),
                            timeout=_HTTP_TIMEOUT,
                            verify=self._verify,
                        )
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
                if not self._ready.done():  # else it timed out meanwhile
                    self._ready.set_result(session)
                await self._stop.wait()
        except BaseException as exc:  # the SDK wraps what its task groups raise
            if not self._ready.done():
                self._ready.set_exception(self._owner.failure(_leaf(exc), self.stderr()))
            if isinstance(exc, asyncio.CancelledError):
                if not self._stop.is_set():  # not closed: its event loop is ending
                    self._owner.forget(self)
                raise
        finally:
            self._tail = self.stderr()
            self._errlog.close()
            if self._ready.done() and not self._ready.cancelled():
                self._ready.exception()  # seen: a start that failed unawaited is no warning

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, ToolListChangedNotification):
            self._owner.changed = True
        elif isinstance(message, Exception):  # a line on stdout that is not JSON-RPC
            self._owner.garbage = self._owner.garbage or self._owner.hide(_bad_line(message))

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The event loop the session lives in."""
        return self._task.get_loop()

    def stderr(self) -> str:
        """The last lines the server wrote to its standard error (secrets masked)."""
        if self._tail is not None:
            return self._tail
        try:
            self._errlog.seek(0)
            lines = self._errlog.read().strip().splitlines()
        except (OSError, ValueError):
            return ""
        return self._owner.hide("\n".join(lines[-5:]))

    def _started(self) -> bool:
        ready = self._ready
        return ready.done() and not ready.cancelled() and ready.exception() is None

    async def ready(self, timeout: float) -> ClientSession:
        """The session once initialised; `MCPServerError` if it is not
        within ``timeout`` seconds. Every caller waiting for one start gets
        the same outcome: the first wait that times out ends it for all."""
        ready = self._ready
        if self._started():
            return ready.result()  # the common case: no timer, no extra loop turns
        try:
            return await asyncio.wait_for(asyncio.shield(ready), timeout)
        except TimeoutError:
            if not ready.done():
                ready.set_exception(self._owner.no_answer(timeout, self.stderr()))
                await self.close()
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if not ready.done() or (task is not None and task.cancelling()):
                raise  # this caller was cancelled
        if ready.cancelled():  # never surfaces as a cancellation of this caller
            label = self._config.label
            raise MCPServerError(f"MCP server {label!r} was closed as it started", server=label)
        try:
            return ready.result()
        except MCPServerError as exc:
            raise exc from None

    async def close(self) -> None:
        """Stop the session and wait (boundedly) until the server is gone."""
        self._stop.set()
        if not self._ready.done():
            label = self._config.label
            self._ready.set_exception(
                MCPServerError(f"MCP server {label!r} was closed as it started", server=label)
            )
        if not self._started():  # it never waits on _stop
            self._task.cancel()
        if not self._task.done():
            done, _ = await asyncio.wait({self._task}, timeout=_CLOSE_SECONDS)
            if not done:
                self._task.cancel()
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(self._task, _CLOSE_SECONDS)
        with contextlib.suppress(BaseException):
            self._task.result()
        self.discard()

    def discard(self) -> None:
        """Close its stderr file (keeping the tail) and mark a failed start
        as seen: all that is left to do for a session whose loop is closed."""
        if not self._errlog.closed:
            self._tail = self.stderr()
            self._errlog.close()
        if self._ready.done() and not self._ready.cancelled():
            self._ready.exception()


class Connection:
    """The MCP server of one manifest entry: its sessions (one per event
    loop), how often it stopped, and whether its tool list changed."""

    def __init__(self, config: MCPToolConfig, base_dir: Path | None) -> None:
        self.config = config
        self._base_dir = base_dir
        self._sessions: dict[asyncio.AbstractEventLoop, _Session] = {}
        self.verify = _ssl_context(config, base_dir)
        """How the server's certificate is checked (``tls``), made once."""
        self.secrets: tuple[str, ...] = tuple(secret_texts(config.env, config.headers))
        """The plain text of the secrets in ``env`` and ``headers``."""
        self.stops = 0
        self.failed: str | None = None
        self.changed = False
        """Set when the server said its tools changed (``tools/list_changed``)."""
        self.garbage: str | None = None
        """The first line the server wrote to stdout that was not MCP."""

    def hide(self, text: str) -> str:
        """``text`` with the entry's secrets masked."""
        return redact(text, self.secrets) if self.secrets else text

    def _error(self, message: str, hint: str | None = None) -> MCPServerError:
        return MCPServerError(self.hide(message), server=self.config.label, hint=hint)

    def failure(self, exc: BaseException, stderr: str) -> MCPServerError:
        """What starting the server met, as an error a user can act on."""
        label = self.config.label
        if isinstance(exc, FileNotFoundError | NotADirectoryError | PermissionError):
            what = self.config.cwd if exc.filename == self.config.cwd else self.config.command
            return self._error(
                f"cannot start MCP server {label!r}: {exc.strerror}: {what}",
                hint="check 'command' (on PATH, or a path) and 'cwd'",
            )
        detail = exc.message if isinstance(exc, MCPError) else f"{type(exc).__name__}: {exc}"
        if not str(exc):
            detail = f"{type(exc).__name__} (the connection was closed)"
        where = self.config.url or self.config.command
        hint = "check that the server runs and speaks MCP (stdio or streamable HTTP)"
        if _tls_failure(exc):
            hint = (
                "a TLS handshake failed: set tls.ca_file to the CA that signed the server's "
                "certificate, and tls.cert_file (and key_file) if it requires a client one"
            )
        elif self._closed_early(exc):
            hint = (
                "the server closed the connection: if it requires a client certificate, "
                "set tls.cert_file (and key_file); else check that it speaks MCP"
            )
        return self._error(
            f"MCP server {label!r} ({where}) failed to start: {detail}"
            + (f"; its stderr ends: {stderr}" if stderr else ""),
            hint=hint,
        )

    def _closed_early(self, exc: BaseException) -> bool:
        """Whether an https server without a client certificate of ours hung
        up: how TLS 1.3 servers refuse a client that has none."""
        url, tls = self.config.url or "", self.config.tls
        return (
            url.startswith("https://")
            and not (tls is not None and tls.cert_file)
            and isinstance(exc, httpx2.ReadError | httpx2.RemoteProtocolError)
        )

    def no_answer(self, timeout: float, stderr: str) -> MCPServerError:
        """The server did not answer ``initialize`` within ``timeout`` seconds."""
        garbage = self.garbage
        return self._error(
            f"MCP server {self.config.label!r} did not answer initialize within {timeout:g}s"
            + (f"; it wrote to stdout what is not MCP: {garbage}" if garbage else "")
            + (f"; its stderr ends: {stderr}" if stderr else ""),
            hint="check the command and its arguments (run it by hand: it should wait "
            "for JSON-RPC on stdin), or raise startup_timeout_seconds",
        )

    def _table(self) -> dict[asyncio.AbstractEventLoop, _Session]:
        """The sessions, without those of event loops that are closed."""
        sessions = self._sessions
        for loop in [loop for loop in sessions if loop.is_closed()]:
            sessions.pop(loop).discard()
        return sessions

    def forget(self, session: _Session) -> bool:
        """Drop ``session`` if it is still its loop's current one; whether it was."""
        loop = session.loop
        if self._sessions.get(loop) is not session:
            return False
        del self._sessions[loop]
        return True

    async def _open(self) -> tuple[_Session, ClientSession]:
        """The running loop's session, started if need be."""
        if self.failed is not None:
            raise MCPServerError(self.failed, server=self.config.label)
        sessions = self._table()
        loop = asyncio.get_running_loop()
        current = sessions.get(loop)
        if current is None:
            current = sessions[loop] = _Session(self.config, self._base_dir, self)
        try:
            return current, await current.ready(self.config.startup_timeout_seconds)
        except MCPServerError as exc:
            if self.forget(current) and self.stops > 0 and self.failed is None:
                # a restart after a stop that failed: counted as a stop
                self.stops += 1
                if self.stops >= 2:
                    self.failed = self.hide(
                        f"MCP server {self.config.label!r} stopped, and could not be started "
                        f"again, so its tools fail from now on: {exc.message}"
                    )
            if self.failed is not None:
                raise MCPServerError(self.failed, server=self.config.label) from None
            raise

    async def session(self) -> ClientSession:
        """The running loop's session, started if need be."""
        return (await self._open())[1]

    async def list_tools(self) -> list[MCPTool]:
        """Every tool the server offers, page by page."""
        from mcp.types import PaginatedRequestParams  # lazy: only for the rare second page

        session = await self.session()
        timeout = self.config.startup_timeout_seconds
        tools: list[MCPTool] = []
        cursor: str | None = None
        while True:
            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            try:
                listed = await session.list_tools(params=params)  # bounded by the session
            except MCPError as exc:
                raise self._error(
                    f"MCP server {self.config.label!r} did not list its tools"
                    + (f" within {timeout:g}s" if exc.code == REQUEST_TIMEOUT else "")
                    + f": {exc.message}"
                ) from None
            tools.extend(listed.tools)
            cursor = listed.next_cursor
            if not cursor:
                return tools

    async def call(
        self, name: str, arguments: dict[str, Any], meta: dict[str, Any] | None
    ) -> CallToolResult:
        """``tools/call``; raises `MCPServerError` for a server that fails."""
        used, session = await self._open()
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
                raise self._error(
                    f"MCP server {label!r} did not answer {name!r} within {timeout:g}s"
                ) from None
            if exc.code == CONNECTION_CLOSED:
                raise await self._stopped(name, used) from None
            raise self._error(f"MCP server {label!r} refused {name!r}: {exc.message}") from None

    async def _stopped(self, name: str, used: _Session) -> MCPServerError:
        """The server of session ``used`` stopped: forget that session (the
        next call starts the server again), or, the second time, fail its
        tools for good. A stop learnt late, once ``used`` is no longer the
        current session, is not counted again."""
        label = self.config.label
        tail = used.stderr()
        if self.forget(used):
            self.stops += 1
            log.warning("MCP server %r stopped during a call to %r", label, name)
            await used.close()
            if self.stops >= 2 and self.failed is None:
                stderr = f"; its stderr ends: {tail}" if tail else ""
                self.failed = f"MCP server {label!r} stopped twice, so its tools fail from now on"
                self.failed += stderr
            elif self.failed is None:
                self.changed = True  # list again from the new process
        if self.failed is not None:
            return MCPServerError(self.failed, server=label)
        return self._error(
            f"MCP server {label!r} stopped during the call to {name!r}; it is started again "
            f"for the next call" + (f"; its stderr ends: {tail}" if tail else "")
        )

    async def aclose(self) -> None:
        """Close the running loop's session (sessions of loops that ended
        were closed as their loops cancelled their tasks)."""
        session = self._table().pop(asyncio.get_running_loop(), None)
        if session is not None:
            await session.close()
