"""The ``openai`` provider against a server nobody here wrote: LiteLLM's proxy
answering from its mock responses, ``litellm[proxy]`` pip-installed from PyPI
into a throwaway virtual environment (not a dependency of this repository).

Two proxies run for the whole module, started side by side: a stock one
(``general_settings.master_key`` only, no database) and one that checks keys
with LiteLLM's documented ``general_settings.custom_auth`` hook, so that a
wrong key gets a real 401 (see below). Installing is the slow part (two
minutes or more, nothing cached); the proxies boot in about 15 seconds. A
proxy that cannot be installed or started fails every test here, loudly:
nothing is skipped.

What LiteLLM (1.106.2, when this was written) actually does, observed on the
wire with curl and relied on below:

- A streamed mock answer comes three characters per chunk; with
  ``stream_options.include_usage`` the usage rides on one more chunk whose
  ``choices`` is ``[{"index": 0, "delta": {}}]`` (not empty, as OpenAI's is).
  The streamed usage differs from the whole answer's (8 in / 5 out against
  10 in / 20 out): only the text is the same both ways.
- With a master key and no database, a key other than the master key is
  refused with **400** ``{"error": {"message": "No connected db.", "type":
  "no_db_connection"}}``, never a 401: LiteLLM looks the key up in a database
  it does not have. The provider names the key's variable only for 401/403,
  so against a stock proxy the error says "answered 400: No connected db."
  and not which variable to fix. A 401 needs a database of virtual keys, or
  ``custom_auth``: ours raises ``HTTPException(401)`` echoing the key, as
  servers do. (A plain ``Exception`` from ``custom_auth`` gives a 500 instead:
  LiteLLM's auth error handler crashes importing ``prisma``. An empty
  ``Authorization: Bearer`` got a 500 too.)
- By default LiteLLM's router retries a mock 429 twice itself (about five
  seconds) before answering; ``router_settings.num_retries: 0`` turns that
  off, so every 429 reaches the provider at once.
- Its 429 carries no ``retry-after``, so the provider waits its own backoff.
- Tool calls: ``mock_tool_calls`` in ``litellm_params`` shows up only in the
  whole (non-streamed) answer, next to LiteLLM's default mock text ("This is
  a mock request") and with ``finish_reason: "stop"``; the streamed answer
  has the text and no tool-call delta at all. A ``mock_response`` given as a
  whole completion object (``choices[0].message.tool_calls``, ``finish_reason:
  "tool_calls"``) is returned as is when not streamed, and answered with a
  500 (``'ModelResponse' object has no attribute '__aiter__'``) when
  streamed. ``mock_response`` and ``mock_tool_calls`` in the request body are
  ignored by the proxy. So tool calls are tested on the non-streaming path
  only (``complete``, and ``Agent.run``, which calls ``complete``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import seamkit
from seamkit.stream import RunFinished, TextDelta
from seamkit_openai import OpenAIConfig, OpenAIModel, build_model

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
from tests.plugins.openai_server import ReplayServer, Reply

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

MOCK_TEXT = "Hello from LiteLLM"
TOOL_ARGUMENTS = {"a": 2, "b": 3}
LITELLM_DEFAULT_MOCK_TEXT = "This is a mock request"
"""What LiteLLM answers when an entry has ``mock_tool_calls`` and no ``mock_response``."""

_TOOL_CALL = {
    "id": "call_litellm_add",
    "type": "function",
    "function": {"name": "add", "arguments": json.dumps(TOOL_ARGUMENTS)},
}

_MOCKS: list[tuple[str, dict[str, Any]]] = [
    ("mock-gpt", {"mock_response": MOCK_TEXT}),
    ("mock-ratelimit", {"mock_response": "litellm.RateLimitError"}),
    ("mock-context", {"mock_response": "litellm.ContextWindowExceededError"}),
    # LiteLLM's documented way: the calls next to the default mock text
    ("mock-tool-calls", {"mock_tool_calls": [_TOOL_CALL]}),
    # a whole completion as the mock: only the call, finish_reason tool_calls
    (
        "mock-tool-turn",
        {
            "mock_response": {
                "id": "chatcmpl-mock-tool-turn",
                "object": "chat.completion",
                "created": 1,
                "model": "mock-tool-turn",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "tool_calls",
                        "message": {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [_TOOL_CALL],
                        },
                    }
                ],
                "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
            }
        },
    ),
]

MODEL_LIST = [
    {"model_name": name, "litellm_params": {"model": f"openai/{name}", "api_key": "fake", **mock}}
    for name, mock in _MOCKS
]

UPSTREAM_MODEL = "upstream-json"
"""A proxy model that LiteLLM forwards to the replay server (not a mock): what
reaches it is what LiteLLM passed through."""


@pytest.fixture(scope="module")
def upstream() -> Iterator[ReplayServer]:
    """The replay server behind the proxies' ``upstream-json`` model."""
    with ReplayServer() as running_server:
        yield running_server


@dataclass
class Proxies:
    stock: Proxy
    """Master key only, no database: a wrong key gets LiteLLM's 400."""
    auth: Proxy
    """``custom_auth``: a wrong key gets a 401 that echoes it."""


@pytest.fixture(scope="module")
def proxies(
    litellm_bin: Path, upstream: ReplayServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Proxies]:
    """Both proxies for the whole module, started side by side."""
    forwarded = [
        {
            "model_name": UPSTREAM_MODEL,
            "litellm_params": {
                "model": f"openai/{UPSTREAM_MODEL}",
                "api_base": upstream.base_url,
                "api_key": "fake",
            },
        }
    ]
    models = MODEL_LIST + forwarded
    with running(
        litellm_bin,
        tmp_path_factory.mktemp("litellm"),
        ProxySpec("stock", models),
        ProxySpec("auth", models, custom_auth=True),
    ) as (stock, auth):
        yield Proxies(stock, auth)


@pytest.fixture
def stock(proxies: Proxies) -> Proxy:
    return proxies.stock


@pytest.fixture
def auth(proxies: Proxies) -> Proxy:
    return proxies.auth


# --- helpers -------------------------------------------------------------------


def _model(
    proxy: Proxy, name: str = "mock-gpt", key: str = MASTER_KEY, **options: Any
) -> OpenAIModel:
    return build_model(
        OpenAIConfig(
            provider="openai",
            name=name,
            base_url=proxy.base_url,
            api_key=seamkit.Secret(key, source=KEY_SOURCE),
            **options,
        )
    )


REQUEST = seamkit.ModelRequest(messages=(seamkit.Message.user("hi"),))


async def _stream(model: OpenAIModel) -> list[str | seamkit.ModelTurn]:
    return [item async for item in model.stream(REQUEST)]


async def _ask(model: OpenAIModel, how: str) -> seamkit.ModelTurn:
    """One answer, by ``complete`` or by ``stream`` (its final turn)."""
    if how == "complete":
        return await model.complete(REQUEST)
    items = await _stream(model)
    turn = items[-1]
    assert isinstance(turn, seamkit.ModelTurn)
    return turn


async def _failure(model: OpenAIModel, how: str) -> seamkit.ModelError:
    try:
        await _ask(model, how)
    except seamkit.ModelError as exc:
        return exc
    finally:
        await model.aclose()
    raise AssertionError(f"{how} succeeded; expected a ModelError")


# --- answers -------------------------------------------------------------------


def test_streamed_text_arrives_in_deltas_and_makes_the_turn(stock: Proxy) -> None:
    async def go() -> list[str | seamkit.ModelTurn]:
        async with _model(stock) as model:
            return await _stream(model)

    items = asyncio.run(go())
    deltas = [item for item in items[:-1] if isinstance(item, str)]
    assert len(deltas) == len(items) - 1, f"only text before the turn: {items!r}"
    assert len(deltas) > 1, f"expected the text in pieces, got {deltas!r}"
    assert "".join(deltas) == MOCK_TEXT
    turn = items[-1]
    assert isinstance(turn, seamkit.ModelTurn)
    assert turn.message.text == MOCK_TEXT
    assert not turn.message.tool_calls
    assert turn.usage.input_tokens > 0, turn.usage
    assert turn.usage.output_tokens > 0, turn.usage


def test_complete_gives_the_same_text_as_the_stream(stock: Proxy) -> None:
    async def go() -> tuple[seamkit.ModelTurn, list[str | seamkit.ModelTurn]]:
        async with _model(stock) as model:
            return await model.complete(REQUEST), await _stream(model)

    whole, streamed = asyncio.run(go())
    assert whole.message.text == MOCK_TEXT
    assert "".join(x for x in streamed if isinstance(x, str)) == whole.message.text
    final = streamed[-1]
    assert isinstance(final, seamkit.ModelTurn)
    assert final.message.text == whole.message.text
    assert whole.usage.input_tokens > 0 and whole.usage.output_tokens > 0, whole.usage


def test_agent_run_completes_with_the_mock_text(stock: Proxy) -> None:
    async def go() -> seamkit.RunResult:
        async with _model(stock) as model:
            return await seamkit.Agent(model=model).run("hi")

    result = asyncio.run(go())
    assert result.outcome == seamkit.Completed(), result.outcome
    assert result.output == MOCK_TEXT
    assert result.transcript[-1].role == "assistant"
    assert result.usage.requests == 1


def test_agent_stream_completes_with_the_mock_text(stock: Proxy) -> None:
    async def go() -> list[Any]:
        async with _model(stock) as model:
            return [event async for event in seamkit.Agent(model=model).stream("hi")]

    events = asyncio.run(go())
    finished = events[-1]
    assert isinstance(finished, RunFinished), events
    assert finished.result.outcome == seamkit.Completed(), finished.result.outcome
    assert finished.result.output == MOCK_TEXT
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == MOCK_TEXT


# --- a wrong key ---------------------------------------------------------------


def test_the_auth_proxy_echoes_a_wrong_key(auth: Proxy) -> None:
    """The premise of the tests below: the server puts the key in its 401,
    so keeping it out of the error is the provider's doing."""
    answer = httpx.post(
        f"{auth.base_url}/chat/completions",
        headers={"authorization": f"Bearer {CANARY}"},
        json={"model": "mock-gpt", "messages": [{"role": "user", "content": "hi"}]},
        timeout=30,
    )
    assert answer.status_code == 401, answer.text
    assert CANARY in answer.text


@pytest.mark.parametrize("how", ["complete", "stream"])
def test_a_wrong_key_names_its_variable_and_never_its_value(
    auth: Proxy, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    exc = asyncio.run(_failure(_model(auth, key=CANARY), how))
    message = str(exc)
    assert not isinstance(exc, seamkit.ContextLengthExceeded)
    assert "LITELLM_KEY" in message, message
    assert "401" in message, message
    assert "Invalid proxy server token passed" in message, message  # the server's words stay
    assert_no_canary(exception_text(exc), "the exception")
    assert_no_canary(log_text(caplog), "the logs")


def test_a_wrong_key_fails_the_agent_run_without_the_key(
    auth: Proxy, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)

    async def go() -> seamkit.RunResult:
        async with _model(auth, key=CANARY) as model:
            return await seamkit.Agent(model=model).run("hi")

    result = asyncio.run(go())
    assert isinstance(result.outcome, seamkit.Failed), result.outcome
    assert "LITELLM_KEY" in result.outcome.error, result.outcome.error
    assert result.output is None
    assert_no_canary(result.outcome.error, "the run's error")
    assert_no_canary(result.model_dump_json(), "the RunResult")
    assert_no_canary(log_text(caplog), "the logs")


def test_a_wrong_key_on_a_stock_proxy_is_a_model_error_without_the_key(
    stock: Proxy, caplog: pytest.LogCaptureFixture
) -> None:
    # LiteLLM without a database answers any key but the master key with a
    # 400 "No connected db." (see the module's docstring), so the provider
    # cannot tell it is about the key: the error has LiteLLM's words, not
    # the variable's name. It must still hold no trace of the key.
    caplog.set_level(logging.DEBUG)
    exc = asyncio.run(_failure(_model(stock, key=CANARY), "complete"))
    message = str(exc)
    assert "400" in message and "No connected db" in message, message
    assert_no_canary(exception_text(exc), "the exception")
    assert_no_canary(log_text(caplog), "the logs")


# --- errors the server mocks -----------------------------------------------------


@pytest.mark.parametrize("how", ["complete", "stream"])
def test_a_rate_limit_is_retried_then_reported(
    stock: Proxy, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="seamkit.openai")
    before = stock.answered(429)
    exc = asyncio.run(_failure(_model(stock, "mock-ratelimit", max_retries=1), how))
    message = str(exc)
    assert type(exc) is seamkit.ModelError, repr(exc)
    assert "429 after 2 attempts" in message, message
    assert "rate limit" in message, message  # LiteLLM's own words
    retries = [
        r for r in caplog.records if r.name == "seamkit.openai" and r.levelno == logging.WARNING
    ]
    assert len(retries) == 1, [r.getMessage() for r in retries]
    assert "HTTP 429; retry 1 of 1" in retries[0].getMessage()
    assert stock.wait_answered(429, before + 2) - before == 2, stock.tail()


@pytest.mark.parametrize("how", ["complete", "stream"])
def test_a_context_window_error_is_context_length_exceeded(stock: Proxy, how: str) -> None:
    before = stock.answered(400)
    exc = asyncio.run(_failure(_model(stock, "mock-context"), how))
    assert isinstance(exc, seamkit.ContextLengthExceeded), repr(exc)
    assert exc.model == "mock-context"
    assert "context window" in str(exc)
    assert stock.wait_answered(400, before + 1) - before == 1, "a 400 must not be retried"


# --- tool calls (not streamed: see the module's docstring) --------------------------


@pytest.mark.parametrize(
    ("name", "text"),
    [("mock-tool-calls", LITELLM_DEFAULT_MOCK_TEXT), ("mock-tool-turn", "")],
)
def test_complete_reads_litellms_tool_calls(stock: Proxy, name: str, text: str) -> None:
    async def go() -> seamkit.ModelTurn:
        async with _model(stock, name) as model:
            return await model.complete(REQUEST)

    turn = asyncio.run(go())
    calls = turn.message.tool_calls or ()
    assert len(calls) == 1, turn
    assert calls[0].id == _TOOL_CALL["id"]
    assert calls[0].function.name == "add"
    assert json.loads(calls[0].function.arguments) == TOOL_ARGUMENTS
    assert turn.message.text == text


def test_the_agent_calls_the_tool_litellm_asks_for(stock: Proxy) -> None:
    calls: list[tuple[int, int]] = []

    @seamkit.tool(terminal=True)
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        calls.append((a, b))
        return a + b

    async def go() -> seamkit.RunResult:
        async with _model(stock, "mock-tool-turn") as model:
            return await seamkit.Agent(model=model, tools=[add]).run("add 2 and 3")

    result = asyncio.run(go())
    assert result.outcome == seamkit.Completed(), result.outcome
    assert calls == [(2, 3)]
    assert result.output == "5"
    tool_messages = [m for m in result.transcript if m.role == "tool"]
    assert [(m.tool_call_id, m.content) for m in tool_messages] == [(_TOOL_CALL["id"], "5")]


# --- the command line -------------------------------------------------------------


def _seamkit_run(proxy: Proxy, tmp_path: Path, key: str) -> subprocess.CompletedProcess[str]:
    model = {"provider": "openai", "name": "mock-gpt", "base_url": proxy.base_url}
    return seamkit_run(tmp_path, "litellm-hello", model, key)


def test_seamkit_run_prints_the_mock_text(stock: Proxy, tmp_path: Path) -> None:
    done = _seamkit_run(stock, tmp_path, MASTER_KEY)
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert done.stdout.strip() == MOCK_TEXT, done.stdout
    assert "[completed" in done.stderr, done.stderr


def test_seamkit_run_with_a_wrong_key_names_its_variable(auth: Proxy, tmp_path: Path) -> None:
    done = _seamkit_run(auth, tmp_path, CANARY)
    assert done.returncode == 1, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert "[failed" in done.stderr and "LITELLM_KEY" in done.stderr, done.stderr
    assert_no_canary(done.stdout + done.stderr, "seamkit run's output")


# --- structured output through the proxy ---------------------------------------------


def test_a_native_structured_run_passes_response_format_through_the_proxy(
    stock: Proxy, upstream: ReplayServer
) -> None:
    """LiteLLM forwards the provider's ``response_format`` to the server behind
    it unchanged, and the server's JSON content comes back as the run's value."""
    record = {"city": "Paris", "population": 2100000}
    answer = {
        "id": "chatcmpl-upstream",
        "object": "chat.completion",
        "created": 1,
        "model": UPSTREAM_MODEL,
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": json.dumps(record)},
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14},
    }
    upstream.script(UPSTREAM_MODEL, Reply.json(answer))
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
        "required": ["city", "population"],
    }
    output = seamkit.Output(schema, mode="native", name="city_record")
    agent = seamkit.Agent(_model(stock, UPSTREAM_MODEL), output=output)
    result = asyncio.run(agent.run("Paris?"))
    assert result.outcome == seamkit.Completed(), result.outcome
    assert result.output == record
    (seen,) = [r.body for r in upstream.requests if r.path.endswith("/chat/completions")]
    assert seen["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "city_record", "schema": output.json_schema, "strict": True},
    }
