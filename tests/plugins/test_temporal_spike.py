"""Spike (issue 32): seamkit's drive loop runs inside a Temporal workflow on
the dev server, the model turns and tool bodies as activities and a hook in
workflow code, with the same result as the run in process; the recorded
history replays (``temporalio.worker.Replayer``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
import seamkit
from seamkit import flow as F
from seamkit.testing import ScriptedModel
from seamkit_temporal._spike import (
    SPIKE_PASSTHROUGH,
    model_turn,
    register_agent,
    tool_body,
)
from seamkit_temporal._spike_workflow import SpikeInput, SpikeRun
from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer, Worker, WorkflowReplayResult
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

if TYPE_CHECKING:
    from tests.plugins.temporal_server import TemporalDevServer

pytest_plugins = ["tests.plugins.temporal_server"]

APP = "spike"
SCRIPT: list[dict[str, Any]] = [
    {"tool_calls": [{"id": "c1", "name": "add", "arguments": {"a": 2, "b": 3}}]},
    {"text": "done"},
]

ran_in: list[str] = []
"""Where the tool body and the hook ran: ``workflow`` or ``elsewhere``."""


def _where() -> str:
    return "workflow" if workflow.in_workflow() else "elsewhere"


def add(a: int, b: int) -> int:
    """Add two integers."""
    ran_in.append(f"tool:{_where()}")
    return a + b


class Checked:
    """A hook without I/O: marks every tool result (so its effect shows in
    the transcript) and says where it ran."""

    name = "checked"

    @seamkit.hookimpl
    def on_post_tool_use(self, ctx: seamkit.HookContext, call: Any, result: Any) -> Any:
        ran_in.append(f"hook:{_where()}")
        return F.RewriteResult(f"{result.content} (checked at turn {ctx.turn})")


class Skipping:
    """A hook without I/O that skips every tool call."""

    name = "skipping"

    @seamkit.hookimpl
    def on_pre_tool_use(self, ctx: seamkit.HookContext, call: Any) -> Any:
        return F.Skip("not today")


def _agent(script: list[dict[str, Any]] = SCRIPT, hooks: tuple[object, ...] = ()) -> seamkit.Agent:
    return seamkit.Agent(
        model=ScriptedModel(script, each_run=True),
        tools=[add],
        hooks=[*hooks, Checked()],
        plugin_hooks=False,
    )


def _runner() -> SandboxedWorkflowRunner:
    restrictions = SandboxRestrictions.default.with_passthrough_modules(*SPIKE_PASSTHROUGH)
    return SandboxedWorkflowRunner(restrictions=restrictions)


@pytest.fixture
def registered() -> Iterator[None]:
    register_agent(APP, _agent())
    ran_in.clear()
    yield
    ran_in.clear()


async def _run_in_workflow(client: Client) -> tuple[seamkit.RunResult, WorkflowHistory]:
    queue = f"spike-{uuid.uuid4().hex}"
    async with Worker(
        client,
        task_queue=queue,
        workflows=[SpikeRun],
        activities=[model_turn, tool_body],
        workflow_runner=_runner(),
    ):
        handle = await client.start_workflow(
            SpikeRun.run,
            SpikeInput(app=APP, text="add 2 and 3"),
            id=f"spike-{uuid.uuid4().hex}",
            task_queue=queue,
        )
        result = await handle.result()
        history = await handle.fetch_history()
    return result, history


async def _replay(history: WorkflowHistory) -> WorkflowReplayResult:
    replayer = Replayer(
        workflows=[SpikeRun], data_converter=pydantic_data_converter, workflow_runner=_runner()
    )
    return await replayer.replay_workflow(history, raise_on_replay_failure=False)


def _activities(history: WorkflowHistory) -> list[str]:
    return [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]


@pytest.mark.usefixtures("registered")
async def test_the_drive_loop_runs_in_a_workflow_and_replays(
    temporal_dev_server: TemporalDevServer,
) -> None:
    client = await Client.connect(
        temporal_dev_server.address, data_converter=pydantic_data_converter
    )
    result, history = await _run_in_workflow(client)

    assert isinstance(result.outcome, seamkit.Completed), result.outcome
    assert result.output == "done"
    assert [m.role for m in result.transcript] == ["user", "assistant", "tool", "assistant"]
    assert result.transcript[2].text == "5 (checked at turn 1)"
    # the model turns and the tool body are activities; the hook ran in the workflow
    assert _activities(history) == [
        "seamkit.spike.model",
        "seamkit.spike.tool",
        "seamkit.spike.model",
    ]
    assert ran_in == ["tool:elsewhere", "hook:workflow"]

    # the same run in process gives the same result
    in_process = await _agent().run("add 2 and 3", state={})
    assert in_process.transcript == result.transcript
    assert in_process.output == result.output

    # the recorded history replays: same commands, no activity runs again
    ran_in.clear()
    replayed = await _replay(history)
    assert replayed.replay_failure is None
    assert ran_in == ["hook:workflow"]

    # the model's answers are history: another script replays the same
    register_agent(APP, _agent([{"text": "never asked"}]))
    assert (await _replay(history)).replay_failure is None
    # but kernel-side behaviour is not: a hook that skips the tool fails the replay
    register_agent(APP, _agent(hooks=(Skipping(),)))
    failure = (await _replay(history)).replay_failure
    assert failure is not None
    assert "Nondeterminism" in str(failure) or "nondeterminism" in str(failure).lower(), failure
