"""The ``anthropic`` provider against a server nobody here wrote: LiteLLM's
proxy answering Anthropic's ``/v1/messages``, from its mock responses and
from a local replay server it forwards to, ``litellm[proxy]`` pip-installed
from PyPI into a throwaway virtual environment (``tests/plugins/litellm_proxy``,
once per test session).

One proxy runs for the whole module. It checks keys with LiteLLM's documented
``general_settings.custom_auth`` hook (the master key passes, any other key
gets a 401 that echoes it), so a wrong key gets a real 401; the stock proxy's
400 "No connected db." is the OpenAI LiteLLM test's business. Behind its
``upstream-claude`` model is `ReplayServer`, answering as Anthropic would: what
LiteLLM does to a request and to an answer on their way is what it observably
does, not what its documentation says.

What LiteLLM (1.106.2, when this was written) actually does on
``/v1/messages``, observed with curl and the official ``anthropic`` client and
relied on below:

- Keys: ``x-api-key: <master key>`` and ``Authorization: Bearer <master key>``
  both pass. With ``custom_auth``, a wrong key in either header gets **401**
  ``{"error": {"message": "Invalid proxy server token passed. Received API Key
  = <the key>", "type": "auth_error", "param": "None", "code": "401"}}``:
  OpenAI's error shape, not Anthropic's, even here. (Without ``custom_auth`` a
  wrong key gets 400 "No connected db.", as on ``/chat/completions``; no key
  at all gets a 500 ``text/plain`` "Internal Server Error".)
- A ``mock_response`` text is answered as one whole Anthropic message, always
  the same apart from the text: id ``msg_013Zva2CMHLNnXjNJJKqJ2EF``,
  ``stop_reason: "end_turn"``, usage ``{"input_tokens": 2095,
  "output_tokens": 503}`` with no ``cache_*`` fields. It is **never streamed**:
  a request with ``"stream": true`` gets the same JSON (``content-type:
  application/json``), and the official client's ``messages.stream`` then
  yields no event at all, silently. The provider takes such an answer as the
  whole turn (its text once, then the turn).
- ``mock_tool_calls`` is **ignored** on ``/v1/messages`` (the request goes to
  the real API, here a 500 "Cannot connect to host api.anthropic.com"), and a
  ``mock_response`` that is not a string is too. So tool calls, streamed text
  and cache counts come from the replay server behind ``upstream-claude``.
- ``"litellm.RateLimitError"``: **429** ``{"type": "error", "error": {"type":
  "rate_limit_error", "message": "litellm.RateLimitError: this is a mock rate
  limit error\\n\\nLiteLLM: model group ... No fallback was attempted."}}``,
  Anthropic's shape, and **no** ``retry-after``; the router retries nothing
  (``num_retries: 0``), so each 429 reaches the provider. An upstream 429's
  ``retry-after`` is dropped too.
- ``"litellm.ContextWindowExceededError"``: **400** ``invalid_request_error``,
  "litellm.ContextWindowExceededError: litellm.BadRequestError: this is a mock
  context window exceeded error ...". An upstream 400 "prompt is too long:
  210000 tokens > 200000 maximum" comes back as a 400 whose message holds the
  upstream's body (that sentence included) behind
  "litellm.ContextWindowExceededError".
- An upstream 529 ``overloaded_error`` comes back as a **500** ``api_error``
  (retried either way).
- Forwarding to an ``anthropic/...`` model with ``api_base`` (the root, no
  ``/v1``): LiteLLM posts to ``{api_base}/v1/messages`` with its own key
  (``x-api-key`` from ``litellm_params``), and passes the request's
  ``system``, ``tools`` and ``messages`` on **unchanged**, every
  ``cache_control`` kept (``ttl`` too). A streamed answer is passed through
  event for event, ``ping`` and ``message_start.usage``'s
  ``cache_creation_input_tokens`` and ``cache_read_input_tokens`` included
  (content-type ``text/event-stream; charset=utf-8``); a whole answer keeps
  its usage, cache counts included. An ``error`` event inside a 200 stream
  is passed through as it came. But a whole JSON answer to a streamed
  request is passed on relabelled ``text/event-stream; charset=utf-8``, the
  JSON as the body: a stream of no events at all.
- (An ``openai/...`` model reached through ``/v1/messages`` is asked through
  OpenAI's Responses API, not chat completions, and a chat-completions
  stream behind it turned into a 200 stream of ``message_start`` then an
  ``error`` event, "'GenericEvent' object has no attribute 'type'": not used
  here.)
"""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest
import seamkit
from seamkit.stream import RunFinished, TextDelta, ToolArgumentsDelta
from seamkit_anthropic import AnthropicConfig, AnthropicModel, build_model

from tests.plugins.litellm_proxy import (
    CANARY,
    KEY_SOURCE,
    MASTER_KEY,
    Proxy,
    ProxySpec,
    assert_no_canary,
    exception_text,
    log_text,
    running,
    seamkit_run,
)
from tests.plugins.openai_server import ReplayServer, Reply, Seen

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

MESSAGES = "/v1/messages"
MOCK_TEXT = "Hello from LiteLLM"
MOCK_USAGE = {"input_tokens": 2095, "output_tokens": 503}
"""LiteLLM's fixed usage for every mock answer on /v1/messages."""
UPSTREAM = "upstream-claude"
UPSTREAM_KEY = "sk-upstream-only"
"""The key LiteLLM sends to the replay server (never the client's)."""
UPSTREAM_TEXT = "Hello from behind the proxy"
UPSTREAM_USAGE = {
    "input_tokens": 5,
    "cache_creation_input_tokens": 100,
    "cache_read_input_tokens": 2000,
    "output_tokens": 7,
}
TOOL_INPUT = {"a": 2, "b": 3}


def _mock(name: str, answer: str) -> dict[str, Any]:
    return {
        "model_name": name,
        "litellm_params": {
            "model": f"anthropic/{name}",
            "api_key": "fake",
            "mock_response": answer,
        },
    }


# --- what the replay server answers, as Anthropic would --------------------------


def _events(*events: dict[str, Any]) -> Reply:
    """An Anthropic event stream: each event with its ``event:`` line."""
    body = [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events]
    return Reply(body, headers={"content-type": "text/event-stream"})


def _start(message_id: str) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": UPSTREAM,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {**UPSTREAM_USAGE, "output_tokens": 1},
        },
    }


def _end(stop_reason: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": UPSTREAM_USAGE["output_tokens"]},
        },
        {"type": "message_stop"},
    ]


def text_stream(text: str = UPSTREAM_TEXT) -> Reply:
    pieces = [text[i : i + 5] for i in range(0, len(text), 5)]
    return _events(
        _start("msg_upstream_text"),
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "ping"},
        *(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}}
            for p in pieces
        ),
        {"type": "content_block_stop", "index": 0},
        *_end("end_turn"),
    )


def tool_stream() -> Reply:
    arguments = json.dumps(TOOL_INPUT)
    return _events(
        _start("msg_upstream_tool"),
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_add", "name": "add", "input": {}},
        },
        *(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": part},
            }
            for part in ("", arguments[:7], arguments[7:])
        ),
        {"type": "content_block_stop", "index": 0},
        *_end("tool_use"),
    )


def whole(content: list[dict[str, Any]], stop_reason: str = "end_turn") -> Reply:
    return Reply.json(
        {
            "id": "msg_upstream_whole",
            "type": "message",
            "role": "assistant",
            "model": UPSTREAM,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": UPSTREAM_USAGE,
        }
    )


TOOL_USE = {"type": "tool_use", "id": "toolu_add", "name": "add", "input": TOOL_INPUT}


# --- the proxy -------------------------------------------------------------------


@pytest.fixture(scope="module")
def upstream() -> Iterator[ReplayServer]:
    """The replay server behind the proxy's ``upstream-claude`` model."""
    with ReplayServer() as server:
        yield server


@pytest.fixture(scope="module")
def proxy(
    litellm_bin: Path, upstream: ReplayServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Proxy]:
    models = [
        _mock("mock-claude", MOCK_TEXT),
        _mock("mock-ratelimit", "litellm.RateLimitError"),
        _mock("mock-context", "litellm.ContextWindowExceededError"),
        {
            "model_name": UPSTREAM,
            "litellm_params": {
                "model": f"anthropic/{UPSTREAM}",
                "api_base": f"http://127.0.0.1:{upstream.port}",
                "api_key": UPSTREAM_KEY,
            },
        },
    ]
    spec = ProxySpec("messages", models, custom_auth=True)
    with running(litellm_bin, tmp_path_factory.mktemp("litellm-anthropic"), spec) as (started,):
        yield started


def _seen(upstream: ReplayServer) -> list[Seen]:
    """The requests that reached the replay server for ``upstream-claude``."""
    return [r for r in upstream.requests if r.body.get("model") == UPSTREAM]


def _model(
    proxy: Proxy, name: str = "mock-claude", key: str = MASTER_KEY, **options: Any
) -> AnthropicModel:
    return build_model(
        AnthropicConfig(
            provider="anthropic",
            name=name,
            base_url=proxy.url,
            api_key=seamkit.Secret(key, source=KEY_SOURCE),
            **options,
        )
    )


REQUEST = seamkit.ModelRequest(messages=(seamkit.Message.user("hi"),))

Item = str | ToolArgumentsDelta | seamkit.ModelTurn


async def _stream(model: AnthropicModel, request: seamkit.ModelRequest = REQUEST) -> list[Item]:
    return [item async for item in model.stream(request)]


def _turn(items: list[Item]) -> seamkit.ModelTurn:
    turn = items[-1]
    assert isinstance(turn, seamkit.ModelTurn), items
    assert not any(isinstance(item, seamkit.ModelTurn) for item in items[:-1]), items
    return turn


async def _ask(model: AnthropicModel, how: str) -> seamkit.ModelTurn:
    if how == "complete":
        return await model.complete(REQUEST)
    return _turn(await _stream(model))


async def _failure(model: AnthropicModel, how: str) -> seamkit.ModelError:
    try:
        await _ask(model, how)
    except seamkit.ModelError as exc:
        return exc
    finally:
        await model.aclose()
    raise AssertionError(f"{how} succeeded; expected a ModelError")


# --- the premises: what the proxy does, through the official client ----------------


def test_the_official_client_gets_the_mock_text_with_either_header(proxy: Proxy) -> None:
    client = anthropic.Anthropic(base_url=proxy.url, api_key=MASTER_KEY, max_retries=0)
    message = client.messages.create(
        model="mock-claude", max_tokens=16, messages=[{"role": "user", "content": "hi"}]
    )
    assert [(b.type, getattr(b, "text", None)) for b in message.content] == [("text", MOCK_TEXT)]
    assert message.usage.input_tokens == MOCK_USAGE["input_tokens"]
    assert message.usage.cache_read_input_tokens is None
    bearer = httpx.post(
        proxy.url + MESSAGES,
        headers={"authorization": f"Bearer {MASTER_KEY}"},
        json={
            "model": "mock-claude",
            "max_tokens": 16,
            "messages": [{"role": "user", "content": "hi"}],
        },
        timeout=30,
    )
    assert bearer.status_code == 200, bearer.text
    assert bearer.json()["content"] == [{"type": "text", "text": MOCK_TEXT}]


def test_the_proxy_answers_a_streamed_mock_request_whole(proxy: Proxy) -> None:
    body = {
        "model": "mock-claude",
        "max_tokens": 16,
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
    }
    with httpx.stream(
        "POST", proxy.url + MESSAGES, headers={"x-api-key": MASTER_KEY}, json=body, timeout=30
    ) as answer:
        assert answer.status_code == 200
        assert answer.headers["content-type"] == "application/json"
        assert json.loads(answer.read())["content"][0]["text"] == MOCK_TEXT
    # the official client's stream then ends with no event and no error
    client = anthropic.Anthropic(base_url=proxy.url, api_key=MASTER_KEY, max_retries=0)
    with client.messages.stream(
        model="mock-claude", max_tokens=16, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        assert list(stream) == []


def _event_names(raw: str) -> list[str]:
    return [line.removeprefix("event: ") for line in raw.splitlines() if line.startswith("event:")]


def test_the_proxy_passes_the_upstream_stream_through(proxy: Proxy, upstream: ReplayServer) -> None:
    system = [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}]
    body = {
        "model": UPSTREAM,
        "max_tokens": 16,
        "stream": True,
        "system": system,
        "messages": [{"role": "user", "content": "hi"}],
    }
    sent = text_stream()
    upstream.script(UPSTREAM, sent)
    with httpx.stream(
        "POST", proxy.url + MESSAGES, headers={"x-api-key": MASTER_KEY}, json=body, timeout=30
    ) as answer:
        assert answer.headers["content-type"].startswith("text/event-stream")
        raw = answer.read().decode()
    assert _event_names(raw) == _event_names(b"".join(sent.body).decode()), raw
    assert "ping" in _event_names(raw)
    seen = _seen(upstream)[-1]
    assert seen.path == MESSAGES
    assert seen.headers["x-api-key"] == UPSTREAM_KEY
    assert seen.body["system"] == system
    # and the official client reads the cache counts from it
    upstream.script(UPSTREAM, text_stream())
    client = anthropic.Anthropic(base_url=proxy.url, api_key=MASTER_KEY, max_retries=0)
    with client.messages.stream(
        model=UPSTREAM, max_tokens=16, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        message = stream.get_final_message()
    assert "".join(b.text for b in message.content if b.type == "text") == UPSTREAM_TEXT
    assert message.usage.cache_read_input_tokens == UPSTREAM_USAGE["cache_read_input_tokens"]
    assert message.usage.cache_creation_input_tokens == 100


def test_the_proxy_echoes_a_wrong_key(proxy: Proxy) -> None:
    """The premise of the wrong-key tests: the server puts the key in its 401,
    so keeping it out of the error is the provider's doing."""
    for header in ({"x-api-key": CANARY}, {"authorization": f"Bearer {CANARY}"}):
        answer = httpx.post(
            proxy.url + MESSAGES,
            headers=header,
            json={"model": "mock-claude", "max_tokens": 16, "messages": []},
            timeout=30,
        )
        assert answer.status_code == 401, answer.text
        assert CANARY in answer.text


# --- answers -----------------------------------------------------------------------


def test_the_mock_text_whole_and_streamed_is_the_same_turn(proxy: Proxy) -> None:
    async def go() -> tuple[seamkit.ModelTurn, list[Item]]:
        async with _model(proxy) as model:
            return await model.complete(REQUEST), await _stream(model)

    whole_turn, items = asyncio.run(go())
    assert whole_turn.message.text == MOCK_TEXT
    assert whole_turn.usage.input_tokens == MOCK_USAGE["input_tokens"]
    assert whole_turn.usage.output_tokens == MOCK_USAGE["output_tokens"]
    assert whole_turn.usage.cache_read_tokens == 0 and whole_turn.usage.cache_write_tokens == 0
    # the proxy answers ``stream: true`` with the whole message: the text once
    assert "".join(x for x in items if isinstance(x, str)) == MOCK_TEXT
    streamed = _turn(items)
    assert streamed.message == whole_turn.message
    assert streamed.usage == whole_turn.usage


def test_text_streamed_through_the_proxy_arrives_in_deltas(
    proxy: Proxy, upstream: ReplayServer
) -> None:
    upstream.script(UPSTREAM, text_stream(), whole([{"type": "text", "text": UPSTREAM_TEXT}]))

    async def go() -> tuple[list[Item], seamkit.ModelTurn]:
        async with _model(proxy, UPSTREAM) as model:
            return await _stream(model), await model.complete(REQUEST)

    items, whole_turn = asyncio.run(go())
    deltas = [x for x in items[:-1] if isinstance(x, str)]
    assert len(deltas) > 1, items
    assert "".join(deltas) == UPSTREAM_TEXT
    streamed = _turn(items)
    assert streamed.message == whole_turn.message
    assert streamed.message.text == UPSTREAM_TEXT
    assert streamed.usage == whole_turn.usage
    # Anthropic's input_tokens leave the cached ones out; seamkit's count them all
    assert streamed.usage.input_tokens == 5 + 100 + 2000, streamed.usage
    assert streamed.usage.cache_read_tokens == 2000
    assert streamed.usage.cache_write_tokens == 100
    assert streamed.usage.output_tokens == UPSTREAM_USAGE["output_tokens"]


def test_the_provider_s_cache_breakpoints_reach_the_server_behind_the_proxy(
    proxy: Proxy, upstream: ReplayServer
) -> None:
    """The same request sent straight to the replay server and through the
    proxy arrives the same: LiteLLM keeps every ``cache_control``."""

    @seamkit.tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    request = seamkit.ModelRequest(
        preamble="You add numbers.",
        messages=(
            seamkit.Message.user("2 + 3?"),
            seamkit.Message.assistant("Let me see."),
            seamkit.Message.user("Well?"),
        ),
        tools=(add.spec,),
    )
    reply = whole([{"type": "text", "text": "5"}])
    upstream.script(UPSTREAM, reply, whole([{"type": "text", "text": "5"}]))

    async def go() -> None:
        direct = build_model(
            AnthropicConfig(
                provider="anthropic",
                name=UPSTREAM,
                base_url=f"http://127.0.0.1:{upstream.port}",
                api_key=seamkit.Secret(UPSTREAM_KEY),
            )
        )
        async with direct, _model(proxy, UPSTREAM) as proxied:
            await direct.complete(request)
            await proxied.complete(request)

    asyncio.run(go())
    sent, forwarded = [r.body for r in _seen(upstream)][-2:]
    assert "cache_control" in json.dumps(sent), sent
    for part in ("system", "tools", "messages"):
        assert forwarded[part] == sent[part], part


def test_an_error_event_in_the_stream_fails_the_turn_without_a_retry(
    proxy: Proxy, upstream: ReplayServer
) -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    upstream.script(UPSTREAM, _events(_start("msg_upstream_error"), overloaded))
    before = len(_seen(upstream))
    exc = asyncio.run(_failure(_model(proxy, UPSTREAM), "stream"))
    assert type(exc) is seamkit.ModelError, repr(exc)
    assert "overloaded_error" in str(exc) and "Overloaded" in str(exc), str(exc)
    assert len(_seen(upstream)) == before + 1, "an answer that began is not asked again"


def test_a_stream_of_no_events_fails_clearly(proxy: Proxy, upstream: ReplayServer) -> None:
    """LiteLLM relabels the replay server's JSON answer to a streamed request
    as an event stream: the provider says the stream ended early, and never
    makes an empty turn of it."""
    upstream.script(UPSTREAM, whole([{"type": "text", "text": UPSTREAM_TEXT}]))
    exc = asyncio.run(_failure(_model(proxy, UPSTREAM, max_retries=0), "stream"))
    assert type(exc) is seamkit.ModelError, repr(exc)
    assert "message_stop" in str(exc), str(exc)


# --- tool calls ----------------------------------------------------------------------


@pytest.mark.parametrize("how", ["complete", "stream"])
def test_a_tool_call_through_the_proxy(proxy: Proxy, upstream: ReplayServer, how: str) -> None:
    upstream.script(UPSTREAM, whole([TOOL_USE], "tool_use") if how == "complete" else tool_stream())

    async def go() -> list[Item]:
        async with _model(proxy, UPSTREAM) as model:
            if how == "complete":
                return [await model.complete(REQUEST)]
            return await _stream(model)

    items = asyncio.run(go())
    turn = _turn(items)
    (call,) = turn.message.tool_calls or ()
    assert call.id == "toolu_add"
    assert call.function.name == "add"
    assert json.loads(call.function.arguments) == TOOL_INPUT
    assert not turn.message.text
    if how == "stream":
        fragments = [x for x in items if isinstance(x, ToolArgumentsDelta)]
        assert fragments, items
        assert (fragments[0].index, fragments[0].id, fragments[0].name) == (0, "toolu_add", "add")
        assert json.loads("".join(f.text for f in fragments)) == TOOL_INPUT


def test_the_agent_calls_the_tool_the_server_behind_the_proxy_asks_for(
    proxy: Proxy, upstream: ReplayServer
) -> None:
    calls: list[tuple[int, int]] = []

    @seamkit.tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        calls.append((a, b))
        return a + b

    upstream.script(UPSTREAM, tool_stream(), text_stream("5"))

    async def go() -> list[Any]:
        async with _model(proxy, UPSTREAM) as model:
            agent = seamkit.Agent(model=model, tools=[add])
            return [event async for event in agent.stream("add 2 and 3")]

    before = len(_seen(upstream))
    events = asyncio.run(go())
    finished = events[-1]
    assert isinstance(finished, RunFinished), events
    result = finished.result
    assert result.outcome == seamkit.Completed(), result.outcome
    assert calls == [(2, 3)]
    assert result.output == "5"
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "5"
    second = _seen(upstream)[before + 1].body
    results = [
        block
        for message in second["messages"]
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    assert [(b["tool_use_id"], b.get("is_error")) for b in results] == [("toolu_add", None)], second


# --- a wrong key -----------------------------------------------------------------------


@pytest.mark.parametrize("how", ["complete", "stream"])
def test_a_wrong_key_names_its_variable_and_never_its_value(
    proxy: Proxy, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    exc = asyncio.run(_failure(_model(proxy, key=CANARY), how))
    message = str(exc)
    assert type(exc) is seamkit.ModelError, repr(exc)
    assert "LITELLM_KEY" in message, message
    assert "401" in message, message
    assert "Invalid proxy server token passed" in message, message  # the server's words stay
    assert_no_canary(exception_text(exc), "the exception")
    assert_no_canary(log_text(caplog), "the logs")


# --- errors the proxy mocks ----------------------------------------------------------------


@pytest.mark.parametrize("how", ["complete", "stream"])
def test_a_rate_limit_is_retried_then_reported(
    proxy: Proxy, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    before = proxy.answered(429, MESSAGES)
    exc = asyncio.run(_failure(_model(proxy, "mock-ratelimit", max_retries=1), how))
    message = str(exc)
    assert type(exc) is seamkit.ModelError, repr(exc)
    assert "429 after 2 attempts" in message, message
    assert "mock rate limit error" in message, message  # LiteLLM's own words
    retries = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(retries) == 1 and "429" in retries[0], retries
    assert proxy.wait_answered(429, before + 2, MESSAGES) - before == 2, proxy.tail()


@pytest.mark.parametrize("how", ["complete", "stream"])
def test_a_rate_limit_behind_the_proxy_is_retried_and_answered(
    proxy: Proxy, upstream: ReplayServer, how: str
) -> None:
    limited = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    answer = text_stream() if how == "stream" else whole([{"type": "text", "text": UPSTREAM_TEXT}])
    upstream.script(UPSTREAM, Reply.json(limited, 429, **{"retry-after": "0"}), answer)
    before = len(_seen(upstream))

    async def go() -> seamkit.ModelTurn:
        async with _model(proxy, UPSTREAM, max_retries=1) as model:
            return await _ask(model, how)

    turn = asyncio.run(go())
    assert turn.message.text == UPSTREAM_TEXT
    assert len(_seen(upstream)) == before + 2


@pytest.mark.parametrize("how", ["complete", "stream"])
def test_a_context_window_error_is_context_length_exceeded(proxy: Proxy, how: str) -> None:
    before = proxy.answered(400, MESSAGES)
    exc = asyncio.run(_failure(_model(proxy, "mock-context"), how))
    assert isinstance(exc, seamkit.ContextLengthExceeded), repr(exc)
    assert exc.model == "mock-context"
    assert "context window exceeded" in str(exc), str(exc)
    assert proxy.wait_answered(400, before + 1, MESSAGES) - before == 1, "a 400 is not retried"


def test_the_upstream_s_prompt_too_long_is_context_length_exceeded(
    proxy: Proxy, upstream: ReplayServer
) -> None:
    too_long = {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 210000 tokens > 200000 maximum",
        },
    }
    upstream.script(UPSTREAM, Reply.json(too_long, 400))
    exc = asyncio.run(_failure(_model(proxy, UPSTREAM), "complete"))
    assert isinstance(exc, seamkit.ContextLengthExceeded), repr(exc)
    assert "prompt is too long" in str(exc), str(exc)


# --- the command line -------------------------------------------------------------------------


def _seamkit_run(proxy: Proxy, tmp_path: Path, key: str) -> subprocess.CompletedProcess[str]:
    model = {"provider": "anthropic", "name": "mock-claude", "base_url": proxy.url}
    return seamkit_run(tmp_path, "litellm-claude", model, key)


def test_seamkit_run_prints_the_mock_text(proxy: Proxy, tmp_path: Path) -> None:
    done = _seamkit_run(proxy, tmp_path, MASTER_KEY)
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert done.stdout.strip() == MOCK_TEXT, done.stdout
    assert "[completed" in done.stderr, done.stderr


def test_seamkit_run_with_a_wrong_key_names_its_variable(proxy: Proxy, tmp_path: Path) -> None:
    done = _seamkit_run(proxy, tmp_path, CANARY)
    assert done.returncode == 1, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert "[failed" in done.stderr and "LITELLM_KEY" in done.stderr, done.stderr
    assert_no_canary(done.stdout + done.stderr, "seamkit run's output")
