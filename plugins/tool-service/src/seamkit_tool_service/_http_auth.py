"""What HTTP authentication shares on both sides: masking the userinfo of
URLs in anything shown, the ``--token-env [ID=]VAR`` tokens a service takes,
and the subject of a client certificate as the caller's name."""

from __future__ import annotations

import hmac
import os
import re
from collections.abc import Mapping, Sequence

__all__ = ["check_token", "mask_urls", "peer_subject", "read_tokens", "token_specs"]

_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)[^/?#@\s]*@")
TOKENS_ENV = "SEAMKIT_TOOL_SERVICE_TOKENS"
"""The ``ID=VAR`` pairs a server's workers read their tokens by (names, no values)."""


def mask_urls(text: str) -> str:
    """``text`` with the userinfo of every URL in it (``user:password@``)
    written ``***@``."""
    return _USERINFO.sub(r"\1***@", text)


def token_specs(specs: Sequence[str]) -> list[tuple[str, str]]:
    """``(token id, variable)`` for each ``[ID=]VAR``: the id is ``ID``, or
    the variable's name. Raises `ValueError` for an empty part or a
    repeated id."""
    out: list[tuple[str, str]] = []
    for spec in specs:
        token_id, sep, var = spec.partition("=")
        if not sep:
            token_id, var = spec, spec
        token_id, var = token_id.strip(), var.strip()
        if not token_id or not var:
            raise ValueError(f"--token-env '{spec}' is not [ID=]VAR")
        if any(token_id == seen for seen, _ in out):
            raise ValueError(f"--token-env gives the token id '{token_id}' twice")
        out.append((token_id, var))
    return out


def read_tokens(
    pairs: Sequence[tuple[str, str]], environ: Mapping[str, str] | None = None
) -> dict[str, bytes]:
    """The token of each ``(id, VAR)`` by id, read from the environment.
    Raises `ValueError` naming (never showing) a variable unset or empty."""
    env = os.environ if environ is None else environ
    tokens: dict[str, bytes] = {}
    for token_id, var in pairs:
        value = env.get(var, "")
        if not value:
            raise ValueError(f"--token-env {token_id}={var}: the variable {var} is unset or empty")
        tokens[token_id] = value.encode()
    return tokens


def check_token(authorization: str, tokens: Mapping[str, bytes]) -> str | None:
    """The id of the token an ``Authorization: Bearer`` header carries, or
    ``None``. Every token is compared, each in constant time."""
    scheme, _, given = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not given.strip():
        return None
    offered = given.strip().encode()
    found: str | None = None
    for token_id, token in tokens.items():
        if hmac.compare_digest(offered, token) and found is None:
            found = token_id
    return found


def peer_subject(peercert: object) -> str | None:
    """The subject of a certificate as `ssl.SSLSocket.getpeercert` gives it,
    written ``CN=...,O=...`` (``None`` without one)."""
    if not isinstance(peercert, dict):
        return None
    subject = peercert.get("subject") or ()
    names = {
        "commonName": "CN",
        "organizationName": "O",
        "organizationalUnitName": "OU",
        "countryName": "C",
        "localityName": "L",
        "stateOrProvinceName": "ST",
        "emailAddress": "emailAddress",
    }
    parts = [f"{names.get(k, k)}={v}" for rdn in subject for k, v in rdn]
    return ",".join(parts) or None
