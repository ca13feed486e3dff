"""Spike (issue 32): the worker side of running seamkit's drive loop in a
Temporal workflow. Not the final design.

This module is *passed through* the workflow sandbox (`SPIKE_PASSTHROUGH`):
it holds the process registry of agents (`register_agent`; the sandbox would
give a re-imported module an empty one), the activities' inputs, and the two
activities, which run on the worker with the registered agent:

- ``seamkit.spike.model``: one model turn (`ModelInput` → `seamkit.ModelTurn`),
  the agent's model's ``complete``, exactly what a run in process asks;
- ``seamkit.spike.tool``: one tool body (`ToolInput` → `seamkit.ToolResult`),
  its arguments validated again on the worker, with the idempotency key the
  workflow drew (every retry of the activity sees the same key).

What the sandbox needs (temporalio 1.35, measured by the spike):
``seamkit`` and ``seamkit_temporal`` passed through (`SPIKE_PASSTHROUGH`;
pydantic and pydantic_core are passed through by the SDK's defaults). Without
it the sandbox re-imports seamkit and fails at its first module-level lock
(``Cannot access threading.Lock.__call__``, ``seamkit/_loader.py``), warm-up
imports or not; and a re-imported registry is empty (``no agent ... is
registered``). With it, no warm-up is needed: a lazy seamkit name touched for
the first time inside a workflow loads as passed through too.
"""

from __future__ import annotations

import seamkit
from pydantic import BaseModel, JsonValue
from temporalio import activity

__all__ = [
    "SPIKE_PASSTHROUGH",
    "ModelInput",
    "ToolInput",
    "agent_for",
    "model_turn",
    "register_agent",
    "tool_body",
]

SPIKE_PASSTHROUGH = ("seamkit", "seamkit_temporal")
"""Modules the workflow sandbox must pass through (not re-import)."""

_AGENTS: dict[str, seamkit.Agent] = {}


def register_agent(key: str, agent: seamkit.Agent) -> None:
    """Make ``agent`` the one workflows and activities of ``key`` run."""
    _AGENTS[key] = agent


def agent_for(key: str) -> seamkit.Agent:
    """The agent registered as ``key`` (a `KeyError` naming it otherwise)."""
    try:
        return _AGENTS[key]
    except KeyError:
        raise KeyError(f"no agent {key!r} is registered on this worker") from None


class ModelInput(BaseModel):
    """What the model activity is given."""

    app: str
    request: seamkit.ModelRequest


class ToolInput(BaseModel):
    """What the tool activity is given."""

    app: str
    tool: str
    call_id: str
    arguments: dict[str, JsonValue]
    idempotency_key: str
    context_id: str


@activity.defn(name="seamkit.spike.model")
async def model_turn(given: ModelInput) -> seamkit.ModelTurn:
    """One model turn, asked as a run in process asks it."""
    agent = agent_for(given.app)
    return await agent.model.complete(given.request)


@activity.defn(name="seamkit.spike.tool")
async def tool_body(given: ToolInput) -> seamkit.ToolResult:
    """One tool body on the worker's agent."""
    agent = agent_for(given.app)
    tool = agent.tools[given.tool]
    values = tool.validate(given.arguments)
    info = seamkit.CallInfo(
        given.call_id, given.idempotency_key, activity.info().attempt, given.tool
    )
    return await tool.invoke(
        values,
        seamkit.ActionContext(context_id=given.context_id),
        call_id=given.call_id,
        agent=agent,
        redactor=agent.redactor,
        call_info=info,
    )
