"""The joke service: the jokes it picks, what `JokeService.invoke` answers
for a tool's ``style`` and the model's ``topic``, its replies on the wire,
and the README's two commands end to end (``seamkit tool-service serve`` in
a subprocess, ``seamkit run`` on the example apps), over HTTP and NATS.

Run ``pytest`` in this package's folder (with ``pip install -e ".[test]"``),
or ``python -m pytest contrib/joke-service/tests`` from the repository root.
The servers they start are in `joke_service_helpers`; nothing here comes from
the repository's own test suite.
"""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

from joke_service import JOKES, JokeService, pick_joke
from joke_service_helpers import (
    HERE,
    NatsServer,
    ServiceProcess,
    clean_env,
    free_port,
    seamkit_command,
)
from seamkit_tool_service import decode_reply, encode_request

FOOD_PUN = JOKES["pun"]["food"]


def invoke(user: str, config: dict[str, Any], arguments: dict[str, Any]) -> Any:
    return asyncio.run(JokeService().invoke(user, config, arguments))


# --- the jokes ----------------------------------------------------------------------


def test_pick_joke_finds_the_topic_in_the_style() -> None:
    assert pick_joke("food", "dad") == JOKES["dad"]["food"]
    assert pick_joke("  Programming ", "pun") == JOKES["pun"]["programming"]


def test_an_unknown_style_tells_puns_and_an_unknown_topic_a_generic_joke() -> None:
    assert pick_joke("animals", "limerick") == JOKES["pun"]["animals"]
    assert pick_joke("Boats", "pun") == (
        "Why did the boats cross the road? To get to the punchline."
    )
    assert "thing" in pick_joke("", "pun")


# --- the service --------------------------------------------------------------------


def test_the_style_comes_from_the_tools_config_and_the_topic_from_the_model() -> None:
    answer = invoke("alice", {"style": "dad"}, {"topic": "animals"})
    assert answer == f"Hey alice! Here's a dad joke for you:\n\n{JOKES['dad']['animals']}"


def test_a_tool_without_style_gets_puns() -> None:
    assert invoke("bob", {}, {"topic": "food"}).endswith(FOOD_PUN)
    assert "a pun for you" in invoke("bob", {"style": None}, {"topic": "food"})


def test_the_user_is_greeted_only_when_the_agent_sends_one() -> None:
    assert invoke("carol", {"style": "pun"}, {"topic": "food"}).startswith("Hey carol! ")
    assert invoke("", {"style": "pun"}, {"topic": "food"}).startswith("Here's a pun")


def test_it_answers_a_request_envelope_with_one_reply_of_the_same_id() -> None:
    request = encode_request("call-7", "dave", '{"style":"pun"}', '{"topic":"food"}')

    async def replies() -> list[bytes]:
        return [reply async for reply in JokeService().replies(request)]

    [data] = asyncio.run(replies())
    reply = decode_reply(data)
    assert reply.id == "call-7"
    assert reply.error is None
    assert reply.end_of_stream
    assert reply.response == f"Hey dave! Here's a pun for you:\n\n{FOOD_PUN}"


def test_it_describes_the_references_tool() -> None:
    descriptor = JokeService().descriptor("http", url="http://127.0.0.1:8765/")
    assert descriptor.id == "joke-service"
    assert [(p.name, p.required) for p in descriptor.config_params] == [("style", False)]
    [tool] = descriptor.tools
    assert (tool.name, tool.config) == ("tell-joke", {"style": "pun"})
    assert [a.name for a in tool.arguments] == ["topic"]


# --- the README's two commands ------------------------------------------------------


def run_app(app: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``seamkit run APP "Tell me a joke about food" --context user=alice``
    in this package's folder (where the example apps are)."""
    command = [seamkit_command(), "run", app, "Tell me a joke about food"]
    command += ["--context", "user=alice"]
    return subprocess.run(
        command, cwd=HERE, env={**clean_env(), **env}, capture_output=True, text=True, timeout=60
    )


def assert_told_the_joke(run: subprocess.CompletedProcess[str]) -> None:
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "That one came from the joke service."
    assert '→ tell-joke({"topic": "food"})' in run.stderr
    assert f": Hey alice! Here's a pun for you: {FOOD_PUN}" in run.stderr
    assert "✗" not in run.stderr


def test_served_over_http_the_example_app_tells_the_joke(tmp_path: Path) -> None:
    with ServiceProcess.http("joke_service:JokeService", tmp_path) as service:
        run = run_app("app.yaml", {"JOKE_SERVICE_URL": service.url})
        assert_told_the_joke(run)


def test_served_over_nats_the_app_discovers_the_service_and_tells_the_joke(
    nats_server: NatsServer, tmp_path: Path
) -> None:
    with ServiceProcess.nats(
        "joke_service:JokeService", tmp_path, servers=nats_server.url, subject="tools.joke"
    ):
        run = run_app("app-nats.yaml", {"NATS_URL": nats_server.url})
        assert_told_the_joke(run)


def test_without_the_service_the_model_sees_a_clear_error() -> None:
    run = run_app("app.yaml", {"JOKE_SERVICE_URL": f"http://127.0.0.1:{free_port()}/"})
    assert run.returncode == 0, run.stderr
    assert "✗ tell-joke" in run.stderr
    assert "Error: Unavailable: cannot reach tool service 'joke-service'" in run.stderr


# --- secured ------------------------------------------------------------------------

TOKEN = "joke-token-canary-5e1f"


def test_behind_a_bearer_token_the_app_with_the_token_tells_the_joke(tmp_path: Path) -> None:
    env = {"JOKE_TOKEN": TOKEN}
    with ServiceProcess.http(
        "joke_service:JokeService", tmp_path, "--token-env", "jokes=JOKE_TOKEN", env=env
    ) as service:
        told = run_app("app-secure.yaml", {"JOKE_SERVICE_URL": service.url, **env})
        assert_told_the_joke(told)
        refused = run_app(
            "app-secure.yaml", {"JOKE_SERVICE_URL": service.url, "JOKE_TOKEN": "wrong"}
        )
        assert "✗ tell-joke" in refused.stderr and "401" in refused.stderr
        log = service.output()
    assert "[tokens: jokes]" in log
    for text in (told.stdout, told.stderr, refused.stdout, refused.stderr, log):
        assert TOKEN not in text


def test_on_a_nats_server_with_a_token_the_app_discovers_and_tells_the_joke(
    tmp_path: Path,
) -> None:
    with NatsServer.start(tmp_path, token=TOKEN) as server:
        env = {"NATS_TOKEN": TOKEN}
        with ServiceProcess.nats(
            "joke_service:JokeService",
            tmp_path,
            "--nats-token-env",
            "NATS_TOKEN",
            servers=server.url,
            subject="tools.joke-service",
            env=env,
        ) as service:
            told = run_app("app-nats-secure.yaml", {"NATS_URL": server.url, **env})
            assert_told_the_joke(told)
            log = service.output()
    for text in (told.stdout, told.stderr, log):
        assert TOKEN not in text
