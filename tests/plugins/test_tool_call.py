"""The `tool_call` hook kind of seamkit-tool-call: tool results injected from
the manifest alone, with frequencies, TTL refresh and failure policy."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import seamkit
import seamkit.testing
from seamkit import Message
from seamkit.plugins import get_registry

T0 = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


class Memory:
    """A memory service whose answers the test controls; counts its calls."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.answer: Any = ["likes tea"]

        @seamkit.tool
        def get_memories(user: str) -> Any:
            """What we remember about a user."""
            self.calls.append({"user": user})
            if isinstance(self.answer, Exception):
                raise self.answer
            return self.answer

        @seamkit.tool
        def save_memory(user: str, text: str) -> str:
            self.calls.append({"user": user, "text": text})
            return "saved"

        self.get_memories = get_memories
        self.save_memory = save_memory


async def agent_for(hooks: list[dict[str, Any]], memory: Memory, clock: Clock, turns: int = 1):
    """An agent whose memory tools form the toolset ``memory_server``."""
    app = seamkit.AppConfig.load(
        {
            "name": "mem",
            "model": "scripted:inline",
            "tools": [],
            "hooks": hooks,
        }
    )
    tools = seamkit.ToolMap.of(
        [
            memory.get_memories.replace(name="memory_server_get_memories"),
            memory.save_memory.replace(name="memory_server_save_memory"),
            memory.get_memories.replace(name="get_memories_verbatim"),
        ]
    )
    return await seamkit.Agent.load(
        app,
        tools=list(tools.values()),
        model=seamkit.testing.ScriptedModel([{"text": "ok"}] * turns),
        clock=clock,
    )


def hook(**fields: Any) -> dict[str, Any]:
    return {
        "kind": "tool_call",
        "event": "on_request_start",
        "toolset_name": "memory_server",
        "tool_name": "get_memories",
        "arguments": {"user": "{{ context.user }}"},
        **fields,
    }


def pairs(transcript: Any) -> list[tuple[str, str]]:
    """(tool call id, content) of every injected pair."""
    out = []
    for i, m in enumerate(transcript):
        if m.role == "tool" and (m.tool_call_id or "").startswith("synth_"):
            assert transcript[i - 1].tool_calls[0].id == m.tool_call_id
            out.append((m.tool_call_id, m.content))
    return out


def test_the_kind_is_discovered_through_its_entry_point() -> None:
    info = get_registry().kind("hook", "tool_call")
    assert info is not None and info.plugin == "tool_call"
    assert {e.value for e in info.events} == {"on_request_start", "on_completion"}


def test_always_injects_a_new_pair_at_the_end_under_the_final_name() -> None:
    memory, clock = Memory(), Clock()

    async def go() -> Any:
        agent = await agent_for([hook(frequency="always")], memory, clock, turns=2)
        first = await agent.run("hi", context={"user": "ann"})
        second = await agent.run("again", context={"user": "ann"}, history=first.transcript)
        return first, second

    first, second = asyncio.run(go())
    assert [m.role for m in first.transcript] == ["user", "assistant", "tool", "assistant"]
    call = first.transcript[1].tool_calls[0]
    assert call.function.name == "memory_server_get_memories"
    assert call.function.arguments == '{"user": "ann"}'
    assert first.transcript[2].content == '["likes tea"]'
    assert len(pairs(second.transcript)) == 2 and len(memory.calls) == 2
    assert second.transcript[-3].role == "assistant" and second.transcript[-4].text == "again"


def test_a_tool_by_its_verbatim_name() -> None:
    memory, clock = Memory(), Clock()
    verbatim = hook(tool_name="get_memories_verbatim")
    del verbatim["toolset_name"]

    async def go() -> Any:
        agent = await agent_for([verbatim], memory, clock)
        return await agent.run("hi", context={"user": "bob"})

    result = asyncio.run(go())
    assert result.transcript[2].content == '["likes tea"]'
    assert result.transcript[1].tool_calls[0].function.name == "get_memories_verbatim"


def test_ttl_refresh_over_several_requests() -> None:
    memory, clock = Memory(), Clock()
    ttl = hook(refresh_condition={"kind": "ttl", "ttl_minutes": 30})

    async def go() -> list[Any]:
        agent = await agent_for([ttl], memory, clock, turns=5)
        results: list[Any] = []
        history: tuple[Message, ...] = ()
        for minutes, answer in [(0, "A"), (10, "A"), (31, "A"), (45, "B"), (70, "B")]:
            clock.now = T0 + timedelta(minutes=minutes)
            memory.answer = answer
            result = await agent.run(f"t+{minutes}", context={"user": "ann"}, history=history)
            history = result.transcript
            results.append(result)
        return results

    r0, r10, r31, r45, r70 = asyncio.run(go())
    assert len(memory.calls) == 3  # at +0, +31 and +70; +10 and +45 were fresh
    (first,) = pairs(r0.transcript)
    expiry0 = seamkit.injection.parse_synthetic_id(first[0]).expiry
    assert expiry0 == int((T0 + timedelta(minutes=30)).timestamp())
    assert pairs(r10.transcript) == [first]
    # +31: expired; unchanged content is replaced in place with a new expiry.
    (again,) = pairs(r31.transcript)
    assert again[0] != first[0] and again[1] == first[1]
    assert r31.transcript.index(next(m for m in r31.transcript if m.tool_call_id == again[0])) == 2
    assert seamkit.injection.parse_synthetic_id(again[0]).expiry == int(
        (T0 + timedelta(minutes=61)).timestamp()
    )
    # +45: still fresh (expires at +61), so the changed answer is not fetched.
    assert pairs(r45.transcript) == [again]
    # +70: expired; changed content is appended at the end.
    assert [c for _, c in pairs(r70.transcript)] == ["A", "B"]
    assert r70.transcript[-2].tool_call_id == pairs(r70.transcript)[-1][0]


def test_content_a_b_a_reads_a_as_current_and_waits_for_its_expiry() -> None:
    memory, clock = Memory(), Clock()
    ttl = hook(refresh_condition={"kind": "ttl", "ttl_minutes": 10})

    async def go() -> list[Any]:
        agent = await agent_for([ttl], memory, clock, turns=4)
        history: tuple[Message, ...] = ()
        out = []
        for minutes, answer in [(0, "A"), (11, "B"), (22, "A"), (25, "B")]:
            clock.now = T0 + timedelta(minutes=minutes)
            memory.answer = answer
            result = await agent.run("x", context={"user": "ann"}, history=history)
            history = result.transcript
            out.append(result)
        return out

    results = asyncio.run(go())
    assert len(memory.calls) == 3  # +25: the A of +22 is fresh until +32: no call
    final = pairs(results[-1].transcript)
    # The history ends with A, the current result, never with the stale B; the
    # first A stays where it was (nothing already sent moves), with its own id.
    assert [c for _, c in final] == ["A", "B", "A"]
    assert len({i for i, _ in final}) == 3
    newest = max(seamkit.injection.parse_synthetic_id(i).expiry for i, _ in final)
    assert newest == int((T0 + timedelta(minutes=32)).timestamp())


def test_a_failing_tool_under_skip_injects_nothing_and_the_run_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    memory, clock = Memory(), Clock()
    memory.answer = ConnectionError("memory service down")

    async def go() -> Any:
        agent = await agent_for([hook()], memory, clock)
        return await agent.run("hi", context={"user": "ann"})

    with caplog.at_level(logging.WARNING):
        result = asyncio.run(go())
    assert result.outcome.kind == "completed" and pairs(result.transcript) == []
    assert "memory service down" in caplog.text
    assert [d.code for d in result.diagnostics] == ["hook_skipped"]


def test_a_failing_tool_under_fail_fails_the_run() -> None:
    memory, clock = Memory(), Clock()
    memory.answer = ConnectionError("down")

    async def go() -> Any:
        agent = await agent_for([hook(on_error="fail", name="mem")], memory, clock)
        return await agent.run("hi", context={"user": "ann"})

    result = asyncio.run(go())
    assert result.outcome.kind == "failed"
    assert "hook 'mem' failed at on_request_start" in result.outcome.error


def test_an_error_returned_on_purpose_is_injected_as_it_is() -> None:
    memory, clock = Memory(), Clock()
    memory.answer = seamkit.ToolResult.error("no memories for guests")

    async def go() -> Any:
        agent = await agent_for([hook()], memory, clock)
        return await agent.run("hi", context={"user": "ann"})

    assert [c for _, c in pairs(asyncio.run(go()).transcript)] == ["no memories for guests"]


def test_on_completion_only_calls_the_tool_with_the_output() -> None:
    memory, clock = Memory(), Clock()
    save = {
        "kind": "tool_call",
        "event": "on_completion",
        "toolset_name": "memory_server",
        "tool_name": "save_memory",
        "arguments": {"user": "{{ context.user }}", "text": "{{ user_message }} => {{ output }}"},
    }

    async def go() -> Any:
        agent = await agent_for([save], memory, clock)
        return await agent.run("I like tea", context={"user": "ann"})

    result = asyncio.run(go())
    assert memory.calls == [{"user": "ann", "text": "I like tea => ok"}]
    assert pairs(result.transcript) == []


def test_secrets_print_as_stars_in_the_pair_and_reach_the_tool(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMORY_TOKEN", "tok-123456")
    got: list[str] = []

    @seamkit.tool
    def fetch(token: str) -> str:
        got.append(token)
        return "fine"

    async def go() -> Any:
        agent = await seamkit.Agent.load(
            {
                "name": "s",
                "model": "scripted:inline",
                "hooks": [
                    {
                        "kind": "tool_call",
                        "event": "on_request_start",
                        "tool_name": "fetch",
                        "arguments": {"token": "${secret:MEMORY_TOKEN}"},
                    }
                ],
            },
            tools=[fetch],
            model=seamkit.testing.ScriptedModel([{"text": "ok"}]),
        )
        return await agent.run("hi")

    result = asyncio.run(go())
    assert got == ["tok-123456"]
    assert result.transcript[1].tool_calls[0].function.arguments == '{"token": "***"}'
    assert "tok-123456" not in result.model_dump_json()
    expected = seamkit.injection.synthetic_id(
        "fetch", {"token": seamkit.Secret("x", source="${secret:MEMORY_TOKEN}")}, "fine"
    )
    assert result.transcript[1].tool_calls[0].id == expected


# --- errors, as a user reads them ----------------------------------------------


def test_a_missing_tool_is_an_error_naming_the_hook_and_the_tools() -> None:
    memory, clock = Memory(), Clock()
    with pytest.raises(seamkit.ManifestError) as info:
        asyncio.run(agent_for([hook(tool_name="get_memory", name="memories")], memory, clock))
    assert info.value.format() == (
        "hooks[0].tool_name: hook 'memories': no tool named 'memory_server_get_memory' "
        "(toolset_name 'memory_server' + tool_name 'get_memory')\n"
        "  hint: did you mean 'memory_server_get_memories'? the agent's tools: "
        "memory_server_get_memories, memory_server_save_memory, get_memories_verbatim"
    )


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"event": "on_completion", "frequency": "once"},
            "frequency is only for on_request_start",
        ),
        (
            {"event": "on_completion", "refresh_condition": {"kind": "ttl", "ttl_minutes": 5}},
            "refresh_condition is only for on_request_start",
        ),
        ({"arguments": {"q": "{{ output }}"}}, "{{ output }} exists only at on_completion"),
        ({"arguments": {"q": "{{ usr_message }}"}}, "unknown placeholder {{ usr_message }}"),
        ({"frequency": "sometimes"}, "frequency"),
    ],
)
def test_configuration_mistakes(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(seamkit.ManifestError) as info:
        seamkit.AppConfig.load({"name": "x", "model": "scripted:s", "hooks": [hook(**fields)]})
    assert message in info.value.format()
    assert "hooks[0]" in info.value.format()


def test_once_does_not_call_the_tool_again() -> None:
    memory, clock = Memory(), Clock()

    async def go() -> Any:
        agent = await agent_for([hook(frequency="once")], memory, clock, turns=3)
        history: tuple[Message, ...] = ()
        for text in ("a", "b", "c"):
            history = (await agent.run(text, context={"user": "ann"}, history=history)).transcript
        return history

    assert len(pairs(asyncio.run(go()))) == 1 and len(memory.calls) == 1


def test_a_secret_argument_never_leaks_through_a_failing_tool(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("MEMORY_TOKEN", "tok-123456")

    @seamkit.tool
    def fetch(token: str, user: str) -> str:
        raise PermissionError(f"token {token} rejected for {user}")

    async def go() -> Any:
        agent = await seamkit.Agent.load(
            {
                "name": "s",
                "model": "scripted:inline",
                "hooks": [
                    {
                        "kind": "tool_call",
                        "event": event,
                        "tool_name": "fetch",
                        "arguments": {
                            "token": "${secret:MEMORY_TOKEN}",
                            "user": "Bearer {{ context.key }}",
                        },
                    }
                    for event in ("on_request_start", "on_completion")
                ],
            },
            tools=[fetch],
            model=seamkit.testing.ScriptedModel([{"text": "ok"}]),
        )
        context = seamkit.ActionContext(key=seamkit.Secret("key-987654"))
        return await agent.run("hi", context=context)

    with caplog.at_level(logging.DEBUG):
        result = asyncio.run(go())
    assert result.outcome.kind == "completed"
    assert "token *** rejected" in result.diagnostics[0].message
    for text in (result.model_dump_json(), caplog.text):
        assert "tok-123456" not in text and "key-987654" not in text
