"""Connections for the store: one bounded `psycopg_pool.AsyncConnectionPool`
per event loop, opened on first use in that loop.

An asyncio pool belongs to the loop it was opened in (its workers are tasks
there, its locks wait there). The kernel may be driven by several
``asyncio.run`` calls in turn, or by loops in several threads, so each loop
gets its own pool; a pool whose loop has closed is dropped and its idle
connections closed at once, when the store is next used or closed.

Nobody has to close a pool for its loop to end cleanly. The pool's workers
swallow cancellation while they connect (psycopg_pool retries a failed
connection), so a pool still open when ``asyncio.run`` cancels the remaining
tasks could keep that run from ever returning. Each pool therefore comes with
a keeper task that does nothing until it is cancelled, and then closes the
pool, which stops its workers.

Opening a pool first connects once directly: that gives a clear error at once
(a wrong password, a refused connection) instead of a pool timing out after
``pool_timeout`` seconds, and creates the tables when they are missing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from . import _sql
from ._url import StoreOptions

__all__ = ["Connection", "LoopPools"]

log = logging.getLogger("seamkit.sessions.postgres")

Connection = psycopg.AsyncConnection[Any]
"""A pooled connection, in autocommit mode (a ``transaction()`` block groups statements)."""


@dataclass(slots=True)
class _LoopPool:
    """The pool of one event loop, and the connections it made (to close them
    when the loop is gone and the pool can no longer close itself)."""

    loop: asyncio.AbstractEventLoop
    opening: asyncio.Lock = field(default_factory=asyncio.Lock)
    pool: AsyncConnectionPool[Connection] | None = None
    made: weakref.WeakSet[Connection] = field(default_factory=weakref.WeakSet)
    keeper: asyncio.Task[None] | None = None

    def abandon(self) -> None:
        """Close the connections of a pool whose loop has closed (libpq's
        ``PQfinish``, no loop needed)."""
        for conn in list(self.made):
            if not conn.closed:
                conn.pgconn.finish()
        self.made.clear()
        self.pool = None


class LoopPools:
    """Pooled connections to one database, a pool per event loop."""

    def __init__(self, options: StoreOptions) -> None:
        self.options = options
        self._pools: dict[asyncio.AbstractEventLoop, _LoopPool] = {}
        self._guard = threading.Lock()
        self._schema_ready = False

    def _kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"autocommit": True}
        if not self.options.connect_timeout_given:
            kwargs["connect_timeout"] = 10
        if not self.options.application_name_given:
            kwargs["application_name"] = "seamkit"
        return kwargs

    def _drop_closed_loops(self) -> None:
        """Forget the pools of loops that have closed, closing their
        connections (call with ``_guard`` held)."""
        for gone in [lp for lp in self._pools.values() if lp.loop.is_closed()]:
            del self._pools[gone.loop]
            gone.abandon()

    def _current(self) -> _LoopPool:
        """This loop's entry (made on first use); drops those of closed loops."""
        loop = asyncio.get_running_loop()
        with self._guard:
            self._drop_closed_loops()
            entry = self._pools.get(loop)
            if entry is None:
                entry = self._pools[loop] = _LoopPool(loop)
            return entry

    async def _ensure_schema(self, conn: Connection) -> None:
        cur = await conn.execute(_sql.HAS_SCHEMA)
        row = await cur.fetchone()
        if row is not None and row[0]:
            return
        async with conn.transaction():
            await conn.execute(_sql.ENSURE_SCHEMA_LOCK)
            await conn.execute(_sql.SCHEMA)
        log.info("created the session tables in %s", self.options.location)

    async def _open(self, entry: _LoopPool) -> AsyncConnectionPool[Connection]:
        async with entry.opening:
            if entry.pool is not None:
                return entry.pool
            first = await psycopg.AsyncConnection.connect(self.options.conninfo, **self._kwargs())
            try:
                if not self._schema_ready:
                    await self._ensure_schema(first)
                    self._schema_ready = True
            finally:
                await first.close()

            async def configure(conn: Connection) -> None:
                entry.made.add(conn)

            pool: AsyncConnectionPool[Connection] = AsyncConnectionPool(
                self.options.conninfo,
                kwargs=self._kwargs(),
                min_size=self.options.pool_min_size,
                max_size=self.options.pool_max_size,
                timeout=self.options.pool_timeout,
                open=False,
                configure=configure,
                check=AsyncConnectionPool.check_connection,
                name="seamkit-sessions",
            )
            await pool.open()
            entry.pool = pool
            entry.keeper = asyncio.create_task(_keep(entry), name="seamkit-sessions-pool-keeper")
            return pool

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Connection]:
        """A connection from this loop's pool, for one short piece of work;
        it goes back to the pool when the block ends."""
        entry = self._current()
        pool = entry.pool if entry.pool is not None else await self._open(entry)
        async with pool.connection() as conn:
            yield conn

    async def aclose(self) -> None:
        """Close this loop's pool, and the connections of closed loops' pools.
        The store stays usable: the next use opens a new pool."""
        loop = asyncio.get_running_loop()
        with self._guard:
            mine = self._pools.pop(loop, None)
            self._drop_closed_loops()
        if mine is not None and mine.pool is not None:
            await mine.pool.close()
        if mine is not None and mine.keeper is not None:
            mine.keeper.cancel()


async def _keep(entry: _LoopPool) -> None:
    """Wait until cancelled (``aclose``, or ``asyncio.run`` ending), then close
    the entry's pool; when that cannot finish (the workers were cancelled too),
    close the connections the pool made that are still open. Returns
    normally: its cancellation is the signal, not an error."""
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.get_running_loop().create_future()
    pool = entry.pool
    try:
        if pool is not None:
            await pool.close()
        return
    except (asyncio.CancelledError, Exception) as exc:
        # When asyncio.run ends, the workers were cancelled along with us and
        # close() stops early, before it closes the idle connections.
        log.debug("closing the session pool: %s", type(exc).__name__)
    for conn in list(entry.made):
        if not conn.closed:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await conn.close()
