"""The sessions the server makes for conversations that name none, once they
hand calls to the client.

A stateless client (no ``X-Seamkit-Session``) that uses its own tools talks
on a session the server made (``run-`` and 24 hex digits), named by the ids
of the calls it was handed. The session is kept while the conversation goes
on, so that what the client resends is matched against what the server
checked (its results passed ``on_post_tool_use`` once, and only the
session's copy reaches the model again), and removed after
``serve.client_tool_ttl_seconds`` without a request: each use writes the
session's expiry beside it (`touch`), and a sweep deletes the expired ones
(never one whose run waits for a person's decision).
"""

from __future__ import annotations

import logging
import time

import seamkit

from ._background import Background

__all__ = ["Conversations"]

log = logging.getLogger("seamkit.serve")

_SUFFIX = "/expires"
_SWEEP_SECONDS = 300.0
"""At most one sweep in this many seconds (or in the time-to-live, when shorter)."""


class Conversations:
    """When each server-made conversation expires, in ``store``."""

    def __init__(self, store: seamkit.SessionStore | None, ttl: float) -> None:
        self.store = store
        self.ttl = ttl
        self._background = Background(min(ttl, _SWEEP_SECONDS), at_once=True)

    async def touch(self, session: str) -> None:
        """``session`` (the store's name) was used: it lives ``ttl`` more
        seconds. A failure is logged: the conversation goes on."""
        if self.store is None:
            return
        try:
            await self.store.save(session + _SUFFIX, (), {"expires": time.time() + self.ttl})
        except seamkit.SeamkitError as exc:
            log.warning("could not note when a conversation expires: %s", exc.message)
        self._background.now_and_then(self._sweep)

    async def _sweep(self) -> None:
        """Delete the conversations that expired (of every API key), and
        their expiry records; one in use, or waiting for a decision, stays."""
        store = self.store
        assert store is not None
        try:
            names = await store.list()
            for record in names:
                session = record.removesuffix(_SUFFIX)
                if session == record or not session.rpartition("/")[2].startswith("run-"):
                    continue
                try:
                    found = await store.load(record)
                    expires = found.state.get("expires") if found is not None else None
                    if isinstance(expires, int | float) and expires > time.time():
                        continue
                    async with store.lock(session, 0):
                        held = await store.load(session)
                        if held is None or not held.pending:
                            await store.delete(session)
                            await store.delete(record)
                except seamkit.SessionBusy:
                    continue
        except seamkit.SeamkitError as exc:
            log.warning("could not sweep expired conversations: %s", exc.message)
