"""Services for the NATS transport tests: one that answers with the trace id
of the context it runs in (what the transport's headers carried)."""

from __future__ import annotations

from typing import Any

from opentelemetry import trace
from seamkit_tool_service import DynamicToolService


class TraceEcho(DynamicToolService):
    """Answers with the trace id (32 hex digits) of the span context current
    while it runs, and the user and arguments it got.

    No TracerProvider is needed here: the context extracted from the request
    headers holds a non-recording span whose trace id is the caller's; with
    no trace context the id is all zeros."""

    id = "trace-echo"

    async def invoke(self, user: str, config: dict[str, Any], arguments: dict[str, Any]) -> Any:
        trace_id = trace.get_current_span().get_span_context().trace_id
        return {"trace_id": format(trace_id, "032x"), "user": user, "arguments": arguments}
