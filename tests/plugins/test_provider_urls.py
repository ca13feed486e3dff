"""A base URL's password never shows: both HTTP providers name their server
in every error by its base URL, shown without user, password or query. It
still goes to the server: a user and password in a base URL are sent as
HTTP Basic auth, as an httpx client (and so the official clients) sends them."""

from __future__ import annotations

import asyncio
import base64
import json

import pytest
import seamkit
from seamkit_anthropic import AnthropicConfig, build_model as build_anthropic
from seamkit_openai import OpenAIConfig, build_model as build_openai

from tests.conftest import free_port
from tests.plugins.openai_server import ReplayServer, Reply

CANARY = "pw-canary-5e1f"


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_an_unreachable_server_is_named_without_its_password(provider: str) -> None:
    url = f"http://ann:{CANARY}@127.0.0.1:{free_port()}/?key={CANARY}"
    if provider == "anthropic":
        model = build_anthropic(
            AnthropicConfig(provider="anthropic", name="m", base_url=url, max_retries=0)
        )
    else:
        model = build_openai(OpenAIConfig(provider="openai", name="m", base_url=url, max_retries=0))
    request = seamkit.ModelRequest(messages=(seamkit.Message.user("hi"),))

    async def ask() -> None:
        async with model:
            await model.complete(request)

    with pytest.raises(seamkit.ModelError) as raised:
        asyncio.run(ask())
    said = f"{raised.value} {raised.value.hint}"
    assert "cannot reach" in said and "127.0.0.1" in said
    assert CANARY not in said + repr(model)


ANTHROPIC_ANSWER = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "m",
    "content": [{"type": "text", "text": "in"}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 1, "output_tokens": 1},
}
OPENAI_ANSWER = {
    "id": "c1",
    "object": "chat.completion",
    "model": "m",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "in"}, "finish_reason": "stop"}
    ],
}


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_base_urls_user_and_password_go_to_the_server_as_basic_auth(
    provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A proxy behind Basic auth (``https://ann:PASSWORD@llm.corp/``) lets the
    provider in; the password still shows nowhere."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with ReplayServer() as server:
        url = f"http://ann:{CANARY}@127.0.0.1:{server.port}"
        if provider == "anthropic":
            server.script("m", Reply.json(ANTHROPIC_ANSWER))
            model = build_anthropic(
                AnthropicConfig(provider="anthropic", name="m", base_url=url, api_key="sk-a")
            )
        else:
            server.script("m", Reply.json(OPENAI_ANSWER))
            model = build_openai(OpenAIConfig(provider="openai", name="m", base_url=f"{url}/v1"))
        request = seamkit.ModelRequest(messages=(seamkit.Message.user("hi"),))

        async def ask() -> seamkit.ModelTurn:
            async with model:
                return await model.complete(request)

        assert asyncio.run(ask()).message.text == "in"
        (seen,) = server.seen("m")
    token = base64.b64encode(f"ann:{CANARY}".encode()).decode()
    assert seen.headers["authorization"] == f"Basic {token}"
    if provider == "anthropic":
        assert seen.headers["x-api-key"] == "sk-a"
    assert CANARY not in repr(model) + json.dumps(seen.body)
