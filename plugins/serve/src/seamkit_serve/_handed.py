"""The ids of the calls a server hands to its client (client tools).

A model's own call id never leaves the server: the client gets an id the
server made, ``call_`` and 34 URL-safe base64 characters (39 in all; OpenAI
takes up to 40), holding

- the conversation's ``nonce`` (12 bytes): a server-made session's own
  name (``run-<24 hex digits>``), or a digest of the client's session name;
- the call's place in its turn (1 byte) and an expiry (4 bytes, Unix seconds);
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
import os
import re
import secrets
import struct
from collections.abc import Sequence
from dataclasses import dataclass

import seamkit

__all__ = [
    "KEY_ENV",
    "CallIds",
    "Handed",
    "Handout",
    "answering",
    "conversation_nonce",
    "made_session",
]

KEY_ENV = "SEAMKIT_SERVE_CALL_KEY"
"""The environment variable with the key (hex) a server's workers share; the
``seamkit serve`` supervisor sets it when it is not set."""

_PREFIX = "call_"
_LAYOUT = struct.Struct(">12sBI8s")
_HEAD = struct.Struct(">12sBI")
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
        if key is None:
            shared = os.environ.get(KEY_ENV, "")
            key = bytes.fromhex(shared) if shared else secrets.token_bytes(32)
        self._key = key

    @classmethod
    def for_app(cls, state_key: seamkit.Secret[str] | None) -> CallIds:
        """The ids of an app: keyed by its ``settings.state_key`` when it has
        one (they outlive a restart), else by the key the ``seamkit serve``
        supervisor shares with its workers (`KEY_ENV`), else a fresh one."""
        value = state_key.get_secret_value() if state_key is not None else ""
        if not value:
            return cls()
        return cls(hmac.new(value.encode(), b"seamkit-serve call ids", hashlib.sha256).digest())

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
        head = _HEAD.pack(nonce, call.index % 256, expires)
        mac = self._mac(head, call, caller, session)
        raw = head + mac
        return _PREFIX + base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @staticmethod
    def decode(given: str) -> Handed | None:
        """What ``given`` says, or ``None`` when it is no id this server makes."""
        if not given.startswith(_PREFIX) or len(given) != len(_PREFIX) + 34:
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
        if handed is None or handed.index != call.index % 256:
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
    """The conversation nonce of the handed-out call the request's last tool
    result answers, when its id is one this server makes."""
    for message in reversed(sent):
        if message.role == "tool":
            handed = CallIds.decode(message.tool_call_id or "")
            return None if handed is None else handed.nonce
    return None
