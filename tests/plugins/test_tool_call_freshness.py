"""Issue 11: a TTL never serves a result fetched for other argument values, and
the stable placement never changes what the model has already seen."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import seamkit
from seamkit import Message, SQLiteSessionStore

from tests.plugins.test_tool_call import T0, Clock, Memory, agent_for, hook, pairs

CANARY = "canary-b81f-secret"


def _runs(
    agent: seamkit.Agent,
    clock: Clock,
    memory: Memory,
    steps: list[tuple[int, str, Any]],
    **run: Any,
) -> list[seamkit.RunResult]:
    """Run one message per step ``(minute, user, answer)``, each run's transcript
    the next run's history."""

    async def go() -> list[seamkit.RunResult]:
        history: tuple[Message, ...] = ()
        out = []
        for minutes, user, answer in steps:
            clock.now = T0 + timedelta(minutes=minutes)
            memory.answer = answer
            result = await agent.run(
                f"message at {minutes}", context={"user": user}, history=history, **run
            )
            assert result.outcome.kind == "completed", result.outcome
            history = result.transcript
            out.append(result)
        return out

    return asyncio.run(go())


def test_another_user_inside_the_ttl_gets_a_fresh_call_placed_by_the_latest_pair_rule() -> None:
    memory, clock = Memory(), Clock()
    agent = asyncio.run(
        agent_for([hook(refresh_condition={"kind": "ttl", "ttl_minutes": 30})], memory, clock, 3)
    )
    results = _runs(
        agent,
        clock,
        memory,
        [(0, "ann", "ann likes tea"), (5, "ann", "x"), (10, "bob", "bob likes coffee")],
    )
    assert memory.calls == [{"user": "ann"}, {"user": "bob"}]  # +5: ann's is fresh
    final = pairs(results[-1].transcript)
    assert [c for _, c in final] == ["ann likes tea", "bob likes coffee"]  # bob's is last


def test_a_secret_from_the_context_that_differs_per_user_means_a_new_call() -> None:
    memory, clock = Memory(), Clock()
    entry = hook(
        refresh_condition={"kind": "ttl", "ttl_minutes": 30},
        arguments={"user": "{{ context.token }}"},
    )
    agent = asyncio.run(agent_for([entry], memory, clock, 2))

    async def go() -> list[seamkit.RunResult]:
        out, history = [], ()
        for token in (CANARY + "-ann", CANARY + "-bob"):
            result = await agent.run(
                "hi", context={"token": seamkit.Secret(token)}, history=history
            )
            history = result.transcript
            out.append(result)
        return out

    results = asyncio.run(go())
    assert [c["user"] for c in memory.calls] == [CANARY + "-ann", CANARY + "-bob"]
    assert CANARY not in results[-1].model_dump_json()


def test_a_user_message_argument_calls_again_for_each_new_message() -> None:
    memory, clock = Memory(), Clock()
    entry = hook(
        refresh_condition={"kind": "ttl", "ttl_minutes": 30},
        arguments={"user": "{{ user_message }}"},
    )
    agent = asyncio.run(agent_for([entry], memory, clock, 3))
    _runs(agent, clock, memory, [(0, "ann", "a"), (1, "ann", "b"), (2, "ann", "c")])
    assert [c["user"] for c in memory.calls] == ["message at 0", "message at 1", "message at 2"]


def test_nothing_rendered_is_stored_in_clear_in_a_session(tmp_path: Path) -> None:
    memory, clock = Memory(), Clock()
    entry = hook(
        refresh_condition={"kind": "ttl", "ttl_minutes": 30},
        arguments={"user": "{{ context.token }}"},
    )
    agent = asyncio.run(agent_for([entry], memory, clock, 2))
    store = SQLiteSessionStore(tmp_path / "s.sqlite")

    async def go() -> None:
        for _ in range(2):
            await agent.run(
                "hi", context={"token": seamkit.Secret(CANARY)}, session="s", store=store
            )

    asyncio.run(go())
    assert [c["user"] for c in memory.calls] == [CANARY]  # the second run: fresh, kept in state
    assert CANARY.encode() not in (tmp_path / "s.sqlite").read_bytes()
    stored = asyncio.run(store.load("s"))
    assert stored is not None and seamkit.injection.STATE_KEY in stored.state


@pytest.mark.parametrize("frequency", ["always", "append_if_changed", "once"])
def test_stable_never_changes_a_message_the_model_has_seen(frequency: str) -> None:
    memory, clock = Memory(), Clock()
    entry = hook(
        refresh_condition={"kind": "ttl", "ttl_minutes": 10},
        frequency=frequency,
        placement="stable",
    )
    agent = asyncio.run(agent_for([entry], memory, clock, 5))
    steps = [
        (0, "ann", "A"),
        (11, "ann", "A"),
        (22, "ann", "B"),
        (33, "ann", "A"),
        (35, "ann", "C"),
    ]
    results = _runs(agent, clock, memory, steps)
    previous: list[Message] = []
    for result in results:
        sent = list(result.transcript)
        assert sent[: len(previous)] == previous, "a message already sent was changed"
        previous = sent
    contents = [c for _, c in pairs(results[-1].transcript)]
    ids = [i for i, _ in pairs(results[-1].transcript)]
    assert len(ids) == len(set(ids)), "no two pairs share an id"
    if frequency == "once":
        assert contents == ["A"] and len(memory.calls) == 1
    else:
        assert len(memory.calls) == 4  # +35: the A of +33 is fresh until +43
        last = "A"
        assert contents[-1] == last
        if frequency == "append_if_changed":
            assert contents == ["A", "B", "A"]  # +11: unchanged, not re-stamped


def test_under_stable_a_first_injection_goes_at_the_end() -> None:
    messages = [Message.system("s"), Message.user("u"), Message.assistant("a")]
    out = seamkit.injection.inject_tool_result(
        messages, name="t", arguments={}, content="c", placement="stable"
    )
    assert out[:3] == messages and out[3].tool_calls and out[4].content == "c"


def test_settings_placement_is_the_default_and_a_bad_value_names_the_hook() -> None:
    with pytest.raises(seamkit.ManifestError) as caught:
        seamkit.AppConfig.load(
            {"name": "a", "model": "scripted:x", "hooks": [hook(placement="sideways")]}
        )
    text = caught.value.format()
    assert "hooks[0].placement" in text and "history" in text and "stable" in text
    with pytest.raises(seamkit.ManifestError) as caught:
        seamkit.AppConfig.load(
            {"name": "a", "model": "scripted:x", "settings": {"placement": "nope"}}
        )
    assert "settings.placement" in caught.value.format()
    memory, clock = Memory(), Clock()

    async def run() -> seamkit.RunResult:
        app = seamkit.AppConfig.load(
            {
                "name": "mem",
                "model": "scripted:inline",
                "settings": {"placement": "stable"},
                "hooks": [hook()],
            }
        )
        tools = [memory.get_memories.replace(name="memory_server_get_memories")]
        agent = await seamkit.Agent.load(
            app, tools=tools, model=seamkit.testing.ScriptedModel([{"text": "ok"}]), clock=clock
        )
        history = [Message.user("earlier"), Message.assistant("reply")]
        return await agent.run("now", context={"user": "ann"}, history=history)

    transcript = asyncio.run(run()).transcript
    # Under settings.placement: stable the hook's first pair follows the new
    # message instead of going after the first user message.
    assert [m.role for m in transcript[:3]] == ["user", "assistant", "user"]
    assert transcript[3].tool_calls and transcript[4].role == "tool"


def test_rendered_values_stay_out_of_ids_and_stored_state(tmp_path: Path) -> None:
    memory, clock = Memory(), Clock()
    entry = hook(refresh_condition={"kind": "ttl", "ttl_minutes": 30})
    agent = asyncio.run(agent_for([entry], memory, clock, 1))
    store = SQLiteSessionStore(tmp_path / "s.sqlite")
    user = "zanzibar-7731"
    result = asyncio.run(agent.run("hi", context={"user": user}, session="s", store=store))
    stored = asyncio.run(store.load("s"))
    assert stored is not None
    assert user not in json.dumps(stored.state)
    assert all(user not in call_id for call_id, _ in pairs(result.transcript))
    # What the model is shown is the call as made (secrets masked), as in the reference.
    call = next(m for m in result.transcript if m.tool_calls)
    assert user in call.tool_calls[0].function.arguments


def test_users_taking_turns_keep_their_own_fresh_results() -> None:
    memory, clock = Memory(), Clock()
    entry = hook(refresh_condition={"kind": "ttl", "ttl_minutes": 30})
    agent = asyncio.run(agent_for([entry], memory, clock, 6))

    async def go() -> None:
        histories: dict[str, tuple[Message, ...]] = {"ann": (), "bob": ()}
        for minutes, user in [
            (0, "ann"),
            (1, "bob"),
            (2, "ann"),
            (3, "bob"),
            (4, "ann"),
            (5, "bob"),
        ]:
            clock.now = T0 + timedelta(minutes=minutes)
            result = await agent.run("hi", context={"user": user}, history=histories[user])
            histories[user] = result.transcript

    asyncio.run(go())
    assert memory.calls == [{"user": "ann"}, {"user": "bob"}]


def test_a_hook_state_that_is_not_json_never_costs_the_transcript(tmp_path: Path) -> None:
    class Careless:
        @seamkit.hookimpl
        def on_request_start(self, ctx: seamkit.HookContext) -> None:
            ctx.session_state["when"] = T0  # a datetime: not JSON

    agent = seamkit.Agent(
        seamkit.testing.ScriptedModel([{"text": "ok"}]), hooks=[Careless()], plugin_hooks=False
    )
    store = SQLiteSessionStore(tmp_path / "s.sqlite")
    result = agent.run_sync("hi", session="s", store=store)
    assert result.outcome.kind == "completed"
    stored = asyncio.run(store.load("s"))
    assert stored is not None and [m.text for m in stored.transcript] == ["hi", "ok"]
    assert stored.state == {}
