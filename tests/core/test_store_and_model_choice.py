"""Choosing a session store and a model: the `sessions:` section, `--store` as a
path or a URL (schemes from plugins), per-session state, and `--model`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import seamkit
from click.testing import CliRunner
from seamkit import Message, SQLiteSessionStore, StoredSession
from seamkit._cli._group import cli
from seamkit.plugins import PluginInfo, Registry, add_plugin, get_registry, load_plugins

STORES: dict[str, MemoryStore] = {}


class MemoryStore:
    """A session store held in memory, one per URL."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.rows: dict[str, StoredSession] = {}
        self.locked: list[str] = []

    async def load(self, name: str) -> StoredSession | None:
        return self.rows.get(name)

    async def save(
        self, name: str, transcript: Sequence[Message], state: Mapping[str, Any]
    ) -> None:
        self.rows[name] = StoredSession(transcript=tuple(transcript), state=dict(state))

    async def list(self) -> list[str]:
        return sorted(self.rows)

    async def delete(self, name: str) -> None:
        self.rows.pop(name, None)

    @asynccontextmanager
    async def lock(self, name: str, wait_seconds: float = 10.0) -> AsyncIterator[None]:
        self.locked.append(name)
        yield


class StorePlugin:
    @seamkit.hookimpl
    def register_session_stores(self, register: Any) -> None:
        register("mem", lambda url: STORES.setdefault(url, MemoryStore(url)))


def _with_store_plugin(registry: Registry) -> Registry:
    add_plugin(registry, StorePlugin(), PluginInfo(name="mem"))
    assert registry.plugins["mem"].error is None
    return registry


def _app(tmp_path: Path, extra: str = "", script: str = "- text: noted\n") -> Path:
    (tmp_path / "script.yaml").write_text(script)
    app = tmp_path / "app.yaml"
    app.write_text(f"name: x\nmodel: scripted:script.yaml\n{extra}")
    return app


@pytest.fixture(autouse=True)
def _no_stores() -> None:
    STORES.clear()


def test_the_sessions_section_names_a_store_a_plugin_serves(tmp_path: Path) -> None:
    registry = _with_store_plugin(load_plugins(entry_points=[]))
    app = _app(tmp_path, "sessions: {store: 'mem://team'}\n", "- text: noted\n- text: noted\n")

    async def main() -> None:
        async with await seamkit.Agent.load(app, registry=registry) as agent:
            await agent.run("first", session="s1")
            await agent.run("second", session="s1")

    asyncio.run(main())
    store = STORES["mem://team"]
    assert store.locked == ["s1", "s1"]
    assert [m.text for m in store.rows["s1"].transcript] == ["first", "noted", "second", "noted"]


def test_store_on_the_command_line_takes_a_plugin_url(tmp_path: Path) -> None:
    _with_store_plugin(get_registry())
    app = _app(tmp_path)
    args = ["run", str(app), "hello", "--session", "s", "--store", "mem://cli"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert [m.text for m in STORES["mem://cli"].rows["s"].transcript] == ["hello", "noted"]


def test_an_unknown_store_scheme_is_a_clear_error_not_a_traceback(tmp_path: Path) -> None:
    app = _app(tmp_path)
    args = ["run", str(app), "hello", "--session", "s", "--store", "nosuch://x"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1
    assert "no session store is installed for URLs of scheme 'nosuch'" in result.output
    assert "installed schemes: sqlite" in result.output
    assert "Traceback" not in result.output


def test_sqlite_urls_and_relative_paths_resolve_against_the_manifest(tmp_path: Path) -> None:
    app = _app(tmp_path, "sessions: {store: data.sqlite}\n")
    assert CliRunner().invoke(cli, ["run", str(app), "a", "--session", "s"]).exit_code == 0
    stored = asyncio.run(SQLiteSessionStore(tmp_path / "data.sqlite").load("s"))
    assert stored is not None and [m.text for m in stored.transcript] == ["a", "noted"]

    url = f"sqlite:///{tmp_path / 'other.sqlite'}"
    result = CliRunner().invoke(cli, ["run", str(app), "b", "--session", "t", "--store", url])
    assert result.exit_code == 0, result.output
    assert asyncio.run(SQLiteSessionStore(tmp_path / "other.sqlite").list()) == ["t"]


def test_sqlite_keeps_state_with_the_transcript_and_forgets_on_delete(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "s.sqlite")

    async def main() -> tuple[StoredSession | None, list[str], StoredSession | None]:
        await store.save("a", [Message.user("hi")], {"fresh": {"k": 1}})
        await store.save("b", [], {})
        first = await store.load("a")
        names = await store.list()
        await store.delete("a")
        return first, names, await store.load("a")

    first, names, gone = asyncio.run(main())
    assert first is not None and first.state == {"fresh": {"k": 1}}
    assert [m.text for m in first.transcript] == ["hi"]
    assert names == ["a", "b"] and gone is None


def test_model_on_the_command_line_replaces_the_manifests(tmp_path: Path) -> None:
    app = _app(tmp_path)
    (tmp_path / "other.yaml").write_text("- text: from the other model\n")
    result = CliRunner().invoke(cli, ["run", str(app), "hi", "--model", "scripted:other.yaml"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "from the other model\n"
    result = CliRunner().invoke(cli, ["run", str(app), "hi", "--model", "nosuch:m"])
    assert result.exit_code == 1
    assert "nosuch" in result.output and "Traceback" not in result.output
