"""A run that does its I/O elsewhere (`seamkit.plugins.RunExecutor`, with
`Agent.remote()` on the other side) gives what the run in process gives.

- Laws: every event's arguments and every flow it accepts cross as JSON and
  come back equal (`HookCall`, `HookAnswer`); a hook context's state does too
  (`ContextState`).
- The examples (tools and toolsets, tool-call injection, secrets and guards,
  an approval and its decision, a declared output) run through an executor
  whose every call crosses JSON to the agent's `Remote` and leave the same
  transcript, output and state as in process.
- What cannot cross (a non-JSON scratchpad value) is a clear error.
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import seamkit
from hypothesis import given, settings, strategies as st
from seamkit.flow import Dispatched
from seamkit.plugins import Asked, ContextState, HookAnswer, HookCall, TextStop
from seamkit.testing import strategies as S

from tests.elsewhere import (  # the fixture is autouse: every test here forgets
    forget_the_apps_modules as forget_the_apps_modules,
    normal,
)

EXAMPLES = Path(__file__).parents[2] / "docs" / "examples"


def _ctx(**state: Any) -> seamkit.HookContext:
    ctx = seamkit.HookContext(action_context=seamkit.ActionContext({"user": "alice"}))
    for key, value in state.items():
        ctx.scratchpad.insert(key, value)
    return ctx


@pytest.mark.parametrize("event", list(seamkit.HookEvent))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_every_events_arguments_cross_as_json(
    event: seamkit.HookEvent, data: st.DataObject
) -> None:
    args = data.draw(S.event_arguments(event))
    call = HookCall.of(event, _ctx(), args)
    back = HookCall.model_validate_json(call.model_dump_json())
    assert back.arguments() == tuple(args)


@pytest.mark.parametrize("event", list(seamkit.HookEvent))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_every_flow_an_event_accepts_crosses_as_json(
    event: seamkit.HookEvent, data: st.DataObject
) -> None:
    flow = data.draw(S.flows(event)) or seamkit.flow.Continue()
    hook = data.draw(st.none() | st.text(max_size=8))
    ctx = _ctx()
    answer = HookAnswer.of(Dispatched(flow, hook), ctx)
    back = HookAnswer.model_validate_json(answer.model_dump_json())
    assert back.dispatched(ctx, event) == Dispatched(flow, hook)


@settings(max_examples=60, deadline=None)
@given(
    pad=st.dictionaries(st.text(max_size=6), S.json_values, max_size=4),
    state=st.dictionaries(st.text(max_size=6), S.json_values, max_size=4),
)
def test_a_contexts_state_crosses_and_lands_whole(
    pad: dict[str, Any], state: dict[str, Any]
) -> None:

    there = _ctx(stale="gone")
    there.session_state.update(state)
    for key, value in pad.items():
        there.scratchpad.insert(key, value)
    there.scratchpad.remove("stale")
    there.diagnostics.append(seamkit.Diagnostic(code="note", message="hi"))
    sent = ContextState.model_validate_json(ContextState.of(there).model_dump_json())
    here = _ctx(stale="gone")
    sent.apply_to(here)
    assert here.scratchpad.snapshot() == pad
    assert here.session_state == state
    assert here.diagnostics == there.diagnostics


def test_a_value_that_cannot_cross_is_a_clear_error() -> None:
    ctx = _ctx(client=object())
    with pytest.raises(seamkit.SeamkitError, match="the scratchpad holds a value that is not JSON"):
        ContextState.of(ctx)


class Loopback:
    """A run executor whose every call crosses JSON to the agent's `Remote`
    in this process: what a durable runner does, without the runner."""

    def __init__(self, agent: seamkit.Agent) -> None:
        self.agent = agent
        self.crossed: list[str] = []

    def now(self) -> datetime:
        return self.agent.clock()

    def new_id(self) -> str:
        return uuid.uuid4().hex

    def live(self) -> bool:
        return True

    async def refresh(self) -> tuple[seamkit.Diagnostic, ...]:
        return await self.agent.refresh_tools()

    async def ask(
        self, request: seamkit.ModelRequest, ctx: seamkit.HookContext
    ) -> seamkit.ModelTurn | TextStop:
        self.crossed.append("ask")
        state = _crossed(ContextState, ContextState.of(ctx))
        sent = _crossed(seamkit.ModelRequest, request)
        asked = await self.agent.remote().ask(sent, state)
        return _crossed(Asked, asked).answer(ctx)

    async def invoke(
        self,
        tool: seamkit.Tool,
        call: seamkit.ToolCall,
        ctx: seamkit.HookContext,
        info: seamkit.CallInfo | None,
        on_chunk: Callable[[str], None] | None,
    ) -> seamkit.ToolResult:
        self.crossed.append(f"invoke {call.name}")
        state = _crossed(ContextState, ContextState.of(ctx))
        result = await self.agent.remote().invoke(_crossed(seamkit.ToolCall, call), state, info)
        return _crossed(seamkit.ToolResult, result)

    async def dispatch(
        self, event: seamkit.HookEvent, ctx: seamkit.HookContext, args: tuple[object, ...]
    ) -> Dispatched:
        self.crossed.append(f"hooks {event.value}")
        call = _crossed(HookCall, HookCall.of(event, ctx, args))
        answer = await self.agent.remote().dispatch(call)
        return _crossed(HookAnswer, answer).dispatched(ctx, event)


def _crossed(kind: Any, value: Any) -> Any:
    return kind.model_validate_json(value.model_dump_json())


def _seen(result: seamkit.RunResult, folder: Path | None = None) -> object:
    seen = json.dumps(result.model_dump(mode="json", exclude={"usage"}))
    return normal(json.loads(seen.replace(str(folder), "<app>") if folder else seen))


async def _both(
    tmp_path: Path, example: str, steps: Callable[[seamkit.Agent, bool], Any]
) -> tuple[object, object, Loopback]:
    """``steps`` on two copies of ``example`` (``NAME`` or ``NAME/APP`` for
    ``APP.yaml``): in process, then through a `Loopback`."""
    name, _, app = example.partition("/")
    results = []
    loopback: Loopback | None = None
    for where in ("here", "there"):
        folder = tmp_path / where
        shutil.copytree(EXAMPLES / name, folder)
        agent = await seamkit.Agent.load(folder / f"{app or 'app'}.yaml")
        if where == "there":
            loopback = Loopback(agent)
        results.append(await steps(agent, where == "there"))
    assert loopback is not None
    return results[0], results[1], loopback


@pytest.mark.parametrize(
    ("example", "message", "context"),
    [
        ("hello", "What is 2 + 3?", {}),
        ("guarded", "What does the status page say?", {}),
        ("memory", "I like green tea", {"user": "alice"}),
        ("extract/app-native", "Ada Lovelace, born 1815, mathematician", {}),
        ("extract/app-tool", "Ada Lovelace, born 1815, mathematician", {}),
    ],
)
async def test_an_example_through_the_remote_gives_what_it_gives_in_process(
    tmp_path: Path, example: str, message: str, context: dict[str, str]
) -> None:
    async def steps(agent: seamkit.Agent, remote: bool) -> object:
        folder = tmp_path / ("there" if remote else "here")
        ctx = {**context, "memory_dir": str(folder)}
        executor = Loopback(agent) if remote else None
        store = seamkit.SQLiteSessionStore(folder / "sessions.sqlite")
        outs = []
        for _ in range(2):
            result = await agent.run(
                message, context=ctx, session="s", store=store, executor=executor
            )
            outs.append(_seen(result, folder))
        stored = await store.load("s")
        assert stored is not None
        return outs, normal(dict(stored.state)), executor.crossed if executor else []

    here, there, _ = await _both(tmp_path, example, steps)
    assert there[:2] == here[:2]  # type: ignore[index]
    assert any(c.startswith("invoke") or c == "ask" for c in there[2])  # type: ignore[index]


async def test_an_approval_and_its_decision_through_the_remote(tmp_path: Path) -> None:
    async def steps(agent: seamkit.Agent, remote: bool) -> object:
        executor = Loopback(agent) if remote else None
        first = await agent.run("Refund order A1", session="r", executor=executor)
        assert isinstance(first.outcome, seamkit.Suspended)
        call_id = first.outcome.pending[0].call_id
        decided = seamkit.Decisions({call_id: seamkit.Approve()})
        second = await agent.run(decided, session="r", executor=executor)
        return _seen(first), _seen(second)

    here, there, _ = await _both(tmp_path, "refund", steps)
    assert there == here
