"""The ``anthropic`` provider passes `seamkit.testing.check_model_provider`,
on wire cassettes of Anthropic's public shapes (``tests/fixtures/anthropic/*.http``:
the official SDK's streaming fixtures and answers shaped after the API's
documentation, each with its source in its comment lines)."""

from __future__ import annotations

from pathlib import Path

import seamkit
from seamkit.testing import CASSETTE_NAMES, check_model_provider
from seamkit_anthropic import AnthropicConfig, build_model

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "anthropic"

CASSETTES = {
    "text": FIXTURES / "basic_response.http",
    "text.whole": FIXTURES / "basic_response.whole.http",
    "tools": FIXTURES / "tool_use_response.http",
    "tools.whole": FIXTURES / "tool_use_response.whole.http",
    "parallel_tools": FIXTURES / "parallel_tools_response.http",
    "parallel_tools.whole": FIXTURES / "parallel_tools_response.whole.http",
    "unauthorized": FIXTURES / "authentication_401.http",
    "rate_limited": FIXTURES / "rate_limit_429_then_200.http",
    "context_length": FIXTURES / "prompt_too_long_400.http",
    "server_error": FIXTURES / "overloaded_529.http",
    "cut_stream": FIXTURES / "cut_response.http",
    "usage": FIXTURES / "cached_response.whole.http",
}


def anthropic_model(base_url: str, api_key: str) -> seamkit.Model:
    config = AnthropicConfig(
        provider="anthropic",
        name="claude-sonnet-4-6",
        base_url=base_url,
        api_key=seamkit.Secret(api_key, source="${secret:CHECK_KEY}"),
        max_retries=2,
    )
    return build_model(config)


def test_the_anthropic_provider_passes_every_check() -> None:
    assert set(CASSETTES) == set(CASSETTE_NAMES)
    report = check_model_provider(anthropic_model, CASSETTES)
    report.assert_passed(all_covered=True)
    assert report["rate_limited"].detail == "a turn after 2 requests"
    assert report["server_error"].detail == "ModelError after 3 requests"
