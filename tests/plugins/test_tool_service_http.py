"""Tool services over HTTP, end to end: the wire envelope's laws, real
service processes (``seamkit tool-service serve``) called by an agent's
``tool-service`` tools, misbehaving services (a raw ASGI app in this
process), secrets in config values, and the CLI around them.

Every service listens on 127.0.0.1 on a free port; each is started once for
the module and always stopped.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import seamkit
import seamkit_tool_service as ts
import uvicorn
from hypothesis import given, strategies as st
from opentelemetry import baggage, context
from opentelemetry.sdk.trace import TracerProvider
from seamkit.stream import ToolCompleted, ToolOutputDelta
from seamkit.testing import ScriptedModel
from seamkit.testing.strategies import json_values
from seamkit_tool_service import EnvelopeError, Reply, Request

from tests.conftest import free_port
from tests.plugins.services.http_extra import CANARY
from tests.plugins.tool_services import ServiceProcess, app, results, tool

SEAMKIT = Path(sys.executable).with_name("seamkit")
SPECS = {
    "echo": "tests.plugins.services.basic:Echo",
    "streamer": "tests.plugins.services.basic:Streamer",
    "raiser": "tests.plugins.services.basic:Raiser",
    "counter": "tests.plugins.services.http_extra:Counter",
    "keycheck": "tests.plugins.services.http_extra:KeyCheck",
    "trace-echo": "tests.plugins.services.nats_extra:TraceEcho",
}

# --- the wire envelope ---------------------------------------------------------

ids = st.text(max_size=30)
objects = st.dictionaries(
    st.text(max_size=8),
    json_values | st.floats(allow_nan=False, allow_infinity=False),
    max_size=5,
)


@given(call_id=ids, user=ids, config=objects, arguments=objects)
def test_a_request_round_trips(
    call_id: str, user: str, config: dict[str, Any], arguments: dict[str, Any]
) -> None:
    data = ts.encode_request(call_id, user, json.dumps(config), json.dumps(arguments))
    assert ts.decode_request(data) == Request(call_id, user, config, arguments)


@given(
    call_id=ids,
    response=st.text(),
    error=st.none() | st.tuples(st.text(min_size=1), st.text()),
    end_of_stream=st.booleans(),
)
def test_a_reply_round_trips(
    call_id: str, response: str, error: tuple[str, str] | None, end_of_stream: bool
) -> None:
    data = ts.encode_reply(call_id, response, error=error, end_of_stream=end_of_stream)
    assert ts.decode_reply(data) == Reply(call_id, response, error, end_of_stream)
    assert ts.decode_reply(data.decode()) == ts.decode_reply(data)


not_objects = st.one_of(
    st.none(), st.booleans(), st.integers(), st.text(), st.lists(json_values, max_size=3)
)


def _is_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


@given(
    data=st.one_of(
        st.binary().filter(lambda b: not _is_json(b)),
        not_objects.map(lambda v: json.dumps(v).encode()),
        st.dictionaries(st.sampled_from(["user", "response", "error", "x"]), json_values).map(
            lambda d: json.dumps(d).encode()
        ),
        st.fixed_dictionaries({"id": json_values.filter(lambda v: not isinstance(v, str))}).map(
            lambda d: json.dumps(d).encode()
        ),
    ),
    decode=st.sampled_from([ts.decode_request, ts.decode_reply]),
)
def test_a_malformed_envelope_is_an_envelope_error(
    data: bytes, decode: Callable[[bytes], object]
) -> None:
    with pytest.raises(EnvelopeError) as info:
        decode(data)
    assert info.value.error_type == "BadReply" and info.value.message


@given(call_id=ids, field=st.sampled_from(["config", "arguments"]), value=not_objects)
def test_a_request_whose_config_or_arguments_is_no_object_is_an_envelope_error(
    call_id: str, field: str, value: object
) -> None:
    data = json.dumps({"id": call_id, field: json.dumps(value)}).encode()
    with pytest.raises(EnvelopeError, match=f"request's '{field}'"):
        ts.decode_request(data)


# --- real services ---------------------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Every service of `SPECS` served over HTTP: their URLs by service id."""
    log_dir = tmp_path_factory.mktemp("services")
    started: list[ServiceProcess] = []
    with ThreadPoolExecutor(len(SPECS)) as pool:  # start them side by side
        futures = {k: pool.submit(ServiceProcess.http, spec, log_dir) for k, spec in SPECS.items()}
    try:
        failed = [f.exception() for f in futures.values() if f.exception() is not None]
        started = [f.result() for f in futures.values() if f.exception() is None]
        assert not failed, failed
        yield {k: f.result().url for k, f in futures.items()}
    finally:
        for process in started:
            process.stop()


def service(service_id: str, url: str, **fields: Any) -> dict[str, Any]:
    return {"id": service_id, "transport": "http", "url": url, **fields}


def script(*turns: list[tuple[str, dict[str, Any] | str]]) -> ScriptedModel:
    """One model turn of tool calls (name, arguments) per ``turns``, then ``done``."""
    counter = iter(range(1, 1000))
    scripted: list[dict[str, Any]] = [
        {
            "tool_calls": [
                {
                    "id": f"c{next(counter)}",
                    "name": n,
                    "arguments": a if isinstance(a, str) else json.dumps(a),
                }
                for n, a in calls
            ]
        }
        for calls in turns
    ]
    return ScriptedModel([*scripted, {"text": "done"}])


def run(
    manifest: dict[str, Any],
    *turns: list[tuple[str, dict[str, Any] | str]],
    user: str = "ann",
) -> seamkit.RunResult:
    async def go() -> seamkit.RunResult:
        async with await seamkit.Agent.load(manifest, model=script(*turns)) as agent:
            return await agent.run("hi", context={"user": user})

    result = asyncio.run(go())
    assert result.output == "done" and result.outcome.kind == "completed"
    return result


ECHO_PARAMS = {"config_params": [{"name": "collection", "required": True}]}
TEXT = ("text", "string", True)


def test_a_call_reaches_the_service_with_the_user_config_and_arguments(
    served: dict[str, str],
) -> None:
    manifest = app(
        [service("echo", served["echo"], **ECHO_PARAMS)],
        [tool("echo", "echo", TEXT, ("n", "integer", False), collection="docs")],
    )
    result = run(manifest, [("echo", {"text": "héllo", "n": 3})], user="ann")
    content = results(result)["c1"]
    answer = json.loads(content)
    # the service returned a dict: it arrives json.dumps'd
    assert content == json.dumps(answer, ensure_ascii=False)
    assert answer["user"] == "ann"
    assert answer["config"] == {"collection": "docs"}
    assert answer["arguments"] == {"text": "héllo", "n": 3}
    assert answer["pid"] != os.getpid()


def test_several_tools_on_one_service_each_send_their_own_config(
    served: dict[str, str],
) -> None:
    manifest = app(
        [service("echo", served["echo"], **ECHO_PARAMS)],
        [
            tool("docs", "echo", TEXT, collection="docs"),
            tool("faq", "echo", TEXT, collection={"name": "faq", "shard": 2}),
        ],
    )
    calls: list[tuple[str, dict[str, Any] | str]] = [
        ("docs", {"text": "a"}),
        ("faq", {"text": "b"}),
        ("docs", {"text": "c"}),
    ]
    got = {k: json.loads(v) for k, v in results(run(manifest, calls)).items()}
    assert got["c1"]["config"] == {"collection": "docs"} and got["c1"]["arguments"]["text"] == "a"
    assert got["c2"]["config"] == {"collection": {"name": "faq", "shard": 2}}
    assert got["c3"]["config"] == {"collection": "docs"} and got["c3"]["arguments"]["text"] == "c"


def test_arguments_are_validated_before_anything_crosses_the_wire(
    served: dict[str, str],
) -> None:
    manifest = app(
        [service("counter", served["counter"])],
        [tool("count", "counter", ("text", "string", True), ("n", "integer", False))],
    )
    result = run(
        manifest,
        [("count", {"text": "before"})],
        [("count", {"text": 5}), ("count", {"n": 1}), ("count", '{"text": "x", "zzz": 1}')],
        [("count", {"text": "after"})],
    )
    got = results(result)
    before = json.loads(got["c1"])["received"]
    for call_id in ("c2", "c3", "c4"):
        assert got[call_id].startswith("invalid arguments for tool 'count'"), got[call_id]
    assert json.loads(got["c5"]) == {"received": before + 1, "arguments": {"text": "after"}}


STREAM_ARGS = (("count", "integer", False), ("pause", "number", False), ("fail", "boolean", False))


def stream_events(manifest: dict[str, Any], arguments: dict[str, Any]) -> list[tuple[float, Any]]:
    """The events of a run calling ``stream`` once, each with when it came."""

    async def go() -> list[tuple[float, Any]]:
        model = script([("stream", arguments)])
        async with await seamkit.Agent.load(manifest, model=model) as agent:
            return [(time.monotonic(), e) async for e in agent.stream("hi")]

    return asyncio.run(go())


def test_a_stream_surfaces_each_chunk_live_and_joins_them(served: dict[str, str]) -> None:
    manifest = app(
        [service("streamer", served["streamer"])], [tool("stream", "streamer", *STREAM_ARGS)]
    )
    events = stream_events(manifest, {"count": 4, "pause": 0.4})
    deltas = [(t, e) for t, e in events if isinstance(e, ToolOutputDelta)]
    [(done_at, done)] = [(t, e) for t, e in events if isinstance(e, ToolCompleted)]
    assert [e.text for _, e in deltas] == ["0 ", "1 ", "2 ", "3 "]
    assert {e.call_id for _, e in deltas} == {"c1"}
    assert done.result.content == "0 1 2 3 " and not done.result.is_error
    # the first chunk came before the last was made (1.2 s later; all at the end: ~0 s)
    assert done_at - deltas[0][0] >= 0.6


def test_a_stream_that_raises_midway_ends_in_the_error(served: dict[str, str]) -> None:
    manifest = app(
        [service("streamer", served["streamer"])], [tool("stream", "streamer", *STREAM_ARGS)]
    )
    events = stream_events(manifest, {"count": 2, "fail": True})
    assert [e.text for _, e in events if isinstance(e, ToolOutputDelta)] == ["0 ", "1 "]
    [done] = [e for _, e in events if isinstance(e, ToolCompleted)]
    assert done.result.is_error
    assert done.result.content == "Error: RuntimeError: the stream broke"


def test_an_exception_in_the_service_is_the_error_the_model_sees(served: dict[str, str]) -> None:
    manifest = app(
        [service("raiser", served["raiser"])], [tool("fail", "raiser", ("message", "string", True))]
    )
    result = run(manifest, [("fail", {"message": "no such topic"})])
    assert results(result)["c1"] == "Error: ValueError: no such topic"


def test_a_service_that_is_not_running_is_unavailable_and_the_run_goes_on(
    served: dict[str, str],
) -> None:
    down = f"http://127.0.0.1:{free_port()}/"
    manifest = app(
        [service("down", down), service("echo", served["echo"], **ECHO_PARAMS)],
        [tool("down", "down"), tool("echo", "echo", TEXT, collection="docs")],
    )
    result = run(
        manifest,
        [("down", {}), ("echo", {"text": "still here"})],
        [("echo", {"text": "and later"})],
    )
    got = results(result)
    assert got["c1"].startswith(f"Error: Unavailable: cannot reach tool service 'down' at {down}")
    assert json.loads(got["c2"])["arguments"] == {"text": "still here"}
    assert json.loads(got["c3"])["arguments"] == {"text": "and later"}


def test_a_slow_service_times_out_at_the_tools_deadline(served: dict[str, str]) -> None:
    manifest = app(
        [service("echo", served["echo"], **ECHO_PARAMS)],
        [tool("slow", "echo", ("delay", "number", True), collection="docs", timeout_seconds=0.4)],
    )
    started = time.monotonic()
    result = run(manifest, [("slow", {"delay": 5})])
    assert time.monotonic() - started < 4  # the tool's 0.4 s, not the service's 5 s answer
    assert results(result)["c1"] == "Error: Timeout: tool service 'echo' did not finish within 0.4s"


@pytest.mark.slow
def test_sigterm_lets_the_http_call_in_flight_finish_with_two_workers(tmp_path: Path) -> None:
    served = ServiceProcess.http("tests.plugins.services.basic:Echo", tmp_path, workers=2)
    manifest = app(
        [service("echo", served.url, **ECHO_PARAMS)],
        [
            tool(
                "echo",
                "echo",
                TEXT,
                ("delay", "number", False),
                ("mark", "string", False),
                collection="docs",
            )
        ],
    )
    mark = tmp_path / "arrived"  # the service makes it when the call reaches a worker
    arguments = {"text": "slow", "delay": 1.5, "mark": str(mark)}

    async def go() -> seamkit.ToolResult:
        async with await seamkit.Agent.load(manifest, model=script()) as agent:
            slow = asyncio.ensure_future(agent.tools["echo"].call(arguments))
            for _ in range(1000):  # the request is with a worker (not a fixed time)
                if mark.exists():
                    break
                await asyncio.sleep(0.01)
            served.process.send_signal(signal.SIGTERM)
            return await slow

    with served:
        result = asyncio.run(go())
        assert not result.is_error, result.content
        assert json.loads(result.content)["arguments"] == arguments
        assert served.process.wait(15) in (0, -signal.SIGTERM), served.output()


# --- misbehaving services --------------------------------------------------------

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


async def rogue_app(scope: Scope, receive: Receive, send: Send) -> None:
    """A service that breaks the protocol in the way its path names."""
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    call_id = json.loads(body)["id"] if body else ""
    path = scope["path"]

    async def answer(data: bytes, status: int = 200, kind: bytes = b"application/json") -> None:
        await send(
            {"type": "http.response.start", "status": status, "headers": [(b"content-type", kind)]}
        )
        await send({"type": "http.response.body", "body": data})

    if path == "/malformed":
        await answer(b'{"id": "' + call_id.encode() + b'", "response": ')
    elif path == "/no-id":
        await answer(b'{"error": null, "response": "hi", "end_of_stream": true}')
    elif path == "/other-id":
        await answer(ts.encode_reply(call_id + "-someone-else", "not yours"))
    elif path == "/stray-then-right":
        lines = ts.encode_reply("stray", "not yours") + b"\n" + ts.encode_reply(call_id, "yours")
        await answer(lines + b"\n", kind=b"application/x-ndjson")
    elif path == "/truncated":
        chunk = ts.encode_reply(call_id, "half ", end_of_stream=False) + b"\n"
        await answer(chunk, kind=b"application/x-ndjson")
    elif path == "/stall":
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/x-ndjson")],
            }
        )
        first = ts.encode_reply(call_id, "first ", end_of_stream=False) + b"\n"
        await send({"type": "http.response.body", "body": first, "more_body": True})
        while (await receive())["type"] != "http.disconnect":  # never end_of_stream
            pass
    else:
        await answer(b"it broke", status=500, kind=b"text/plain")


@pytest.fixture(scope="module")
def rogue() -> Iterator[str]:
    """`rogue_app` served by uvicorn in a thread: its base URL."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(rogue_app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the rogue server never started"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def call_rogue(rogue: str, path: str, **fields: Any) -> tuple[str, int]:
    """Call the rogue service at ``path`` once: the result and how many
    replies the agent's HTTP transport dropped."""
    descriptor = service("rogue", rogue + path, **fields)
    manifest = app([descriptor], [tool("rogue", "rogue")])

    async def go() -> tuple[str, int]:
        async with await seamkit.Agent.load(manifest, model=script([("rogue", {})])) as agent:
            result = await agent.run("hi")
            return results(result)["c1"], ts.dropped_replies(agent)["stray"]

    return asyncio.run(go())


def test_a_malformed_reply_is_a_bad_reply(rogue: str) -> None:
    content, _ = call_rogue(rogue, "/malformed")
    assert content.startswith("Error: BadReply: tool service 'rogue' sent a malformed reply: ")
    assert "not JSON" in content


def test_a_reply_without_an_id_is_a_bad_reply(rogue: str) -> None:
    content, _ = call_rogue(rogue, "/no-id")
    assert content == (
        "Error: BadReply: tool service 'rogue' sent a malformed reply: the reply has no 'id'"
    )


def test_an_http_error_status_is_unavailable(rogue: str) -> None:
    content, _ = call_rogue(rogue, "/broken")
    assert (
        content
        == "Error: Unavailable: tool service 'rogue' at "
        + rogue
        + "/broken answered HTTP 500: it broke"
    )


def test_a_reply_for_another_call_is_dropped_and_counted(rogue: str) -> None:
    content, dropped = call_rogue(rogue, "/other-id")
    assert content == (
        "Error: BadReply: tool service 'rogue' answered with 1 reply(s) whose id is not this call's"
    )
    assert dropped == 1
    content, dropped = call_rogue(rogue, "/stray-then-right")
    assert (content, dropped) == ("yours", 1)


def test_a_stream_cut_short_is_a_bad_reply(rogue: str) -> None:
    content, dropped = call_rogue(rogue, "/truncated")
    assert content == "Error: BadReply: tool service 'rogue' ended its reply without end_of_stream"
    assert dropped == 0


def test_a_stream_without_end_of_stream_times_out_per_message(rogue: str) -> None:
    started = time.monotonic()
    content, _ = call_rogue(rogue, "/stall", timeout_seconds=20, message_timeout_seconds=0.3)
    assert time.monotonic() - started < 8  # app loading and the 0.3 s, not the 20 s deadline
    assert content == "Error: Timeout: tool service 'rogue' sent nothing for 0.3s"


# --- secrets and the CLI -------------------------------------------------------------


def write_app(directory: Path, manifest: dict[str, Any], calls: list[tuple[str, str]]) -> Path:
    """``manifest`` as app.json beside the script of one turn of ``calls``
    (tool name, arguments as JSON), then ``done``."""
    turns = [
        {"tool_calls": [{"name": n, "arguments": a} for n, a in calls]},
        {"text": "done"},
    ]
    (directory / "script.json").write_text(json.dumps(turns))
    path = directory / "app.json"
    path.write_text(json.dumps({**manifest, "model": "scripted:script.json"}))
    return path


def seamkit_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SEAMKIT), *args], capture_output=True, text=True, timeout=60)


def test_a_secret_config_value_reaches_the_service_and_nothing_else(
    served: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("JOKE_KEY", CANARY)
    caplog.set_level(logging.DEBUG)
    keycheck = service(
        "keycheck", served["keycheck"], config_params=[{"name": "key", "required": True}]
    )
    manifest = app([keycheck], [tool("check", "keycheck", key="${secret:JOKE_KEY}")])
    result = run(manifest, [("check", {})])
    assert results(result)["c1"] == "ok"  # the service got the real value
    assert CANARY not in result.model_dump_json()
    assert CANARY not in caplog.text
    path = write_app(tmp_path, manifest, [("check", "{}")])
    for command in (["validate"], ["tools", "--json"], ["run", "--json"], ["run"]):
        done = seamkit_cli(*command, str(path), *(["hi"] if command[0] == "run" else []))
        assert done.returncode == 0, done.stderr
        assert CANARY not in done.stdout + done.stderr, command
        if command[0] == "run":
            assert "ok" in done.stdout + done.stderr


def test_trace_context_reaches_the_service_in_http_headers(served: dict[str, str]) -> None:
    tracer = TracerProvider().get_tracer("tests.tool-service-http")
    manifest = app([service("trace-echo", served["trace-echo"])], [tool("t", "trace-echo", TEXT)])

    async def go() -> tuple[str, str]:
        async with await seamkit.Agent.load(
            manifest, model=script([("t", {"text": "a"})])
        ) as agent:
            with tracer.start_as_current_span("caller") as span:
                result = await agent.run("hi", context={"user": "ann"})
        return format(span.get_span_context().trace_id, "032x"), results(result)["c1"]

    trace_id, content = asyncio.run(go())
    assert trace_id != "0" * 32 and json.loads(content)["trace_id"] == trace_id


def test_the_callers_baggage_reaches_the_service_in_http_headers(served: dict[str, str]) -> None:
    # the same helpers as seamkit serve's (seamkit.plugins): baggage kept on both
    tracer = TracerProvider().get_tracer("tests.tool-service-http")
    manifest = app([service("trace-echo", served["trace-echo"])], [tool("t", "trace-echo", TEXT)])

    async def go() -> str:
        async with await seamkit.Agent.load(
            manifest, model=script([("t", {"text": "a"})])
        ) as agent:
            token = context.attach(baggage.set_baggage("tenant", "acme"))
            try:
                with tracer.start_as_current_span("caller"):
                    result = await agent.run("hi", context={"user": "ann"})
            finally:
                context.detach(token)
        return results(result)["c1"]

    assert json.loads(asyncio.run(go()))["baggage"] == {"tenant": "acme"}


def test_a_secret_a_service_echoes_back_is_masked_in_the_result(
    served: dict[str, str], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("ECHO_KEY", CANARY)
    manifest = app(
        [service("echo", served["echo"], **ECHO_PARAMS)],
        [tool("echo", "echo", TEXT, collection="${secret:ECHO_KEY}")],
    )
    result = run(manifest, [("echo", {"text": "x"})], user="ann")
    answer = json.loads(results(result)["c1"])
    assert answer["config"] == {"collection": "***"}  # the service got it, and said it back
    assert CANARY not in result.model_dump_json() and CANARY not in caplog.text


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("nosuchmodule:X", "cannot import 'nosuchmodule'"),
        ("json:dumps", "json:dumps is not a subclass of seamkit_tool_service.DynamicToolService"),
    ],
)
def test_serving_a_bad_spec_is_a_one_line_error(spec: str, words: str) -> None:
    done = seamkit_cli("tool-service", "serve", spec, "--port", str(free_port()))
    assert done.returncode != 0
    assert "Traceback" not in done.stdout + done.stderr
    error, *hints = done.stderr.splitlines()
    assert error.startswith(f"error: {words}")
    assert len(hints) <= 1 and all(h.startswith("hint: ") for h in hints)


def test_seamkit_run_prints_the_result_of_a_service_tool(
    served: dict[str, str], tmp_path: Path
) -> None:
    manifest = app(
        [service("echo", served["echo"], **ECHO_PARAMS)],
        [tool("echo", "echo", TEXT, collection="docs")],
    )
    path = write_app(tmp_path, manifest, [("echo", '{"text": "from the cli"}')])
    done = seamkit_cli("run", str(path), "hi", "--context", "user=cli-user")
    assert done.returncode == 0, done.stderr
    output = done.stdout + done.stderr
    assert '"user": "cli-user", "config": {"collection": "docs"}' in output
    assert '"arguments": {"text": "from the cli"}' in output
    assert done.stdout.rstrip().endswith("done")
