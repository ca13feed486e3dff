"""Services for the NATS transport tests: one that answers with the trace id
of the context it runs in (what the transport's headers carried), and one
that sleeps and notes what happened to its calls."""

from __future__ import annotations

import asyncio
from typing import Any

from opentelemetry import baggage, trace
from seamkit_tool_service import DynamicToolService


class TraceEcho(DynamicToolService):
    """Answers with the trace id (32 hex digits) of the span context current
    while it runs, its baggage, and the user and arguments it got.

    No TracerProvider is needed here: the context extracted from the request
    headers holds a non-recording span whose trace id is the caller's; with
    no trace context the id is all zeros."""

    id = "trace-echo"

    async def invoke(self, user: str, config: dict[str, Any], arguments: dict[str, Any]) -> Any:
        trace_id = trace.get_current_span().get_span_context().trace_id
        return {
            "trace_id": format(trace_id, "032x"),
            "baggage": dict(baggage.get_all()),
            "user": user,
            "arguments": arguments,
        }


class Sleeper(DynamicToolService):
    """Sleeps ``seconds`` and answers ``slept``; for tests that serve it in
    their own process, it notes in ``events`` what happened to it: a call
    ``started`` or ``cancelled``, and ``teardown``. ``fail_setup`` makes
    `setup` raise."""

    id = "sleeper"

    def __init__(self, *, fail_setup: bool = False) -> None:
        self.events: list[str] = []
        self.fail_setup = fail_setup

    async def setup(self) -> None:
        if self.fail_setup:
            raise RuntimeError("setup failed on purpose")

    async def invoke(self, user: str, config: dict[str, Any], arguments: dict[str, Any]) -> Any:
        self.events.append("started")
        try:
            await asyncio.sleep(float(arguments.get("seconds", 0)))
        except asyncio.CancelledError:
            self.events.append("cancelled")
            raise
        return "slept"

    async def teardown(self) -> None:
        self.events.append("teardown")
