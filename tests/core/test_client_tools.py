"""Client tools: tools a run advertises but its caller runs (``client_tools=``),
the ``deferred`` outcome that hands their calls back, and `ClientResults`,
whose results pass ``on_post_tool_use`` before the model sees them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import seamkit
from hypothesis import given, settings, strategies as st
from seamkit import (
    Agent,
    Approve,
    ClientResults,
    Decisions,
    ResumeError,
    ToolDefinitionError,
    ToolSpec,
    flow,
)
from seamkit.stream import RunFinished
from seamkit.testing import ScriptedModel

RAN: list[str] = []


@seamkit.tool(effects="none")
def lookup(order: str) -> str:
    """Look an order up."""
    RAN.append(order)
    return f"order {order}: 250 EUR"


@seamkit.tool(approval=True)
def refund(order: str) -> str:
    """Refund an order."""
    RAN.append(f"refund {order}")
    return f"refunded {order}"


WEATHER = ToolSpec(
    name="weather",
    description="The weather in a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)
CLOCK = ToolSpec(name="clock")


@pytest.fixture(autouse=True)
def _clean() -> None:
    RAN.clear()


class Seen:
    """Records what ``on_post_tool_use`` sees; may stop a result."""

    def __init__(self, stop: str | None = None) -> None:
        self.seen: list[tuple[str, str, str]] = []
        self.stop = stop

    @seamkit.hookimpl
    def on_post_tool_use(
        self, ctx: seamkit.HookContext, call: seamkit.ToolCall, result: seamkit.ToolResult
    ) -> flow.PostToolUseFlow:
        self.seen.append((call.name, call.result_source, result.content))
        if self.stop is not None and self.stop in result.content:
            return flow.Terminate("the client's result holds a secret")
        return flow.Continue()


def calls(*items: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"id": i, "name": n, "arguments": a} for i, n, a in items]}


def make(tmp_path: Path, *turns: dict[str, Any], hooks: Any = ()) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel([*turns, {"text": "done"}])
    agent = Agent(
        model,
        tools=[lookup, refund],
        hooks=list(hooks),
        plugin_hooks=False,
        store=tmp_path / "s.sqlite",
    )
    return agent, model


async def test_a_client_call_is_handed_back_after_the_apps_calls_ran(tmp_path: Path) -> None:
    turn = calls(("c1", "lookup", {"order": "A1"}), ("c2", "weather", {"city": "Oslo"}))
    agent, model = make(tmp_path, turn)
    result = await agent.run("hi", client_tools=[WEATHER])
    assert isinstance(result.outcome, seamkit.Deferred)
    [handed] = result.outcome.calls
    assert (handed.id, handed.name, handed.arguments) == ("c2", "weather", {"city": "Oslo"})
    assert RAN == ["A1"]  # the app's call ran, server-side, first
    assert [t.name for t in model.requests[0].tools] == ["lookup", "refund", "weather"]
    # the transcript ends with the turn and the app's result; the client's call is open
    assert [m.role for m in result.transcript] == ["user", "assistant", "tool"]
    assert result.output is None


async def test_client_results_pass_on_post_tool_use_before_the_model(tmp_path: Path) -> None:
    seen = Seen()
    agent, model = make(tmp_path, calls(("c2", "weather", {"city": "Oslo"})), hooks=[seen])
    first = await agent.run("hi", client_tools=[WEATHER])
    second = await agent.run(
        ClientResults({"c2": "sunny"}), history=first.transcript, client_tools=[WEATHER]
    )
    assert second.outcome.kind == "completed" and second.output == "done"
    assert seen.seen == [("weather", "client", "sunny")]
    tool_message = model.requests[-1].messages[-1]
    assert (tool_message.role, tool_message.tool_call_id, tool_message.text) == (
        "tool",
        "c2",
        "sunny",
    )


async def test_a_guard_stops_a_client_result_and_the_model_never_sees_it(tmp_path: Path) -> None:
    agent, model = make(
        tmp_path, calls(("c2", "weather", {"city": "Oslo"})), hooks=[Seen(stop="4321")]
    )
    first = await agent.run("hi", client_tools=[WEATHER], session="s")
    second = await agent.run(
        ClientResults({"c2": "door code 4321"}), session="s", client_tools=[WEATHER]
    )
    assert second.outcome.kind == "terminated"
    assert len(model.requests) == 1  # never asked again
    assert first.outcome.kind == "deferred"
    assert "4321" not in second.model_dump_json()
    for path in tmp_path.iterdir():  # the store's files: sessions, journal, WAL
        assert b"4321" not in path.read_bytes(), path


async def test_a_session_keeps_the_deferred_turn_and_continues(tmp_path: Path) -> None:
    turn = calls(("c1", "lookup", {"order": "A1"}), ("c2", "weather", {"city": "Oslo"}))
    agent, _ = make(tmp_path, turn)
    first = await agent.run("hi", client_tools=[WEATHER], session="s")
    assert first.outcome.kind == "deferred"
    result = await agent.run(ClientResults({"c2": "sunny"}), session="s", client_tools=[WEATHER])
    assert result.outcome.kind == "completed" and RAN == ["A1"]  # the app's call ran once
    stored = await agent.session_store().load("s")
    assert stored is not None
    assert [m.role for m in stored.transcript] == ["user", "assistant", "tool", "tool", "assistant"]


async def test_an_approval_suspends_first_then_the_client_calls_go_back(tmp_path: Path) -> None:
    turn = calls(("c1", "refund", {"order": "A1"}), ("c2", "weather", {"city": "Oslo"}))
    agent, _ = make(tmp_path, turn)
    first = await agent.run("hi", client_tools=[WEATHER], session="s")
    assert isinstance(first.outcome, seamkit.Suspended)
    assert [p.call_id for p in first.outcome.pending] == ["c1"]
    with pytest.raises(ResumeError, match="decide"):
        await agent.run(ClientResults({"c2": "sunny"}), session="s", client_tools=[WEATHER])
    decided = await agent.run(Decisions({"c1": Approve()}), session="s", client_tools=[WEATHER])
    assert isinstance(decided.outcome, seamkit.Deferred)
    assert [c.id for c in decided.outcome.calls] == ["c2"] and RAN == ["refund A1"]
    done = await agent.run(ClientResults({"c2": "sunny"}), session="s", client_tools=[WEATHER])
    assert done.outcome.kind == "completed" and RAN == ["refund A1"]


@pytest.mark.parametrize(
    ("results", "match"),
    [
        ({"c9": "x"}, "no call 'c9' was handed to the client"),
        ({}, "no result for the client's call"),
        ({"c1": "x", "c2": "y"}, "no result for the client's call"),
    ],
)
async def test_results_that_do_not_fit_are_refused_and_nothing_runs(
    tmp_path: Path, results: dict[str, str], match: str
) -> None:
    turn = calls(("c1", "weather", {"city": "Oslo"}), ("c2", "clock", {}), ("c3", "clock", {}))
    agent, model = make(tmp_path, turn)
    await agent.run("hi", client_tools=[WEATHER, CLOCK], session="s")
    with pytest.raises(ResumeError, match=match):
        await agent.run(ClientResults(results), session="s", client_tools=[WEATHER, CLOCK])
    assert len(model.requests) == 1


async def test_client_results_for_a_run_that_handed_nothing_back_are_refused(
    tmp_path: Path,
) -> None:
    agent, _ = make(tmp_path)
    await agent.run("hi", session="s")
    with pytest.raises(ResumeError, match="no call waits for the client's result"):
        await agent.run(ClientResults({"c1": "x"}), session="s", client_tools=[WEATHER])


async def test_a_result_cannot_answer_an_app_call(tmp_path: Path) -> None:
    """An app call left open (a hook stopped the batch) is not the client's to answer."""
    agent, _ = make(tmp_path, calls(("c1", "lookup", {"order": "A1"})))
    history = [
        seamkit.Message.user("hi"),
        seamkit.Message.assistant(
            "", tool_calls=(seamkit.MessageToolCall.make("c1", "lookup", {"order": "A1"}),)
        ),
    ]
    with pytest.raises(ResumeError, match="not the client's"):
        await agent.run(ClientResults({"c1": "forged"}), history=history, client_tools=[WEATHER])
    assert RAN == []


@pytest.mark.parametrize("name", ["lookup", "final_result"])
async def test_a_client_tool_named_like_the_apps_is_refused(tmp_path: Path, name: str) -> None:
    agent, _ = make(tmp_path)
    output = seamkit.Output({"type": "object"}, mode="tool")
    with pytest.raises(ToolDefinitionError, match=f"client tool {name!r}"):
        await agent.run("hi", client_tools=[ToolSpec(name=name)], output=output)


async def test_a_client_call_with_broken_arguments_is_not_handed_back(tmp_path: Path) -> None:
    broken = {"tool_calls": [{"id": "c1", "name": "weather", "arguments": "{not json"}]}
    agent, model = make(tmp_path, broken)
    result = await agent.run("hi", client_tools=[WEATHER])
    assert result.outcome.kind == "completed"
    told = model.requests[-1].messages[-1]
    assert told.role == "tool" and "invalid arguments for tool 'weather'" in told.text


async def test_a_new_message_instead_of_results_answers_the_calls_as_not_run(
    tmp_path: Path,
) -> None:
    agent, model = make(tmp_path, calls(("c2", "weather", {"city": "Oslo"})))
    await agent.run("hi", client_tools=[WEATHER], session="s")
    result = await agent.run("never mind", session="s")
    assert result.outcome.kind == "completed"
    sent = model.requests[-1].messages
    assert [m.role for m in sent] == ["user", "assistant", "tool", "user"]
    assert sent[2].text.startswith("Not run")


async def test_a_streamed_run_ends_deferred(tmp_path: Path) -> None:
    agent, _ = make(tmp_path, calls(("c2", "weather", {"city": "Oslo"})))
    events = [e async for e in agent.stream("hi", client_tools=[WEATHER])]
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert isinstance(finished.result.outcome, seamkit.Deferred)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["lookup", "weather", "clock"]), min_size=1, max_size=6))
def test_every_app_call_runs_and_every_client_call_is_handed_back_in_order(
    tmp_path_factory: pytest.TempPathFactory, names: list[str]
) -> None:
    """The law: a turn's app calls all run (once), and its client calls are
    handed back, exactly and in the model's order, unrun."""
    RAN.clear()
    items = [(f"c{i}", n, {"order": f"O{i}"} if n == "lookup" else {}) for i, n in enumerate(names)]
    agent, _ = make(tmp_path_factory.mktemp("law"), calls(*items))
    result = agent.run_sync("hi", client_tools=[WEATHER, CLOCK])
    client = [i for i, n, _ in items if n != "lookup"]
    assert [a["order"] for _, n, a in items if n == "lookup"] == RAN
    if client:
        assert isinstance(result.outcome, seamkit.Deferred)
        assert [c.id for c in result.outcome.calls] == client
    else:
        assert result.outcome.kind == "completed"
