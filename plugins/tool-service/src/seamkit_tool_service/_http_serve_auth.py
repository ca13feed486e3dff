"""How ``seamkit tool-service serve --transport http`` authenticates its
callers: bearer tokens (``--token-env [ID=]VAR``) and TLS (``--certfile``,
``--keyfile``, ``--ca-certs`` to require client certificates). Bound beyond
loopback without either check, it refuses to start."""

from __future__ import annotations

import ipaddress
import ssl
from dataclasses import dataclass
from typing import Any

import seamkit

from ._http_auth import read_tokens, token_specs

__all__ = ["HttpServerAuth", "is_loopback"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class HttpServerAuth:
    """The checked auth options of one HTTP server (token values stay in
    the environment: only ids and variable names are kept)."""

    tokens: tuple[tuple[str, str], ...] = ()
    certfile: str | None = None
    keyfile: str | None = None
    ca_certs: str | None = None

    @classmethod
    def from_options(
        cls,
        host: str,
        token_env: tuple[str, ...],
        certfile: str | None,
        keyfile: str | None,
        ca_certs: str | None,
    ) -> HttpServerAuth:
        """The options, checked. Raises `seamkit.SeamkitError` (one line and
        a hint) for a token variable unset, TLS options that do not fit, or
        a non-loopback host with neither tokens nor client certificates."""
        try:
            pairs = token_specs(token_env)
            read_tokens(pairs)  # here, so that a missing one is one clear line
        except ValueError as exc:
            raise seamkit.SeamkitError(
                str(exc), hint="export the token's variable, then pass --token-env ID=VAR"
            ) from None
        if (keyfile or ca_certs) and not certfile:
            raise seamkit.SeamkitError(
                "--keyfile and --ca-certs need --certfile (TLS)",
                hint="pass --certfile server.pem --keyfile server.key",
            )
        if not pairs and not ca_certs and not is_loopback(host):
            raise seamkit.SeamkitError(
                f"refusing to serve on {host} (beyond loopback) without authentication",
                hint="pass --token-env ID=VAR (bearer tokens) or --ca-certs (client "
                "certificates), or bind --host 127.0.0.1",
            )
        return cls(tuple(pairs), certfile, keyfile, ca_certs)

    def banner(self) -> str:
        """What the start-up line says about auth: token ids, never values."""
        parts = []
        if self.tokens:
            parts.append("tokens: " + ", ".join(i for i, _ in self.tokens))
        if self.ca_certs:
            parts.append("client certificates required")
        return f" [{'; '.join(parts)}]" if parts else ""

    def uvicorn_options(self) -> dict[str, Any]:
        """The TLS keywords of `uvicorn.Config`."""
        if not self.certfile:
            return {}
        options: dict[str, Any] = {"ssl_certfile": self.certfile, "ssl_keyfile": self.keyfile}
        if self.ca_certs:
            options["ssl_ca_certs"] = self.ca_certs
            options["ssl_cert_reqs"] = ssl.CERT_REQUIRED
            options["http"] = "seamkit_tool_service._http_tls:PeerCertH11Protocol"
        return options
