"""A store URL taken apart: what libpq connects with, what the store tunes
(its own query options), and the URL as it may be shown (password masked).

Nothing here imports psycopg: a URL can be read, checked and masked without it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, quote, unquote, unquote_plus, urlencode

from seamkit import SessionError

__all__ = ["SCHEMES", "StoreOptions", "mask_url", "parse_url", "redact"]

SCHEMES = ("postgresql", "postgres")
"""The URL schemes the store serves (libpq accepts both)."""

MASK = "***"

# name -> (default, smallest allowed, is a whole number)
_OPTIONS: dict[str, tuple[float, float, bool]] = {
    "pool_min_size": (1, 0, True),
    "pool_max_size": (10, 1, True),
    "pool_timeout": (30.0, 0.1, False),
    "lease_seconds": (30.0, 0.3, False),
}
_HINT = (
    "use postgresql://USER:PASSWORD@HOST:PORT/DATABASE; the store's own options "
    "(pool_min_size, pool_max_size, pool_timeout, lease_seconds) go in the query string, "
    "anything else there is a libpq parameter"
)


@dataclass(frozen=True, slots=True)
class StoreOptions:
    """A parsed store URL: ``conninfo`` for libpq (the URL less the store's
    options), the store's options, ``location`` (the URL with its password
    masked: the only form ever shown) and the ``secrets`` to mask in any text
    (the password, raw and percent-encoded). Its ``repr`` shows neither
    ``conninfo`` nor ``secrets``."""

    conninfo: str = field(repr=False)
    location: str
    secrets: tuple[str, ...] = field(repr=False)
    pool_min_size: int = 1
    pool_max_size: int = 10
    pool_timeout: float = 30.0
    lease_seconds: float = 30.0
    connect_timeout_given: bool = False
    application_name_given: bool = False


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret replaced by ``***``."""
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def _split(url: str) -> tuple[str, str, str, str, str]:
    """``scheme, userinfo, hosts_and_path, query, fragment`` of a libpq URL,
    read by hand: libpq URLs may list several hosts, which urllib rejects.
    The user part runs to the *last* ``@`` before the query, so that a
    password with a stray ``/`` or ``@`` in it is still taken for one."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise ValueError("no scheme")
    rest, _, fragment = rest.partition("#")
    rest, _, query = rest.partition("?")
    userinfo, at, hosts_and_path = rest.rpartition("@")
    if not at:
        userinfo, hosts_and_path = "", rest
    return scheme, userinfo, hosts_and_path, query, fragment


def _secrets(url: str) -> tuple[str, ...]:
    """The password of ``url`` in every form it may appear in a message: as
    this module reads the URL, and as libpq does (user part up to the first
    ``@`` unless a ``/`` comes first), each as written and decoded."""
    try:
        _, userinfo, rest, query, _ = _split(url)
    except ValueError:
        return ()
    found: set[str] = set()
    authority = f"{userinfo}@{rest}" if userinfo else rest
    first_at, first_slash = authority.find("@"), authority.find("/")
    candidates = [userinfo]
    if first_at >= 0 and (first_slash < 0 or first_at < first_slash):
        candidates.append(authority[:first_at])
    for candidate in candidates:
        _, colon, password = candidate.partition(":")
        if colon and password:
            found |= {password, unquote(password)}
    for pair in query.split("&"):  # as written, and decoded
        key, _, value = pair.partition("=")
        if unquote_plus(key) == "password" and value:
            found |= {value, unquote(value), unquote_plus(value)}
    found.discard("")
    return tuple(found)


def mask_url(url: str) -> str:
    """``url`` with its password (in the user part or the query) shown as ``***``."""
    try:
        scheme, userinfo, rest, query, _ = _split(url)
    except ValueError:
        return redact(url, _secrets(url))
    user, colon, password = userinfo.partition(":")
    shown = f"{scheme}://"
    if userinfo:
        shown += f"{user}:{MASK}@" if colon and password else f"{user}@"
    shown += rest
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        shown += "?" + urlencode(
            [(k, MASK if k == "password" else v) for k, v in pairs], safe=",/:*"
        )
    return redact(shown, _secrets(url))


def _number(name: str, text: str, location: str, secrets: tuple[str, ...]) -> float:
    default, least, whole = _OPTIONS[name]
    try:
        value = float(text)
        if not math.isfinite(value) or value < least or (whole and not value.is_integer()):
            raise ValueError
    except ValueError:
        kind = "a whole number" if whole else "a number"
        raise SessionError(
            f"store option {name}={redact(text, secrets)!r} must be {kind} of at least {least:g}",
            location=location,
            hint=f"e.g. ?{name}={default:g}",
        ) from None
    return value


def parse_url(url: str, overrides: Mapping[str, float | int | None] | None = None) -> StoreOptions:
    """Read a ``postgresql://`` (or ``postgres://``) URL; ``overrides`` replace
    options given in its query. Raises `SessionError` (password masked) for
    another scheme or a bad option; libpq checks the rest when it connects."""
    secrets = _secrets(url)
    location = mask_url(url)
    try:
        scheme, userinfo, rest, query, _ = _split(url)
    except ValueError:
        scheme, userinfo, rest, query = "", "", "", ""
    if scheme not in SCHEMES:
        raise SessionError(
            "not a PostgreSQL store URL (postgresql://... or postgres://...)",
            location=location,
            hint=_HINT,
        )
    values: dict[str, float] = {name: default for name, (default, _, _) in _OPTIONS.items()}
    kept: list[tuple[str, str]] = []
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key in _OPTIONS:
            values[key] = _number(key, value, location, secrets)
        else:
            kept.append((key, value))
    for key, given in (overrides or {}).items():
        if key not in _OPTIONS:
            raise SessionError(f"unknown store option {key!r}", location=location, hint=_HINT)
        if given is not None:
            values[key] = _number(key, str(given), location, secrets)
    if values["pool_min_size"] > values["pool_max_size"]:
        raise SessionError(
            f"pool_min_size ({values['pool_min_size']:g}) is larger than pool_max_size "
            f"({values['pool_max_size']:g})",
            location=location,
            hint="lower pool_min_size or raise pool_max_size",
        )
    conninfo = f"{scheme}://" + (f"{userinfo}@" if userinfo else "") + rest
    if kept:
        conninfo += "?" + urlencode(kept, quote_via=quote, safe=",/:")
    keys = {key for key, _ in kept}
    return StoreOptions(
        conninfo=conninfo,
        location=location,
        secrets=secrets,
        pool_min_size=int(values["pool_min_size"]),
        pool_max_size=int(values["pool_max_size"]),
        pool_timeout=values["pool_timeout"],
        lease_seconds=values["lease_seconds"],
        connect_timeout_given="connect_timeout" in keys,
        application_name_given="application_name" in keys,
    )
