"""The run executor: where a run reaches the world when it runs elsewhere.

A run reads the clock, makes ids, refreshes its tool sources, asks the model,
runs tool bodies and dispatches hooks; everything else the loop does is pure.
In process (no executor, the default) it does all of that itself. A durable
runner (``seamkit-temporal``) hands `Agent.run` a `RunExecutor` that takes
the time and ids from its workflow and runs the rest as activities on a
worker (with `seamkit.plugins.Remote`), so that the loop itself, its
validation, approvals and commits, replays deterministically.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .._context import CallInfo, HookContext
    from .._events import HookEvent
    from .._tool import Tool
    from .._types import Diagnostic, ModelRequest, ModelTurn, ToolCall, ToolResult
    from ..flow import Dispatched

__all__ = ["CutOff", "RunExecutor", "TextStop"]


@dataclass(frozen=True, slots=True)
class TextStop:
    """A text guard (``on_text_delta``) ended the run during a model turn:
    its ``reason``, the ``hook``, and the ``released`` text the stream showed."""

    reason: str
    hook: str | None
    released: str


class CutOff(Exception):
    """Raised by `RunExecutor.invoke` when a tool body started and was cut
    off before it ended (its worker died), and the tool is not run again (a
    ``once`` tool): the run reports the call in doubt, as after a crash in
    process (the model gets the ``InDoubt`` result)."""

    def __init__(self, tool: str, why: str) -> None:
        super().__init__(f"{tool}: {why}")
        self.tool = tool
        self.why = why


class RunExecutor(Protocol):
    """Where a run reads the clock, makes ids and does what may do I/O.

    One per run (`Agent.run(..., executor=...)`). Each method is called from
    the run's own task; whatever it does elsewhere, it returns what the run
    would have got in process.
    """

    def now(self) -> datetime:
        """The run's current time (``ctx.now()``, approval expiry, sealing)."""
        ...

    def new_id(self) -> str:
        """A fresh id of 32 hex digits (run ids, call ids, idempotency keys)."""
        ...

    def live(self) -> bool:
        """Whether the run happens now (``False`` while a durable runner
        replays what happened before): observers see only live events."""
        ...

    async def refresh(self) -> tuple[Diagnostic, ...]:
        """Refresh the agent's tool sources (`Agent.refresh_tools`) where I/O
        is allowed; the diagnostics it returned."""
        ...

    async def ask(self, request: ModelRequest, ctx: HookContext) -> ModelTurn | TextStop:
        """One model turn for ``request``, its text through the run's guards
        (`seamkit.plugins.Remote.ask` does it on a worker); the hooks' changes to
        ``ctx`` applied to it."""
        ...

    async def invoke(
        self,
        tool: Tool,
        call: ToolCall,
        ctx: HookContext,
        info: CallInfo | None,
        on_chunk: Callable[[str], None] | None,
    ) -> ToolResult:
        """Run ``tool``'s body for ``call`` (its arguments valid), with the
        call's idempotency key in ``info`` (``None``: a tool without effects);
        `CutOff` when it started and may have acted but will not end."""
        ...

    async def dispatch(
        self, event: HookEvent, ctx: HookContext, args: tuple[object, ...]
    ) -> Dispatched:
        """Run ``event``'s hooks on ``args`` (`seamkit.plugins.Remote.dispatch`
        does it on a worker); their changes to ``ctx`` applied to it."""
        ...
