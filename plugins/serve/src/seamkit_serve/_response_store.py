"""Stored responses of the Responses API: what ``GET /v1/responses/{id}``
returns and what ``previous_response_id`` continues.

A stored response lives in the app's session store, beside the sessions,
as an entry named ``<api_key_id>/responses/<id>`` (a name no session can
have: a session's name has no ``/``). Its state holds the response as the
client got it, the session it ran on, and how long that session's
transcript was after it. Every lookup is under the asking key's id, so
another key's response id is no response here.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass

import seamkit

__all__ = ["RESPONSE_ID", "ResponseStore", "StoredResponse", "new_response_id"]

RESPONSE_ID = re.compile(r"resp_[0-9a-f]{32}")
"""What a response id this server made looks like."""

_KEY = "seamkit.serve.response"


def new_response_id() -> str:
    """A fresh response id: ``resp_`` and 32 hex digits."""
    return f"resp_{uuid.uuid4().hex}"


@dataclass(frozen=True, slots=True)
class StoredResponse:
    """One stored response: the ``body`` the client got (JSON text), the
    ``session`` it ran on (as the client names it: ``None`` when it ran on
    none) and the ``length`` of that session's transcript after it."""

    body: str
    session: str | None
    length: int

    def response(self) -> dict[str, object]:
        """The response object, as the client got it."""
        parsed: dict[str, object] = json.loads(self.body)
        return parsed


class ResponseStore:
    """Stored responses, in the app's session store, each under its key."""

    def __init__(self, store: seamkit.SessionStore) -> None:
        self._store = store

    @staticmethod
    def _name(key_id: str, response_id: str) -> str:
        return f"{key_id}/responses/{response_id}"

    async def save(self, key_id: str, response_id: str, stored: StoredResponse) -> None:
        """Keep ``stored`` as ``key_id``'s response ``response_id``."""
        state = {_KEY: {"body": stored.body, "session": stored.session, "length": stored.length}}
        await self._store.save(self._name(key_id, response_id), (), state)

    async def load(self, key_id: str, response_id: str) -> StoredResponse | None:
        """``key_id``'s response ``response_id`` (``None``: there is none for
        that key, or the id is not one this server makes)."""
        if not RESPONSE_ID.fullmatch(response_id):
            return None
        entry = await self._store.load(self._name(key_id, response_id))
        raw = entry.state.get(_KEY) if entry is not None else None
        if not isinstance(raw, dict):
            return None
        body, session, length = raw.get("body"), raw.get("session"), raw.get("length")
        if not (isinstance(body, str) and isinstance(length, int)):
            return None
        return StoredResponse(body, session if isinstance(session, str) else None, length)
