"""Bounded responders (issue 29): a service whose replies pass its
``max_reply_bytes``, ``max_stream_chunks`` or ``max_stream_seconds`` gets
the call ended with ``Error: BadReply`` naming the limit, and the memory it
could take stays bounded: a real HTTP service answering 100 MB in one body
and a real NATS worker streaming 1,000 chunks of 100 KB, called from a
process of its own whose peak RSS grows by less than 3x the limit. Replies
for other calls' ids are still dropped and counted. The HTTP service limits
request bodies (413) and nesting, and answers a bad envelope with an error
envelope, never a traceback.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import nats
import pytest
import seamkit
from nats.aio.client import Client
from nats.aio.msg import Msg
from seamkit_tool_service import Argument, ServiceDescriptor, encode_reply
from seamkit_tool_service._tools import Connections, service_tool

from tests.plugins.tool_services import ROOT, ServiceProcess

pytest_plugins = ["tests.plugins.nats_server"]

FLOOD = "tests.plugins.services.limits:Flood"
LIMIT = 4 * 1024 * 1024
MB100 = 100_000_000


@pytest.fixture(scope="module")
def nats_url() -> Iterator[str]:
    from tests.plugins.nats_server import NatsServer  # after pytest_plugins registered it

    with NatsServer.start() as server:
        yield server.url


@pytest.fixture(scope="module")
def http_flood(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    with ServiceProcess.http(FLOOD, tmp_path_factory.mktemp("http-flood")) as served:
        yield served


@pytest.fixture(scope="module")
def nats_flood(nats_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log_dir = tmp_path_factory.mktemp("nats-flood")
    with ServiceProcess.nats(FLOOD, log_dir, servers=nats_url, subject="tools.flood"):
        yield "tools.flood"


def in_process(descriptor: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """One call from a process of its own (`tests.plugins.limits_client`)."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.plugins.limits_client",
            json.dumps(descriptor),
            json.dumps(arguments),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return found


def call(descriptor: dict[str, Any], arguments: dict[str, Any]) -> seamkit.ToolResult:
    """One call through a tool of its own, in this process."""

    async def go() -> seamkit.ToolResult:
        connections = Connections()
        try:
            made = service_tool(
                ServiceDescriptor.model_validate(descriptor),
                connections,
                name="flood",
                description="",
                arguments=[
                    Argument(name="size", type="integer", required=False),
                    Argument(name="chunks", type="integer", required=False),
                    Argument(name="forever", type="boolean", required=False),
                ],
                config={},
            )
            return await made.call(arguments, seamkit.ActionContext(user="ann"))
        finally:
            await connections.aclose()

    return asyncio.run(go())


def over_bytes(content: str) -> bool:
    return content.startswith(
        f"Error: BadReply: tool service 'flood' sent more than max_reply_bytes={LIMIT} bytes"
    )


# --- replies past the limits -----------------------------------------------------


def test_a_100_mb_http_reply_is_a_bad_reply_and_its_memory_is_bounded(
    http_flood: ServiceProcess,
) -> None:
    descriptor = {"id": "flood", "url": http_flood.url}
    found = in_process(descriptor, {"size": MB100})
    assert found["is_error"] and over_bytes(found["content"]), found
    assert found["growth_kib"] * 1024 < 3 * LIMIT, found


def test_a_100_mb_nats_stream_is_a_bad_reply_and_its_memory_is_bounded(
    nats_url: str, nats_flood: str
) -> None:
    descriptor = {"id": "flood", "transport": "nats", "servers": [nats_url], "subject": nats_flood}
    found = in_process(descriptor, {"size": 100_000, "chunks": 1000})
    assert found["is_error"] and over_bytes(found["content"]), found
    assert found["growth_kib"] * 1024 < 3 * LIMIT, found


def test_a_100_mb_http_stream_is_a_bad_reply(http_flood: ServiceProcess) -> None:
    result = call({"id": "flood", "url": http_flood.url}, {"size": 100_000, "chunks": 1000})
    assert result.is_error and over_bytes(result.content), result.content


def test_a_lower_max_reply_bytes_names_itself(http_flood: ServiceProcess) -> None:
    result = call({"id": "flood", "url": http_flood.url, "max_reply_bytes": 1000}, {"size": 2000})
    assert result.content.startswith(
        "Error: BadReply: tool service 'flood' sent more than max_reply_bytes=1000 bytes"
    )
    fits = call({"id": "flood", "url": http_flood.url, "max_reply_bytes": 1000}, {"size": 100})
    assert (fits.content, fits.is_error) == ("x" * 100, False)


@pytest.mark.parametrize("transport", ["http", "nats"])
def test_too_many_chunks_is_a_bad_reply(
    transport: str, http_flood: ServiceProcess, nats_url: str, nats_flood: str
) -> None:
    descriptor: dict[str, Any] = (
        {"id": "flood", "url": http_flood.url}
        if transport == "http"
        else {"id": "flood", "transport": "nats", "servers": [nats_url], "subject": nats_flood}
    )
    result = call({**descriptor, "max_stream_chunks": 3}, {"size": 10, "chunks": 10})
    assert result.content.endswith(
        "Error: BadReply: tool service 'flood' sent more than max_stream_chunks=3 chunks; "
        "the call was ended"
    ), result.content
    # three chunks, and the message that ends the stream
    fits = call({**descriptor, "max_stream_chunks": 3}, {"size": 1, "chunks": 3})
    assert (fits.content, fits.is_error) == ("xxx", False)


@pytest.mark.parametrize("transport", ["http", "nats"])
def test_a_stream_that_never_ends_is_a_bad_reply_after_max_stream_seconds(
    transport: str, http_flood: ServiceProcess, nats_url: str, nats_flood: str
) -> None:
    descriptor: dict[str, Any] = (
        {"id": "flood", "url": http_flood.url}
        if transport == "http"
        else {"id": "flood", "transport": "nats", "servers": [nats_url], "subject": nats_flood}
    )
    result = call(
        {**descriptor, "max_stream_seconds": 0.5, "timeout_seconds": 20}, {"forever": True}
    )
    assert result.is_error
    assert result.content.endswith(
        "Error: BadReply: tool service 'flood' streamed for more than max_stream_seconds=0.5s; "
        "the call was ended"
    ), result.content


def test_replies_for_other_ids_stay_dropped_and_counted_past_the_limit(nats_url: str) -> None:
    async def go() -> tuple[seamkit.ToolResult, dict[str, int]]:
        client: Client = await nats.connect(nats_url)

        async def flood(msg: Msg) -> None:
            assert msg.reply
            own = json.loads(msg.data)["id"]
            await client.publish(msg.reply, encode_reply(own + "-other", "wrong"))
            await client.publish(msg.reply, encode_reply("made-up", "wrong"))
            await client.flush()
            await asyncio.sleep(0.2)  # taken (and counted) before the flood
            for _ in range(20):
                await client.publish(msg.reply, encode_reply(own, "x" * 100, end_of_stream=False))

        await client.subscribe("tools.rogue.flood", cb=flood)
        await client.flush()
        connections = Connections()
        try:
            made = service_tool(
                ServiceDescriptor(
                    id="flood",
                    transport="nats",
                    servers=[nats_url],
                    subject="tools.rogue.flood",
                    max_reply_bytes=1000,
                ),
                connections,
                name="flood",
                description="",
                arguments=[],
                config={},
            )
            result = await made.call({}, seamkit.ActionContext(user="ann"))
            await asyncio.sleep(0.2)
            return result, connections.dropped()
        finally:
            await connections.aclose()
            await client.close()

    result, dropped = asyncio.run(go())
    assert result.is_error and "max_reply_bytes=1000" in result.content, result.content
    assert dropped["stray"] == 2
    # the 20 chunks: those past the limit (and those queued then) dropped, all counted
    assert dropped["duplicate"] >= 20 - 1000 // 100, dropped


# --- the HTTP service's own limits -----------------------------------------------


def test_an_oversize_request_body_gets_413_and_an_error_envelope(
    http_flood: ServiceProcess,
) -> None:
    body = json.dumps({"id": "big", "arguments": json.dumps({"size": 1, "pad": "y" * LIMIT})})
    answer = httpx.post(http_flood.url, content=body, timeout=30)
    assert answer.status_code == 413
    error = answer.json()["error"]
    assert error["type"] == "BadRequest" and str(LIMIT) in error["message"]
    assert "Traceback" not in http_flood.output()


@pytest.mark.parametrize(
    "body",
    [
        '{"id": "deep", "x": ' + "[" * 200_000 + "]" * 200_000 + "}",
        json.dumps({"id": "deep", "arguments": "[" * 100_000 + "]" * 100_000}),
        json.dumps(
            {"id": "deep", "arguments": json.dumps({"a": json.loads("[" * 100 + "]" * 100)})}
        ),
    ],
    ids=["envelope", "arguments", "past-max-depth"],
)
def test_a_deeply_nested_envelope_gets_an_error_envelope_not_a_traceback(
    http_flood: ServiceProcess, body: str
) -> None:
    answer = httpx.post(http_flood.url, content=body, timeout=30)
    assert answer.status_code < 500
    error = answer.json()["error"]
    assert error["type"] == "BadRequest" and "nest" in error["message"], error
    assert "Traceback" not in http_flood.output()


def test_max_request_bytes_sets_the_limit() -> None:
    from seamkit_tool_service._command import serve
    from seamkit_tool_service._http_server import ServiceApp

    from tests.plugins.services.limits import Flood

    assert any(p.name == "max_request_bytes" for p in serve.params)

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=ServiceApp(Flood(), max_request_bytes=100))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await client.post("/", content=b"{" + b" " * 200 + b"}")

    answer = asyncio.run(go())
    assert answer.status_code == 413
    assert answer.json()["error"]["message"] == "the request is larger than 100 bytes"
