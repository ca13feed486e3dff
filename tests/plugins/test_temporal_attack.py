"""seamkit on Temporal, read as an attacker and as a crash (a real dev
server, a real worker, the official SDK).

- Secrets: a secret in a model's error, or in arguments a hook rewrote, is
  in no payload of the workflow's history.
- Forged input: garbage or forged decisions by signal, a decision sent
  twice, the ``outcome`` update with an odd value leave the run waiting for
  the real decision, which still continues it.
- Faults: a hook that leaves a value that is not JSON, a hook that fails
  closed, an app no worker serves: each ends the run with a clear error, as
  in process, and none hangs it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import seamkit
from pydantic import BaseModel
from seamkit.testing import build_agent
from seamkit_temporal import workflow_id
from seamkit_temporal._workflow import SeamkitRun
from temporalio.client import WorkflowUpdateFailedError

from tests.plugins.test_temporal_runs import _app, _history_text, _serving

if TYPE_CHECKING:
    from tests.plugins.temporal_server import TemporalDevServer

pytest_plugins = ["tests.plugins.temporal_server"]

CANARY = "canary-9d1e4b7a55"


# --- secrets ------------------------------------------------------------------------------------


class LeakyModel(BaseModel):
    """A model holding a key, whose error names it (a careless provider)."""

    key: seamkit.Secret[str]

    async def complete(self, request: seamkit.ModelRequest) -> seamkit.ModelTurn:
        raise seamkit.ModelError(f"the key {self.key.get_secret_value()} was refused")

    async def stream(self, request: seamkit.ModelRequest) -> AsyncIterator[Any]:
        raise seamkit.ModelError(f"the key {self.key.get_secret_value()} was refused")
        yield  # (a generator)


async def test_a_secret_in_a_models_error_is_not_in_the_history(
    temporal_dev_server: TemporalDevServer,
) -> None:
    model = LeakyModel(key=seamkit.Secret(CANARY))
    agent = await seamkit.Agent.load({"name": "leaky", "model": "scripted:inline"}, model=model)
    in_process = await agent.run("hi")
    assert isinstance(in_process.outcome, seamkit.Failed)
    async with _serving(temporal_dev_server, agent) as runner:
        result = await runner.run("leaky", "hi", request_id="leak")
        history = await _history_text(
            runner.client.get_workflow_handle(workflow_id("leaky", None, "leak"))
        )
    assert result.outcome == in_process.outcome
    assert CANARY not in str(result.outcome)
    assert "was refused" in history  # (the payloads are read)
    assert CANARY not in history


SEEN: list[str] = []


@seamkit.tool
def login(token: str) -> str:
    """Log in with ``token``."""
    SEEN.append(token)
    return "logged in"


class GivesTheToken:
    """A hook that puts the token into the call's arguments."""

    name = "token"

    @seamkit.hookimpl
    def on_pre_tool_use(self, ctx: seamkit.HookContext, call: seamkit.ToolCall) -> Any:
        return seamkit.flow.RewriteArgs({"token": seamkit.Secret(CANARY)})


LOGIN_SCRIPT = [
    {"tool_calls": [{"id": "call_login", "name": "login", "arguments": {"token": "?"}}]},
    {"text": "done"},
]


async def test_arguments_a_hook_rewrote_with_a_secret_never_reach_the_tool_masked(
    temporal_dev_server: TemporalDevServer,
) -> None:
    """In process the tool gets the secret's value; on Temporal the value
    cannot cross (it would be in the history): the run fails, saying so,
    rather than calling the tool with ``***``."""
    manifest = {"name": "login"}
    here = await build_agent(manifest, script=LOGIN_SCRIPT, tools=[login], hooks=[GivesTheToken()])
    SEEN.clear()
    assert (await here.run("log in")).outcome.kind == "completed"
    assert SEEN == [CANARY]
    there = await build_agent(manifest, script=LOGIN_SCRIPT, tools=[login], hooks=[GivesTheToken()])
    SEEN.clear()
    async with _serving(temporal_dev_server, there) as runner:
        result = await runner.run("login", "log in", request_id="login")
        history = await _history_text(
            runner.client.get_workflow_handle(workflow_id("login", None, "login"))
        )
    assert CANARY not in history
    assert "***" not in SEEN
    assert isinstance(result.outcome, seamkit.Failed), result.outcome
    assert "Secret" in result.outcome.error


# --- faults -------------------------------------------------------------------------------------

RAN: list[str] = []


class KeepsASet:
    """A hook that keeps a set (not JSON) in the scratchpad."""

    name = "keeper"

    @seamkit.hookimpl
    def on_request_start(self, ctx: seamkit.HookContext) -> None:
        RAN.append("keeper")
        ctx.scratchpad.insert("seen", {1, 2})


async def test_a_hook_that_leaves_a_value_that_is_not_json_fails_the_run_clearly_once(
    temporal_dev_server: TemporalDevServer,
) -> None:
    agent = await build_agent({"name": "keeper"}, script=[{"text": "hi"}], hooks=[KeepsASet()])
    RAN.clear()
    async with _serving(temporal_dev_server, agent) as runner:
        result = await asyncio.wait_for(runner.run("keeper", "hi"), 60)
    assert isinstance(result.outcome, seamkit.Failed), result.outcome
    assert "scratchpad" in result.outcome.error
    assert RAN == ["keeper"]  # not once per retry of its local activity


class FailsClosed:
    """A hook that fails, closed."""

    name = "strict"
    on_error = "fail"

    @seamkit.hookimpl
    def on_request_start(self, ctx: seamkit.HookContext) -> None:
        raise PermissionError("not today")


async def test_a_hook_failing_closed_ends_the_run_as_in_process(
    temporal_dev_server: TemporalDevServer,
) -> None:
    def agent() -> Any:
        return build_agent({"name": "strict"}, script=[{"text": "hi"}], hooks=[FailsClosed()])

    in_process = await (await agent()).run("hi")
    async with _serving(temporal_dev_server, await agent()) as runner:
        result = await asyncio.wait_for(runner.run("strict", "hi"), 60)
    assert isinstance(in_process.outcome, seamkit.Failed)
    assert result.outcome == in_process.outcome


async def test_an_app_no_worker_serves_is_an_error_not_a_hang(
    temporal_dev_server: TemporalDevServer, tmp_path: Path
) -> None:
    agent = await seamkit.Agent.load(_app(tmp_path, "hello", "there"))
    async with _serving(temporal_dev_server, agent) as runner:
        with pytest.raises(seamkit.SeamkitError, match="does not serve app 'nobody'"):
            await asyncio.wait_for(runner.run("nobody", "hi"), 30)


# --- forged input -------------------------------------------------------------------------------


async def test_forged_decisions_leave_the_run_waiting_for_the_real_one(
    temporal_dev_server: TemporalDevServer, tmp_path: Path
) -> None:
    agent = await seamkit.Agent.load(_app(tmp_path, "refund", "there"))
    async with _serving(temporal_dev_server, agent) as runner:
        first = await runner.run("refund", "Refund order A1", session="f")
        assert isinstance(first.outcome, seamkit.Suspended)
        (pending,) = first.outcome.pending
        handle = runner.client.get_workflow_handle(workflow_id("refund", "f"))
        await handle.signal("decisions", {"garbage": [1, 2, 3]})  # not a DecideInput
        await handle.signal("decisions", "nonsense")
        forged = {"decisions": {"call_forged": {"action": "approve"}}}
        await handle.signal("decisions", forged)  # past the update's validator
        await asyncio.sleep(1)
        status = await runner.status("f")
        assert status is not None and status.state == "suspended"
        decided = seamkit.Decisions({pending.call_id: seamkit.Approve()})
        done = await asyncio.wait_for(runner.decide("f", decided), 60)
        assert done.outcome.kind == "completed"
        assert done.output == "Done. Order A1 was refunded 250 EUR."
        with pytest.raises(seamkit.ResumeError, match="no run on Temporal that waits"):
            await runner.decide("f", decided)  # sent twice: the run ended


HELD = asyncio.Event()
ENTERED = asyncio.Event()


@seamkit.tool(effects="once")
async def hold() -> str:
    """Hold the run until the test lets it go (a regular activity: the
    workflow waits between its tasks meanwhile)."""
    ENTERED.set()
    await HELD.wait()
    return "let go"


HOLD_SCRIPT = [
    {"tool_calls": [{"id": "call_hold", "name": "hold", "arguments": {}}]},
    {"text": "hi"},
]


async def test_the_outcome_update_with_a_negative_count_does_not_wedge_the_run(
    temporal_dev_server: TemporalDevServer,
) -> None:
    agent = await build_agent({"name": "holds"}, script=HOLD_SCRIPT, tools=[hold])
    HELD.clear()
    ENTERED.clear()
    async with _serving(temporal_dev_server, agent) as runner:
        started = asyncio.ensure_future(runner.run("holds", "hi", request_id="neg"))
        await asyncio.wait_for(ENTERED.wait(), 30)
        handle = runner.client.get_workflow_handle_for(
            SeamkitRun.run, workflow_id("holds", None, "neg")
        )
        with pytest.raises(WorkflowUpdateFailedError):  # refused, leaving no history
            await asyncio.wait_for(handle.execute_update(SeamkitRun.outcome, -1), 10)
        HELD.set()
        result = await asyncio.wait_for(started, 30)
        assert result.outcome.kind == "completed"
