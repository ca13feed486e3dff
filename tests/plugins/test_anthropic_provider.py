"""The ``anthropic`` provider's skeleton (issue 33): it is discovered from its
installed distribution, its config (the short form and the mapping form)
validates and reads the environment as the official client does, a bad
config names the field, and asking the model fails with a clear error that
says it is not implemented yet, never with a traceback or the key in it.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import seamkit
import seamkit_anthropic
from seamkit.plugins import get_registry
from seamkit_anthropic import AnthropicCache, AnthropicConfig, AnthropicModel, build_model

CANARY = "sk-ant-canary-5e1b7c93a0"
SEAMKIT = str(Path(sys.executable).parent / "seamkit")


def config(**fields: Any) -> AnthropicConfig:
    return AnthropicConfig(provider="anthropic", name="claude-x", **fields)


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


def test_the_headers_carry_the_key_the_version_and_extra_headers() -> None:
    model = AnthropicModel(
        config(
            api_key=seamkit.Secret(CANARY, source="${secret:MY_KEY}"),
            api_version="2099-01-01",
            headers={"Anthropic-Beta": "b1", "x-token": seamkit.Secret("tok")},
        )
    )
    headers = model._headers
    assert headers["x-api-key"] == CANARY
    assert headers["anthropic-version"] == "2099-01-01"
    assert headers["anthropic-beta"] == "b1"
    assert headers["x-token"] == "tok"
    assert headers["user-agent"].startswith("seamkit-anthropic/")
    assert "authorization" not in headers


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


# --- the model, for now -------------------------------------------------------------


def test_asking_the_model_says_it_is_not_implemented_yet() -> None:
    model = build_model(config(api_key=seamkit.Secret(CANARY)))
    request = seamkit.ModelRequest(messages=(seamkit.Message.user("hi"),))

    async def whole() -> None:
        await model.complete(request)

    async def streamed() -> None:
        async for _ in model.stream(request):
            pass

    for ask in (whole, streamed):
        with pytest.raises(seamkit.ModelError, match="not implemented yet") as info:
            asyncio.run(ask())
        assert info.value.provider == "anthropic"
        assert CANARY not in str(info.value) + str(info.value.hint)


def test_a_run_on_the_short_form_fails_cleanly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    result = asyncio.run(seamkit.Agent("anthropic:claude-x").run("hi"))
    assert result.outcome.kind == "failed"
    assert "not implemented yet" in (result.outcome.error or "")
    assert CANARY not in (result.outcome.error or "")


def test_seamkit_run_reports_it_without_a_traceback(tmp_path: Path) -> None:
    app = tmp_path / "app.yaml"
    app.write_text("name: a\nmodel: anthropic:claude-x\n")
    out = subprocess.run(
        [SEAMKIT, "run", str(app), "hi"],
        capture_output=True,
        text=True,
        env={**os.environ, "ANTHROPIC_API_KEY": CANARY},
        timeout=60,
    )
    assert out.returncode != 0
    assert "Traceback" not in out.stderr
    assert "not implemented yet" in out.stderr
    assert CANARY not in out.stdout + out.stderr
