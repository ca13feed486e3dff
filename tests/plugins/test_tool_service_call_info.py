"""What a tool service learns about the call, over both transports with real
servers (``seamkit tool-service serve`` over HTTP, and over a real
``nats-server``): the envelope carries the call's id, its idempotency key and
its attempt from the kernel's `seamkit.CallInfo`; a journaled call sends the
key the journal holds; an ``invoke`` with a fourth parameter receives them as
a `ServiceCall`, and a three-parameter service answers as before. A
``tool-service`` entry's ``effects`` reaches its tool.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import seamkit
from hypothesis import given, strategies as st
from seamkit.testing import ScriptedModel
from seamkit_tool_service import (
    EnvelopeError,
    Request,
    ServiceCall,
    decode_reply,
    decode_request,
    encode_request,
)

from tests.plugins.tool_services import ServiceProcess, app, results, tool

if TYPE_CHECKING:
    from tests.plugins.nats_server import NatsServer

pytest_plugins = ["tests.plugins.nats_server"]

SPECS = {
    "keyed": "tests.plugins.services.keyed:Keyed",
    "echo": "tests.plugins.services.basic:Echo",  # three parameters: the old form
}
"""The services served on both transports, by id."""

ECHO_PARAMS = {"config_params": [{"name": "collection", "required": True}]}
TEXT = ("text", "string", True)
KEY = re.compile(r"^[0-9a-f]{32}$")


# --- the envelope -----------------------------------------------------------------

ids = st.text(max_size=20)


@given(
    wire_id=ids,
    call_id=ids,
    key=ids,
    attempt=st.integers(min_value=1, max_value=10**6),
)
def test_the_call_round_trips_through_the_envelope(
    wire_id: str, call_id: str, key: str, attempt: int
) -> None:
    call = ServiceCall(call_id, key, attempt)
    data = encode_request(wire_id, "ann", "{}", '{"x":1}', call=call)
    assert decode_request(data) == Request(wire_id, "ann", {}, {"x": 1}, call)


def test_an_envelope_without_the_call_reads_as_an_empty_one() -> None:
    data = encode_request("w1", "ann", "{}", "{}")
    assert json.loads(data) == {"id": "w1", "user": "ann", "config": "{}", "arguments": "{}"}
    assert decode_request(data).call == ServiceCall("", "", 1)


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("attempt", 0, "'attempt' is 0, not a whole number >= 1"),
        ("attempt", "2", "'attempt' is '2', not a whole number >= 1"),
        ("attempt", True, "'attempt' is True, not a whole number >= 1"),
        ("idempotency_key", 7, "'idempotency_key' is a int, not a string"),
        ("call_id", None, "has no 'call_id'"),
    ],
)
def test_a_malformed_call_in_the_envelope_is_an_envelope_error(
    field: str, value: object, words: str
) -> None:
    data = json.dumps({"id": "w1", "user": "", field: value}).encode()
    with pytest.raises(EnvelopeError) as info:
        decode_request(data)
    assert words in info.value.message


# --- served over HTTP and NATS ------------------------------------------------------


@pytest.fixture(scope="module")
def nats_url() -> Iterator[str]:
    """One nats-server for the module: its URL."""
    from tests.plugins.nats_server import NatsServer  # after pytest_plugins registered it

    server: NatsServer
    with NatsServer.start() as server:
        yield server.url


@pytest.fixture(scope="module")
def served(
    nats_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, dict[str, dict[str, Any]]]]:
    """Every service of `SPECS` over HTTP and over NATS: its descriptor by
    transport and service id (and the HTTP-only ones over HTTP)."""
    log_dir = tmp_path_factory.mktemp("call-info-services")
    http_only = {
        "loose": "tests.plugins.services.keyed:Loose",
        "defaulted": "tests.plugins.services.keyed:Defaulted",
    }
    with ThreadPoolExecutor(6) as pool:
        over_http = {
            key: pool.submit(ServiceProcess.http, spec, log_dir)
            for key, spec in {**SPECS, **http_only}.items()
        }
        over_nats = {
            key: pool.submit(
                ServiceProcess.nats, spec, log_dir, servers=nats_url, subject=f"tools.{key}"
            )
            for key, spec in SPECS.items()
        }
    futures = [*over_http.values(), *over_nats.values()]
    started = [f.result() for f in futures if f.exception() is None]
    try:
        failed = [f.exception() for f in futures if f.exception() is not None]
        assert not failed, failed
        yield {
            "http": {
                key: {"id": key, "transport": "http", "url": f.result().url}
                for key, f in over_http.items()
            },
            "nats": {
                key: {
                    "id": key,
                    "transport": "nats",
                    "servers": [nats_url],
                    "subject": f"tools.{key}",
                }
                for key in over_nats
            },
        }
    finally:
        for process in started:
            process.stop()
        assert all(process.leaked == [] for process in started)


class RecordingStore(seamkit.SQLiteSessionStore):
    """A SQLite store that also keeps every journal entry written to it."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.written: list[seamkit.JournalEntry] = []

    async def journal_append(self, name: str, entries: Sequence[seamkit.JournalEntry]) -> None:
        await super().journal_append(name, entries)
        self.written.extend(entries)


def calls(*called: tuple[str, str, dict[str, Any]]) -> ScriptedModel:
    """One turn calling each (id, tool, arguments), then ``done``."""
    turn = [{"id": i, "name": n, "arguments": json.dumps(a)} for i, n, a in called]
    return ScriptedModel([{"tool_calls": turn}, {"text": "done"}])


def keyed_app(descriptor: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return app([descriptor], [tool("keyed", descriptor["id"], TEXT, **fields)])


@pytest.mark.parametrize("transport", ["http", "nats"])
def test_the_call_info_of_a_call_reaches_the_service(
    served: dict[str, dict[str, dict[str, Any]]], transport: str
) -> None:
    manifest = keyed_app(served[transport]["keyed"])
    info = seamkit.CallInfo("call-9", "key-8d1c", attempt=2, tool="keyed")

    async def go() -> seamkit.ToolResult:
        async with await seamkit.Agent.load(manifest, model=ScriptedModel([])) as agent:
            keyed = agent.tools["keyed"]
            return await keyed.invoke(keyed.validate({"text": "hi"}), call_info=info)

    result = asyncio.run(go())
    assert not result.is_error, result.content
    assert json.loads(result.content) == {
        "user": "",
        "arguments": {"text": "hi"},
        "call_id": "call-9",
        "idempotency_key": "key-8d1c",
        "attempt": 2,
    }


@pytest.mark.parametrize("transport", ["http", "nats"])
def test_a_journaled_call_sends_the_key_its_journal_holds(
    served: dict[str, dict[str, dict[str, Any]]], transport: str, tmp_path: Path
) -> None:
    manifest = keyed_app(served[transport]["keyed"], effects="idempotent")
    store = RecordingStore(tmp_path / "sessions.sqlite")
    model = calls(("c1", "keyed", {"text": "one"}), ("c2", "keyed", {"text": "two"}))

    async def go() -> tuple[seamkit.Tool, seamkit.RunResult]:
        async with await seamkit.Agent.load(manifest, model=model) as agent:
            result = await agent.run("hi", session="s", store=store, context={"user": "ann"})
            return agent.tools["keyed"], result

    keyed, result = asyncio.run(go())
    assert keyed.effects == "idempotent"
    assert result.outcome.kind == "completed" and result.output == "done"
    journaled = {e.call_id: e.data for e in store.written if e.kind == "started"}
    assert set(journaled) == {"c1", "c2"}
    for call_id, answer in results(result).items():
        got = json.loads(answer)
        assert got["call_id"] == call_id and got["user"] == "ann"
        assert got["idempotency_key"] == journaled[call_id]["key"]
        assert KEY.match(got["idempotency_key"]) and got["attempt"] == 1
    assert journaled["c1"]["key"] != journaled["c2"]["key"]


@pytest.mark.parametrize("transport", ["http", "nats"])
def test_a_call_without_a_session_still_sends_a_fresh_key(
    served: dict[str, dict[str, dict[str, Any]]], transport: str
) -> None:
    manifest = keyed_app(served[transport]["keyed"])
    model = calls(("c1", "keyed", {"text": "one"}), ("c2", "keyed", {"text": "two"}))

    async def go() -> seamkit.RunResult:
        async with await seamkit.Agent.load(manifest, model=model) as agent:
            return await agent.run("hi")

    got = {k: json.loads(v) for k, v in results(asyncio.run(go())).items()}
    assert all(KEY.match(v["idempotency_key"]) for v in got.values())
    assert got["c1"]["idempotency_key"] != got["c2"]["idempotency_key"]


@pytest.mark.parametrize("transport", ["http", "nats"])
def test_a_three_parameter_service_answers_as_before(
    served: dict[str, dict[str, dict[str, Any]]], transport: str
) -> None:
    descriptor = {**served[transport]["echo"], **ECHO_PARAMS}
    manifest = app([descriptor], [tool("echo", "echo", TEXT, collection="docs")])
    model = calls(("c1", "echo", {"text": "héllo"}))

    async def go() -> seamkit.RunResult:
        async with await seamkit.Agent.load(manifest, model=model) as agent:
            return await agent.run("hi", context={"user": "ann"})

    answer = json.loads(results(asyncio.run(go()))["c1"])
    assert answer["user"] == "ann" and answer["config"] == {"collection": "docs"}
    assert answer["arguments"] == {"text": "héllo"}


@pytest.mark.parametrize("service_id", ["loose", "defaulted"])
def test_a_fourth_parameter_is_found_through_rest_or_a_default(
    served: dict[str, dict[str, dict[str, Any]]], service_id: str
) -> None:
    descriptor = served["http"][service_id]
    manifest = app([descriptor], [tool("keyed", service_id, TEXT)])
    info = seamkit.CallInfo("call-3", "key-3", attempt=3)

    async def go() -> seamkit.ToolResult:
        async with await seamkit.Agent.load(manifest, model=ScriptedModel([])) as agent:
            return await agent.tools["keyed"].invoke({"text": "x"}, call_info=info)

    result = asyncio.run(go())
    assert not result.is_error, result.content
    got = json.loads(result.content)
    assert (got["call_id"], got["idempotency_key"], got["attempt"]) == ("call-3", "key-3", 3)


def test_a_malformed_call_over_the_wire_is_a_bad_request(
    served: dict[str, dict[str, dict[str, Any]]],
) -> None:
    envelope = {"id": "w7", "user": "", "arguments": "{}", "attempt": 0}
    answer = httpx.post(served["http"]["keyed"]["url"], content=json.dumps(envelope), timeout=10)
    reply = decode_reply(answer.content)
    assert reply.id == "w7" and reply.error is not None
    assert reply.error[0] == "BadRequest" and "'attempt' is 0" in reply.error[1]
