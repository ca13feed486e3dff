"""A base URL's password never shows: both HTTP providers name their server
in every error by its base URL, shown without user, password or query."""

from __future__ import annotations

import asyncio

import pytest
import seamkit
from seamkit_anthropic import AnthropicConfig, build_model as build_anthropic
from seamkit_openai import OpenAIConfig, build_model as build_openai

from tests.conftest import free_port

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
