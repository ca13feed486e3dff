"""`ServeConfig`: the manifest's ``serve:`` section, and the API keys a
server accepts."""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Mapping

import seamkit
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ANONYMOUS", "Keys", "ServeConfig"]

ANONYMOUS = "anonymous"
"""The ``api_key_id`` of requests to a server that has no API keys."""


class ServeConfig(BaseModel):
    """How ``seamkit serve`` serves the app (``serve:`` in the manifest)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    api_keys: list[seamkit.Secret[str]] = Field(
        default_factory=list,
        description="API keys clients must send as 'Authorization: Bearer KEY', best as "
        "'${secret:VAR}' each; SEAMKIT_API_KEYS (comma-separated) adds more. With none, "
        "the server only listens on loopback.",
    )
    max_body_bytes: int = Field(
        default=1_000_000, gt=0, description="Largest request body accepted, in bytes."
    )
    max_messages: int = Field(default=500, gt=0, description="Most messages one request may carry.")
    drain_seconds: float = Field(
        default=30.0,
        ge=0,
        description="On SIGTERM, how long runs in flight may go on before they are cancelled.",
    )


def key_id(key: str) -> str:
    """A stable name for a key that does not reveal it: ``key-`` and 16 hex
    digits of its SHA-256."""
    return "key-" + hashlib.sha256(key.encode()).hexdigest()[:16]


class Keys:
    """The API keys a server accepts, by the id that names each in sessions
    and in the run's ``api_key_id``."""

    def __init__(self, keys: Mapping[str, str]) -> None:
        self._by_id = dict(keys)

    @classmethod
    def gather(cls, config: ServeConfig, environ: Mapping[str, str] | None = None) -> Keys:
        """The manifest's keys and those of ``SEAMKIT_API_KEYS``."""
        env = os.environ if environ is None else environ
        plain = [k.get_secret_value() for k in config.api_keys]
        plain += [k.strip() for k in env.get("SEAMKIT_API_KEYS", "").split(",")]
        return cls({key_id(k): k for k in plain if k})

    def __bool__(self) -> bool:
        return bool(self._by_id)

    def __len__(self) -> int:
        return len(self._by_id)

    def __repr__(self) -> str:
        return f"Keys({len(self)} keys)"

    @property
    def secrets(self) -> list[str]:
        """The keys' plain texts, for `seamkit.redact`."""
        return list(self._by_id.values())

    def identify(self, presented: str | None) -> str | None:
        """The id of the key ``presented``, ``None`` when it is no key of
        ours; `ANONYMOUS` for any request when the server has no keys."""
        if not self._by_id:
            return ANONYMOUS
        if not presented:
            return None
        given = presented.encode()
        found = None
        for kid, key in self._by_id.items():  # every key compared: no timing hint
            if hmac.compare_digest(given, key.encode()):
                found = kid
        return found
