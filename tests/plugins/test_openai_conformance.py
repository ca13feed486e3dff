"""The ``openai`` provider passes `seamkit.testing.check_model_provider`,
on wire cassettes of OpenAI's public shapes (``tests/fixtures/openai/*.http``,
each with its source in its comment lines)."""

from __future__ import annotations

from pathlib import Path

import seamkit
from seamkit.testing import CASSETTE_NAMES, check_model_provider
from seamkit_openai import OpenAIConfig, build_model

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "openai"

CASSETTES = {
    "text": FIXTURES / "openai_text.http",
    "text.whole": FIXTURES / "openai_text.whole.http",
    "tools": FIXTURES / "repeated_id_name.http",
    "tools.whole": FIXTURES / "repeated_id_name.whole.http",
    "parallel_tools": FIXTURES / "openai_tool_calls.http",
    "parallel_tools.whole": FIXTURES / "openai_tool_calls.whole.http",
    "unauthorized": FIXTURES / "unauthorized_401.http",
    "rate_limited": FIXTURES / "rate_limited_429.http",
    "context_length": FIXTURES / "context_length_400.http",
    "server_error": FIXTURES / "server_error_500.http",
    "cut_stream": FIXTURES / "cut_in_tool_call.http",
    "usage": FIXTURES / "usage.http",
}


def openai_model(base_url: str, api_key: str) -> seamkit.Model:
    config = OpenAIConfig(
        provider="openai",
        name="gpt-4o-mini",
        base_url=f"{base_url}/v1",
        api_key=seamkit.Secret(api_key, source="${secret:CHECK_KEY}"),
        max_retries=2,
    )
    return build_model(config)


def test_the_openai_provider_passes_every_check() -> None:
    assert set(CASSETTES) == set(CASSETTE_NAMES)
    report = check_model_provider(openai_model, CASSETTES)
    report.assert_passed(all_covered=True)
    assert report["rate_limited"].detail == "a turn after 2 requests"
    assert report["server_error"].detail == "ModelError after 3 requests"
