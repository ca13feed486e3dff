"""Tool services over NATS, end to end: a real ``nats-server`` on 127.0.0.1,
real worker processes (``seamkit tool-service serve --transport nats``) in
one queue group, called by an agent's ``tool-service`` tools; discovery of
services announced with ``$SRV`` (one looker, a missed look forgiven);
graceful shutdown with a call in flight, requests on their way drained and
calls past the drain time cancelled; trace context in the NATS headers;
cancelled calls, calls while NATS is down or mute, and connections per event
loop; and misbehaving responders written here with raw nats-py subscriptions.

The NATS server and the long-lived services are started once for the module
and always stopped; tests that stop a service or a server start their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import nats
import pytest
import seamkit
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.micro import add_service
from nats.micro.service import Service
from opentelemetry.sdk.trace import TracerProvider
from seamkit.stream import ToolCompleted, ToolOutputDelta
from seamkit.testing import ScriptedModel
from seamkit_tool_service import (
    DESCRIPTOR_KEY,
    Argument,
    ServiceDescriptor,
    ToolServicesConfig,
    decode_reply,
    dropped_replies,
    encode_reply,
    encode_request,
)
from seamkit_tool_service._discovery import Discovered
from seamkit_tool_service._kind import _CONNECTIONS
from seamkit_tool_service._nats_worker import QUEUE_GROUP, serve_nats
from seamkit_tool_service._tools import Connections, service_tool

from tests.conftest import free_port
from tests.plugins.services.nats_extra import Sleeper
from tests.plugins.tool_services import (
    ROOT,
    SEAMKIT,
    ServiceProcess,
    app,
    results,
    tool,
)

if TYPE_CHECKING:
    from seamkit_tool_service._transport import Dropped

    from tests.plugins.nats_server import NatsServer

pytest_plugins = ["tests.plugins.nats_server"]

SPECS = {
    "echo": ("tests.plugins.services.basic:Echo", 2),
    "streamer": ("tests.plugins.services.basic:Streamer", 1),
    "trace-echo": ("tests.plugins.services.nats_extra:TraceEcho", 1),
}
"""The services every test may call: spec and worker count, by service id
(each served on the subject ``tools.<id>``)."""

ECHO_PARAMS = {"config_params": [{"name": "collection", "required": True}]}
TEXT = ("text", "string", True)
DELAY = ("delay", "number", False)

# --- fixtures and helpers ----------------------------------------------------------


@pytest.fixture(scope="module")
def nats_url() -> Iterator[str]:
    """One nats-server for the module: its URL."""
    from tests.plugins.nats_server import NatsServer  # after pytest_plugins registered it

    with NatsServer.start() as server:
        yield server.url


@pytest.fixture(scope="module")
def served(
    nats_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, ServiceProcess]]:
    """Every service of `SPECS` served on the module's NATS server, by id."""
    log_dir = tmp_path_factory.mktemp("nats-services")
    with ThreadPoolExecutor(len(SPECS)) as pool:  # start them side by side
        futures = {
            key: pool.submit(
                ServiceProcess.nats,
                spec,
                log_dir,
                servers=nats_url,
                subject=f"tools.{key}",
                workers=workers,
            )
            for key, (spec, workers) in SPECS.items()
        }
    started = {k: f.result() for k, f in futures.items() if f.exception() is None}
    try:
        failed = [f.exception() for f in futures.values() if f.exception() is not None]
        assert not failed, failed
        yield started
    finally:
        for process in started.values():
            process.stop()
        assert all(process.leaked == [] for process in started.values())


def service(service_id: str, url: str, subject: str = "", **fields: Any) -> dict[str, Any]:
    """A nats service descriptor (subject ``tools.<id>`` unless given)."""
    return {
        "id": service_id,
        "transport": "nats",
        "servers": [url],
        "subject": subject or f"tools.{service_id}",
        **fields,
    }


def calls(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """One model turn calling each (name, arguments), ids c1, c2, ..."""
    return {
        "tool_calls": [
            {"id": f"c{i}", "name": name, "arguments": json.dumps(arguments)}
            for i, (name, arguments) in enumerate(calls, 1)
        ]
    }


def run(manifest: dict[str, Any], *called: tuple[str, dict[str, Any]]) -> dict[str, str]:
    """One run (as user ``ann``) calling ``called`` in one turn: the tool
    results by call id; the run must complete whatever the tools did."""

    async def go() -> seamkit.RunResult:
        model = ScriptedModel([calls(*called), {"text": "done"}])
        async with await seamkit.Agent.load(manifest, model=model) as agent:
            return await agent.run("hi", context={"user": "ann"})

    result = asyncio.run(go())
    assert result.output == "done" and result.outcome.kind == "completed"
    return results(result)


def echo_app(url: str, subject: str = "", **fields: Any) -> dict[str, Any]:
    """An agent with the tool ``echo`` (collection ``docs``) on ``subject``."""
    return app(
        [service("echo", url, subject, **ECHO_PARAMS, **fields)],
        [tool("echo", "echo", TEXT, DELAY, collection="docs")],
    )


Handler = Callable[[Client, Msg], Awaitable[None]]


@asynccontextmanager
async def responder(url: str, subject: str, handler: Handler) -> AsyncIterator[Client]:
    """A raw nats-py subscription on ``subject`` answering with ``handler``
    (no `DynamicToolService`): a service that misbehaves on purpose."""
    client = await nats.connect(url)
    try:

        async def on_request(msg: Msg) -> None:
            await handler(client, msg)

        await client.subscribe(subject, cb=on_request)
        await client.flush()
        yield client
    finally:
        await client.close()


def call_id(msg: Msg) -> str:
    found: str = json.loads(msg.data)["id"]
    return found


async def call(
    url: str,
    subject: str,
    arguments: dict[str, Any] | None = None,
    *,
    settled: Callable[[Dropped], bool] | None = None,
    **fields: Any,
) -> tuple[seamkit.ToolResult, Dropped]:
    """Call the service on ``subject`` once through a tool of its own; the
    result and the counts of replies its transport dropped (once ``settled``
    holds of them, when given: late replies counted; else after 0.2 s)."""
    descriptor = ServiceDescriptor(
        id="rogue", transport="nats", servers=[url], subject=subject, **fields
    )
    connections = Connections()
    try:
        made = service_tool(
            descriptor,
            connections,
            name="rogue",
            description="",
            arguments=[Argument(name="q", type="integer", required=False)],
            config={},
        )
        result = await made.call(arguments or {}, seamkit.ActionContext(user="ann"))
        dropped = connections.nats([url]).dropped
        if settled is None:
            await asyncio.sleep(0.2)  # late replies arrive meanwhile
        else:

            async def counted() -> bool:
                return settled(dropped)

            await until(counted)
        return result, dropped
    finally:
        await connections.aclose()


async def until(check: Callable[[], Awaitable[bool]], seconds: float = 10.0) -> None:
    """Wait until ``check()`` holds (or fail after ``seconds``)."""
    deadline = time.monotonic() + seconds
    while not await check():
        assert time.monotonic() < deadline, "the condition never held"
        await asyncio.sleep(0.05)


# --- calls through an agent ------------------------------------------------------


def test_a_call_reaches_the_service_with_the_user_config_and_arguments(
    nats_url: str, served: dict[str, ServiceProcess]
) -> None:
    found = run(echo_app(nats_url), ("echo", {"text": "x"}))
    reply = json.loads(found["c1"])
    assert reply.pop("pid") in served["echo"].worker_pids()
    assert reply == {"user": "ann", "config": {"collection": "docs"}, "arguments": {"text": "x"}}


def test_concurrent_calls_are_shared_by_the_workers_and_each_gets_its_own_reply(
    nats_url: str, served: dict[str, ServiceProcess]
) -> None:
    async def go() -> list[seamkit.ToolResult]:
        async with await seamkit.Agent.load(echo_app(nats_url), model=ScriptedModel([])) as agent:
            echo = agent.tools["echo"]
            return await asyncio.gather(
                *(
                    echo.call(
                        {"text": f"text-{i}", "delay": 0.01},
                        seamkit.ActionContext(user=f"user-{i}"),
                    )
                    for i in range(40)
                )
            )

    replies = [json.loads(r.content) for r in asyncio.run(go())]
    for i, reply in enumerate(replies):
        assert reply["user"] == f"user-{i}"
        assert reply["arguments"] == {"text": f"text-{i}", "delay": 0.01}
    workers = served["echo"].worker_pids()
    assert len(workers) == 2
    assert {reply["pid"] for reply in replies} == set(workers)


def test_no_worker_listening_is_unavailable_at_once(nats_url: str) -> None:
    started = time.monotonic()
    found = run(echo_app(nats_url, "tools.nobody", timeout_seconds=20), ("echo", {"text": "x"}))
    assert time.monotonic() - started < 8  # app loading and an answer at once, not the 20 s
    assert found["c1"].startswith("Error: Unavailable: no worker of tool service 'echo'")
    assert "'tools.nobody'" in found["c1"]


def test_a_nats_server_that_is_not_running_is_unavailable() -> None:
    url = f"nats://127.0.0.1:{free_port()}"  # nothing listens there
    started = time.monotonic()
    found = run(echo_app(url, timeout_seconds=20), ("echo", {"text": "x"}))
    assert time.monotonic() - started < 10  # app loading and a refused connect, not the 20 s
    assert found["c1"].startswith(f"Error: Unavailable: cannot reach NATS at {url}")


# --- discovery ---------------------------------------------------------------------


@pytest.mark.slow
def test_a_discovered_service_brings_its_tools_and_takes_them_away(
    nats_server: NatsServer, tmp_path: Path
) -> None:
    """On a server of its own: nothing else is announced there."""
    manifest = {
        "name": "discovering",
        "model": "scripted:inline",
        "tool_services": {
            "discover": True,
            "servers": [nats_server.url],
            "discover_interval_seconds": 0.3,
        },
        "tools": [],
    }
    model = ScriptedModel(
        [{"text": "no tools"}, calls(("echo", {"text": "found"})), {"text": "done"}]
    )

    async def go() -> None:
        async with await seamkit.Agent.load(manifest, model=model) as agent:
            before = await agent.run("hi", context={"user": "bob"})
            assert before.output == "no tools" and list(agent.tools) == []

            served = await asyncio.to_thread(
                ServiceProcess.nats,
                "tests.plugins.services.basic:Echo",
                tmp_path,
                servers=nats_server.url,
                subject="tools.found",
            )
            with served:

                async def has_echo() -> bool:
                    await agent.refresh_tools()
                    return "echo" in agent.tools

                await until(has_echo)
                assert list(agent.tools) == ["echo"]
                result = await agent.run("hi", context={"user": "bob"})
                assert result.output == "done"
                reply = json.loads(results(result)["c1"])
                assert reply["config"] == {"collection": "announced"}  # the announced value
                assert reply["user"] == "bob" and reply["arguments"] == {"text": "found"}

                # what the service announces: its descriptor under the $SRV metadata
                client = await nats.connect(nats_server.url)
                try:
                    msg = await client.request("$SRV.INFO.echo", b"", timeout=2)
                finally:
                    await client.close()
                info = json.loads(msg.data)
                assert info["name"] == "echo"
                announced = json.loads(info["metadata"][DESCRIPTOR_KEY])
                descriptor = ServiceDescriptor.model_validate(
                    {**announced, "servers": [nats_server.url]}
                )
                assert (descriptor.id, descriptor.transport, descriptor.subject) == (
                    "echo",
                    "nats",
                    "tools.found",
                )
                assert [(p.name, p.required) for p in descriptor.config_params] == [
                    ("collection", True)
                ]
                assert [t.name for t in descriptor.tools] == ["echo"]
                assert descriptor.tools[0].config == {"collection": "announced"}

                await asyncio.to_thread(served.stop)
            assert served.leaked == []

            async def lost_echo() -> bool:
                await agent.refresh_tools()
                return "echo" not in agent.tools

            await until(lost_echo)
            assert list(agent.tools) == []

    asyncio.run(go())


# --- graceful shutdown --------------------------------------------------------------


@pytest.mark.slow
def test_sigterm_lets_the_call_in_flight_finish_and_leaves_no_worker(
    nats_url: str, tmp_path: Path
) -> None:
    async def go() -> None:
        served = await asyncio.to_thread(
            ServiceProcess.nats,
            "tests.plugins.services.basic:Echo",
            tmp_path,
            servers=nats_url,
            subject="tools.draining",
            workers=2,
        )
        with served:
            workers = served.worker_pids()
            manifest = app(
                [service("echo", nats_url, "tools.draining", **ECHO_PARAMS, timeout_seconds=10)],
                [tool("echo", "echo", TEXT, DELAY, ("mark", "string", False), collection="docs")],
            )
            async with await seamkit.Agent.load(manifest, model=ScriptedModel([])) as agent:
                echo = agent.tools["echo"]
                context = seamkit.ActionContext(user="ann")
                started = time.monotonic()
                mark = tmp_path / "arrived"
                arguments = {"text": "slow", "delay": 1.5, "mark": str(mark)}
                slow = asyncio.ensure_future(echo.call(arguments, context))

                async def with_a_worker() -> bool:
                    return mark.exists()

                await until(with_a_worker)  # the request is with a worker now
                served.process.send_signal(signal.SIGTERM)
                result = await slow
                assert time.monotonic() - started >= 1.5
                assert not result.is_error, result.content
                reply = json.loads(result.content)
                assert reply["arguments"] == arguments
                assert reply["pid"] in workers

                code = await asyncio.to_thread(served.process.wait, 15)
                assert code == 0, served.output()
                after = await echo.call({"text": "late"}, context)
                assert after.content.startswith("Error: Unavailable: no worker")
        assert served.leaked == []

    asyncio.run(go())


# --- trace context -------------------------------------------------------------------


def test_trace_context_reaches_the_service_in_the_headers(
    nats_url: str, served: dict[str, ServiceProcess]
) -> None:
    tracer = TracerProvider().get_tracer("tests.tool-service-nats")
    manifest = app([service("trace-echo", nats_url)], [tool("traced", "trace-echo", TEXT)])

    async def go() -> tuple[str, dict[str, str], str]:
        turn_a, turn_b = calls(("traced", {"text": "a"})), calls(("traced", {"text": "b"}))
        model = ScriptedModel([turn_a, {"text": "done"}, turn_b, {"text": "done"}])
        async with await seamkit.Agent.load(manifest, model=model) as agent:
            with tracer.start_as_current_span("caller") as span:
                inside = await agent.run("hi", context={"user": "ann"})
            outside = await agent.run("hi", context={"user": "ann"})
        trace_id = format(span.get_span_context().trace_id, "032x")
        return trace_id, results(inside), results(outside)["c1"]

    trace_id, inside, outside = asyncio.run(go())
    assert trace_id != "0" * 32
    reply = json.loads(inside["c1"])
    assert reply["trace_id"] == trace_id
    assert reply["arguments"] == {"text": "a"}
    assert json.loads(outside)["trace_id"] == "0" * 32  # no context: none leaks over


def test_the_envelope_has_exactly_its_seven_fields_and_no_trace_context(nats_url: str) -> None:
    tracer = TracerProvider().get_tracer("tests.tool-service-nats")
    seen: list[Msg] = []

    async def record(client: Client, msg: Msg) -> None:
        seen.append(msg)
        await client.publish(msg.reply, encode_reply(call_id(msg), "ok"))

    async def go() -> tuple[str, seamkit.ToolResult]:
        async with responder(nats_url, "tools.raw", record):
            with tracer.start_as_current_span("caller") as span:
                result, _ = await call(nats_url, "tools.raw", {"q": 1})
        return format(span.get_span_context().trace_id, "032x"), result

    trace_id, result = asyncio.run(go())
    assert result.content == "ok"
    [msg] = seen
    envelope = json.loads(msg.data)
    assert set(envelope) == {
        "id",
        "user",
        "config",
        "arguments",
        "call_id",
        "idempotency_key",
        "attempt",
    }
    assert envelope["user"] == "ann" and envelope["attempt"] == 1
    assert json.loads(envelope["arguments"]) == {"q": 1}
    assert json.loads(envelope["config"]) == {}
    assert msg.headers is not None
    assert msg.headers["traceparent"].split("-")[1] == trace_id
    assert trace_id.encode() not in msg.data


# --- misbehaving responders ---------------------------------------------------------


async def answer(raw: bytes | Callable[[Msg], bytes], url: str, subject: str) -> str:
    """What a tool gets from a responder on ``subject`` that answers ``raw``."""

    async def reply(client: Client, msg: Msg) -> None:
        await client.publish(msg.reply, raw(msg) if callable(raw) else raw)

    async with responder(url, subject, reply):
        result, _ = await call(url, subject)
    assert result.is_error
    return result.content


def test_a_malformed_json_reply_is_a_bad_reply(nats_url: str) -> None:
    content = asyncio.run(answer(b'{"id": "x", "resp', nats_url, "tools.rogue.json"))
    assert content.startswith("Error: BadReply: tool service 'rogue' sent a malformed reply")
    assert "not JSON" in content


def test_a_reply_without_an_id_is_a_bad_reply(nats_url: str) -> None:
    no_id = json.dumps({"error": None, "response": "x", "end_of_stream": True}).encode()
    content = asyncio.run(answer(no_id, nats_url, "tools.rogue.noid"))
    assert content.startswith("Error: BadReply:") and "has no 'id'" in content


def test_a_stream_that_stops_without_end_of_stream_times_out_per_message(
    nats_url: str,
) -> None:
    def first_chunk(msg: Msg) -> bytes:
        return encode_reply(call_id(msg), "partial ", end_of_stream=False)

    async def go() -> str:
        async def reply(client: Client, msg: Msg) -> None:
            await client.publish(msg.reply, first_chunk(msg))

        async with responder(nats_url, "tools.rogue.stall", reply):
            result, _ = await call(
                nats_url,
                "tools.rogue.stall",
                timeout_seconds=20,
                message_timeout_seconds=0.4,
            )
        assert result.is_error
        return result.content

    started = time.monotonic()
    content = asyncio.run(go())
    assert time.monotonic() - started < 10  # the 0.4 s message time-out, not the 20 s deadline
    assert content == "Error: Timeout: tool service 'rogue' sent nothing for 0.4s"


def test_stray_and_duplicate_replies_are_dropped_and_counted(nats_url: str) -> None:
    async def dirty(client: Client, msg: Msg) -> None:
        assert msg.reply
        own = call_id(msg)
        inbox = msg.reply.rsplit(".", 1)[0]
        await client.publish(f"{inbox}.made-up", encode_reply("made-up", "stray"))  # no call's
        await client.publish(msg.reply, encode_reply(own + "-other", "wrong"))  # wrong id
        await client.publish(msg.reply, encode_reply(own, "right"))
        await client.publish(msg.reply, encode_reply(own, "again"))  # at once
        await asyncio.sleep(0.05)
        await client.publish(msg.reply, encode_reply(own, "late"))  # after the call ended

    async def go() -> tuple[seamkit.ToolResult, Dropped]:
        async with responder(nats_url, "tools.rogue.dirty", dirty):
            # the late reply may come well after the call on a busy machine
            return await call(
                nats_url, "tools.rogue.dirty", settled=lambda d: d.stray + d.duplicate >= 4
            )

    result, dropped = asyncio.run(go())
    assert (result.content, result.is_error) == ("right", False)
    assert (dropped.stray, dropped.duplicate) == (2, 2)


def test_the_right_reply_wins_over_a_wrong_id_and_a_second_answer(nats_url: str) -> None:
    async def twice(client: Client, msg: Msg) -> None:
        own = call_id(msg)
        await client.publish(msg.reply, encode_reply("not-" + own, "wrong"))
        await client.publish(msg.reply, encode_reply(own, "first"))
        await client.publish(msg.reply, encode_reply(own, "second"))

    async def go() -> list[str]:
        async with responder(nats_url, "tools.rogue.twice", twice):
            manifest = app(
                [service("twice", nats_url, "tools.rogue.twice")], [tool("twice", "twice")]
            )
            model = ScriptedModel([calls(("twice", {}), ("twice", {})), {"text": "done"}])
            async with await seamkit.Agent.load(manifest, model=model) as agent:
                result = await agent.run("hi")
        assert result.outcome.kind == "completed"
        return sorted(results(result).values())

    assert asyncio.run(go()) == ["first", "first"]


# --- streaming ------------------------------------------------------------------------


def test_a_streamed_reply_surfaces_each_chunk_live_and_joins_them(
    nats_url: str, served: dict[str, ServiceProcess]
) -> None:
    manifest = app(
        [service("streamer", nats_url)],
        [tool("stream", "streamer", ("count", "integer", True), ("pause", "number", True))],
    )

    async def go() -> tuple[list[tuple[float, str]], float, str]:
        model = ScriptedModel([calls(("stream", {"count": 3, "pause": 0.8})), {"text": "done"}])
        deltas: list[tuple[float, str]] = []
        completed: list[tuple[float, str]] = []
        async with await seamkit.Agent.load(manifest, model=model) as agent:
            async for event in agent.stream("hi"):
                if isinstance(event, ToolOutputDelta):
                    deltas.append((time.monotonic(), event.text))
                elif isinstance(event, ToolCompleted):
                    completed.append((time.monotonic(), event.result.content))
        [(ended, content)] = completed
        return deltas, ended, content

    deltas, ended, content = asyncio.run(go())
    assert [text for _, text in deltas] == ["0 ", "1 ", "2 "]
    assert content == "0 1 2 "
    # live: each chunk came when the service sent it, not all at the end
    # (0.8 s apart as sent; all at the end, they would be ~0 s apart)
    assert deltas[1][0] - deltas[0][0] > 0.4 and deltas[2][0] - deltas[1][0] > 0.4
    assert ended - deltas[0][0] > 1.0


# --- cancelled calls, connecting, connections per loop ----------------------------------


def test_a_cancelled_call_stops_listening_and_its_late_reply_is_counted(
    nats_url: str, served: dict[str, ServiceProcess]
) -> None:
    async def go() -> tuple[dict[str, int], dict[str, Any]]:
        async with await seamkit.Agent.load(echo_app(nats_url), model=ScriptedModel([])) as agent:
            echo = agent.tools["echo"]
            context = seamkit.ActionContext(user="ann")
            assert not (await echo.call({"text": "warm-up"}, context)).is_error
            transport = _CONNECTIONS[agent.exit_stack].nats([nats_url])
            slow = [
                asyncio.ensure_future(echo.call({"text": f"slow-{i}", "delay": 1.0}, context))
                for i in range(5)
            ]

            async def sent() -> bool:  # an inbox is made in the same step as its publish
                return len(transport._inboxes) == 5

            await until(sent)  # each waits for its first reply, a second away
            for future in slow:
                future.cancel()
            await asyncio.gather(*slow, return_exceptions=True)
            inboxes = dict(transport._inboxes)

            async def late_replies_came() -> bool:
                return dropped_replies(agent)["duplicate"] >= 5

            await until(late_replies_came)
            await asyncio.sleep(0.1)  # nothing more comes
            return dropped_replies(agent), inboxes

    dropped, inboxes = asyncio.run(go())
    assert inboxes == {}
    assert dropped == {"stray": 0, "duplicate": 5}


def burst(url: str, calls: int, **fields: Any) -> tuple[float, list[seamkit.ToolResult]]:
    """``calls`` concurrent calls of the echo tool on ``url``: how long they
    took together, and their results."""

    async def go() -> tuple[float, list[seamkit.ToolResult]]:
        manifest = echo_app(url, **fields)
        async with await seamkit.Agent.load(manifest, model=ScriptedModel([])) as agent:
            echo = agent.tools["echo"]
            started = time.monotonic()
            found = await asyncio.gather(
                *(echo.call({"text": str(i)}, seamkit.ActionContext()) for i in range(calls))
            )
            return time.monotonic() - started, found

    return asyncio.run(go())


def test_calls_with_nats_down_share_one_attempt_and_fail_together() -> None:
    url = f"nats://127.0.0.1:{free_port()}"  # nothing listens there

    took, found = burst(url, 16, timeout_seconds=20)
    assert all(
        r.content.startswith(f"Error: Unavailable: cannot reach NATS at {url}") for r in found
    )
    # one attempt (~0.3 s), not one after another (~0.25 s each, its retry's wait)
    assert took < 2.5, f"16 calls took {took:.2f}s to fail"


def test_connecting_counts_against_the_calls_deadline() -> None:
    """A server that accepts the connection and never says a word: the
    call ends at its deadline, not after the connect attempts' own limits."""
    with socket.create_server(("127.0.0.1", 0)) as mute:
        url = f"nats://127.0.0.1:{mute.getsockname()[1]}"
        took, found = burst(url, 3, timeout_seconds=0.5)
    assert [r.content for r in found] == [
        "Error: Timeout: tool service 'echo' did not finish within 0.5s"
    ] * 3
    # the 0.5 s deadline, not the connect attempts' 2 s time-out (each)
    assert took < 1.9, f"the calls took {took:.2f}s"


def test_a_tools_time_out_may_lower_the_services_but_not_raise_it(
    nats_url: str, served: dict[str, ServiceProcess]
) -> None:
    manifest = app(
        [
            service(
                "echo", nats_url, "", **ECHO_PARAMS, timeout_seconds=0.3, message_timeout_seconds=5
            )
        ],
        [tool("echo", "echo", TEXT, DELAY, collection="docs", timeout_seconds=5)],
    )
    started = time.monotonic()
    found = run(manifest, ("echo", {"text": "x", "delay": 4.0}))
    assert found["c1"] == "Error: Timeout: tool service 'echo' did not finish within 0.3s"
    assert time.monotonic() - started < 3.0  # the service's 0.3 s, not the tool's 4 s answer


def test_runs_in_new_event_loops_leave_no_connection_behind(
    nats_url: str, served: dict[str, ServiceProcess]
) -> None:
    """``Agent.run_sync`` runs each run in a loop of its own: the NATS
    connection each loop opens closes with it."""
    model = ScriptedModel([calls(("echo", {"text": "x"})), {"text": "done"}], each_run=True)
    agent = asyncio.run(seamkit.Agent.load(echo_app(nats_url), model=model))

    def once() -> None:
        result = agent.run_sync("hi", context={"user": "ann"})
        assert result.output == "done"
        assert json.loads(results(result)["c1"])["user"] == "ann"

    def open_files() -> int:
        gc.collect()
        return len(os.listdir("/proc/self/fd"))

    try:
        once()
        before = open_files()
        for _ in range(5):
            once()
        grown = open_files() - before
    finally:
        asyncio.run(agent.aclose())
    assert grown <= 1, f"5 runs left {grown} more open files"
    assert not _CONNECTIONS[agent.exit_stack]._by_loop


# --- discovery, looking ---------------------------------------------------------------


@asynccontextmanager
async def announced(url: str, name: str) -> AsyncIterator[Service]:
    """A micro service ``name`` announcing a descriptor with one tool ``name``
    (nothing serves the tool: discovery only reads the announcement)."""
    descriptor = {"id": name, "subject": f"tools.{name}", "tools": [{"name": name}]}
    client = await nats.connect(url)
    try:
        yield await add_service(
            client,
            name=name,
            version="0.1.0",
            metadata={DESCRIPTOR_KEY: json.dumps(descriptor)},
        )
    finally:
        await client.close()


def lookers() -> list[asyncio.Task[Any]]:
    """The discovery tasks running in this loop."""
    return [
        t
        for t in asyncio.all_tasks()
        if getattr(t.get_coro(), "__qualname__", "") == "Discovered._every"
    ]


def test_concurrent_first_looks_start_one_looker_that_aclose_stops(nats_server: NatsServer) -> None:
    section = ToolServicesConfig(
        discover=True, servers=[nats_server.url], discover_interval_seconds=0.1
    )

    async def go() -> None:
        async with announced(nats_server.url, "keeper"):  # an answer ends each look early
            connections = Connections()
            source = Discovered(section, connections)
            found = await asyncio.gather(*(source.current() for _ in range(3)))
            assert [[t.name for t in tools] for tools in found] == [["keeper"]] * 3
            assert len(lookers()) == 1
            await source.aclose()
            await connections.aclose()
            await asyncio.sleep(0.3)  # a looker left behind would look (and connect) again
            assert lookers() == []
            assert connections._by_loop == {}

    asyncio.run(go())


def test_a_service_that_misses_one_look_keeps_its_tools(nats_server: NatsServer) -> None:
    section = ToolServicesConfig(discover=True, servers=[nats_server.url])

    async def go() -> None:
        connections = Connections()
        source = Discovered(section, connections)

        async def names() -> list[str]:
            await source.look()
            return sorted(t.name for t in await source.current())

        try:
            async with announced(nats_server.url, "keeper"):
                async with announced(nats_server.url, "flappy"):
                    assert await names() == ["flappy", "keeper"]
                assert await names() == ["flappy", "keeper"]  # one look missed
                async with announced(nats_server.url, "flappy"):
                    assert await names() == ["flappy", "keeper"]  # back: the count starts over
                assert await names() == ["flappy", "keeper"]
                assert await names() == ["keeper"]  # two in a row: gone
        finally:
            await source.aclose()
            await connections.aclose()

    asyncio.run(go())


# --- a worker stopping ------------------------------------------------------------------


def publish_blocking(url: str, subject: str, requests: list[tuple[str, bytes]]) -> None:
    """Publish ``requests`` (reply subject, envelope) on ``subject`` through
    a plain socket, blocking this thread (and so its event loop: nothing
    here reads them yet), and return once the server routed them all."""
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        reader = sock.makefile("rb")
        assert reader.readline().startswith(b"INFO ")
        out = [b'CONNECT {"verbose":false,"pedantic":false}\r\n']
        for reply, payload in requests:
            out.append(f"PUB {subject} {reply} {len(payload)}\r\n".encode() + payload + b"\r\n")
        sock.sendall(b"".join([*out, b"PING\r\n"]))
        while (line := reader.readline()) != b"PONG\r\n":
            assert line, "the server closed the connection"
        time.sleep(0.05)  # the server's writes to the worker's socket land


def test_stopping_a_worker_answers_the_requests_already_on_their_way(nats_url: str) -> None:
    async def go() -> tuple[dict[str, Any], list[str]]:
        stop, ready = asyncio.Event(), asyncio.Event()
        worker = asyncio.ensure_future(
            serve_nats(
                Sleeper(),
                servers=[nats_url],
                subject="tools.draining.queued",
                stop=stop,
                drain_seconds=5,
                ready=ready.set,
            )
        )
        await asyncio.wait_for(ready.wait(), 10)
        client = await nats.connect(nats_url)
        try:
            info = json.loads((await client.request("$SRV.INFO.sleeper", b"", timeout=2)).data)
            replies = await client.subscribe("_INBOX.queued.*")
            await client.flush()
            envelopes = [
                (f"_INBOX.queued.{i}", encode_request(f"q{i}", "ann", "{}", "{}"))
                for i in range(20)
            ]
            publish_blocking(nats_url, "tools.draining.queued", envelopes)
            stop.set()  # before the worker read any of them
            await asyncio.wait_for(worker, 10)
            answered: list[str] = []
            with contextlib.suppress(TimeoutError):
                while len(answered) < 20:
                    msg = await replies.next_msg(timeout=2)
                    answered.append(decode_reply(msg.data).id)
        finally:
            await client.close()
        return info, answered

    info, answered = asyncio.run(go())
    assert sorted(answered) == sorted(f"q{i}" for i in range(20))
    # the endpoint is the worker's own subscription, and $SRV.INFO still lists it
    assert [(e["name"], e["subject"], e["queue_group"]) for e in info["endpoints"]] == [
        ("invoke", "tools.draining.queued", QUEUE_GROUP)
    ]


def test_calls_past_the_drain_time_are_cancelled_before_teardown(nats_url: str) -> None:
    sleeper = Sleeper()

    async def go() -> float:
        stop, ready = asyncio.Event(), asyncio.Event()
        worker = asyncio.ensure_future(
            serve_nats(
                sleeper,
                servers=[nats_url],
                subject="tools.draining.late",
                stop=stop,
                drain_seconds=0.2,
                ready=ready.set,
            )
        )
        await asyncio.wait_for(ready.wait(), 10)
        client = await nats.connect(nats_url)
        try:
            payload = encode_request("late", "ann", "{}", json.dumps({"seconds": 30}))
            await client.publish("tools.draining.late", payload, reply="_INBOX.late.1")
            await client.flush()
            while "started" not in sleeper.events:
                await asyncio.sleep(0.01)
            started = time.monotonic()
            stop.set()
            await asyncio.wait_for(worker, 10)
            return time.monotonic() - started
        finally:
            await client.close()

    took = asyncio.run(go())
    assert sleeper.events == ["started", "cancelled", "teardown"]
    assert took < 5  # the 0.2 s drain, not the call's 30 s


def test_a_worker_whose_setup_fails_closes_its_connection(nats_url: str) -> None:
    async def go() -> set[asyncio.Task[Any]]:
        with pytest.raises(RuntimeError, match="setup failed on purpose"):
            await serve_nats(
                Sleeper(fail_setup=True),
                servers=[nats_url],
                subject="tools.draining.setup",
                stop=asyncio.Event(),
            )
        await asyncio.sleep(0.05)
        return {t for t in asyncio.all_tasks() if t is not asyncio.current_task()}

    assert asyncio.run(go()) == set()  # an open connection keeps tasks of its own


def test_serving_on_nats_servers_that_cannot_be_reached_is_a_one_line_error() -> None:
    url = f"nats://127.0.0.1:{free_port()}"  # nothing listens there
    command = [str(SEAMKIT), "tool-service", "serve", "tests.plugins.services.basic:Echo"]
    command += ["--transport", "nats", "--servers", url, "--workers", "2"]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        },
    )
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "Traceback" not in output
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 2  # one line from each worker
    assert all(line.startswith(f"error: cannot reach NATS at {url}") for line in errors)
    assert "hint: start nats-server" in done.stderr
