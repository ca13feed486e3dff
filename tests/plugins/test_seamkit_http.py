"""seamkit-http, the library both model providers share: it imports for
free, quotes a server's words without any part of a secret, and says where a
key came from without the key. (Its retries, pooling and redirect refusal are
tested through the providers, in test_openai_provider.py and
test_anthropic_*.py.)"""

from __future__ import annotations

import json
import subprocess
import sys

import seamkit
from seamkit_http import key_origin, server_message, shown, token_count

SECRET = "sk-live-0123456789abcdef"


def test_importing_the_library_loads_neither_httpx_nor_pydantic() -> None:
    code = "import sys, seamkit_http; print('httpx' in sys.modules, 'pydantic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_a_secret_across_the_cut_shows_not_even_in_part() -> None:
    message = "x" * 490 + SECRET  # the cut at 500 would leave its first ten characters
    for body in (
        json.dumps({"error": {"message": message}}).encode(),  # OpenAI's and Anthropic's shape
        json.dumps({"object": "error", "message": message}).encode(),  # vLLM's flat one
        message.encode(),  # not JSON at all
    ):
        said = server_message(body, [SECRET])
        assert "sk-live" not in said
        assert said.startswith("x" * 490)
    assert "sk-live" not in shown(("y" * 195 + SECRET).encode(), [SECRET])


def test_the_servers_words_come_from_message_detail_or_the_body() -> None:
    assert server_message(b'{"error": {"message": "bad model"}}') == "bad model"
    assert server_message(b'{"detail": "Not Found"}') == "Not Found"
    assert server_message(b"  <html>oops</html> ") == "<html>oops</html>"
    assert server_message(b"") == "(no message)"


def test_the_key_origin_names_variables_never_the_key() -> None:
    assert key_origin(None) is None
    assert key_origin(seamkit.Secret(SECRET)) == "the api_key in the model's config"
    from_env = seamkit.Secret(SECRET, source="OPENAI_API_KEY")
    assert key_origin(from_env) == "the API key from OPENAI_API_KEY"
    spelled = seamkit.Secret(SECRET, source="${secret:MY_KEY}")
    assert key_origin(spelled) == "the API key from MY_KEY"


def test_a_token_count_is_a_finite_non_negative_number_else_zero() -> None:
    assert [token_count(v) for v in (3, 4.9, 0)] == [3, 4, 0]
    odd = (float("nan"), float("inf"), float("-inf"), -1, True, False, "7", None, [1])
    assert [token_count(v) for v in odd] == [0] * len(odd)


def test_both_providers_configs_take_the_connection_settings_from_one_place() -> None:
    from seamkit_anthropic import AnthropicConfig  # lazy: pydantic loads with a config
    from seamkit_http import ConnectionSettings  # lazy: pydantic loads with it
    from seamkit_openai import OpenAIConfig  # lazy: pydantic loads with a config

    shared = ConnectionSettings.model_fields
    assert list(shared) == [
        "timeout_seconds",
        "connect_timeout_seconds",
        "max_retries",
        "max_connections",
        "headers",
        "extra_body",
    ]
    for config in (AnthropicConfig, OpenAIConfig):
        assert issubclass(config, ConnectionSettings)
        assert issubclass(config, seamkit.ModelConfig)
        assert "timeout_seconds" not in config.__annotations__  # not declared again
        for name, field in shared.items():
            assert config.model_fields[name].description == field.description
            assert config.model_fields[name].default == field.default


def test_json_object_parses_an_object_and_quotes_anything_else_masked() -> None:
    from seamkit_http import json_object  # lazy: beside its test

    assert json_object(b'{"a": 1}', "an answer", where="w", provider="p") == {"a": 1}
    for raw in (b"[1]", b"not json sk-secret-1", b"\xff\xfe", "null"):
        try:
            json_object(
                raw, "a stream event", where="p at u", provider="p", secrets=["sk-secret-1"]
            )
        except seamkit.ModelError as exc:
            said = str(exc)
            assert said.startswith("p at u sent a stream event that is not a JSON object: ")
            assert "sk-secret-1" not in said
            assert exc.provider == "p"
        else:
            raise AssertionError(f"{raw!r} was taken for an object")


def test_the_failures_every_provider_words_alike() -> None:
    from seamkit_http import answered, context_too_long, status_failure  # lazy: beside its test

    def status(code: int, said: str) -> seamkit.ModelError | None:
        return status_failure(
            code,
            said,
            where="p at u",
            model="m",
            key=None,
            attempts=3,
            provider="p",
            variable="P_API_KEY",
            endpoint="/v1/x",
            root_hint="the root",
        )

    none = status(401, "no")
    assert none is not None and "P_API_KEY" in (none.hint or "")
    missing = status(404, "gone")
    assert missing is not None
    assert str(missing).startswith("p at u has no model 'm' or no /v1/x endpoint (404: gone)")
    assert status(500, "x") is None
    too_long = context_too_long("p at u", "m", "too big", provider="p")
    assert isinstance(too_long, seamkit.ContextLengthExceeded)
    assert str(answered(503, "busy", where="p at u", attempts=3, provider="p")).startswith(
        "p at u answered 503 after 3 attempts: busy"
    )


def test_connections_are_closed_on_their_own_loop_when_the_loop_changes() -> None:
    import asyncio  # lazy: beside its test
    import logging  # lazy: beside its test
    import threading  # lazy: beside its test

    from seamkit_anthropic import AnthropicConfig  # lazy: a config to read settings from
    from seamkit_http import Connections, Endpoint  # lazy: beside its test

    def refuse(*args: object, **kwargs: object) -> seamkit.ModelError:
        return seamkit.ModelError("no")

    endpoint = Endpoint(
        "http://127.0.0.1:9/v1/x",
        headers={},
        settings=AnthropicConfig(provider="anthropic", name="m"),
        where="test",
        provider="p",
        secrets=(),
        log=logging.getLogger("test"),
        failure=refuse,
    )

    async def client() -> Connections:
        return endpoint.connections()

    first = asyncio.run(client())
    second = asyncio.run(client())
    assert first is not second
    assert first.is_closed  # closed when its loop shut down

    # a loop still running in another thread: the client is closed there
    other = asyncio.new_event_loop()
    thread = threading.Thread(target=other.run_forever, daemon=True)
    thread.start()
    try:
        third = asyncio.run_coroutine_threadsafe(client(), other).result(5)
        fourth = asyncio.run(client())
        assert fourth is not third
        for _ in range(100):
            if third.is_closed:
                break
            threading.Event().wait(0.01)
        assert third.is_closed
    finally:
        other.call_soon_threadsafe(other.stop)
        thread.join(5)
        other.close()
