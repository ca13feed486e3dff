"""The PostgreSQL session store (`seamkit-sessions-postgres`) against a real
server the fixture starts (tests/plugins/postgres_server.py): the pool is
bounded and never held for a run, the lease design (heartbeat, expiry,
fencing), event-loop affinity, the schema, the URL and its options, the
password never shown, and the store found through the installed distribution
by `seamkit.Agent` and the `seamkit` command.

The behaviour every store shares is in tests/core/test_store_behaviour.py.
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

import pytest
import seamkit
import seamkit_sessions_postgres
from seamkit import Agent, Message, SessionBusy, SessionError
from seamkit.plugins import get_registry
from seamkit_sessions_postgres import PostgresSessionStore, open_store

if TYPE_CHECKING:
    from tests.plugins.postgres_server import PostgresServer

pytest_plugins = ["tests.plugins.postgres_server"]

SEAMKIT = Path(sys.executable).parent / "seamkit"


@pytest.fixture
def db(postgres: PostgresServer) -> str:
    """A fresh, empty database."""
    return postgres.new_database()


class Echo:
    """Answers ``re: <last message>``; ``gate``, when set, holds every call
    until it opens (to have many runs mid-model at once)."""

    def __init__(self, gate: asyncio.Event | None = None, arrivals: list[str] | None = None):
        self.gate = gate
        self.arrivals = arrivals

    async def complete(self, request: seamkit.ModelRequest) -> seamkit.ModelTurn:
        text = request.messages[-1].text or ""
        if self.arrivals is not None:
            self.arrivals.append(text)
        if self.gate is not None:
            await self.gate.wait()
        return seamkit.ModelTurn(message=Message.assistant(f"re: {text}"))

    async def stream(self, request: seamkit.ModelRequest) -> AsyncIterator[seamkit.ModelTurn]:
        yield await self.complete(request)


def _connections(postgres: PostgresServer, database: str, app: str) -> int:
    rows = postgres.query(
        "postgres",
        "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND application_name = %s",
        database,
        app,
    )
    return int(rows[0][0])  # type: ignore[call-overload]


# --- the pool -------------------------------------------------------------------------


def test_200_concurrent_runs_share_a_pool_of_5_none_holding_a_connection(
    postgres: PostgresServer, db: str
) -> None:
    """All 200 runs are inside their model call at the same moment, which only
    works if none of them holds a pooled connection while it runs."""
    count = 200
    store = PostgresSessionStore(postgres.url(db, application_name="t200"), pool_max_size=5)
    gate = asyncio.Event()
    arrivals: list[str] = []
    agent = Agent(model=Echo(gate, arrivals), plugin_hooks=False)
    peak = 0

    async def watch() -> None:
        nonlocal peak
        while not gate.is_set() or len(arrivals) < count:
            used = await asyncio.to_thread(_connections, postgres, db, "t200")
            peak = max(peak, used)
            if len(arrivals) == count:
                gate.set()
            await asyncio.sleep(0.02)

    async def go() -> list[seamkit.RunResult]:
        await store.list()  # the pool is open, the first (direct) connection long gone
        await asyncio.sleep(0.2)
        watcher = asyncio.create_task(watch())
        runs = [agent.run(f"m{i}", session=f"s{i}", store=store) for i in range(count)]
        results = await asyncio.wait_for(asyncio.gather(*runs), timeout=60)
        await watcher
        return results

    results = asyncio.run(go())
    assert [r.output for r in results] == [f"re: m{i}" for i in range(count)]
    assert 1 <= peak <= 5
    assert len(asyncio.run(store.list())) == count


def test_the_pool_closes_when_asyncio_run_ends_and_reopens_in_the_next_loop(
    postgres: PostgresServer, db: str
) -> None:
    store = PostgresSessionStore(postgres.url(db, application_name="loops"), pool_min_size=2)
    agent = Agent(model=Echo(), plugin_hooks=False)
    for i in range(3):
        assert agent.run_sync(f"m{i}", session="chat", store=store).output == f"re: m{i}"
        assert _connections(postgres, db, "loops") == 0  # nothing left open, no hang
    stored = asyncio.run(store.load("chat"))
    assert stored is not None and len(stored.transcript) == 6


def test_loops_in_several_threads_each_get_their_own_pool(
    postgres: PostgresServer, db: str
) -> None:
    store = PostgresSessionStore(postgres.url(db), pool_max_size=2)
    agent = Agent(model=Echo(), plugin_hooks=False)
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(5):
                agent.run_sync(f"t{n}-{i}", session=f"thread{n}", store=store)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors
    assert asyncio.run(store.list()) == [f"thread{n}" for n in range(4)]


def test_aclose_closes_the_pool_and_the_store_stays_usable(
    postgres: PostgresServer, db: str
) -> None:
    async def go() -> tuple[int, int, list[str]]:
        async with PostgresSessionStore(postgres.url(db, application_name="aclose")) as store:
            await store.save("a", [], {})
            during = await asyncio.to_thread(_connections, postgres, db, "aclose")
            await store.aclose()
            after = await asyncio.to_thread(_connections, postgres, db, "aclose")
            return during, after, await store.list()  # reopens

    during, after, names = asyncio.run(go())
    assert during >= 1 and after == 0 and names == ["a"]


def test_an_operation_that_finds_no_free_connection_in_time_is_a_session_error(
    postgres: PostgresServer, db: str
) -> None:
    store = PostgresSessionStore(postgres.url(db), pool_max_size=1, pool_timeout=0.2)

    async def go() -> None:
        async with store._pools.connection():  # the only connection, taken
            await store.load("chat")

    with pytest.raises(SessionError, match=r"cannot load session 'chat'.*0\.20 sec"):
        asyncio.run(go())


def test_one_store_per_url_so_runs_naming_it_share_one_pool(postgres: PostgresServer) -> None:
    url = postgres.url("postgres", application_name="shared")
    assert open_store(url) is open_store(url)
    assert open_store(url) is not open_store(url + "&pool_max_size=3")


# --- the lease ------------------------------------------------------------------------


def test_the_heartbeat_keeps_a_long_run_s_lease(postgres: PostgresServer, db: str) -> None:
    # renewed every 0.4 s: a renewal may come up to 0.8 s late on a busy machine
    url = postgres.url(db, lease_seconds=1.2)
    first, second = PostgresSessionStore(url), PostgresSessionStore(url)

    async def go() -> None:
        async with first.lock("chat", 1):
            await asyncio.sleep(3.7)  # over three lease lengths
            with pytest.raises(SessionBusy):
                async with second.lock("chat", 0.2):
                    pass
        async with second.lock("chat", 0):  # released at once at the end
            pass

    asyncio.run(go())


def test_a_run_whose_lease_was_taken_over_cannot_overwrite_the_newer_run(
    postgres: PostgresServer, db: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A stalled worker (its lease lapsed and another run took the session)
    must not save over the run that took over, nor release its lease."""
    url = postgres.url(db, lease_seconds=0.6)
    newer, third = PostgresSessionStore(url), PostgresSessionStore(url)
    # renewed only after a second: its heartbeat cannot revive the lease
    # between the expiry below and newer's take (unless those take over 1 s)
    stalled = PostgresSessionStore(postgres.url(db, lease_seconds=3))

    async def go() -> None:
        async with stalled.lock("chat", 1):
            # The stall: its lease expires without a heartbeat getting through.
            await asyncio.to_thread(
                postgres.query,
                db,
                "UPDATE seamkit_session_locks SET expires_at = now() - interval '1 second'",
            )
            async with newer.lock("chat", 1):
                await newer.save("chat", [Message.user("newer")], {})
                with pytest.raises(SessionError, match="not saved: this run's lease") as caught:
                    await stalled.save("chat", [Message.user("stale")], {})
                assert caught.value.location == stalled.location
                for _ in range(500):  # the stalled run's heartbeat notices (after 1 s)
                    if "lease lapsed" in caplog.text:
                        break
                    await asyncio.sleep(0.02)
        # Having left its block first, the stalled run did not release newer's lease:
        # newer's block ended, so now the session is free.
        async with third.lock("chat", 0):
            pass

    with caplog.at_level(logging.ERROR, logger="seamkit.sessions.postgres"):
        asyncio.run(go())
    stored = asyncio.run(third.load("chat"))
    assert stored is not None and [m.text for m in stored.transcript] == ["newer"]
    assert "lease lapsed and another run took the session over" in caplog.text


def test_the_stalled_run_leaving_does_not_free_the_newer_run_s_session(
    postgres: PostgresServer, db: str
) -> None:
    url = postgres.url(db, lease_seconds=0.6)
    newer, third = PostgresSessionStore(url), PostgresSessionStore(url)
    # renewed only after a second: its heartbeat cannot revive the lease
    # between the expiry below and newer's take (unless those take over 1 s)
    stalled = PostgresSessionStore(postgres.url(db, lease_seconds=3))

    async def go() -> None:
        entered = asyncio.Event()
        leave = asyncio.Event()

        async def hold_newer() -> None:
            async with newer.lock("chat", 2):
                entered.set()
                await leave.wait()

        async with stalled.lock("chat", 1):
            await asyncio.to_thread(
                postgres.query, db, "UPDATE seamkit_session_locks SET expires_at = now()"
            )
            task = asyncio.create_task(hold_newer())
            await entered.wait()
        # stalled has left (its release matched no row); newer still holds the session.
        with pytest.raises(SessionBusy):
            async with third.lock("chat", 0.2):
                pass
        leave.set()
        await task

    asyncio.run(go())


def test_a_save_outside_any_lock_is_a_plain_upsert(postgres: PostgresServer, db: str) -> None:
    store = PostgresSessionStore(postgres.url(db))
    asyncio.run(store.save("chat", [Message.user("x")], {"k": 1}))
    rows = postgres.query(db, "SELECT name, state::text FROM seamkit_sessions")
    assert rows == [("chat", '{"k": 1}')]


# --- the schema -----------------------------------------------------------------------


def test_tables_are_created_on_first_use_even_by_many_stores_at_once(
    postgres: PostgresServer, db: str
) -> None:
    url = postgres.url(db)

    async def go() -> None:
        stores = [PostgresSessionStore(url) for _ in range(8)]
        await asyncio.gather(*(s.save(f"s{i}", [], {}) for i, s in enumerate(stores)))

    asyncio.run(go())
    tables = postgres.query(
        db,
        "SELECT table_name FROM information_schema.tables "
        "WHERE table_name LIKE 'seamkit_%%' ORDER BY table_name",
    )
    assert tables == [
        ("seamkit_session_journal",),
        ("seamkit_session_locks",),
        ("seamkit_sessions",),
    ]
    assert len(asyncio.run(PostgresSessionStore(url).list())) == 8


def test_the_documented_schema_is_the_one_the_store_creates(
    postgres: PostgresServer, db: str
) -> None:
    postgres.query(db, seamkit_sessions_postgres.SCHEMA)  # as a DBA would, beforehand
    asyncio.run(PostgresSessionStore(postgres.url(db)).save("a", [Message.user("x")], {}))
    columns = postgres.query(
        db,
        "SELECT table_name, column_name, data_type FROM information_schema.columns "
        "WHERE table_name LIKE 'seamkit_%%' ORDER BY table_name, ordinal_position",
    )
    assert columns == [
        ("seamkit_session_journal", "seq", "bigint"),
        ("seamkit_session_journal", "name", "text"),
        ("seamkit_session_journal", "run_id", "text"),
        ("seamkit_session_journal", "kind", "text"),
        ("seamkit_session_journal", "call_id", "text"),
        ("seamkit_session_journal", "data", "json"),
        ("seamkit_session_locks", "name", "text"),
        ("seamkit_session_locks", "holder", "text"),
        ("seamkit_session_locks", "expires_at", "timestamp with time zone"),
        ("seamkit_sessions", "name", "text"),
        ("seamkit_sessions", "transcript", "json"),
        ("seamkit_sessions", "state", "json"),
        ("seamkit_sessions", "updated_at", "timestamp with time zone"),
    ]


def test_the_guide_shows_the_schema_as_it_is() -> None:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "guide.md").read_text()
    section = guide.split("### PostgreSQL sessions", 1)[1].split("\n## ", 1)[0]
    assert f"```sql\n{seamkit_sessions_postgres.SCHEMA}```" in section


def test_libpq_options_in_the_url_put_the_tables_in_another_schema(
    postgres: PostgresServer, db: str
) -> None:
    postgres.query(db, "CREATE SCHEMA team")
    url = postgres.url(db, options="-csearch_path%3Dteam", application_name="in-team")
    asyncio.run(PostgresSessionStore(url).save("a", [], {}))
    assert postgres.query(db, "SELECT name FROM team.seamkit_sessions") == [("a",)]


# --- the URL --------------------------------------------------------------------------


def test_both_schemes_are_registered_by_the_installed_distribution() -> None:
    registry = get_registry()
    for scheme in ("postgresql", "postgres"):
        info = registry.stores[scheme]
        assert info.plugin == "postgresql"
        assert info.factory is open_store
    assert registry.plugins["postgresql"].distribution == "seamkit-sessions-postgres"
    assert seamkit_sessions_postgres.__seamkit_api__ == 1


def test_importing_the_plugin_does_not_import_psycopg() -> None:
    code = "import sys, seamkit_sessions_postgres; print('psycopg' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_options_come_from_the_query_string_and_the_rest_goes_to_libpq() -> None:
    store = PostgresSessionStore(
        "postgres://u:pw@db.example:6543/app?pool_max_size=7&lease_seconds=12.5"
        "&sslmode=disable&application_name=me",
        pool_min_size=0,
    )
    options = store.options
    assert (options.pool_min_size, options.pool_max_size) == (0, 7)
    assert (options.pool_timeout, options.lease_seconds) == (30.0, 12.5)
    assert options.conninfo == (
        "postgres://u:pw@db.example:6543/app?sslmode=disable&application_name=me"
    )
    assert store.location == (
        "postgres://u:***@db.example:6543/app?pool_max_size=7&lease_seconds=12.5"
        "&sslmode=disable&application_name=me"
    )


@pytest.mark.parametrize(
    ("url", "match"),
    [
        ("postgresql://u:SECRET@h/db?lease_seconds=0", "lease_seconds='0' must be a number"),
        ("postgresql://u:SECRET@h/db?pool_max_size=2.5", "must be a whole number"),
        ("postgresql://u:SECRET@h/db?pool_min_size=5&pool_max_size=2", "larger than"),
        ("postgresql://u:SECRET@h:notaport/db", "cannot list the sessions"),
        ("postgresql://u:SECRET@h/db?bogus=1", "invalid URI query parameter"),
        ("postgresql://u:SE%zzCRET@h/db", "invalid percent-encoded token"),
        ("mysql://u:SECRET@h/db", "not a PostgreSQL store URL"),
    ],
)
def test_a_bad_url_is_a_session_error_with_the_password_masked(url: str, match: str) -> None:
    """Caught when the store is made, or (what only libpq checks) on first use."""
    with pytest.raises(SessionError, match=match) as caught:
        asyncio.run(PostgresSessionStore(url).list())
    shown = "".join(traceback.format_exception(caught.value))
    assert "SECRET" not in shown and "SE%zzCRET" not in shown
    assert caught.value.location is not None and "SECRET" not in caught.value.location


# --- the password ---------------------------------------------------------------------


@pytest.mark.parametrize("where", ["user part", "query"])
def test_a_password_with_special_characters_is_masked_as_written_and_decoded(where: str) -> None:
    raw = "p@ss/w:rd %zz?&"
    written = quote(raw, safe="/:")
    if where == "user part":
        url = f"postgresql://u:{written}@127.0.0.1:1/db?connect_timeout=2"
    else:
        url = f"postgresql://u@127.0.0.1:1/db?connect_timeout=2&password={written}"
    store = PostgresSessionStore(url)
    with pytest.raises(SessionError) as caught:
        asyncio.run(store.list())
    shown = [repr(store), "".join(traceback.format_exception(caught.value))]
    shown.append(caught.value.location or "")
    for text in shown:
        assert raw not in text and written not in text and quote(raw, safe="") not in text
    assert "***" in store.location


def test_a_url_libpq_reads_differently_still_masks_the_password() -> None:
    """libpq ends the user part at the first ``@``; a reader of the URL might
    take the last one. Both readings' passwords are masked."""
    store = PostgresSessionStore("postgresql://u:pw-CANARY@h/db@x?connect_timeout=1")
    assert "CANARY" not in repr(store) and "CANARY" not in store.location
    assert set(store.options.secrets) >= {"pw-CANARY", "pw-CANARY@h/db"}


def test_the_password_never_shows_in_errors_logs_or_repr(
    postgres: PostgresServer, db: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The canary password (the server's real one, and a wrong one) must not
    appear anywhere a person or a log collector could see it."""
    wrong = "wrong-canary-pw"
    shown: list[str] = []

    def record(exc: BaseException) -> None:
        shown.extend(["".join(traceback.format_exception(exc)), repr(exc)])
        if isinstance(exc, SessionError):
            shown.extend([exc.location or "", exc.hint or ""])

    good = PostgresSessionStore(postgres.url(db, lease_seconds=0.6))
    refused = PostgresSessionStore(
        postgres.url(db).replace(f":{postgres.port}/", ":1/") + "?connect_timeout=2"
    )
    denied = PostgresSessionStore(postgres.url(db, password=wrong))
    shown += [repr(good), str(good.location), repr(refused), repr(denied), repr(good.options)]

    async def go() -> None:
        await good.save("chat", [Message.user("hi")], {})
        async with good.lock("chat", 1):
            try:
                async with good.lock("chat", 0.1):
                    pass
            except SessionBusy as exc:
                record(exc)
        for store in (refused, denied):
            for call in (store.load("x"), store.list()):
                try:
                    await call
                except SessionError as exc:
                    record(exc)
        agent = Agent(model=Echo(), plugin_hooks=False)
        result = await agent.run("hi", session="chat", store=good)
        shown.append(result.model_dump_json())

    with caplog.at_level(logging.DEBUG):
        asyncio.run(go())
    shown.append(caplog.text)
    text = "\n".join(shown)
    assert "connection refused" in text.lower() or "connect" in text.lower()
    assert "password authentication failed" in text
    assert postgres.password not in text
    assert wrong not in text


def test_a_store_that_cannot_connect_says_where_and_why(postgres: PostgresServer) -> None:
    url = postgres.url("no_such_database")
    store = PostgresSessionStore(url)
    with pytest.raises(SessionError) as caught:
        asyncio.run(store.load("x"))
    assert 'database "no_such_database" does not exist' in caught.value.message
    assert caught.value.location == store.location
    assert caught.value.hint is not None and "server is up" in caught.value.hint


# --- through seamkit ------------------------------------------------------------------


def test_an_agent_opens_the_store_from_its_url(postgres: PostgresServer, db: str) -> None:
    url = postgres.url(db)

    async def go() -> list[str | None]:
        async with Agent(model=Echo(), store=url, plugin_hooks=False) as agent:
            assert isinstance(agent.session_store(), PostgresSessionStore)
            await agent.run("one", session="chat")
            result = await agent.run("two", session="chat")
            return [m.text for m in result.transcript]

    assert asyncio.run(go()) == ["one", "re: one", "two", "re: two"]


def test_seamkit_run_keeps_a_session_in_postgres(
    postgres: PostgresServer, db: str, tmp_path: Path
) -> None:
    (tmp_path / "script.yaml").write_text("- text: first answer\n- text: second answer\n")
    app = tmp_path / "app.yaml"
    app.write_text(
        f"name: x\nmodel: scripted:script.yaml\nsessions:\n  store: {postgres.url(db)}\n"
    )
    outputs: list[subprocess.CompletedProcess[str]] = []
    for message in ("hello", "again"):
        started = time.monotonic()
        outputs.append(
            subprocess.run(
                [str(SEAMKIT), "run", str(app), message, "--session", "ann"],
                capture_output=True,
                text=True,
                timeout=60,
            )
        )
        assert time.monotonic() - started < 30  # the pool never keeps the command from exiting
        (tmp_path / "script.yaml").write_text("- text: second answer\n")
    for out in outputs:
        assert out.returncode == 0, out.stderr
        assert postgres.password not in out.stdout + out.stderr
    assert [o.stdout for o in outputs] == ["first answer\n", "second answer\n"]
    stored = asyncio.run(PostgresSessionStore(postgres.url(db)).load("ann"))
    assert stored is not None
    assert [m.text for m in stored.transcript] == [
        "hello",
        "first answer",
        "again",
        "second answer",
    ]


def test_seamkit_run_with_store_on_the_command_line_and_a_bad_password(
    postgres: PostgresServer, db: str, tmp_path: Path
) -> None:
    (tmp_path / "script.yaml").write_text("- text: hi\n")
    app = tmp_path / "app.yaml"
    app.write_text("name: x\nmodel: scripted:script.yaml\n")
    wrong = "cli-canary-wrong"
    args = ["run", str(app), "hello", "--session", "s"]
    bad = subprocess.run(
        [str(SEAMKIT), *args, "--store", postgres.url(db, password=wrong)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode != 0
    assert "password authentication failed" in bad.stderr
    assert "Traceback" not in bad.stderr
    assert wrong not in bad.stdout + bad.stderr
    good = subprocess.run(
        [str(SEAMKIT), *args, "--store", postgres.url(db)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert good.returncode == 0, good.stderr
    assert good.stdout == "hi\n"
    assert postgres.password not in good.stdout + good.stderr
