"""Spike (issue 32): seamkit's unchanged drive loop as a Temporal workflow.
Not the final design.

`SpikeRun` runs ``Agent.run`` of the worker's registered agent on the
workflow's event loop with a `WorkflowExecutor`: the clock is
``workflow.now()``, ids come from ``workflow.uuid4()``, a model turn is the
``seamkit.spike.model`` activity and a tool body the ``seamkit.spike.tool``
activity (a local one for ``effects="none"``, a single attempt for
``once``). Hooks, validation and commits run in the workflow, as kernel code.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    import seamkit
    from pydantic import BaseModel

    from ._spike import ModelInput, ToolInput, agent_for, model_turn, tool_body

__all__ = ["SpikeInput", "SpikeRun", "WorkflowExecutor"]

_TIMEOUT = timedelta(seconds=30)


class SpikeInput(BaseModel):
    """A spike run: the registered agent's key and the user's text."""

    app: str
    text: str


class WorkflowExecutor:
    """A run executor for workflow code (it matches the kernel's
    ``RunExecutor`` protocol by shape: the protocol is not public yet)."""

    def __init__(self, app: str) -> None:
        self.app = app
        self.context_id = ""

    def now(self) -> datetime:
        return workflow.now()

    def new_id(self) -> str:
        return workflow.uuid4().hex

    async def complete(
        self, model: seamkit.Model, request: seamkit.ModelRequest
    ) -> seamkit.ModelTurn:
        return await workflow.execute_activity(
            model_turn,
            ModelInput(app=self.app, request=request),
            start_to_close_timeout=_TIMEOUT,
        )

    async def invoke(
        self,
        tool: seamkit.Tool,
        values: dict[str, Any],
        call: seamkit.ToolCall,
        context: seamkit.ActionContext,
        *,
        secrets: Sequence[str],
        agent: object,
        redactor: seamkit.Redactor,
        on_chunk: Callable[[str], None] | None,
        call_info: seamkit.CallInfo | None,
    ) -> seamkit.ToolResult:
        given = ToolInput(
            app=self.app,
            tool=tool.name,
            call_id=call.id,
            arguments=dict(call.arguments),
            idempotency_key=self.new_id() if call_info is None else call_info.idempotency_key,
            context_id=context.context_id,
        )
        if tool.effects == "none":
            return await workflow.execute_local_activity(
                tool_body, given, start_to_close_timeout=_TIMEOUT
            )
        return await workflow.execute_activity(
            tool_body,
            given,
            start_to_close_timeout=_TIMEOUT,
            retry_policy=RetryPolicy(maximum_attempts=1) if tool.effects == "once" else None,
        )


@workflow.defn(name="seamkit.spike.run")
class SpikeRun:
    """One seamkit run, its loop in the workflow."""

    @workflow.run
    async def run(self, given: SpikeInput) -> seamkit.RunResult:
        agent = agent_for(given.app)
        context = seamkit.ActionContext(context_id=workflow.uuid4().hex)
        return await agent.run(
            given.text, context=context, state={}, executor=WorkflowExecutor(given.app)
        )
