"""The run executor: where the drive loop reaches the world (spike, issue 32).

A run asks its executor for the time, for fresh ids, for model turns and for
tool bodies; everything else the loop does is pure. `DirectExecutor`, the
default, does what the loop always did: the agent's clock, ``uuid4``, the
model's ``complete`` and the tool's ``invoke``, in this process. A durable
runner (Temporal) hands in one that takes time and ids from its workflow and
runs model turns and tool bodies as activities, so that the rest of the loop
(hooks, validation, approvals, commits) replays deterministically.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Protocol

from .._context import ActionContext, CallInfo
from .._secret import Redactor
from .._tool import Tool
from .._types import Model, ModelRequest, ModelTurn, ToolCall, ToolResult

__all__ = ["DirectExecutor", "RunExecutor"]


class RunExecutor(Protocol):
    """What a run reads the clock, makes ids, asks the model and runs tool
    bodies through."""

    def now(self) -> datetime:
        """The run's current time (``ctx.now()``)."""
        ...

    def new_id(self) -> str:
        """A fresh id of 32 hex digits (run ids, call ids, idempotency keys)."""
        ...

    async def complete(self, model: Model, request: ModelRequest) -> ModelTurn:
        """One whole (not streamed) model turn for ``request``."""
        ...

    async def invoke(
        self,
        tool: Tool,
        values: dict[str, Any],
        call: ToolCall,
        context: ActionContext,
        *,
        secrets: Sequence[str],
        agent: object,
        redactor: Redactor,
        on_chunk: Callable[[str], None] | None,
        call_info: CallInfo | None,
    ) -> ToolResult:
        """Run ``tool``'s body on ``values`` (validated from ``call.arguments``)."""
        ...


class DirectExecutor:
    """The in-process executor: what a run did before executors existed."""

    __slots__ = ("clock",)

    def __init__(self, clock: Callable[[], datetime]) -> None:
        self.clock = clock

    def now(self) -> datetime:
        return self.clock()

    def new_id(self) -> str:
        return uuid.uuid4().hex

    async def complete(self, model: Model, request: ModelRequest) -> ModelTurn:
        return await model.complete(request)

    async def invoke(
        self,
        tool: Tool,
        values: dict[str, Any],
        call: ToolCall,
        context: ActionContext,
        *,
        secrets: Sequence[str],
        agent: object,
        redactor: Redactor,
        on_chunk: Callable[[str], None] | None,
        call_info: CallInfo | None,
    ) -> ToolResult:
        return await tool.invoke(
            values,
            context,
            call_id=call.id,
            secrets=secrets,
            agent=agent,
            redactor=redactor,
            on_chunk=on_chunk,
            call_info=call_info,
        )
