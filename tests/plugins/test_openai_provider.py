"""The ``openai`` provider over real sockets: a local OpenAI-compatible
server (`tests/plugins/openai_server.py`) replays answers byte for byte, and
the provider, the agent and the CLI talk to it over HTTP.

Each provider quirk has a wire transcript under ``tests/fixtures/openai``,
with its source in the file's comment lines.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import seamkit
import seamkit_openai
from seamkit import flow
from seamkit.plugins import get_registry
from seamkit.stream import RunFinished, TextDelta, ToolArgumentsDelta, ToolCallEmitted
from seamkit_openai import OpenAIConfig, build_model

from tests.conftest import free_port
from tests.plugins.openai_server import ReplayServer, Reply

CANARY = "sk-canary-7f3a9c41d2"


@pytest.fixture(scope="module")
def server() -> Iterator[ReplayServer]:
    with ReplayServer() as running:
        yield running


def model_for(server: ReplayServer, name: str, **options: Any) -> seamkit.Model:
    options.setdefault("api_key", seamkit.Secret(CANARY, source="${secret:MY_KEY}"))
    return build_model(
        OpenAIConfig(provider="openai", name=name, base_url=server.base_url, **options)
    )


def ask(**fields: Any) -> seamkit.ModelRequest:
    fields.setdefault("messages", (seamkit.Message.user("hi"),))
    return seamkit.ModelRequest(**fields)


async def streamed(model: seamkit.Model, request: seamkit.ModelRequest) -> list[Any]:
    return [item async for item in model.stream(request)]


def last_body(server: ReplayServer, model: str) -> dict[str, Any]:
    return next(r.body for r in reversed(server.requests) if r.body.get("model") == model)


TEXT = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}]}


# --- the request on the wire ---------------------------------------------------


def wire(server: ReplayServer, name: str, request: seamkit.ModelRequest, **options: Any) -> Any:
    server.script(name, Reply.json(TEXT))
    asyncio.run(model_for(server, name, **options).complete(request))
    return last_body(server, name)


def test_the_preamble_is_the_first_message_with_role_system(server: ReplayServer) -> None:
    body = wire(server, "w-preamble", ask(preamble="Be brief."))
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert body["messages"][1] == {"role": "user", "content": "hi"}
    assert body["model"] == "w-preamble"
    assert "stream" not in body


def test_documents_are_appended_to_the_system_message(server: ReplayServer) -> None:
    docs = (
        seamkit.Document(id="a", text="Paris is in France."),
        seamkit.Document(id='b"2', text="Rome.", metadata={"lang": "en"}),
    )
    body = wire(server, "w-docs", ask(preamble="Answer.", extra_context=docs))
    assert body["messages"][0]["content"] == (
        "Answer.\n\n<documents>\n"
        '<document id="a">\nParis is in France.\n</document>\n'
        '<document id="b&quot;2">\n<metadata>{"lang": "en"}</metadata>\nRome.\n</document>\n'
        "</documents>"
    )
    alone = wire(server, "w-docs2", ask(extra_context=docs[:1]))
    assert alone["messages"][0]["role"] == "system"
    assert alone["messages"][0]["content"].startswith("<documents>")


def test_temperature_and_the_token_limit(server: ReplayServer) -> None:
    body = wire(server, "w-temp", ask(temperature=0.2, max_tokens=64))
    assert body["temperature"] == 0.2
    assert body["max_completion_tokens"] == 64
    assert "max_tokens" not in body
    old = wire(server, "w-old", ask(max_tokens=64), token_limit_field="max_tokens")
    assert old["max_tokens"] == 64
    assert "max_completion_tokens" not in old


SPEC = seamkit.ToolSpec(
    name="add", description="Add.", parameters={"type": "object", "properties": {}}
)


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", "auto"),
        ("none", "none"),
        ("required", "required"),
        ("add", {"type": "function", "function": {"name": "add"}}),
    ],
)
def test_tool_choice_and_tools(server: ReplayServer, choice: str, expected: Any) -> None:
    body = wire(server, f"w-choice-{choice}", ask(tools=(SPEC,), tool_choice=choice))
    assert body["tool_choice"] == expected
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "add",
                "description": "Add.",
                "parameters": {"type": "object", "properties": {}},
            },
        }
    ]


def test_no_tools_sends_neither_tools_nor_tool_choice(server: ReplayServer) -> None:
    body = wire(server, "w-notools", ask(tool_choice="auto"))
    assert "tools" not in body
    assert "tool_choice" not in body


def test_extra_body_then_additional_params_are_merged(server: ReplayServer) -> None:
    body = wire(
        server,
        "w-params",
        ask(additional_params={"seed": 7, "top_p": 0.5}),
        extra_body={"top_p": 0.9, "user": "u1"},
    )
    assert body["seed"] == 7
    assert body["top_p"] == 0.5  # the request's additional_params win
    assert body["user"] == "u1"


def test_a_secret_in_extra_body_goes_on_the_wire_and_nowhere_else(
    server: ReplayServer, caplog: pytest.LogCaptureFixture
) -> None:
    token = seamkit.Secret("body-canary-991", source="${secret:BODY_TOKEN}")
    echo = error_body("bad token body-canary-991")
    server.script("w-secret", Reply.json(TEXT), Reply.json(echo, 500), Reply.json(echo, 500))
    model = model_for(server, "w-secret", extra_body={"auth": {"token": token}}, max_retries=1)
    asyncio.run(model.complete(ask()))
    assert last_body(server, "w-secret")["auth"] == {"token": "body-canary-991"}
    with caplog.at_level(logging.DEBUG), pytest.raises(seamkit.ModelError) as caught:
        asyncio.run(model.complete(ask()))
    assert "bad token ***" in str(caught.value)
    assert "body-canary-991" not in str(caught.value) + caplog.text + repr(model)


def test_additional_params_may_not_set_messages_or_stream(server: ReplayServer) -> None:
    model = model_for(server, "w-reserved")
    with pytest.raises(seamkit.ModelError, match="may not set stream"):
        asyncio.run(model.complete(ask(additional_params={"stream": False})))
    with pytest.raises(ValueError, match="extra_body may not set messages"):
        OpenAIConfig(provider="openai", name="x", extra_body={"messages": []})


def test_a_streamed_request_asks_for_usage_unless_told_not_to(server: ReplayServer) -> None:
    server.script("w-stream", Reply.transcript("openai_text"), Reply.transcript("openai_text"))
    asyncio.run(streamed(model_for(server, "w-stream"), ask()))
    body = last_body(server, "w-stream")
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    asyncio.run(streamed(model_for(server, "w-stream", stream_usage=False), ask()))
    assert "stream_options" not in last_body(server, "w-stream")


def test_headers_carry_the_key_organization_project_and_extra_headers(
    server: ReplayServer,
) -> None:
    server.script("w-headers", Reply.json(TEXT))
    model = model_for(
        server,
        "w-headers",
        organization="org-1",
        project="proj-1",
        headers={"X-Trace": "t1", "X-Token": seamkit.Secret("tok", source="${secret:TOK}")},
    )
    asyncio.run(model.complete(ask()))
    headers = server.requests[-1].headers
    assert headers["authorization"] == f"Bearer {CANARY}"
    assert headers["openai-organization"] == "org-1"
    assert headers["openai-project"] == "proj-1"
    assert headers["x-trace"] == "t1"
    assert headers["x-token"] == "tok"
    assert headers["user-agent"].startswith("seamkit-openai/")
    assert CANARY not in repr(model)


def test_the_key_and_base_url_come_from_the_environment(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    server.script("w-env", Reply.json(TEXT))
    agent = seamkit.Agent("openai:w-env")
    result = asyncio.run(agent.run("hi"))
    assert result.output == "ok"
    assert server.requests[-1].headers["authorization"] == "Bearer sk-from-env"


def test_a_local_server_needs_no_key(server: ReplayServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server.script("w-nokey", Reply.json(TEXT))
    asyncio.run(model_for(server, "w-nokey", api_key=None).complete(ask()))
    assert "authorization" not in server.requests[-1].headers


class Patcher:
    """A code hook that patches every request."""

    name = "patcher"

    def __init__(self, patch: seamkit.RequestPatch) -> None:
        self.patch = patch

    @seamkit.hookimpl
    def on_pre_llm(self, ctx: Any, request: Any) -> Any:
        return flow.PatchRequest(self.patch)


def test_active_tools_and_history_patches_reach_the_wire(server: ReplayServer) -> None:
    @seamkit.tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @seamkit.tool
    def shout(text: str) -> str:
        """Shout."""
        return text.upper()

    history = (seamkit.Message.user("earlier"), seamkit.Message.assistant("noted"))
    patch = seamkit.RequestPatch(
        active_tools=("shout",),
        history=(*history, seamkit.Message.user("now")),
        additional_params={"seed": 3},
        tool_choice="shout",
    )
    server.script("w-agent", Reply.json(TEXT))
    agent = seamkit.Agent(model_for(server, "w-agent"), tools=[add, shout], hooks=[Patcher(patch)])
    result = asyncio.run(agent.run("hi"))
    assert result.outcome.kind == "completed", result.outcome
    body = last_body(server, "w-agent")
    assert [t["function"]["name"] for t in body["tools"]] == ["shout"]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "shout"}}
    assert body["messages"] == [
        {"role": "user", "content": "earlier"},
        {"role": "assistant", "content": "noted"},
        {"role": "user", "content": "now"},
    ]
    assert body["seed"] == 3


# --- streaming, and the providers' quirks --------------------------------------

# (transcript, text deltas, calls as (id, name, arguments), input and output tokens)
QUIRKS: list[tuple[str, list[str], list[tuple[str, str, dict[str, Any]]], tuple[int, int]]] = [
    ("openai_text", ["Hello", ", world"], [], (12, 3)),
    (
        "openai_tool_calls",
        [],
        [("call_a", "get_weather", {"city": "Paris"}), ("call_b", "get_time", {"zone": "CET"})],
        (40, 20),
    ),
    ("litellm_usage", ["Hi"], [], (9, 1)),
    ("azure_prompt_filter", ["Bonjour"], [], (0, 0)),
    ("finish_without_delta", ["Done"], [], (0, 0)),
    (
        "gemini_no_index",
        [],
        [
            ("call_g1", "get_weather", {"city": "Paris"}),
            ("call_g2", "get_weather", {"city": "Rome"}),
        ],
        (30, 20),
    ),
    ("fragments_no_index", [], [("call_m1", "add", {"a": 2, "b": 3})], (0, 0)),
    (
        "ollama_same_index",
        [],
        [
            ("call_o1", "get_weather", {"city": "Oslo"}),
            ("call_o2", "get_weather", {"city": "Bergen"}),
        ],
        (0, 0),
    ),
    ("repeated_id_name", [], [("call_d1", "search", {"q": "seamkit"})], (20, 9)),
    ("refusal", ["I'm sorry, ", "I can't help with that."], [], (0, 0)),
    ("openrouter_comments", ["Ready", "."], [], (5, 2)),
]


@pytest.mark.parametrize(("name", "deltas", "calls", "tokens"), QUIRKS, ids=[q[0] for q in QUIRKS])
def test_a_streamed_transcript_gives_its_deltas_and_turn(
    server: ReplayServer,
    name: str,
    deltas: list[str],
    calls: list[tuple[str, str, dict[str, Any]]],
    tokens: tuple[int, int],
) -> None:
    server.script(f"q-{name}", Reply.transcript(name))
    items = asyncio.run(streamed(model_for(server, f"q-{name}"), ask()))
    *pieces, turn = items
    assert [p for p in pieces if isinstance(p, str)] == deltas
    assert isinstance(turn, seamkit.ModelTurn)
    assert turn.message.text == "".join(deltas)
    got = [
        (c.id, c.function.name, json.loads(c.function.arguments))
        for c in turn.message.tool_calls or ()
    ]
    assert got == calls
    # each call's arguments also arrive as fragments, at the call's position
    fragments = [p for p in pieces if isinstance(p, ToolArgumentsDelta)]
    assert len(fragments) + len(deltas) == len(pieces)
    joined: dict[int, str] = {}
    for fragment in fragments:
        joined[fragment.index] = joined.get(fragment.index, "") + fragment.text
        assert (fragment.id, fragment.name) == calls[fragment.index][:2]
    assert [json.loads(joined[i]) for i in sorted(joined)] == [c[2] for c in calls]
    assert (turn.finish_reason == "refusal") is (name == "refusal")
    assert (turn.usage.input_tokens, turn.usage.output_tokens) == tokens
    assert turn.usage.requests == 1


CACHED_USAGE = {
    # OpenAI: prompt_tokens_details.cached_tokens (prompt_tokens counts them too)
    "openai": (
        {
            "prompt_tokens": 2006,
            "completion_tokens": 300,
            "prompt_tokens_details": {"cached_tokens": 1920},
        },
        (2006, 300, 1920, 0),
    ),
    # LiteLLM passing Anthropic's counts through beside its own
    "litellm-anthropic": (
        {
            "prompt_tokens": 2009,
            "completion_tokens": 5,
            "prompt_tokens_details": {"cached_tokens": 1800},
            "cache_read_input_tokens": 1800,
            "cache_creation_input_tokens": 188,
        },
        (2009, 5, 1800, 188),
    ),
    # only the top-level Anthropic spelling
    "top-level": (
        {
            "prompt_tokens": 50,
            "completion_tokens": 1,
            "cache_read_input_tokens": 30,
            "cache_creation_input_tokens": 10,
        },
        (50, 1, 30, 10),
    ),
    "none": ({"prompt_tokens": 5, "completion_tokens": 1}, (5, 1, 0, 0)),
}


@pytest.mark.parametrize("flavour", list(CACHED_USAGE))
def test_cached_prompt_tokens_are_counted(server: ReplayServer, flavour: str) -> None:
    usage, expected = CACHED_USAGE[flavour]
    name = f"u-cache-{flavour}"
    chunk = {"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]}
    server.script(name, Reply.sse([chunk, {"choices": [], "usage": usage}]))
    server.script(name, Reply.json({**TEXT, "usage": usage}))
    model = model_for(server, name)
    *_, streamed_turn = asyncio.run(streamed(model, ask()))
    whole_turn = asyncio.run(model.complete(ask()))
    for turn in (streamed_turn, whole_turn):
        u = turn.usage
        assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens) == (
            expected
        )


def test_streamed_turns_reuse_one_connection(server: ReplayServer) -> None:
    server.script("s-reuse", *[Reply.transcript("openai_text") for _ in range(3)])
    model = model_for(server, "s-reuse")

    async def three() -> None:
        for _ in range(3):
            await streamed(model, ask())

    asyncio.run(three())
    clients = {r.client for r in server.requests if r.body.get("model") == "s-reuse"}
    assert len(clients) == 1  # the body was read to its end after [DONE]


def test_deltas_reach_the_agent_stream_as_they_arrive(server: ReplayServer) -> None:
    server.script(
        "s-live",
        Reply.sse(
            [
                {"choices": [{"index": 0, "delta": {"content": "a"}}]},
                {"choices": [{"index": 0, "delta": {"content": "b"}, "finish_reason": "stop"}]},
            ],
            pause=0.8,
        ),
    )
    agent = seamkit.Agent(model_for(server, "s-live"))

    async def go() -> list[tuple[float, Any]]:
        start = time.monotonic()
        return [(time.monotonic() - start, e) async for e in agent.stream("hi")]

    events = asyncio.run(go())
    deltas = [(t, e.text) for t, e in events if isinstance(e, TextDelta)]
    assert [text for _, text in deltas] == ["a", "b"]
    assert deltas[1][0] - deltas[0][0] >= 0.4  # the first came before the second was sent
    assert isinstance(events[-1][1], RunFinished)
    assert events[-1][1].result.output == "ab"


@pytest.mark.parametrize("cut", [False, True], ids=["ended", "dropped"])
def test_a_stream_cut_before_done_is_a_clear_error_never_a_call(
    server: ReplayServer, cut: bool
) -> None:
    server.script("c-cut", Reply.transcript("cut_in_tool_call", cut=cut))
    with pytest.raises(seamkit.ModelError) as caught:
        asyncio.run(streamed(model_for(server, "c-cut"), ask()))
    message = str(caught.value)
    assert "cut off before [DONE]" in message
    assert "openai provider at http://127.0.0.1" in message
    assert "in the middle of tool call 'write_file'" in message
    assert caught.value.provider == "openai"
    if cut:
        assert "RemoteProtocolError" in message

    @seamkit.tool
    def write_file(path: str, text: str) -> str:
        """Write a file."""
        raise AssertionError("a cut call must never run")

    server.script("c-cut", Reply.transcript("cut_in_tool_call", cut=cut))
    agent = seamkit.Agent(model_for(server, "c-cut"), tools=[write_file])

    async def go() -> list[Any]:
        return [e async for e in agent.stream("write it")]

    events = asyncio.run(go())
    assert not [e for e in events if isinstance(e, ToolCallEmitted)]
    result = events[-1].result
    assert result.outcome.kind == "failed"
    assert "cut off before [DONE]" in result.outcome.error


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("vllm_error_event", "The engine died unexpectedly."),
        ("openrouter_error", "Provider disconnected unexpectedly"),
    ],
)
def test_an_error_event_inside_a_stream_fails_the_turn(
    server: ReplayServer, name: str, said: str
) -> None:
    server.script(f"e-{name}", Reply.transcript(name))
    with pytest.raises(seamkit.ModelError, match="reported an error in its answer") as caught:
        asyncio.run(streamed(model_for(server, f"e-{name}"), ask()))
    assert said in str(caught.value)


def test_an_error_in_a_whole_200_answer_fails_the_turn(server: ReplayServer) -> None:
    server.script("e-whole", Reply.json(error_body("upstream timed out")))
    with pytest.raises(seamkit.ModelError, match="reported an error in its answer: upstream"):
        asyncio.run(model_for(server, "e-whole").complete(ask()))
    server.script("e-whole", Reply.json(["not", "an", "object"]))
    with pytest.raises(seamkit.ModelError, match="sent an answer that is not a JSON object"):
        asyncio.run(model_for(server, "e-whole").complete(ask()))


@pytest.mark.parametrize("odd", [float("nan"), float("inf"), -3, True, "12", None])
def test_an_odd_usage_count_counts_as_zero(server: ReplayServer, odd: Any) -> None:
    usage = {
        "prompt_tokens": odd,
        "completion_tokens": odd,
        "prompt_tokens_details": {"cached_tokens": odd},
    }
    server.script("u-odd", Reply.json({**TEXT, "usage": usage}))
    turn = asyncio.run(model_for(server, "u-odd").complete(ask()))
    assert turn.message.text == "ok"
    assert (turn.usage.input_tokens, turn.usage.output_tokens) == (0, 0)
    assert turn.usage.cache_read_tokens == 0


@pytest.mark.parametrize("reason", ["error", "abort", "content_filter"])
def test_a_finish_reason_that_is_not_an_answer_fails_the_turn(
    server: ReplayServer, reason: str
) -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": reason}]}
    server.script(f"f-{reason}", Reply.sse([chunk]))
    with pytest.raises(seamkit.ModelError, match=f"finish_reason '{reason}'"):
        asyncio.run(streamed(model_for(server, f"f-{reason}"), ask()))


def test_a_token_limit_inside_tool_arguments_fails_with_the_limit_named(
    server: ReplayServer,
) -> None:
    call = {"index": 0, "id": "call_1", "function": {"name": "add", "arguments": '{"a": 1'}}
    chunk = {"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": "length"}]}
    server.script("f-length", Reply.sse([chunk]))
    with pytest.raises(seamkit.ModelError, match="token limit in the middle of tool call 'add'"):
        asyncio.run(streamed(model_for(server, "f-length"), ask()))
    text = {"choices": [{"index": 0, "delta": {"content": "trunc"}, "finish_reason": "length"}]}
    server.script("f-length", Reply.sse([text]))
    *_, turn = asyncio.run(streamed(model_for(server, "f-length"), ask()))
    assert turn.message.text == "trunc"


def test_a_server_that_ignores_stream_true_still_answers(server: ReplayServer) -> None:
    server.script("s-json", Reply.json(TEXT))
    items = asyncio.run(streamed(model_for(server, "s-json"), ask()))
    assert items[0] == "ok"
    assert items[-1].message.text == "ok"


def test_a_tool_call_round_trip_through_the_agent(server: ReplayServer) -> None:
    @seamkit.tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    server.script(
        "r-agent",
        Reply.transcript("fragments_no_index"),
        Reply.sse(
            [{"choices": [{"index": 0, "delta": {"content": "5"}, "finish_reason": "stop"}]}]
        ),
    )
    agent = seamkit.Agent(model_for(server, "r-agent"), tools=[add])

    async def go() -> list[Any]:
        return [e async for e in agent.stream("2+3?")]

    events = asyncio.run(go())
    result = events[-1].result
    assert result.output == "5"
    second = last_body(server, "r-agent")["messages"]
    assert second[1] == {
        "role": "assistant",
        "tool_calls": [
            {
                "id": "call_m1",
                "type": "function",
                "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
            }
        ],
    }
    assert second[2] == {"role": "tool", "tool_call_id": "call_m1", "content": "5"}


# --- failures ---------------------------------------------------------------------


def error_body(message: str, code: str | None = None, type: str = "invalid_request_error") -> Any:
    return {"error": {"message": message, "type": type, "param": None, "code": code}}


def test_401_names_the_keys_variable_never_the_key(
    server: ReplayServer, caplog: pytest.LogCaptureFixture
) -> None:
    echo = error_body(f"Incorrect API key provided: {CANARY}.", "invalid_api_key")
    server.script("x-401", Reply.json(echo, 401), Reply.json(echo, 401))
    with pytest.raises(seamkit.ModelError) as caught:
        asyncio.run(model_for(server, "x-401").complete(ask()))
    text = str(caught.value)
    assert "MY_KEY" in text
    assert "401" in text
    agent = seamkit.Agent(model_for(server, "x-401"))
    with caplog.at_level(logging.DEBUG):
        result = asyncio.run(agent.run("hi"))
    assert result.outcome.kind == "failed"
    for output in (text, result.outcome.error, result.model_dump_json(), caplog.text):
        assert CANARY not in output


def test_403_from_the_environment_key_names_openai_api_key(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    server.script("x-403", Reply.json(error_body("forbidden"), 403))
    model = build_model(OpenAIConfig(provider="openai", name="x-403", base_url=server.base_url))
    with pytest.raises(seamkit.ModelError, match="OPENAI_API_KEY") as caught:
        asyncio.run(model.complete(ask()))
    assert CANARY not in str(caught.value)


def test_401_without_a_key_says_to_set_one(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server.script("x-nokey", Reply.json(error_body("You didn't provide an API key."), 401))
    with pytest.raises(seamkit.ModelError, match="wants an API key, and none was set") as caught:
        asyncio.run(model_for(server, "x-nokey", api_key=None).complete(ask()))
    assert "OPENAI_API_KEY" in (caught.value.hint or "")


def test_404_names_the_model_and_the_base_url(server: ReplayServer) -> None:
    server.script("x-404", Reply.json(error_body("The model does not exist"), 404))
    with pytest.raises(seamkit.ModelError) as caught:
        asyncio.run(model_for(server, "x-404").complete(ask()))
    assert "'x-404'" in str(caught.value)
    assert server.base_url in str(caught.value)


CONTEXT_ERRORS = {
    # OpenAI: code context_length_exceeded
    "openai": error_body(
        "This model's maximum context length is 128000 tokens.", "context_length_exceeded"
    ),
    # vLLM before 0.16: a flat object
    "vllm-flat": {
        "object": "error",
        "message": "This model's maximum context length is 4096 tokens. However, you "
        "requested 5000 tokens.",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    },
    # vLLM 0.16 and later
    "vllm": {
        "error": {
            "message": "This model's maximum context length is 4096 tokens.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        }
    },
    # LiteLLM's proxy
    "litellm": error_body(
        "litellm.ContextWindowExceededError: litellm.BadRequestError: prompt too long",
        "400",
        "None",
    ),
    # llama.cpp's server
    "llama.cpp": {
        "error": {
            "code": 400,
            "message": "the request exceeds the available context size, try increasing it",
            "type": "exceed_context_size_error",
        }
    },
}


@pytest.mark.parametrize("flavour", list(CONTEXT_ERRORS))
def test_a_context_length_error_has_its_own_class(server: ReplayServer, flavour: str) -> None:
    server.script(f"x-ctx-{flavour}", Reply.json(CONTEXT_ERRORS[flavour], 400))
    with pytest.raises(seamkit.ContextLengthExceeded) as caught:
        asyncio.run(model_for(server, f"x-ctx-{flavour}").complete(ask()))
    assert caught.value.model == f"x-ctx-{flavour}"
    assert isinstance(caught.value, seamkit.ModelError)


def test_another_400_is_a_plain_model_error(server: ReplayServer) -> None:
    server.script("x-400", Reply.json(error_body("temperature must be <= 2"), 400))
    with pytest.raises(seamkit.ModelError, match="answered 400: temperature") as caught:
        asyncio.run(model_for(server, "x-400").complete(ask()))
    assert not isinstance(caught.value, seamkit.ContextLengthExceeded)
    assert len([r for r in server.requests if r.body.get("model") == "x-400"]) == 1


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503])
def test_retryable_answers_are_retried_and_logged(
    server: ReplayServer, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    name = f"x-retry-{status}"
    server.script(
        name,
        Reply.json(error_body("busy"), status, **{"retry-after-ms": "10"}),
        Reply.json(error_body("busy"), status, **{"retry-after": "0"}),
        Reply.json(TEXT),
    )
    with caplog.at_level(logging.WARNING, logger="seamkit.openai"):
        turn = asyncio.run(model_for(server, name).complete(ask()))
    assert turn.message.text == "ok"
    retries = [r for r in caplog.records if "retry" in r.getMessage()]
    assert [r.getMessage().split("; ")[1] for r in retries] == [
        "retry 1 of 2 in 0.01s",
        "retry 2 of 2 in 0.00s",
    ]
    assert f"HTTP {status}" in retries[0].getMessage()


def test_retry_after_is_honoured(server: ReplayServer) -> None:
    server.script(
        "x-after",
        Reply.json(error_body("slow down"), 429, **{"retry-after": "0.4"}),
        Reply.json(TEXT),
    )
    start = time.monotonic()
    asyncio.run(model_for(server, "x-after").complete(ask()))
    assert time.monotonic() - start >= 0.4


def test_retries_stop_at_max_retries_with_the_last_answer(server: ReplayServer) -> None:
    busy = Reply.json(error_body("overloaded"), 503, **{"retry-after": "0"})
    server.script("x-max", busy, busy, busy)
    with pytest.raises(seamkit.ModelError, match="answered 503 after 2 attempts: overloaded"):
        asyncio.run(model_for(server, "x-max", max_retries=1).complete(ask()))
    assert len(server.scripts["x-max"]) == 1  # the third answer was never asked for


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        (Reply.json(error_body("quota", "insufficient_quota"), 429), "insufficient_quota"),
        (Reply.json(error_body("no"), 500, **{"x-should-retry": "false"}), "x-should-retry"),
    ],
    ids=["insufficient_quota", "x-should-retry"],
)
def test_some_answers_are_not_retried(server: ReplayServer, reply: Reply, why: str) -> None:
    server.script(f"x-once-{why}", reply, Reply.json(TEXT))
    with pytest.raises(seamkit.ModelError):
        asyncio.run(model_for(server, f"x-once-{why}").complete(ask()))
    assert len(server.scripts[f"x-once-{why}"]) == 1


def test_x_should_retry_true_retries_a_400(server: ReplayServer) -> None:
    server.script(
        "x-should",
        Reply.json(error_body("again"), 400, **{"x-should-retry": "true", "retry-after": "0"}),
        Reply.json(TEXT),
    )
    assert asyncio.run(model_for(server, "x-should").complete(ask())).message.text == "ok"


def test_a_refused_connection_is_retried_then_reported(caplog: pytest.LogCaptureFixture) -> None:
    port = free_port()
    model = build_model(
        OpenAIConfig(
            provider="openai", name="m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=1
        )
    )
    with (
        caplog.at_level(logging.WARNING, logger="seamkit.openai"),
        pytest.raises(seamkit.ModelError, match=r"cannot reach .* after 2 attempts: ConnectError"),
    ):
        asyncio.run(model.complete(ask()))
    assert len([r for r in caplog.records if "retry 1 of 1" in r.getMessage()]) == 1


def test_a_connect_time_out(monkeypatch: pytest.MonkeyPatch) -> None:
    # A listening socket whose backlog is full: the kernel drops further SYNs,
    # so a new connection neither succeeds nor is refused.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(4):
        filler = socket.socket()
        filler.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            filler.connect(("127.0.0.1", port))
        fillers.append(filler)
    time.sleep(0.1)
    model = build_model(
        OpenAIConfig(
            provider="openai",
            name="m",
            base_url=f"http://127.0.0.1:{port}/v1",
            connect_timeout_seconds=0.3,
            max_retries=0,
        )
    )
    try:
        with pytest.raises(seamkit.ModelError, match=r"no connection within 0\.3s"):
            asyncio.run(model.complete(ask()))
    finally:
        for sock in (*fillers, listener):
            sock.close()


def test_a_read_time_out_before_the_answer(server: ReplayServer) -> None:
    server.script("t-read", Reply(delay=6))
    model = model_for(server, "t-read", timeout_seconds=0.3, max_retries=0)
    start = time.monotonic()
    with pytest.raises(seamkit.ModelError, match=r"no answer within 0\.3s"):
        asyncio.run(model.complete(ask()))
    assert time.monotonic() - start < 3  # the 0.3 s time-out, not the 6 s answer


def test_a_read_time_out_inside_a_stream_is_a_cut(server: ReplayServer) -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "slow"}}]}
    server.script("t-stream", Reply.sse([chunk, chunk], pause=1.0))
    model = model_for(server, "t-stream", timeout_seconds=0.3, max_retries=0)
    with pytest.raises(seamkit.ModelError, match=r"cut off before .*ReadTimeout"):
        asyncio.run(streamed(model, ask()))


def test_cancelling_a_run_closes_its_stream(server: ReplayServer) -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "tick "}}]}
    end = {"choices": [{"index": 0, "message": {"content": "end"}, "finish_reason": "stop"}]}
    server.script("k-cancel", Reply.sse([chunk] * 50, pause=0.2), Reply.json(end))
    # One connection in the pool: the second run can only start once the
    # first has given its connection back (kept, it would be the stream's
    # for 10 s, past the pool's 5 s wait).
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
    assert result.output == "end"
    assert took < 3  # at once, not at the pool's 5 s wait
    deadline = time.monotonic() + 10
    while server.disconnects == before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.disconnects == before + 1  # the server saw the first stream go away


def test_a_provider_error_ends_the_run_as_failed_never_raising(server: ReplayServer) -> None:
    busy = Reply.json(error_body("down"), 502, **{"retry-after": "0"})
    server.script("x-run", busy, busy, busy, busy)
    agent = seamkit.Agent(model_for(server, "x-run"))
    for streaming in (False, True):

        async def go(streaming: bool = streaming) -> seamkit.RunResult:
            if not streaming:
                return await agent.run("hi")
            events = [e async for e in agent.stream("hi")]
            result: seamkit.RunResult = events[-1].result
            return result

        server.scripts["x-run"].extend([busy, busy, busy])
        result = asyncio.run(go())
        assert result.outcome.kind == "failed"
        assert "answered 502 after 3 attempts: down" in result.outcome.error


def open_connections(port: int) -> int:
    """Established TCP connections of this machine to 127.0.0.1:``port``
    (read from /proc/net/tcp: the client side has ``port`` as its remote end)."""
    count = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        remote, state = fields[2], fields[3]
        if state == "01" and int(remote.split(":")[1], 16) == port:
            count += 1
    return count


def test_a_model_closes_its_connections_with_the_agent() -> None:
    with ReplayServer() as own:  # its own port: no other test's connections counted
        own.script("k-close", Reply.json(TEXT))
        manifest = {
            "name": "a",
            "model": {"provider": "openai", "name": "k-close", "base_url": own.base_url},
        }

        async def go() -> tuple[int, int]:
            async with await seamkit.Agent.load(manifest) as agent:
                await agent.run("hi")
                during = open_connections(own.port)
            return during, open_connections(own.port)

        during, after = asyncio.run(go())
    assert during >= 1  # kept alive in the pool while the agent is open
    assert after == 0


# --- redirects ------------------------------------------------------------------------


@pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
def test_a_redirect_over_https_is_not_followed_so_headers_and_prompt_stay_home(
    server: ReplayServer,
    tls: tuple[Path, Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    streaming: bool,
) -> None:
    # httpx drops only Authorization on a redirect to another origin: a Secret
    # in the config's headers, and the prompt on a 307, would go on with it.
    monkeypatch.setenv("SSL_CERT_FILE", str(tls[0]))  # httpx trusts the test CA
    elsewhere = f"{server.base_url}/chat/completions"
    server.script("r-moved", Reply.json(TEXT))
    token = seamkit.Secret("header-canary-5e8d21", source="${secret:GATEWAY_TOKEN}")
    with ReplayServer(tls=(tls[1], tls[2])) as home:
        home.script(
            "r-moved", Reply([b""], 307, {"location": f"{elsewhere}?key={CANARY}#{CANARY}"})
        )
        model = model_for(home, "r-moved", headers={"X-Gateway-Token": token}, max_retries=2)
        assert isinstance(model, seamkit_openai.OpenAIModel)
        assert model.url.startswith("https://")
        request = ask(messages=(seamkit.Message.user("the secret plan"),))
        with (
            caplog.at_level(logging.DEBUG),
            pytest.raises(seamkit.ModelError, match="does not follow redirects") as caught,
        ):
            if streaming:
                asyncio.run(streamed(model, request))
            else:
                asyncio.run(model.complete(request))
        assert len(home.seen("r-moved")) == 1  # refused at once, never retried
    assert server.seen("r-moved") == []  # neither the headers nor the prompt went on
    error = caught.value
    assert error.provider == "openai"
    assert f"answered 307, a redirect to {elsewhere};" in str(error)
    logged = [r.getMessage() for r in caplog.records if r.name.startswith("seamkit")]
    for text in (str(error), error.hint or "", repr(error), *logged):
        assert CANARY not in text
        assert "header-canary" not in text


def test_a_redirect_over_plain_http_is_refused_too(server: ReplayServer) -> None:
    server.script("r-plain", Reply([b""], 301, {"location": "http://127.0.0.1:9/v1"}))
    with pytest.raises(seamkit.ModelError, match="does not follow redirects") as caught:
        asyncio.run(model_for(server, "r-plain").complete(ask()))
    assert "a redirect to http://127.0.0.1:9/v1;" in str(caught.value)
    assert caught.value.hint == "set base_url to the server that answers, if you trust it"


# --- the manifest and the CLI ---------------------------------------------------------


def test_the_provider_is_discovered_from_its_installed_distribution() -> None:
    info = get_registry().model_provider("openai")
    assert info is not None
    assert info.plugin == "openai"
    assert info.config is OpenAIConfig
    assert seamkit_openai.__seamkit_api__ == 1


def test_importing_the_plugin_does_not_import_httpx() -> None:
    code = "import sys, seamkit_openai; print('httpx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_bad_model_mapping_names_the_field(tmp_path: Path) -> None:
    app = tmp_path / "app.yaml"
    app.write_text(
        "name: a\nmodel:\n  provider: openai\n  name: m\n  timeout_seconds: -1\n  colour: red\n"
    )
    out = subprocess.run(
        [str(Path(sys.executable).parent / "seamkit"), "validate", str(app)],
        capture_output=True,
        text=True,
    )
    assert out.returncode != 0
    assert "Traceback" not in out.stderr
    assert "model.openai.timeout_seconds" in out.stderr or "timeout_seconds" in out.stderr
    assert "colour" in out.stderr


def seamkit_run(server: ReplayServer, model: str, tmp_path: Path) -> Any:
    """``seamkit run`` on an app whose model is ``model`` at the replay
    server, its key ``${secret:MY_KEY}`` set to the canary."""
    app = tmp_path / "app.yaml"
    app.write_text(
        "name: hello\n"
        "model:\n"
        "  provider: openai\n"
        f"  name: {model}\n"
        f"  base_url: {server.base_url}\n"
        "  api_key: ${secret:MY_KEY}\n"
    )
    return subprocess.run(
        [str(Path(sys.executable).parent / "seamkit"), "run", str(app), "hi"],
        capture_output=True,
        text=True,
        env={**os.environ, "MY_KEY": CANARY},
        timeout=60,
    )


def test_seamkit_run_talks_to_the_server(server: ReplayServer, tmp_path: Path) -> None:
    server.script("cli", Reply.transcript("openai_text"))
    out = seamkit_run(server, "cli", tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Hello, world"
    assert server.requests[-1].headers["authorization"] == f"Bearer {CANARY}"
    assert CANARY not in out.stdout + out.stderr


def test_seamkit_run_reports_a_provider_error_without_a_traceback(
    server: ReplayServer, tmp_path: Path
) -> None:
    echo = error_body(f"Incorrect API key provided: {CANARY}.", "invalid_api_key")
    server.script("cli-401", Reply.json(echo, 401))
    out = seamkit_run(server, "cli-401", tmp_path)
    assert out.returncode != 0
    assert "Traceback" not in out.stderr
    assert "MY_KEY" in out.stderr
    assert CANARY not in out.stdout + out.stderr
