"""`ServeConfig`: the manifest's ``serve:`` section, and the API keys a
server accepts."""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import seamkit
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ._error import ApiError

__all__ = ["ANONYMOUS", "ApiKey", "Caller", "Keys", "ServeConfig"]

ANONYMOUS = "anonymous"
"""The ``api_key_id`` (and the run's ``user``) of requests to a server that
has no API keys."""


_KEY_ID = re.compile(r"[A-Za-z0-9._:@-]{1,64}")


class ApiKey(BaseModel):
    """One API key in ``serve.api_keys``: the key, the identity its requests
    act as, and which users it may name in a request's ``user``. A plain
    key (``'${secret:VAR}'``) is an entry with only ``key``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str | None = Field(
        default=None,
        description="The key's identity: its sessions' owner, the run's api_key_id, and "
        "the run's user unless the key may assert users (1 to 64 letters, digits and "
        ". _ : @ -). Default: 'key-' and 16 hex digits of the key's SHA-256.",
    )
    key: seamkit.Secret[str] = Field(description="The key, best as '${secret:VAR}'.")
    assert_users: bool | list[str] = Field(
        default=False,
        description="Whether the request's 'user' field is the run's user: true (any "
        "user), a list (those users; another is a 403), or false (the field is ignored and "
        "the run's user is the key's id).",
    )

    @model_validator(mode="before")
    @classmethod
    def _plain(cls, data: object) -> object:
        """A plain key is an entry with only ``key``."""
        return data if isinstance(data, dict) else {"key": data}

    @field_validator("id")
    @classmethod
    def _id(cls, value: str | None) -> str | None:
        if value is not None and not _KEY_ID.fullmatch(value):
            raise ValueError(f"the id must be 1 to 64 letters, digits and . _ : @ -, got {value!r}")
        return value

    @field_validator("assert_users", mode="before")
    @classmethod
    def _users(cls, value: object) -> object:
        names = isinstance(value, list) and all(isinstance(v, str) and v for v in value)
        if not (isinstance(value, bool) or names):
            raise ValueError(
                f"assert_users must be true, false or a list of user names, got {value!r}"
            )
        return value


class ServeConfig(BaseModel):
    """How ``seamkit serve`` serves the app (``serve:`` in the manifest)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    api_keys: list[ApiKey] = Field(
        default_factory=list,
        description="API keys clients must send as 'Authorization: Bearer KEY': each a "
        "plain key, best as '${secret:VAR}', or {id, key, assert_users}; "
        "SEAMKIT_API_KEYS (comma-separated) adds plain ones. With none, the server only "
        "listens on loopback.",
    )
    max_body_bytes: int = Field(
        default=1_000_000, gt=0, description="Largest request body accepted, in bytes."
    )
    max_messages: int = Field(default=500, gt=0, description="Most messages one request may carry.")
    client_tools: Literal["pass", "refuse"] = Field(
        default="pass",
        description="Whether a request may bring the client's own tools (tools, tool_choice, "
        "parallel_tool_calls): pass (the model sees them beside the app's, and its calls to "
        "them are handed back to the client) or refuse (a 400).",
    )
    client_tool_ttl_seconds: float = Field(
        default=3600.0,
        gt=0,
        description="How long the calls handed to a client can be answered; after that a "
        "result is a 400 and the client sends a new message instead.",
    )
    idempotency_seconds: float = Field(
        default=86_400.0,
        gt=0,
        description="How long the answer to a request with an Idempotency-Key is kept: a "
        "repeat of the same request with the same key by the same API key within it gets "
        "that answer again, and the app does not run again.",
    )
    max_session_messages: int = Field(
        default=10_000,
        gt=0,
        description="Most messages a client's session may hold: a request that would take it "
        "over is a 400 session_full, and nothing runs.",
    )
    max_session_bytes: int = Field(
        default=20_000_000,
        gt=0,
        description="Most bytes a client's session's transcript may take (as stored JSON): "
        "a request that would take it over is a 400 session_full, and nothing runs.",
    )
    header_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        description="How long a client may take to send a request's headers, from its first "
        "byte (or the connection's opening); past it the connection is closed.",
    )
    body_timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        description="How long a client may take to send a request's body; past it the "
        "answer is a 408 and the connection is closed.",
    )
    drain_seconds: float = Field(
        default=30.0,
        ge=0,
        description="On SIGTERM, how long runs in flight may go on before they are cancelled.",
    )

    @field_validator("api_keys")
    @classmethod
    def _distinct(cls, keys: list[ApiKey]) -> list[ApiKey]:
        """Each id names one key."""
        seen: set[str] = set()
        for entry in keys:
            if entry.id is not None and entry.id in seen:
                raise ValueError(f"the id {entry.id!r} names two keys; give each key its own id")
            if entry.id is not None:
                seen.add(entry.id)
        return keys


def key_id(key: str) -> str:
    """A stable name for a key that does not reveal it: ``key-`` and 16 hex
    digits of its SHA-256."""
    return "key-" + hashlib.sha256(key.encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Caller:
    """Who a request comes from: its key's ``id`` and the users the key may
    name (``True``: any)."""

    id: str
    asserts: bool | frozenset[str] = False

    def user(self, asked: str | None) -> str:
        """The run's ``user`` for a request whose ``user`` field is ``asked``:
        the key's id unless the key may name that user; a user it may not
        name, when it may name some, is a 403."""
        if asked is None or self.asserts is False:
            return self.id
        if self.asserts is True or asked in self.asserts:
            return asked
        raise ApiError(
            403,
            f"this API key may not act as user {asked!r}; the users it may name are in "
            "its serve.api_keys entry (assert_users)",
            type="permission_error",
            param="user",
            code="user_not_allowed",
        )


class Keys:
    """The API keys a server accepts, each with the `Caller` its requests
    are."""

    def __init__(self, keys: Mapping[str, Caller]) -> None:
        self._by_key = dict(keys)

    @classmethod
    def gather(cls, config: ServeConfig, environ: Mapping[str, str] | None = None) -> Keys:
        """The manifest's keys and those of ``SEAMKIT_API_KEYS``."""
        env = os.environ if environ is None else environ
        found: dict[str, Caller] = {}
        for entry in config.api_keys:
            key = entry.key.get_secret_value()
            if not key:
                continue
            asserts = entry.assert_users
            found[key] = Caller(
                entry.id or key_id(key),
                asserts if isinstance(asserts, bool) else frozenset(asserts),
            )
        for key in (k.strip() for k in env.get("SEAMKIT_API_KEYS", "").split(",")):
            if key and key not in found:
                found[key] = Caller(key_id(key))
        return cls(found)

    def __bool__(self) -> bool:
        return bool(self._by_key)

    def __len__(self) -> int:
        return len(self._by_key)

    def __repr__(self) -> str:
        return f"Keys({len(self)} keys)"

    @property
    def secrets(self) -> list[str]:
        """The keys' plain texts, for `seamkit.redact`."""
        return list(self._by_key)

    def identify(self, presented: str | None) -> Caller | None:
        """The caller of the key ``presented``, ``None`` when it is no key of
        ours; an anonymous caller, who names no user, for any request when
        the server has no keys."""
        if not self._by_key:
            return Caller(ANONYMOUS)
        if not presented:
            return None
        given = presented.encode()
        found = None
        for key, caller in self._by_key.items():  # every key compared: no timing hint
            if hmac.compare_digest(given, key.encode()):
                found = caller
        return found
