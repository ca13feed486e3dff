"""Every statement the store sends, in one place: the schema and the queries.

Two tables, created on first use when missing (``SCHEMA``; a DBA may run it
beforehand instead, and the store then needs no CREATE privilege). They live
in the connection's ``search_path``, so ``?options=-csearch_path%3Dmyschema``
in the URL puts them in another schema.

``seamkit_sessions`` holds one row per session; ``transcript`` and ``state``
are ``json`` (the text as written: key order and ``\\u0000`` escapes survive,
which ``jsonb`` would not keep). ``seamkit_session_locks`` holds one lease per
session that a run holds or held: ``holder`` names the run, ``expires_at``
(the server's clock) says when another run may take it over.
"""

from __future__ import annotations

__all__ = [
    "ENSURE_SCHEMA_LOCK",
    "HAS_SCHEMA",
    "LEASE_CHECK",
    "LEASE_RELEASE",
    "LEASE_RENEW",
    "LEASE_TAKE",
    "SCHEMA",
    "SESSION_DELETE",
    "SESSION_LIST",
    "SESSION_LOAD",
    "SESSION_SAVE",
]

SCHEMA = """\
CREATE TABLE IF NOT EXISTS seamkit_sessions (
    name        text PRIMARY KEY,
    transcript  json NOT NULL,            -- the messages, as seamkit dumps them
    state       json NOT NULL DEFAULT '{}',
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS seamkit_session_locks (
    name        text PRIMARY KEY,         -- the session
    holder      text NOT NULL,            -- host:pid:token of the run holding it
    expires_at  timestamptz NOT NULL
);
"""
"""The store's tables (PostgreSQL DDL, safe to run again)."""

HAS_SCHEMA = (
    "SELECT to_regclass('seamkit_sessions') IS NOT NULL"
    " AND to_regclass('seamkit_session_locks') IS NOT NULL"
)

# Two processes running CREATE TABLE IF NOT EXISTS at the same moment can
# still collide in the catalog; a transaction-scoped advisory lock makes the
# first one through create the tables and the others find them.
ENSURE_SCHEMA_LOCK = "SELECT pg_advisory_xact_lock(hashtext('seamkit_sessions schema'))"

SESSION_LOAD = "SELECT transcript::text, state::text FROM seamkit_sessions WHERE name = %s"

SESSION_SAVE = """\
INSERT INTO seamkit_sessions (name, transcript, state, updated_at)
VALUES (%s, %s::json, %s::json, now())
ON CONFLICT (name) DO UPDATE
    SET transcript = excluded.transcript, state = excluded.state, updated_at = excluded.updated_at
"""

SESSION_LIST = 'SELECT name FROM seamkit_sessions ORDER BY name COLLATE "C"'

SESSION_DELETE = "DELETE FROM seamkit_sessions WHERE name = %s"

# Take the lease when nobody holds it or the holder's lease has expired: one
# statement, atomic on the row (concurrent takers wait on its row lock and
# then see the winner's unexpired lease).
LEASE_TAKE = """\
INSERT INTO seamkit_session_locks AS held (name, holder, expires_at)
VALUES (%(name)s, %(holder)s, now() + make_interval(secs => %(lease)s))
ON CONFLICT (name) DO UPDATE
    SET holder = excluded.holder, expires_at = excluded.expires_at
    WHERE held.expires_at <= now()
RETURNING holder
"""

# Still ours (even when it lapsed, as long as nobody took it over)? Then push
# the expiry on.
LEASE_RENEW = """\
UPDATE seamkit_session_locks SET expires_at = now() + make_interval(secs => %(lease)s)
WHERE name = %(name)s AND holder = %(holder)s
"""

LEASE_RELEASE = "DELETE FROM seamkit_session_locks WHERE name = %s AND holder = %s"

# Inside the save's transaction: is the lease still ours? FOR SHARE keeps a
# taker from replacing it until the save commits.
LEASE_CHECK = "SELECT 1 FROM seamkit_session_locks WHERE name = %s AND holder = %s FOR SHARE"
