"""``seamkit serve`` speaks OpenAI's chat-completions API as its clients
expect: an explicit ``null`` is an absent parameter, ``GET /v1/models/{id}``,
answers a client must not retry say ``x-should-retry: false`` (so the
official SDK runs a failed app once, not three times), the session header
comes back on every answer, a trailing slash is the same route, and each
refused parameter says why. A real ``seamkit serve`` process on 127.0.0.1
and a free port, called with the official ``openai`` client.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.plugins.test_serve import KEY_A, Served

AUTH = {"authorization": f"Bearer {KEY_A}"}
HI = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def chat(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    served = Served("chat", tmp_path_factory.mktemp("conformance"))
    yield served
    served.stop()


def post(
    chat: Served, body: dict[str, Any], path: str = "/v1/chat/completions", **headers: str
) -> httpx.Response:
    return httpx.post(f"{chat.root}{path}", json=body, headers={**AUTH, **headers}, timeout=30)


# --- null is absent -------------------------------------------------------------------

OPTIONAL = [
    "n",
    "stream",
    "stream_options",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "functions",
    "function_call",
    "temperature",
    "top_p",
    "max_tokens",
    "max_completion_tokens",
    "frequency_penalty",
    "presence_penalty",
    "seed",
    "stop",
    "user",
    "response_format",
    "logprobs",
    "top_logprobs",
    "logit_bias",
    "audio",
    "modalities",
    "prediction",
    "reasoning_effort",
    "service_tier",
    "store",
    "metadata",
    "verbosity",
    "web_search_options",
]


@pytest.mark.parametrize("param", OPTIONAL)
def test_an_explicit_null_is_an_absent_parameter(chat: Served, param: str) -> None:
    response = post(chat, {"model": "chat", "messages": HI, param: None})
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == "Hello there."


def test_every_optional_parameter_null_at_once(chat: Served) -> None:
    body: dict[str, Any] = {"model": "chat", "messages": HI, **dict.fromkeys(OPTIONAL)}
    assert post(chat, body).status_code == 200


# --- what is accepted, what is refused and why ----------------------------------------


def test_store_metadata_and_user_are_accepted(chat: Served) -> None:
    answer = chat.client().chat.completions.create(
        model="chat",
        messages=HI,
        store=True,
        metadata={"ticket": "T-1"},
        user="ann",  # type: ignore[arg-type]
    )
    assert answer.choices[0].message.content == "Hello there."


def test_metadata_of_the_wrong_shape_is_a_400_naming_it(chat: Served) -> None:
    response = post(chat, {"model": "chat", "messages": HI, "metadata": {"a": 1}})
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "metadata"


@pytest.mark.parametrize(
    ("param", "value", "why"),
    [
        ("functions", [{"name": "f"}], "deprecated form of tools"),
        ("function_call", "auto", "deprecated form of tools"),
        ("logprobs", True, "log-probabilities"),
        ("logit_bias", {"50256": -100}, "token ids belong to a model"),
        ("audio", {"voice": "alloy", "format": "wav"}, "answers with text"),
        ("reasoning_effort", "high", "configuration chooses"),
        ("frobnicate", 1, "not a chat-completions parameter"),
    ],
)
def test_a_refused_parameter_says_why(chat: Served, param: str, value: object, why: str) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        chat.client().chat.completions.create(
            model="chat",
            messages=HI,
            extra_body={param: value},  # type: ignore[arg-type]
        )
    assert f"cannot honour {param}: " in caught.value.message
    assert why in caught.value.message
    assert caught.value.body["param"] == param  # type: ignore[index]


@pytest.mark.parametrize(("param", "value"), [("logprobs", False), ("modalities", ["text"])])
def test_a_value_that_asks_for_what_happens_anyway_is_accepted(
    chat: Served, param: str, value: object
) -> None:
    assert post(chat, {"model": "chat", "messages": HI, param: value}).status_code == 200


# --- routes ------------------------------------------------------------------------------


def test_a_model_is_retrieved_by_its_id(chat: Served) -> None:
    model = chat.client().models.retrieve("chat")
    assert (model.id, model.object, model.owned_by) == ("chat", "model", "seamkit")
    with pytest.raises(openai.NotFoundError) as caught:
        chat.client().models.retrieve("gpt-4o")
    assert caught.value.code == "model_not_found"
    assert "serves 'chat'" in caught.value.message
    with pytest.raises(openai.AuthenticationError):
        chat.client("sk-wrong").models.retrieve("chat")


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/v1/chat/completions/"), ("GET", "/v1/models/"), ("GET", "/v1/models/chat/")],
)
def test_a_trailing_slash_is_the_same_route(chat: Served, method: str, path: str) -> None:
    body = {"model": "chat", "messages": HI} if method == "POST" else None
    response = httpx.request(method, f"{chat.root}{path}", json=body, headers=AUTH)
    assert response.status_code == 200, response.text


# --- headers -----------------------------------------------------------------------------


def test_the_session_is_named_back_on_every_answer(chat: Served) -> None:
    session = {"x-seamkit-session": "s-echo"}
    whole = post(chat, {"model": "chat", "messages": HI}, **session)
    assert (whole.status_code, whole.headers["x-seamkit-session"]) == (200, "s-echo")
    bad = post(chat, {"model": "chat", "messages": []}, **session)
    assert (bad.status_code, bad.headers["x-seamkit-session"]) == (400, "s-echo")
    conflict = [
        {"role": "user", "content": "something else"},
        {"role": "assistant", "content": "never said"},
        {"role": "user", "content": "hi"},
    ]
    refused = post(chat, {"model": "chat", "messages": conflict}, **session)
    assert refused.status_code == 409
    assert refused.headers["x-seamkit-session"] == "s-echo"
    assert refused.headers["x-should-retry"] == "false"  # the SDK does not send it again


def test_an_answer_a_retry_may_repeat_carries_no_retry_veto(chat: Served) -> None:
    assert "x-should-retry" not in post(chat, {"model": "chat", "messages": HI}).headers
    assert "x-should-retry" not in post(chat, {"model": "chat", "messages": []}).headers


def test_a_failed_run_is_run_once_by_the_official_client(tmp_path: Path) -> None:
    counted = tmp_path / "acted.txt"
    served = Served("fails", tmp_path, env={"SERVE_COUNT_FILE": str(counted)})
    try:
        client = openai.OpenAI(base_url=f"{served.root}/v1", api_key="none")  # default retries
        assert client.max_retries == 2
        with pytest.raises(openai.InternalServerError) as caught:
            client.chat.completions.create(model="fails", messages=HI)  # type: ignore[arg-type]
        headers = caught.value.response.headers
        assert headers["x-should-retry"] == "false"
        assert headers["x-seamkit-outcome"] == "failed"
        assert caught.value.code == "run_failed"
        assert counted.read_text().count("acted") == 1  # not three times
        # with a session too: the message is stored once and the session stays usable
        session = client.with_options(default_headers={"X-Seamkit-Session": "s-fails"})
        with pytest.raises(openai.InternalServerError) as again:
            session.chat.completions.create(model="fails", messages=HI)  # type: ignore[arg-type]
        assert again.value.response.headers["x-seamkit-session"] == "s-fails"
        assert counted.read_text().count("acted") == 2
    finally:
        served.stop()


@pytest.mark.parametrize(
    ("status", "vetoed"),
    [(400, False), (401, False), (404, False), (409, True), (500, True), (503, False), (504, True)],
)
def test_which_errors_veto_a_retry(status: int, vetoed: bool) -> None:
    from seamkit_serve._error import ApiError  # the rule every error answer follows

    headers = ApiError(status, "x").headers()
    assert headers == ({"x-should-retry": "false"} if vetoed else {})
