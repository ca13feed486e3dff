"""The ids of the calls a server hands to its client (client tools).

A model's own call id never leaves the server: the client gets an id the
server made, ``call_`` and 35 URL-safe base64 characters (40 in all, the
most OpenAI takes), holding

- the conversation's ``nonce`` (12 bytes): a server-made session's own
  name (``run-<24 hex digits>``), or a digest of the client's session name;
- the call's place in its turn (2 bytes) and an expiry (4 bytes, Unix seconds);
- a MAC (8 bytes, HMAC-SHA256 under the server's key) over all of that, the
  tool's name, a digest of the arguments, the API key's identity and the
  session.

So an id can be checked against the call it came with, without the store:
a conversation the server no longer keeps (the client resends it whole)
still holds only pairs the server handed out.

A result is taken only for an id that decodes, whose MAC matches the call
the session holds at that place (so the same key, conversation, tool and
arguments), and that has not expired. Nothing else in the id is secret:
the MAC is what a forger cannot make.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import struct
from collections.abc import Sequence
from dataclasses import dataclass

import seamkit

__all__ = [
    "KEY_RECORD",
    "CallIds",
    "Handed",
    "Handout",
    "answering",
    "conversation_nonce",
    "made_session",
]

KEY_RECORD = "seamkit/serve/call-ids"
"""The store's record of the key of an app without ``settings.state_key``
(three parts: no client's session can have the name)."""

_PREFIX = "call_"
_LAYOUT = struct.Struct(">12sHI8s")
_HEAD = struct.Struct(">12sHI")
_PLACES = 1 << 16
_ENCODED = 35
"""Characters of the encoded 26 bytes."""
_MADE = re.compile(r"run-([0-9a-f]{24})")


@dataclass(frozen=True, slots=True)
class Handed:
    """What an id the server made says."""

    nonce: bytes
    index: int
    expires: int
    mac: bytes


def conversation_nonce(session: str) -> bytes:
    """The 12-byte nonce of the client-facing session name ``session``: a
    server-made session's own, else a digest of the name."""
    made = _MADE.fullmatch(session)
    if made is not None:
        return bytes.fromhex(made.group(1))
    return hashlib.sha256(session.encode()).digest()[:12]


def made_session(nonce: bytes) -> str:
    """The name of the server-made session whose nonce is ``nonce``."""
    return f"run-{nonce.hex()}"


class CallIds:
    """Makes and checks the ids of handed-out calls under one key."""

    def __init__(self, key: bytes | None = None) -> None:
        self._key = secrets.token_bytes(32) if key is None else key

    @classmethod
    async def for_app(
        cls, state_key: seamkit.Secret[str] | None, store: seamkit.SessionStore | None
    ) -> CallIds:
        """The ids of an app: keyed by its ``settings.state_key`` when it has
        one, else by a key kept in its session store (`KEY_RECORD`, made by
        the first worker that needs it), so that every worker and every
        restart on that store checks the same ids."""
        value = state_key.get_secret_value() if state_key is not None else ""
        if value:
            return cls(hmac.new(value.encode(), b"seamkit-serve call ids", hashlib.sha256).digest())
        if store is None:
            return cls()
        async with store.lock(KEY_RECORD, 30):
            found = await store.load(KEY_RECORD)
            kept = found.state.get("key") if found is not None else None
            if isinstance(kept, str) and len(kept) == 64:
                return cls(bytes.fromhex(kept))
            key = secrets.token_bytes(32)
            await store.save(KEY_RECORD, (), {"key": key.hex()})
            return cls(key)

    def __repr__(self) -> str:
        return "CallIds(<key>)"

    def _mac(self, head: bytes, call: seamkit.ToolCall, caller: str, session: str) -> bytes:
        digest = seamkit.arguments_digest(call.name, call.arguments)
        text = "\x1f".join((call.name, digest, caller, session)).encode()
        return hmac.new(self._key, head + text, hashlib.sha256).digest()[:8]

    def issue(self, call: seamkit.ToolCall, *, caller: str, session: str, expires: int) -> str:
        """The id the client gets for ``call`` (the model's), in the client's
        ``session`` of API key identity ``caller``, good until ``expires``."""
        nonce = conversation_nonce(session)
        head = _HEAD.pack(nonce, call.index % _PLACES, expires)
        mac = self._mac(head, call, caller, session)
        raw = head + mac
        return _PREFIX + base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @staticmethod
    def decode(given: str) -> Handed | None:
        """What ``given`` says, or ``None`` when it is no id this server makes."""
        if not given.startswith(_PREFIX) or len(given) != len(_PREFIX) + _ENCODED:
            return None
        try:
            raw = base64.urlsafe_b64decode(given[len(_PREFIX) :] + "==")
        except (ValueError, TypeError):
            return None
        if len(raw) != _LAYOUT.size:
            return None
        nonce, index, expires, mac = _LAYOUT.unpack(raw)
        return Handed(nonce, index, expires, mac)

    def matches(self, given: str, call: seamkit.ToolCall, *, caller: str, session: str) -> bool:
        """Whether ``given`` is the id made for ``call`` in ``session`` for
        ``caller`` (its expiry is not checked here: `Handed.expires`)."""
        handed = self.decode(given)
        if handed is None or handed.index != call.index % _PLACES:
            return False
        if handed.nonce != conversation_nonce(session):
            return False
        head = _HEAD.pack(handed.nonce, handed.index, handed.expires)
        return hmac.compare_digest(handed.mac, self._mac(head, call, caller, session))


@dataclass(frozen=True, slots=True)
class Handout:
    """How a server hands calls to one request's client: under ``ids``, for
    the API key identity ``caller``, good for ``ttl`` seconds."""

    ids: CallIds
    caller: str
    ttl: float

    def tool_calls(
        self, calls: Sequence[seamkit.ToolCall], session: str, now: float
    ) -> list[dict[str, object]]:
        """``calls`` as an answer's ``tool_calls``, each with the id issued
        for it in ``session``."""
        expires = int(now + self.ttl)
        return [
            {
                "id": self.ids.issue(call, caller=self.caller, session=session, expires=expires),
                "type": "function",
                "function": {"name": call.name, "arguments": call.raw_arguments},
            }
            for call in calls
        ]


def answering(sent: Sequence[seamkit.Message]) -> bytes | None:
    """The conversation nonce of the latest handed-out call the request holds
    (a result's, or a call's), when its id is one this server makes."""
    for message in reversed(sent):
        ids = [message.tool_call_id or ""] if message.role == "tool" else []
        ids += [c.id for c in reversed(message.tool_calls or ())]
        for given in ids:
            handed = CallIds.decode(given)
            if handed is not None:
                return handed.nonce
    return None
