"""The PostgreSQL store under the session repair contract (issue 17): a row
that does not parse is a `SessionError` naming the session and what to do,
``load_raw`` hands out the stored texts, and `seamkit sessions` lists, shows,
exports, imports and deletes sessions in it, the password never shown."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner
from seamkit import Agent, Message, SessionError
from seamkit._cli._group import cli
from seamkit.plugins import RawSessionReader
from seamkit.testing import ScriptedModel
from seamkit_sessions_postgres import PostgresSessionStore

if TYPE_CHECKING:
    from tests.plugins.postgres_server import PostgresServer

pytest_plugins = ["tests.plugins.postgres_server"]


@pytest.fixture
def db(postgres: PostgresServer) -> str:
    """A fresh database with two sessions, one of them damaged by hand."""
    name = postgres.new_database()

    async def fill() -> None:
        store = PostgresSessionStore(postgres.url(name))
        await store.save("ann", [Message.user("hello"), Message.assistant("hi")], {"k": 1})
        await store.save("bad", [Message.user("lost?")], {})
        await store.aclose()

    asyncio.run(fill())
    postgres.query(
        name,
        "UPDATE seamkit_sessions SET transcript = %s::json WHERE name = 'bad'",
        '[{"role": "wizard", "content": "lost?"}]',
    )
    return name


def _sessions(*args: str) -> Any:
    return CliRunner().invoke(cli, ["sessions", *args])


def test_a_row_that_does_not_parse_is_a_clear_error_and_load_raw_keeps_it(
    postgres: PostgresServer, db: str
) -> None:
    store = PostgresSessionStore(postgres.url(db))
    assert isinstance(store, RawSessionReader)

    async def main() -> None:
        with pytest.raises(SessionError) as caught:
            await store.load("bad")
        assert caught.value.message.startswith(f"session 'bad' in {store.location} cannot be")
        assert postgres.password not in str(caught.value)
        assert "seamkit sessions export bad --raw" in (caught.value.hint or "")
        raw = await store.load_raw("bad")
        assert raw is not None and json.loads(raw.transcript)[0]["role"] == "wizard"
        assert await store.load_raw("nobody") is None
        agent = Agent(model=ScriptedModel([{"text": "x"}]), plugin_hooks=False)
        with pytest.raises(SessionError, match="cannot be read"):
            await agent.run("again", session="bad", store=store)
        await store.aclose()

    asyncio.run(main())


def test_seamkit_sessions_inspects_and_repairs_a_postgresql_store(
    postgres: PostgresServer, db: str, tmp_path: Path
) -> None:
    url = postgres.url(db)
    listed = _sessions("list", "--store", url)
    assert listed.exit_code == 0, listed.output
    assert listed.stdout.splitlines() == [
        "NAME  MESSAGES  LAST USER MESSAGE",
        "ann          2  hello",
        "bad          ?  unreadable: see `seamkit sessions show NAME`",
    ]
    shown = _sessions("show", "bad", "--store", url)
    assert shown.exit_code == 1 and "cannot be read" in shown.output
    raw = json.loads(_sessions("export", "bad", "--raw", "--store", url).stdout)
    assert raw["transcript"] == [{"role": "wizard", "content": "lost?"}]
    # Repair by hand, then import over the damaged row.
    raw["transcript"][0]["role"] = "user"
    fixed = tmp_path / "bad.json"
    fixed.write_text(json.dumps(raw))
    imported = _sessions("import", str(fixed), "--store", url, "--replace")
    assert imported.exit_code == 0, imported.output
    assert "lost?" in _sessions("show", "bad", "--store", url).stdout
    deleted = _sessions("delete", "ann", "--yes", "--store", url)
    assert deleted.exit_code == 0, deleted.output
    assert _sessions("list", "--store", url, "--json").stdout.count('"name"') == 1
    for result in (listed, shown, imported, deleted):
        assert postgres.password not in result.output
