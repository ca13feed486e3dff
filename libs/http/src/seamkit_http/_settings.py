"""`ConnectionSettings`: the config fields both HTTP model providers take
about their connections and the body they send, declared once; each
provider's config model inherits them. Loaded with pydantic, when a config
model first loads (importing `seamkit_http` loads neither)."""

from __future__ import annotations

from typing import Any

import seamkit
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ConnectionSettings"]


class ConnectionSettings(BaseModel):
    """Time-outs, retries, the connection limit, more headers and more body
    fields: what a provider's config says about how it talks to its server.
    `Endpoint` reads the first four."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    timeout_seconds: float = Field(
        default=600.0,
        gt=0,
        description="Longest wait for the server's next bytes (the answer's start, or "
        "the next piece of a stream).",
    )
    connect_timeout_seconds: float = Field(
        default=5.0, gt=0, description="Longest wait to open a connection."
    )
    max_retries: int = Field(
        default=2,
        ge=0,
        description="Retries after a 408, 409, 429 or 5xx answer (529, overloaded, "
        "among them), a time-out or a lost connection, before any of the answer "
        "arrived; the server's retry-after is honoured.",
    )
    max_connections: int = Field(
        default=1000, gt=0, description="Connections open at once to the server, at most."
    )
    headers: dict[str, str | seamkit.Secret[str]] = Field(
        default_factory=dict,
        description="More HTTP headers for every request (a beta flag, say).",
    )
    extra_body: dict[str, Any] = Field(
        default_factory=dict,
        description="More fields for every request body (a hook's additional_params "
        "win over these).",
    )
