"""The ``anthropic`` provider: it is discovered from its installed
distribution, its config (the short form and the mapping form) validates and
reads the environment as the official client does, and a bad config names
the field. Over real sockets, against a local server replaying Anthropic's
answers byte for byte (`tests/plugins/openai_server.py`, wire transcripts
under ``tests/fixtures/anthropic`` with their sources), it streams and
completes the same turn, retries as the official client does and fails
clearly, never with the key in an error; the official ``anthropic`` client
reads the same transcripts to the same text and calls.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import seamkit
import seamkit_anthropic
from seamkit.plugins import get_registry
from seamkit.stream import OutputDelta, TextDelta, ToolArgumentsDelta
from seamkit_anthropic import AnthropicCache, AnthropicConfig, AnthropicModel, build_model

from tests.plugins.openai_server import ReplayServer, Reply

CANARY = "sk-ant-canary-5e1b7c93a0"
SEAMKIT = str(Path(sys.executable).parent / "seamkit")


def config(**fields: Any) -> AnthropicConfig:
    fields.setdefault("name", "claude-x")
    return AnthropicConfig(provider="anthropic", **fields)


def validate(tmp_path: Path, model_yaml: str) -> subprocess.CompletedProcess[str]:
    """``seamkit validate`` on an app whose ``model:`` is ``model_yaml``."""
    app = tmp_path / "app.yaml"
    app.write_text(f"name: a\nmodel:\n{model_yaml}")
    return subprocess.run(
        [SEAMKIT, "validate", str(app)], capture_output=True, text=True, timeout=60
    )


# --- discovery ---------------------------------------------------------------------


def test_the_provider_is_discovered_from_its_installed_distribution() -> None:
    info = get_registry().model_provider("anthropic")
    assert info is not None
    assert info.plugin == "anthropic"
    assert info.config is AnthropicConfig
    assert seamkit_anthropic.__seamkit_api__ == 1


def test_importing_the_plugin_loads_neither_httpx_nor_pydantic() -> None:
    code = "import sys, seamkit_anthropic; print('httpx' in sys.modules, 'pydantic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_building_a_model_loads_httpx_only_when_it_first_asks() -> None:
    code = (
        "import sys; from seamkit_anthropic import AnthropicConfig, build_model; "
        "build_model(AnthropicConfig(provider='anthropic', name='m')); "
        "print('httpx' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False"]


def test_seamkit_plugins_lists_the_provider() -> None:
    out = subprocess.run(
        [SEAMKIT, "plugins", "--json"], capture_output=True, text=True, check=True, timeout=60
    )
    plugins = {p["name"]: p for p in json.loads(out.stdout)}
    anthropic = plugins["anthropic"]
    assert (anthropic["distribution"], anthropic["error"]) == ("seamkit-anthropic", None)
    assert anthropic["kinds"] == ["model:anthropic"]


# --- the config ----------------------------------------------------------------------


def test_the_short_form_reads_the_key_and_base_url_from_the_environment() -> None:
    env = {"ANTHROPIC_API_KEY": CANARY, "ANTHROPIC_BASE_URL": "http://127.0.0.1:9/"}
    resolved = config().resolved(env)
    assert resolved.api_key is not None
    assert resolved.api_key.get_secret_value() == CANARY
    assert resolved.api_key.source == "ANTHROPIC_API_KEY"
    assert resolved.base_url == "http://127.0.0.1:9/"
    assert CANARY not in repr(resolved) + resolved.model_dump_json()


def test_without_the_environment_the_base_url_is_anthropics_and_there_is_no_key() -> None:
    resolved = config().resolved({})
    assert (resolved.base_url, resolved.api_key) == ("https://api.anthropic.com", None)


def test_the_config_wins_over_the_environment() -> None:
    key = seamkit.Secret("own", source="${secret:MY_KEY}")
    resolved = config(api_key=key, base_url="http://b").resolved(
        {"ANTHROPIC_API_KEY": CANARY, "ANTHROPIC_BASE_URL": "http://a"}
    )
    assert resolved.api_key is key
    assert resolved.base_url == "http://b"


def test_the_defaults() -> None:
    c = config()
    assert c.api_version == "2023-06-01"
    assert c.max_tokens == 4096
    assert (c.timeout_seconds, c.connect_timeout_seconds) == (600.0, 5.0)
    assert (c.max_retries, c.max_connections) == (2, 1000)
    assert c.cache == "auto"
    assert c.cache_plan == AnthropicCache(breakpoints=4, ttl="5m")


@pytest.mark.parametrize(
    ("cache", "plan"),
    [
        ("auto", AnthropicCache()),
        ("off", None),
        ({"breakpoints": 2}, AnthropicCache(breakpoints=2, ttl="5m")),
        ({"ttl": "1h"}, AnthropicCache(breakpoints=4, ttl="1h")),
        ({"breakpoints": 1, "ttl": "1h"}, AnthropicCache(breakpoints=1, ttl="1h")),
    ],
)
def test_the_cache_forms(cache: Any, plan: AnthropicCache | None) -> None:
    assert config(cache=cache).cache_plan == plan


def test_the_whole_mapping_form_loads_from_a_manifest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_ANTHROPIC_KEY", CANARY)
    manifest = {
        "name": "a",
        "model": {
            "provider": "anthropic",
            "name": "claude-x",
            "base_url": "http://127.0.0.1:9",
            "api_key": "${secret:MY_ANTHROPIC_KEY}",
            "api_version": "2023-06-01",
            "timeout_seconds": 30,
            "connect_timeout_seconds": 2,
            "max_retries": 5,
            "max_connections": 10,
            "max_tokens": 8192,
            "headers": {"anthropic-beta": "b1", "x-token": "${secret:MY_ANTHROPIC_KEY}"},
            "extra_body": {"metadata": {"user_id": "u1"}},
            "cache": {"breakpoints": 3, "ttl": "1h"},
        },
    }

    async def go() -> AnthropicModel:
        async with await seamkit.Agent.load(manifest) as agent:
            model = agent.model
            assert isinstance(model, AnthropicModel)
            return model

    model = asyncio.run(go())
    c = model.config
    assert c.api_key is not None and c.api_key.get_secret_value() == CANARY
    assert (c.max_tokens, c.max_retries, c.cache_plan) == (
        8192,
        5,
        AnthropicCache(breakpoints=3, ttl="1h"),
    )
    assert model.url == "http://127.0.0.1:9/v1/messages"
    assert CANARY not in repr(model) + repr(c)


@pytest.mark.parametrize(
    ("base_url", "url"),
    [
        ("https://api.anthropic.com", "https://api.anthropic.com/v1/messages"),
        ("https://api.anthropic.com/", "https://api.anthropic.com/v1/messages"),
        ("http://127.0.0.1:4000/v1", "http://127.0.0.1:4000/v1/messages"),
        ("https://gw.example/anthropic", "https://gw.example/anthropic/v1/messages"),
    ],
)
def test_requests_go_to_v1_messages_under_the_base_url(base_url: str, url: str) -> None:
    assert AnthropicModel(config(base_url=base_url)).url == url


def test_extra_body_may_not_set_what_the_provider_writes() -> None:
    for key in ("messages", "stream", "system"):
        with pytest.raises(ValueError, match=f"extra_body may not set {key}"):
            config(extra_body={key: []})


@pytest.mark.parametrize(
    ("model_yaml", "named"),
    [
        ("  provider: anthropic\n  name: m\n  timeout_seconds: -1\n", "timeout_seconds"),
        ("  provider: anthropic\n  name: m\n  colour: red\n", "colour"),
        ("  provider: anthropic\n  name: m\n  max_tokens: 0\n", "max_tokens"),
        ("  provider: anthropic\n  name: m\n  cache: sometimes\n", "cache"),
        ("  provider: anthropic\n  name: m\n  cache: {breakpoints: 5}\n", "breakpoints"),
        ("  provider: anthropic\n  name: m\n  cache: {ttl: 2h}\n", "ttl"),
        ("  provider: anthropic\n  name: m\n  extra_body: {system: x}\n", "extra_body"),
    ],
)
def test_a_bad_model_mapping_names_the_field(tmp_path: Path, model_yaml: str, named: str) -> None:
    out = validate(tmp_path, model_yaml)
    assert out.returncode != 0
    assert "Traceback" not in out.stderr
    assert named in out.stderr


def test_a_good_model_mapping_validates(tmp_path: Path) -> None:
    out = validate(tmp_path, "  provider: anthropic\n  name: m\n  cache: {ttl: 1h}\n")
    assert out.returncode == 0, out.stderr


# --- the model over the wire ---------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[ReplayServer]:
    with ReplayServer() as running:
        yield running


def model_for(server: ReplayServer, name: str, **options: Any) -> AnthropicModel:
    options.setdefault("api_key", seamkit.Secret(CANARY, source="${secret:MY_KEY}"))
    return build_model(config(name=name, base_url=server.root_url, **options))


def ask(**fields: Any) -> seamkit.ModelRequest:
    fields.setdefault("messages", (seamkit.Message.user("hi"),))
    return seamkit.ModelRequest(**fields)


async def streamed(model: seamkit.Model, request: seamkit.ModelRequest) -> list[Any]:
    return [item async for item in model.stream(request)]


def whole_body(name: str) -> Any:
    """The JSON body of the fixture ``name`` (a whole answer)."""
    return json.loads(b"".join(Reply.http(name).body))


def message_of(server: ReplayServer, name: str) -> dict[str, Any]:
    """The whole message the streamed fixture ``name`` builds as the official
    client reads it off the replay server (``get_final_message``): the same
    answer, sent whole."""
    import anthropic  # lazy: the cross-check client, a dev dependency

    server.script("sdk-cross-check", Reply.http(name))
    client = anthropic.Anthropic(api_key="k", base_url=server.root_url, max_retries=0)
    try:
        with client.messages.stream(
            model="sdk-cross-check", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            for _ in stream:
                pass
            message = stream.get_final_message()
    finally:
        client.close()
    return message.model_dump(mode="json", exclude_none=True)


STREAMS = [
    # name, text deltas, calls (id, name, arguments), finish reason, (input, output)
    ("basic_response", ["Hello", " there", "!"], [], "stop", (11, 6)),
    (
        "tool_use_response",
        ["I", "'ll check the current weather in Paris for you."],
        [("toolu_01NRLabsLyVHZPKxbKvkfSMn", "get_weather", {"location": "Paris"})],
        "tool_calls",
        (377, 65),
    ),
    (
        "parallel_tools_response",
        ["Checking both cities."],
        [
            ("toolu_01Pa", "get_weather", {"location": "Paris", "unit": "celsius"}),
            ("toolu_01Ro", "get_weather", {"location": "Rome", "unit": "celsius"}),
        ],
        "tool_calls",
        (410, 98),
    ),
    (
        "thinking_response",
        ["The greatest common divisor of 1071 and 462 is **21**."],
        [],
        "stop",
        (40, 120),
    ),
    ("refusal_response", [], [], "refusal", (20, 0)),
    ("cached_response", ["Cached."], [], "stop", (2009, 5)),
]


@pytest.mark.parametrize(
    ("name", "deltas", "calls", "reason", "tokens"), STREAMS, ids=[s[0] for s in STREAMS]
)
def test_a_streamed_answer_gives_its_deltas_and_the_same_turn_as_the_whole_one(
    server: ReplayServer,
    name: str,
    deltas: list[str],
    calls: list[tuple[str, str, dict[str, Any]]],
    reason: str,
    tokens: tuple[int, int],
) -> None:
    model = model_for(server, f"s-{name}")
    server.script(f"s-{name}", Reply.http(name), path="/v1/messages")
    *pieces, turn = asyncio.run(streamed(model, ask()))
    assert [p for p in pieces if isinstance(p, str)] == deltas
    assert isinstance(turn, seamkit.ModelTurn)
    assert turn.finish_reason == reason
    got = [
        (c.id, c.function.name, json.loads(c.function.arguments))
        for c in turn.message.tool_calls or ()
    ]
    assert got == calls
    fragments = [p for p in pieces if isinstance(p, ToolArgumentsDelta)]
    assert all(f.text for f in fragments)  # the SDK fixture's empty first piece is skipped
    for index, (call_id, call_name, arguments) in enumerate(calls):
        mine = [f for f in fragments if f.index == index]
        assert {(f.id, f.name) for f in mine} == {(call_id, call_name)}
        assert json.loads("".join(f.text for f in mine)) == arguments
    assert (turn.usage.input_tokens, turn.usage.output_tokens, turn.usage.requests) == (
        *tokens,
        1,
    )
    # the same answer sent whole (as the official client accumulates it) gives the same turn
    server.script(f"s-{name}", Reply.json(message_of(server, name)))
    assert asyncio.run(model.complete(ask())) == turn
    assert server.seen(f"s-{name}")[-1].body.get("stream") is None


def test_the_official_client_reads_the_fixtures_to_the_same_text_and_calls(
    server: ReplayServer,
) -> None:
    for name, deltas, calls, _, _ in STREAMS:
        message = message_of(server, name)
        text = "".join(b["text"] for b in message["content"] if b["type"] == "text")
        sdk_calls = [
            (b["id"], b["name"], b["input"]) for b in message["content"] if b["type"] == "tool_use"
        ]
        if name != "refusal_response":
            assert text == "".join(deltas), name
        assert sdk_calls == calls, name


def test_thinking_is_kept_in_the_turn_before_the_text_and_never_yielded(
    server: ReplayServer,
) -> None:
    server.script("t-think", Reply.http("thinking_response"))
    *pieces, turn = asyncio.run(streamed(model_for(server, "t-think"), ask()))
    assert pieces == ["The greatest common divisor of 1071 and 462 is **21**."]
    content = turn.message.content
    assert isinstance(content, list)
    assert [p["type"] for p in content] == ["thinking", "text"]
    assert content[0]["signature"] == "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
    assert content[0]["thinking"].endswith("So the GCD is 21.")
    assert turn.message.text == pieces[0]


def test_thinking_and_redacted_thinking_round_trip_with_a_tool_call(server: ReplayServer) -> None:
    body = whole_body("thinking_tool_whole")
    server.script("t-redacted", Reply.http("thinking_tool_whole"))
    turn = asyncio.run(model_for(server, "t-redacted").complete(ask()))
    # verbatim, in order, the call a stand-in in its place, no text part
    assert turn.message.content == [*body["content"][:2], {"type": "tool_use", "id": "toolu_01T1x"}]
    assert turn.message.text == ""
    (call,) = turn.message.tool_calls or ()
    assert (call.id, call.function.name) == ("toolu_01T1x", "get_weather")
    assert json.loads(call.function.arguments) == {"location": "Paris, France"}
    assert turn.finish_reason == "tool_calls"
    # the turn survives a round trip through the transcript's JSON unchanged
    again = seamkit.Message.model_validate_json(turn.message.model_dump_json())
    assert again == turn.message


INTERLEAVED = [
    {"type": "thinking", "thinking": "first", "signature": "s1"},
    {"type": "tool_use", "id": "toolu_a", "name": "look", "input": {"q": 1}},
    {"type": "redacted_thinking", "data": "opaque"},
    {"type": "text", "text": "then"},
    {"type": "thinking", "thinking": "second", "signature": "s2"},
    {"type": "tool_use", "id": "toolu_b", "name": "look", "input": {"q": 2}},
]


def interleaved_stream() -> Reply:
    usage = {"input_tokens": 9, "output_tokens": 1}
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"type": "message", "content": [], "usage": usage}}
    ]
    for index, block in enumerate(INTERLEAVED):
        start = {**block, "input": {}} if block["type"] == "tool_use" else block
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        if block["type"] == "tool_use":
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            events.append({"type": "content_block_delta", "index": index, "delta": delta})
        events.append({"type": "content_block_stop", "index": index})
    events.append({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": usage})
    events.append({"type": "message_stop"})
    return sse(*events)


def test_an_interleaved_answer_is_echoed_block_for_block(server: ReplayServer) -> None:
    from seamkit_anthropic._wire import request_body  # lazy: the wire, to read the echo

    whole = {
        "type": "message",
        "role": "assistant",
        "content": INTERLEAVED,
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 9, "output_tokens": 1},
    }
    server.script("i-order", Reply.json(whole), interleaved_stream())
    model = model_for(server, "i-order")
    turn = asyncio.run(model.complete(ask()))
    *_, streamed_turn = asyncio.run(streamed(model, ask()))
    assert streamed_turn == turn
    assert turn.message.text == "then"
    results = [seamkit.Message.tool(i, "ok") for i in ("toolu_a", "toolu_b")]
    follow = ask(messages=(seamkit.Message.user("hi"), turn.message, *results))
    sent = request_body(follow, model.config, stream=False)["messages"][1]["content"]
    assert [{k: v for k, v in b.items() if k != "cache_control"} for b in sent] == INTERLEAVED


def test_thinking_goes_back_unchanged_on_the_next_request(server: ReplayServer) -> None:
    @seamkit.tool
    def get_weather(location: str) -> str:
        """The weather somewhere."""
        return f"sunny in {location}"

    server.script("t-echo", Reply.http("thinking_tool_whole"), Reply.http("basic_response"))
    agent = seamkit.Agent(model_for(server, "t-echo"), tools=[get_weather])
    result = asyncio.run(agent.run("weather in Paris?"))
    assert result.output == "Hello there!"
    sent = whole_body("thinking_tool_whole")["content"]
    second = server.seen("t-echo")[-1].body["messages"]
    assistant = next(m for m in second if m["role"] == "assistant")
    assert assistant["content"][:2] == sent[:2]  # thinking and redacted thinking, verbatim
    use = assistant["content"][2]
    assert (use["type"], use["id"], use["name"], use["input"]) == (
        "tool_use",
        "toolu_01T1x",
        "get_weather",
        {"location": "Paris, France"},
    )
    results = [b for m in second if m["role"] == "user" for b in m["content"]]
    assert any(
        b.get("type") == "tool_result" and b.get("tool_use_id") == "toolu_01T1x" for b in results
    )


def test_a_refusal_is_the_explanation_or_a_plain_sentence(server: ReplayServer) -> None:
    server.script("r-ref", Reply.http("refusal_response"))
    *_, turn = asyncio.run(streamed(model_for(server, "r-ref"), ask()))
    assert (turn.finish_reason, turn.message.text) == (
        "refusal",
        "This request was refused due to policy.",
    )
    bare = {
        "type": "message",
        "role": "assistant",
        "content": [],
        "stop_reason": "refusal",
        "usage": {"input_tokens": 3, "output_tokens": 0},
    }
    server.script("r-ref", Reply.json(bare))
    turn = asyncio.run(model_for(server, "r-ref").complete(ask()))
    assert turn.message.text == "the model refused to answer"


def test_a_token_limit_inside_a_tool_call_fails_with_the_limit_named(
    server: ReplayServer,
) -> None:
    server.script("l-cut", Reply.http("incomplete_partial_json_response"))
    with pytest.raises(
        seamkit.ModelError, match="token limit in the middle of tool call 'make_file'"
    ):
        asyncio.run(streamed(model_for(server, "l-cut"), ask()))
    # the run's own output tool cut at the limit is an answer: the run judges it
    output = seamkit.OutputSpec(name="make_file", json_schema={"type": "object"}, mode="tool")
    server.script("l-cut", Reply.http("incomplete_partial_json_response"))
    *_, turn = asyncio.run(streamed(model_for(server, "l-cut"), ask(output=output)))
    assert turn.finish_reason == "length"
    (call,) = turn.message.tool_calls or ()
    assert call.function.arguments.startswith('{"filename": "taxes.txt", "lines_of_text"')


def test_a_whole_answer_cut_at_the_limit_with_a_call_fails(server: ReplayServer) -> None:
    # a whole answer's input is always an object: it parses, yet it may be cut short
    cut = {
        "type": "message",
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "make_file", "input": {"a": 1}},
        ],
        "stop_reason": "max_tokens",
        "usage": {"input_tokens": 3, "output_tokens": 10},
    }
    for reason in ("max_tokens", "model_context_window_exceeded"):
        server.script("l-whole", Reply.json({**cut, "stop_reason": reason}))
        with pytest.raises(seamkit.ModelError, match="token limit in the middle of tool call"):
            asyncio.run(model_for(server, "l-whole").complete(ask()))
        server.script("l-whole", Reply.json({**cut, "stop_reason": reason}))
        with pytest.raises(seamkit.ModelError, match="token limit in the middle of tool call"):
            asyncio.run(streamed(model_for(server, "l-whole"), ask()))
    # the run's output tool is an answer the run validates
    output = seamkit.OutputSpec(name="make_file", json_schema={"type": "object"}, mode="tool")
    server.script("l-whole", Reply.json(cut))
    turn = asyncio.run(model_for(server, "l-whole").complete(ask(output=output)))
    assert turn.finish_reason == "length"


def test_a_stream_cut_at_the_limit_before_any_fragment_fails(server: ReplayServer) -> None:
    usage = {"input_tokens": 9, "output_tokens": 1}
    reply = sse(
        {"type": "message_start", "message": {"type": "message", "content": [], "usage": usage}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "rm", "input": {}},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": usage},
        {"type": "message_stop"},
    )
    server.script("l-empty", reply)
    with pytest.raises(seamkit.ModelError, match="token limit in the middle of tool call 'rm'"):
        asyncio.run(streamed(model_for(server, "l-empty"), ask()))
    server.script("l-empty", reply)
    with pytest.raises(seamkit.ModelError, match="token limit in the middle of tool call 'rm'"):
        asyncio.run(model_for(server, "l-empty").complete(ask()))


def test_pause_turn_is_a_clear_error(server: ReplayServer) -> None:
    paused = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "searching"}],
        "stop_reason": "pause_turn",
        "usage": {"input_tokens": 3, "output_tokens": 1},
    }
    server.script("p-pause", Reply.json(paused))
    with pytest.raises(seamkit.ModelError, match="pause_turn"):
        asyncio.run(model_for(server, "p-pause").complete(ask()))


def test_usage_counts_cached_input_in_the_input(server: ReplayServer) -> None:
    server.script("u-cache", Reply.http("cached_response"))
    *_, turn = asyncio.run(streamed(model_for(server, "u-cache"), ask()))
    assert turn.usage == seamkit.Usage(
        input_tokens=21 + 188 + 1800,
        output_tokens=5,
        requests=1,
        cache_read_tokens=1800,
        cache_write_tokens=188,
    )


def test_headers_on_the_wire(server: ReplayServer) -> None:
    server.script("h-wire", Reply.http("basic_response"))
    model = model_for(
        server,
        "h-wire",
        api_version="2099-01-01",
        headers={"Anthropic-Beta": "b1", "x-token": seamkit.Secret("tok")},
    )
    asyncio.run(streamed(model, ask()))
    seen = server.seen("h-wire")[-1]
    assert seen.path == "/v1/messages"
    headers = seen.headers
    assert headers["x-api-key"] == CANARY
    assert headers["anthropic-version"] == "2099-01-01"
    assert headers["anthropic-beta"] == "b1"
    assert headers["x-token"] == "tok"
    assert headers["user-agent"].startswith("seamkit-anthropic/")
    assert "authorization" not in headers
    assert seen.body["stream"] is True


def test_streamed_turns_reuse_one_connection(server: ReplayServer) -> None:
    server.script("c-reuse", *[Reply.http("basic_response") for _ in range(3)])
    model = model_for(server, "c-reuse")

    async def three() -> None:
        for _ in range(3):
            await streamed(model, ask())

    asyncio.run(three())
    assert len({r.client for r in server.seen("c-reuse")}) == 1


def test_a_long_token_limit_is_streamed_even_for_complete(server: ReplayServer) -> None:
    server.script("c-long", Reply.http("basic_response"))
    turn = asyncio.run(model_for(server, "c-long").complete(ask(max_tokens=64000)))
    assert turn.message.text == "Hello there!"
    assert server.seen("c-long")[-1].body["stream"] is True


# --- failures -----------------------------------------------------------------------


def test_529_then_200_is_retried(server: ReplayServer, caplog: pytest.LogCaptureFixture) -> None:
    server.script("f-529", Reply.http("overloaded_529"), Reply.http("basic_response"))
    with caplog.at_level(logging.WARNING, logger="seamkit.anthropic"):
        *_, turn = asyncio.run(streamed(model_for(server, "f-529"), ask()))
    assert turn.message.text == "Hello there!"
    assert len(server.seen("f-529")) == 2
    (retry,) = [r.getMessage() for r in caplog.records if "retry" in r.getMessage()]
    assert "HTTP 529; retry 1 of 2 in 0.00s" in retry


@pytest.mark.parametrize("status", [408, 409, 429, 500, 503])
def test_retryable_statuses_are_retried(server: ReplayServer, status: int) -> None:
    error = {"type": "error", "error": {"type": "api_error", "message": "busy"}}
    name = f"f-retry-{status}"
    server.script(
        name,
        Reply.json(error, status, **{"retry-after-ms": "10"}),
        Reply.json(whole_body("thinking_tool_whole")),
    )
    turn = asyncio.run(model_for(server, name).complete(ask()))
    assert turn.finish_reason == "tool_calls"
    assert len(server.seen(name)) == 2


def test_retry_after_is_honoured(server: ReplayServer) -> None:
    server.script("f-after", Reply.http("rate_limit_429"), Reply.http("basic_response"))
    start = time.monotonic()
    asyncio.run(streamed(model_for(server, "f-after"), ask()))
    assert time.monotonic() - start >= 0.4


def test_retry_after_as_an_http_date_is_honoured(server: ReplayServer) -> None:
    when = email.utils.formatdate(time.time() + 2, usegmt=True)
    error = {"type": "error", "error": {"type": "rate_limit_error", "message": "later"}}
    server.script("f-date", Reply.json(error, 429, **{"retry-after": when}))
    server.script("f-date", Reply.http("basic_response"))
    start = time.monotonic()
    asyncio.run(streamed(model_for(server, "f-date"), ask()))
    assert 0.9 <= time.monotonic() - start < 4


def test_retries_stop_at_max_retries(server: ReplayServer) -> None:
    busy = Reply.http("overloaded_529")
    server.script("f-max", busy, busy, busy)
    with pytest.raises(seamkit.ModelError, match="answered 529 after 2 attempts: Overloaded"):
        asyncio.run(model_for(server, "f-max", max_retries=1).complete(ask()))
    assert len(server.scripts["f-max"]) == 1


def test_x_should_retry_false_is_not_retried(server: ReplayServer) -> None:
    error = {"type": "error", "error": {"type": "api_error", "message": "no"}}
    server.script(
        "f-noretry",
        Reply.json(error, 500, **{"x-should-retry": "false"}),
        Reply.http("basic_response"),
    )
    with pytest.raises(seamkit.ModelError, match="answered 500: no"):
        asyncio.run(model_for(server, "f-noretry").complete(ask()))
    assert len(server.scripts["f-noretry"]) == 1


def test_401_names_the_keys_variable_never_the_key(
    server: ReplayServer, caplog: pytest.LogCaptureFixture
) -> None:
    echo = {"type": "error", "error": {"type": "authentication_error", "message": f"bad {CANARY}"}}
    server.script("f-401", Reply.http("authentication_401"), Reply.json(echo, 401))
    with pytest.raises(seamkit.ModelError, match="refused the API key from MY_KEY"):
        asyncio.run(model_for(server, "f-401").complete(ask()))
    with caplog.at_level(logging.DEBUG):
        result = asyncio.run(seamkit.Agent(model_for(server, "f-401")).run("hi"))
    assert result.outcome.kind == "failed"
    assert "bad ***" in (result.outcome.error or "")
    for text in (result.outcome.error or "", result.model_dump_json(), caplog.text):
        assert CANARY not in text


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_key_from_the_environment_names_anthropic_api_key(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch, status: int
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
    kind = "authentication_error" if status == 401 else "permission_error"
    error = {"type": "error", "error": {"type": kind, "message": f"key {CANARY} refused"}}
    server.script(f"f-env-{status}", Reply.json(error, status))
    model = build_model(config(name=f"f-env-{status}", base_url=server.root_url))
    with pytest.raises(seamkit.ModelError, match=f"ANTHROPIC_API_KEY \\({status}") as caught:
        asyncio.run(model.complete(ask()))
    assert CANARY not in str(caught.value) + str(caught.value.hint)


def test_401_without_a_key_says_to_set_one(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    server.script("f-nokey", Reply.http("authentication_401"))
    with pytest.raises(seamkit.ModelError, match="none was set") as caught:
        asyncio.run(model_for(server, "f-nokey", api_key=None).complete(ask()))
    assert "ANTHROPIC_API_KEY" in (caught.value.hint or "")


def test_404_names_the_model(server: ReplayServer) -> None:
    server.script("f-404", Reply.http("not_found_404"))
    with pytest.raises(seamkit.ModelError, match="has no model 'f-404'"):
        asyncio.run(model_for(server, "f-404").complete(ask()))


@pytest.mark.parametrize("name", ["prompt_too_long_400", "max_tokens_context_400"])
def test_a_context_length_400_has_its_own_class(server: ReplayServer, name: str) -> None:
    server.script(f"f-{name}", Reply.http(name))
    with pytest.raises(seamkit.ContextLengthExceeded) as caught:
        asyncio.run(model_for(server, f"f-{name}").complete(ask()))
    assert caught.value.model == f"f-{name}"
    assert caught.value.provider == "anthropic"


def test_413_is_not_a_context_error(server: ReplayServer) -> None:
    server.script("f-413", Reply.http("request_too_large_413"))
    with pytest.raises(seamkit.ModelError, match="413") as caught:
        asyncio.run(model_for(server, "f-413").complete(ask()))
    assert not isinstance(caught.value, seamkit.ContextLengthExceeded)
    assert "32 MB" in (caught.value.hint or "")


def test_an_error_object_in_a_200_body_fails_the_turn(server: ReplayServer) -> None:
    error = {"type": "error", "error": {"type": "api_error", "message": "upstream timed out"}}
    server.script("f-200", Reply.json(error))
    with pytest.raises(seamkit.ModelError, match=r"\(api_error\): upstream timed out"):
        asyncio.run(model_for(server, "f-200").complete(ask()))


def test_a_read_time_out_inside_a_stream_is_a_cut(server: ReplayServer) -> None:
    server.script("f-slow", Reply.http("basic_response", pause=1.0))
    model = model_for(server, "f-slow", timeout_seconds=0.3, max_retries=0)
    with pytest.raises(seamkit.ModelError, match=r"cut off before message_stop .*ReadTimeout"):
        asyncio.run(streamed(model, ask()))


def test_an_error_event_fails_the_turn_and_is_not_retried(server: ReplayServer) -> None:
    server.script("f-event", Reply.http("error_event_response"), Reply.http("basic_response"))
    with pytest.raises(seamkit.ModelError, match=r"\(overloaded_error\): Overloaded") as caught:
        asyncio.run(streamed(model_for(server, "f-event"), ask()))
    assert "run again" in (caught.value.hint or "")
    assert len(server.scripts["f-event"]) == 1  # never asked again mid-stream


@pytest.mark.parametrize("cut", [False, True], ids=["ended", "dropped"])
def test_a_stream_without_message_stop_is_a_cut_never_a_call(
    server: ReplayServer, cut: bool
) -> None:
    server.script("f-cut", Reply.http("cut_response", cut=cut))
    with pytest.raises(seamkit.ModelError, match="cut off before message_stop") as caught:
        asyncio.run(streamed(model_for(server, "f-cut"), ask()))
    assert "in the middle of tool call 'get_weather'" in str(caught.value)
    if cut:
        assert "RemoteProtocolError" in str(caught.value)


def test_cancelling_a_run_closes_its_stream(server: ReplayServer) -> None:
    events = Reply.http("basic_response").body
    ticks = [events[0], events[1]] + [events[3]] * 50  # start, open the block, then text
    server.script(
        "k-cancel", Reply(ticks, headers={"content-type": "text/event-stream"}, pause=0.2)
    )
    server.script("k-cancel", Reply.http("basic_response"))
    # kept, the one connection would be the stream's for 10 s, past the pool's 5 s wait
    model = model_for(server, "k-cancel", max_connections=1, timeout_seconds=5)
    agent = seamkit.Agent(model)
    before = server.disconnects

    async def go() -> tuple[Any, float]:
        async for event in agent.stream("count"):
            if isinstance(event, TextDelta):
                break  # closing the stream cancels the run
        start = time.monotonic()
        result = await agent.run("again")
        return result, time.monotonic() - start

    result, took = asyncio.run(go())
    assert result.output == "Hello there!"
    assert took < 3  # at once, not at the pool's 5 s wait
    deadline = time.monotonic() + 10
    while server.disconnects == before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.disconnects == before + 1


def test_a_tool_call_round_trip_through_the_agent(server: ReplayServer) -> None:
    @seamkit.tool
    def get_weather(location: str) -> str:
        """The weather somewhere."""
        return f"sunny in {location}"

    server.script("a-tool", Reply.http("tool_use_response"), Reply.http("basic_response"))
    result = asyncio.run(seamkit.Agent(model_for(server, "a-tool"), tools=[get_weather]).run("hi"))
    assert result.output == "Hello there!"
    assert result.usage.requests == 2
    assert result.usage.input_tokens == 377 + 11


# --- structured output ------------------------------------------------------------


def sse(*events: dict[str, Any]) -> Reply:
    """An event stream of ``events`` (each ``{"type": ...}``), one write each."""
    body = [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events]
    return Reply(body, headers={"content-type": "text/event-stream"})


def streamed_output_call(value: dict[str, Any], name: str = "final_result") -> Reply:
    text = json.dumps(value)
    usage = {"input_tokens": 9, "output_tokens": 1}
    pieces = [text[i : i + 7] for i in range(0, len(text), 7)]
    return sse(
        {"type": "message_start", "message": {"type": "message", "content": [], "usage": usage}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_out", "name": name, "input": {}},
        },
        *[
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": p},
            }
            for p in pieces
        ],
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 20},
        },
        {"type": "message_stop"},
    )


def test_a_structured_tool_run_streams_growing_partials(server: ReplayServer) -> None:
    value = {"name": "Ada", "age": 36, "tags": ["maths", "engines"]}
    server.script("o-tool", streamed_output_call(value))
    agent = seamkit.Agent(model_for(server, "o-tool"), output=seamkit.Output(dict, mode="tool"))

    async def go() -> list[Any]:
        return [e async for e in agent.stream("who?")]

    events = asyncio.run(go())
    partials = [e.partial for e in events if isinstance(e, OutputDelta)]
    assert len(partials) > 1  # the value grew while the arguments arrived
    assert partials[-1] == value
    assert events[-1].result.output == value
    body = server.seen("o-tool")[-1].body
    assert [t["name"] for t in body["tools"]] == ["final_result"]


def test_a_refusal_ends_a_structured_run_failed(server: ReplayServer) -> None:
    server.script("o-refuse", Reply.http("refusal_response"))
    agent = seamkit.Agent(model_for(server, "o-refuse"), output=seamkit.Output(dict, mode="tool"))

    async def go() -> list[Any]:
        return [e async for e in agent.stream("who?")]

    result = asyncio.run(go())[-1].result
    assert isinstance(result.outcome, seamkit.Failed)
    assert "refused" in (result.outcome.error or "")
    assert "This request was refused due to policy." in (result.outcome.error or "")


def test_the_answer_readers_take_no_any_across_the_module_boundary() -> None:
    import typing  # lazy: beside its test

    from seamkit_anthropic import _assemble  # lazy: the readers the model calls
    from seamkit_openai import _assemble as openai_assemble  # lazy: its usage reader

    readers = [
        _assemble.usage_of,
        _assemble.turn_from_message,
        _assemble.TurnAssembler.feed,
        openai_assemble.usage_of,
    ]
    for reader in readers:
        hints = typing.get_type_hints(reader)
        assert all("Any" not in repr(h) for h in hints.values()), (reader, hints)
