"""`PostgresSessionStore`: seamkit's `SessionStore` on PostgreSQL.

Every operation borrows a pooled connection for one short statement or
transaction and gives it back; nothing holds a connection while a run is
going on, so a pool of five serves hundreds of concurrent runs.

"One run per session at a time" is a lease row, not a session-level advisory
lock (which would pin a connection for the whole run). ``lock`` takes the
lease with one atomic upsert that succeeds only when nobody holds it or the
holder's lease has expired, polling until ``wait_seconds`` have passed (then
`SessionBusy`); a heartbeat task renews it every third of ``lease_seconds``
while the run goes on; the end of the run deletes it. A worker that dies
stops renewing, and its lease expires after at most ``lease_seconds``: the
session is then free again, and its stored transcript is the one the last
finished run saved. A run whose lease lapsed *and* was taken over (its
process stalled longer than the lease) is fenced: its save (and any journal
entry it still writes) fails with `SessionError` instead of overwriting the
newer run's transcript.

The store keeps a journal (`seamkit.JournalStore`): each append is one
statement, committed before it returns; a save drops the session's journal
in the statement that writes its transcript, a delete in the one that
deletes it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from types import MappingProxyType
from typing import Any

import psycopg
from seamkit import JournalEntry, Message, SessionBusy, SessionError, StoredSession
from seamkit.plugins import RawSession

from . import _sql
from ._pools import LoopPools
from ._url import StoreOptions, parse_url, redact

__all__ = ["PostgresSessionStore", "shared_store"]

log = logging.getLogger("seamkit.sessions.postgres")

# The leases the current task's runs hold: (store id, session name) -> holder.
# A save made inside ``lock`` checks the lease is still its own.
_HELD: ContextVar[Mapping[tuple[str, str], str]] = ContextVar(
    "seamkit_sessions_postgres_held", default=MappingProxyType({})
)

_FIRST_POLL = 0.02
_MAX_POLL = 0.25


class PostgresSessionStore:
    """Sessions in a PostgreSQL database, safe for servers on several
    machines. ``url`` is ``postgresql://USER:PASSWORD@HOST:PORT/DATABASE``
    (or ``postgres://``), with the store's options (``pool_min_size``,
    ``pool_max_size``, ``pool_timeout``, ``lease_seconds``) in its query
    string; the keyword arguments, when given, replace those options.
    Nothing connects until the first use; `aclose` closes the pool."""

    def __init__(
        self,
        url: str,
        *,
        pool_min_size: int | None = None,
        pool_max_size: int | None = None,
        pool_timeout: float | None = None,
        lease_seconds: float | None = None,
    ) -> None:
        self.options: StoreOptions = parse_url(
            url,
            {
                "pool_min_size": pool_min_size,
                "pool_max_size": pool_max_size,
                "pool_timeout": pool_timeout,
                "lease_seconds": lease_seconds,
            },
        )
        self._check_conninfo()
        self._pools = LoopPools(self.options)
        self._id = uuid.uuid4().hex

    def _check_conninfo(self) -> None:
        """Let libpq read the URL now, so that a malformed one fails here (its
        message, which may quote the URL, masked)."""
        try:
            psycopg.conninfo.conninfo_to_dict(self.options.conninfo)
        except psycopg.Error as exc:
            raise SessionError(
                f"cannot read the PostgreSQL store URL: {self._redact(str(exc))}",
                location=self.options.location,
                hint="postgresql://USER:PASSWORD@HOST:PORT/DATABASE; percent-encode "
                "special characters in the password",
            ) from None

    @property
    def location(self) -> str:
        """The store's URL with its password masked."""
        return self.options.location

    def __repr__(self) -> str:
        return f"PostgresSessionStore({self.location!r})"

    def _redact(self, text: str) -> str:
        return redact(text, self.options.secrets)

    @contextmanager
    def _failing(self, doing: str) -> Iterator[None]:
        """Turn a database error into `SessionError` saying what failed where."""
        try:
            yield
        except psycopg.Error as exc:
            detail = self._redact(str(exc).strip() or type(exc).__name__)
            raise SessionError(
                f"cannot {doing} in the PostgreSQL session store {self.location}: {detail}",
                location=self.location,
                hint="check that the server is up, the URL is right, and the user may "
                "create and write the seamkit_sessions tables",
            ) from None

    # --- sessions ---------------------------------------------------------------

    async def load(self, name: str) -> StoredSession | None:
        """The session ``name``, or ``None`` when there is none; a row that
        does not parse is a `SessionError` naming the session."""
        raw = await self.load_raw(name)
        if raw is None:
            return None
        return StoredSession.parse(name, raw.transcript, raw.state, location=self.location)

    async def load_raw(self, name: str) -> RawSession | None:
        """The stored JSON texts of ``name`` as they are (``seamkit sessions
        export --raw`` saves a row that no longer parses with it)."""
        with self._failing(f"load session {name!r}"):
            async with self._pools.connection() as conn:
                cur = await conn.execute(_sql.SESSION_LOAD, (name,))
                row = await cur.fetchone()
        return None if row is None else RawSession(row[0], row[1])

    async def save(
        self, name: str, transcript: Sequence[Message], state: Mapping[str, Any]
    ) -> None:
        """Replace the transcript and state of ``name`` and drop its journal,
        in one statement. Inside `lock`, only while this run's lease is still
        its own."""
        text = json.dumps([m.model_dump(mode="json", exclude_none=True) for m in transcript])
        values = {"name": name, "transcript": text, "state": json.dumps(dict(state))}
        holder = _HELD.get().get((self._id, name))
        lost = False
        with self._failing(f"save session {name!r}"):
            async with self._pools.connection() as conn, conn.transaction():
                if holder is not None:
                    cur = await conn.execute(_sql.LEASE_CHECK, (name, holder))
                    lost = await cur.fetchone() is None
                if not lost:
                    await conn.execute(_sql.SESSION_SAVE, values)
        if lost:
            raise SessionError(
                f"session {name!r} not saved: this run's lease on it lapsed and another run "
                "took the session over",
                location=self.location,
                hint="raise lease_seconds in the store URL, or keep the event loop from "
                "blocking for that long",
            )

    # --- the journal (seamkit.JournalStore) -----------------------------------------

    async def journal_append(self, name: str, entries: Sequence[JournalEntry]) -> None:
        """Append ``entries`` to the journal of ``name``, in order, in one
        statement committed before this returns. Inside `lock`, only while
        this run's lease is still its own (else `SessionError`, nothing
        written)."""
        if not entries:
            return
        holder = _HELD.get().get((self._id, name))
        params: dict[str, object] = {
            "name": name,
            "holder": holder,
            "run_ids": [e.run_id for e in entries],
            "kinds": [e.kind for e in entries],
            "call_ids": [e.call_id for e in entries],
            "data": [json.dumps(e.data) for e in entries],
        }
        query = _sql.JOURNAL_APPEND if holder is None else _sql.JOURNAL_APPEND_HELD
        with self._failing(f"journal session {name!r}"):
            async with self._pools.connection() as conn:
                cur = await conn.execute(query, params)
                written = cur.rowcount
        if written != len(entries):
            raise SessionError(
                f"session {name!r} not journaled: this run's lease on it lapsed and another "
                "run took the session over",
                location=self.location,
                hint="raise lease_seconds in the store URL, or keep the event loop from "
                "blocking for that long",
            )

    async def journal_read(self, name: str) -> list[JournalEntry]:
        """The journal of ``name`` in the order it was appended (``[]``: none)."""
        with self._failing(f"read the journal of session {name!r}"):
            async with self._pools.connection() as conn:
                cur = await conn.execute(_sql.JOURNAL_READ, (name,))
                rows = await cur.fetchall()
        return [self._entry(name, *row) for row in rows]

    def _entry(
        self, name: str, run_id: str, kind: str, call_id: str | None, data: str
    ) -> JournalEntry:
        """One journal row as an entry; a row that does not parse is a
        `SessionError` naming the session."""
        try:
            return JournalEntry.model_validate(
                {"run_id": run_id, "kind": kind, "call_id": call_id, "data": json.loads(data)}
            )
        except ValueError as exc:  # json and pydantic errors both are ValueErrors
            reason = " ".join(str(exc).split())[:200]
            raise SessionError(
                f"a journal row of session {name!r} in {self.location} cannot be read: {reason}",
                location=self.location,
                hint=f"`seamkit sessions delete {name} --yes` drops it with the session "
                f"(export what is readable first with `seamkit sessions export {name} --raw`)",
            ) from None

    async def list(self) -> list[str]:
        """Every stored session's name, sorted (by code point)."""
        with self._failing("list the sessions"):
            async with self._pools.connection() as conn:
                cur = await conn.execute(_sql.SESSION_LIST)
                return [row[0] for row in await cur.fetchall()]

    async def delete(self, name: str) -> None:
        """Forget the session ``name`` and its journal (nothing happens when
        there is none)."""
        with self._failing(f"delete session {name!r}"):
            async with self._pools.connection() as conn:
                await conn.execute(_sql.SESSION_DELETE, {"name": name})

    # --- the lease ----------------------------------------------------------------

    def _params(self, name: str, holder: str) -> dict[str, object]:
        return {"name": name, "holder": holder, "lease": self.options.lease_seconds}

    async def _take(self, name: str, holder: str) -> bool:
        with self._failing(f"lock session {name!r}"):
            async with self._pools.connection() as conn:
                cur = await conn.execute(_sql.LEASE_TAKE, self._params(name, holder))
                return await cur.fetchone() is not None

    async def _renew(self, name: str, holder: str) -> bool:
        with self._failing(f"renew the lease on session {name!r}"):
            async with self._pools.connection() as conn:
                cur = await conn.execute(_sql.LEASE_RENEW, self._params(name, holder))
                return cur.rowcount == 1

    async def _release(self, name: str, holder: str) -> None:
        try:
            with self._failing(f"unlock session {name!r}"):
                async with self._pools.connection() as conn:
                    await conn.execute(_sql.LEASE_RELEASE, (name, holder))
        except SessionError as exc:
            lease = self.options.lease_seconds
            log.warning("%s; the lease expires by itself within %gs", exc, lease)

    async def _heartbeat(self, name: str, holder: str) -> None:
        """Renew the lease every third of its length until cancelled."""
        interval = self.options.lease_seconds / 3
        while True:
            await asyncio.sleep(interval)
            try:
                if not await self._renew(name, holder):
                    log.error(
                        "session %r in %s: this run's lease lapsed and another run took the "
                        "session over; this run's transcript will not be saved",
                        name,
                        self.location,
                    )
                    return
            except SessionError as exc:
                log.warning("%s (will retry in %gs)", exc, interval)

    @asynccontextmanager
    async def lock(self, name: str, wait_seconds: float = 10.0) -> AsyncIterator[None]:
        """Hold the session ``name`` for one run: take its lease, waiting up to
        ``wait_seconds`` for another run to let go (then `SessionBusy`), renew
        it while the block runs, and release it at the end."""
        holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        deadline = time.monotonic() + wait_seconds
        delay = _FIRST_POLL
        while not await self._take(name, holder):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise SessionBusy(name, wait_seconds)
            await asyncio.sleep(min(remaining, delay * random.uniform(0.5, 1.0)))
            delay = min(delay * 2, _MAX_POLL)
        key = (self._id, name)
        _HELD.set({**_HELD.get(), key: holder})
        heartbeat = asyncio.create_task(
            self._heartbeat(name, holder), name=f"seamkit-session-lease:{name}"
        )
        try:
            yield
        finally:
            heartbeat.cancel()
            held = dict(_HELD.get())
            held.pop(key, None)
            _HELD.set(held)
            # Shielded: a second cancellation must not leave the lease behind.
            await asyncio.shield(self._release(name, holder))

    async def aclose(self) -> None:
        """Close the pool of the running event loop (the next use opens a new one)."""
        await self._pools.aclose()

    async def __aenter__(self) -> PostgresSessionStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


_SHARED: dict[str, PostgresSessionStore] = {}
_SHARED_GUARD = threading.Lock()


def shared_store(url: str) -> PostgresSessionStore:
    """The one store of this process for ``url``: the kernel opens a store
    each time a run names one by URL, and runs naming the same URL must share
    one pool rather than open one each."""
    with _SHARED_GUARD:
        store = _SHARED.get(url)
        if store is None:
            store = _SHARED[url] = PostgresSessionStore(url)
        return store
