"""The guards example, ``docs/examples/guarded``, through every way in: the
Python API (``run`` and ``stream``), ``seamkit run``, and ``seamkit serve``
read by the official ``openai`` client, streamed and not. The support token
(a secret the model repeats, split over deltas), the card number (split too)
and the hostile page are in no output: no delta, no transcript, no session
byte, no served chunk, no log line. Its README's commands are run by
tests/test_docs_run.py as well."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import seamkit
from seamkit import stream as S

from tests.plugins.test_serve import SEAMKIT, Served

if TYPE_CHECKING:
    from tests.plugins.postgres_server import PostgresServer

pytest_plugins = ["tests.plugins.postgres_server"]

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "guarded"
TOKEN = "tok-demo-4f9a1c77e2"
FORBIDDEN = (TOKEN, "tok-de", "4111-11", "1111-1111", "IGNORE PREVIOUS", "mallory")
SHOWN = "Your token is ***, card [card]. Let me check."
WITHHELD = "Result withheld by injection: a fetched page tried to give the model orders"


def _copy(tmp_path: Path) -> Path:
    app = tmp_path / "guarded"
    shutil.copytree(EXAMPLE, app, ignore=shutil.ignore_patterns("*.sqlite*", "__pycache__"))
    return app / "app.yaml"


def _clean(text: str, where: str) -> None:
    for forbidden in FORBIDDEN:
        assert forbidden not in text, f"{forbidden!r} leaked into {where}"


def _files(folder: Path) -> str:
    """Every byte of the session stores under ``folder`` (the app's own
    files hold the token and the card on purpose: the script plays them)."""
    stores = [p for p in folder.rglob("*.sqlite*") if p.is_file()]
    assert stores, "no session store was written"
    return "".join(p.read_bytes().decode("latin-1") for p in stores)


@pytest.mark.parametrize("streaming", [False, True], ids=["run", "stream"])
def test_the_api_shows_only_what_the_guards_released(tmp_path: Path, streaming: bool) -> None:
    app = _copy(tmp_path)
    events: list[object] = []

    async def go() -> seamkit.RunResult:
        agent = await seamkit.Agent.load(app)
        async with agent:
            if not streaming:
                return await agent.run("How do returns work?", session="demo")
            result = None
            async for event in agent.stream("How do returns work?", session="demo"):
                events.append(event)
                if isinstance(event, S.RunFinished):
                    result = event.result
            assert result is not None
            return result

    result = asyncio.run(go())
    assert result.outcome == seamkit.Terminated(
        reason="a fetched page tried to give the model orders",
        hook="injection",
        event="on_post_tool_use",
    )
    texts = [m.text for m in result.transcript]
    assert SHOWN in texts and WITHHELD in texts
    if streaming:
        deltas = [e.text for e in events if isinstance(e, S.TextDelta)]
        assert "".join(deltas) == SHOWN
        assert deltas[0] == "Your token is "  # held: "tok-de" could begin the token
        for delta in deltas:
            _clean(delta, "a delta")
    _clean(repr(events), "the stream's events")
    _clean(result.model_dump_json(), "the result")
    _clean(_files(tmp_path), "the session store")


def test_seamkit_run_prints_the_guarded_text_and_the_reason(tmp_path: Path) -> None:
    app = _copy(tmp_path)
    done = subprocess.run(
        [str(SEAMKIT), "run", str(app), "How do returns work?", "--session", "d"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(SHOWN)
    assert (
        "[terminated: a fetched page tried to give the model orders "
        "(hook injection at on_post_tool_use)" in done.stderr
    )
    _clean(done.stdout + done.stderr, "seamkit run's output")
    shown = subprocess.run(
        [str(SEAMKIT), "run", str(app), "again", "--session", "d", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    result = json.loads(shown.stdout)
    _clean(json.dumps(result), "the next run")
    _clean(_files(tmp_path), "the session store")


def test_serve_streams_what_the_guards_released_and_ends_content_filter(tmp_path: Path) -> None:
    served = Served(str(_copy(tmp_path)), tmp_path)
    try:
        client = served.client(None, **{"X-Seamkit-Session": "web-1"})
        chunks = list(
            client.chat.completions.create(
                model="guarded",
                messages=[{"role": "user", "content": "How do returns work?"}],
                stream=True,
            )
        )
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text == SHOWN
        finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
        assert finishes[-1] == "content_filter" and set(finishes[:-1]) == {None}
        for chunk in chunks:
            _clean(chunk.model_dump_json(), "a served chunk")
        # the raw SSE ends with [DONE]: the stream was closed cleanly
        with served.client(None).with_streaming_response.chat.completions.create(
            model="guarded",
            messages=[{"role": "user", "content": "How do returns work?"}],
            stream=True,
        ) as raw:
            body = raw.read().decode()
        assert body.rstrip().endswith("data: [DONE]")
        _clean(body, "the raw SSE")
        whole = served.client(None).chat.completions.create(
            model="guarded", messages=[{"role": "user", "content": "How do returns work?"}]
        )
        assert whole.choices[0].finish_reason == "content_filter"
        assert whole.choices[0].message.content is not None
        _clean(whole.model_dump_json(), "a whole answer")
    finally:
        log = served.stop()
    _clean(log, "the server's log")
    _clean(_files(tmp_path), "the session store")


def test_serve_ends_a_stream_a_text_guard_blocked_with_content_filter(tmp_path: Path) -> None:
    """The ``cards`` guard set to block: the stream stops mid-answer, with
    only what was released before the card, and ends cleanly."""
    app = _copy(tmp_path)
    manifest = app.read_text()
    blocking = manifest.replace('replacement: "[card]"', "action: block\n    reason: a card number")
    assert blocking != manifest
    app.write_text(blocking)
    served = Served(str(app), tmp_path)
    try:
        with served.client(None).with_streaming_response.chat.completions.create(
            model="guarded",
            messages=[{"role": "user", "content": "How do returns work?"}],
            stream=True,
        ) as raw:
            body = raw.read().decode()
        events = [line[6:] for line in body.splitlines() if line.startswith("data: ")]
        assert events[-1] == "[DONE]"
        chunks = [json.loads(e) for e in events[:-1]]
        text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
        # what was released before the card: the masked token waited for the
        # next delta (a rewrite's change goes out with it), which held the card
        assert text.startswith("Your token is ") and "[card]" not in text
        assert chunks[-1]["choices"][0]["finish_reason"] == "content_filter"
        _clean(body, "the raw SSE")
    finally:
        log = served.stop()
    _clean(log, "the server's log")


def test_served_on_postgresql_the_withheld_page_is_in_no_row(
    tmp_path: Path, postgres: PostgresServer
) -> None:
    """The post-tool guard's case on the other store: ``seamkit serve``
    keeping its sessions in PostgreSQL; every row of every table is read."""
    database = postgres.new_database()
    served = Served(str(_copy(tmp_path)), tmp_path, "--store", postgres.url(database))
    try:
        client = served.client(None, **{"X-Seamkit-Session": "pg-1"})
        answer = client.chat.completions.create(
            model="guarded", messages=[{"role": "user", "content": "How do returns work?"}]
        )
        assert answer.choices[0].finish_reason == "content_filter"
        again = client.chat.completions.create(
            model="guarded", messages=[{"role": "user", "content": "and now?"}]
        )
        _clean(again.model_dump_json(), "the next answer")
    finally:
        log = served.stop()
    _clean(log, "the server's log")
    tables = postgres.query(
        database, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
    )
    assert tables, "the server kept no table"
    rows = "\n".join(str(postgres.query(database, f'SELECT * FROM "{t}"')) for (t,) in tables)
    assert WITHHELD in rows  # the session holds the call's answer: withheld
    _clean(rows, "PostgreSQL's rows")
