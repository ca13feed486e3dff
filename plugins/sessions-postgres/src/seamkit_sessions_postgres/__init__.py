"""seamkit plugin: a session store for ``postgresql://`` URLs.

Transcripts and session state live in PostgreSQL, so that servers on several
machines share them; runs on one session take turns across all of them::

    sessions:
      store: postgresql://seamkit@db.internal:5432/app?pool_max_size=20

    seamkit run app.yaml "hi" --session ann --store postgresql://...

libpq reads the password from ``PGPASSWORD`` or ``~/.pgpass`` when the URL has
none (``${env:VAR}`` in the manifest works too).

The store's own options ride in the URL's query string (``pool_min_size``,
``pool_max_size``, ``pool_timeout``, ``lease_seconds``); every other query
parameter is handed to libpq (``sslmode``, ``connect_timeout``, ``options``...).
The URL's password is masked in every message, log line and ``repr``.

Importing this module costs next to nothing: psycopg loads when a store is
opened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import seamkit
from seamkit.plugins import lazy_module

if TYPE_CHECKING:
    from seamkit.plugins import RegisterStore

    from ._sql import SCHEMA as SCHEMA
    from ._store import PostgresSessionStore as PostgresSessionStore
    from ._url import SCHEMES as SCHEMES

__getattr__, __dir__, __all__ = lazy_module(
    __name__,
    {
        "SCHEMA": "._sql",
        "PostgresSessionStore": "._store",  # psycopg loads only when a store is opened
        "SCHEMES": "._url",
    },
    defined=["open_store", "register_session_stores"],
)
__seamkit_api__ = 1


def open_store(url: str) -> PostgresSessionStore:
    """The store for ``url``, one per URL in a process (runs that name the
    same URL share its connection pool). Raises `seamkit.SessionError` for a
    malformed URL or option; nothing connects until the store is used."""
    from ._store import shared_store  # lazy: psycopg loads only when a store is opened

    return shared_store(url)


@seamkit.hookimpl
def register_session_stores(register: RegisterStore) -> None:
    """Register the ``postgresql`` and ``postgres`` URL schemes."""
    from ._url import SCHEMES  # lazy: registering needs it, importing this module does not

    for scheme in SCHEMES:
        register(scheme, open_store)
