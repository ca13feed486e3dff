"""Every statement the store sends, in one place: the schema and the queries.

Three tables, created on first use when missing (``SCHEMA``, safe to run
again: a database made before the journal gets its table the same way; a DBA
may run it beforehand instead, and the store then needs no CREATE
privilege). They live in the connection's ``search_path``, so
``?options=-csearch_path%3Dmyschema`` in the URL puts them in another schema.

``seamkit_sessions`` holds one row per session; ``transcript`` and ``state``
are ``json`` (the text as written: key order and ``\\u0000`` escapes survive,
which ``jsonb`` would not keep). ``seamkit_session_locks`` holds one lease per
session that a run holds or held: ``holder`` names the run, ``expires_at``
(the server's clock) says when another run may take it over.
``seamkit_session_journal`` holds the journal of runs in progress (see
``seamkit.JournalEntry``): ``seq`` orders the entries, a session's save and
its delete drop its rows.
"""

from __future__ import annotations

__all__ = [
    "ENSURE_SCHEMA_LOCK",
    "HAS_SCHEMA",
    "JOURNAL_APPEND",
    "JOURNAL_APPEND_HELD",
    "JOURNAL_READ",
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
CREATE TABLE IF NOT EXISTS seamkit_session_journal (
    seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text NOT NULL,            -- the session
    run_id      text NOT NULL,
    kind        text NOT NULL,            -- start, turn, started, finished, decided
    call_id     text,
    data        json NOT NULL
);
CREATE INDEX IF NOT EXISTS seamkit_session_journal_name ON seamkit_session_journal (name, seq);
"""
"""The store's tables (PostgreSQL DDL, safe to run again)."""

HAS_SCHEMA = (
    "SELECT to_regclass('seamkit_sessions') IS NOT NULL"
    " AND to_regclass('seamkit_session_locks') IS NOT NULL"
    " AND to_regclass('seamkit_session_journal') IS NOT NULL"
)

# Two processes running CREATE TABLE IF NOT EXISTS at the same moment can
# still collide in the catalog; a transaction-scoped advisory lock makes the
# first one through create the tables and the others find them.
ENSURE_SCHEMA_LOCK = "SELECT pg_advisory_xact_lock(hashtext('seamkit_sessions schema'))"

SESSION_LOAD = "SELECT transcript::text, state::text FROM seamkit_sessions WHERE name = %s"

# One statement: the upsert, and the session's journal dropped (the
# transcript now holds what it recorded), atomically.
SESSION_SAVE = """\
WITH dropped AS (DELETE FROM seamkit_session_journal WHERE name = %(name)s)
INSERT INTO seamkit_sessions (name, transcript, state, updated_at)
VALUES (%(name)s, %(transcript)s::json, %(state)s::json, now())
ON CONFLICT (name) DO UPDATE
    SET transcript = excluded.transcript, state = excluded.state, updated_at = excluded.updated_at
"""

SESSION_LIST = 'SELECT name FROM seamkit_sessions ORDER BY name COLLATE "C"'

SESSION_DELETE = """\
WITH dropped AS (DELETE FROM seamkit_session_journal WHERE name = %(name)s)
DELETE FROM seamkit_sessions WHERE name = %(name)s
"""

# Every entry of one append in one statement (one round trip, committed on
# return: the connection is in autocommit mode), in the order given: the
# identity values are drawn as the sorted rows are inserted.
_JOURNAL_ROWS = """\
INSERT INTO seamkit_session_journal (name, run_id, kind, call_id, data)
SELECT %(name)s, entry.run_id, entry.kind, entry.call_id, entry.data::json
FROM unnest(%(run_ids)s::text[], %(kinds)s::text[], %(call_ids)s::text[], %(data)s::text[])
    WITH ORDINALITY AS entry (run_id, kind, call_id, data, position)
"""

JOURNAL_APPEND = _JOURNAL_ROWS + "ORDER BY entry.position\n"

# Inside ``lock``: only while the lease is still this run's (FOR SHARE holds
# off a taker until the append commits; a taker reads the journal after it
# took the lease, so it sees every entry a fenced run managed to write).
JOURNAL_APPEND_HELD = (
    _JOURNAL_ROWS
    + """\
WHERE EXISTS (
    SELECT 1 FROM seamkit_session_locks
    WHERE name = %(name)s AND holder = %(holder)s FOR SHARE
)
ORDER BY entry.position
"""
)

JOURNAL_READ = """\
SELECT run_id, kind, call_id, data::text FROM seamkit_session_journal
WHERE name = %s ORDER BY seq
"""

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
