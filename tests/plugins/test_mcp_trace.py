"""The run's W3C trace context reaches MCP servers: each ``tools/call``
carries ``traceparent`` (and ``tracestate``, when the context has one) in
its ``_meta``, beside the run's user, so that one trace spans the agent and
the servers it calls. Without a current span, no trace field is sent.

The server is `tiny_server` (``mcp_servers.py``), whose tool ``meta`` says
back the ``_meta`` it received; the span comes from a local SDK
`TracerProvider` (the global one can be set only once per process).

The plugin writes none of this itself: the MCP SDK injects the current
trace context (its own client span's, a child of the run's span once a
tracer provider is set, else the run's span itself) into every request's
``_meta``. These tests hold that guarantee in place, so that a change of
SDK that drops it fails here.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import seamkit
from opentelemetry.context import Context
from opentelemetry.propagate import extract
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import SpanContext
from seamkit.testing import ScriptedModel

from tests.plugins.mcp_servers import new_tag, tagged, tiny_entry
from tests.plugins.test_mcp import manifest, results, turns

TRACER = TracerProvider().get_tracer("tests.mcp-trace")
CALLER = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
"""A caller's ``traceparent``, for a span that continues a trace from elsewhere."""


def meta_received(
    user: str | None, *, traced: bool = False, parent: Context | None = None
) -> tuple[Any, SpanContext | None]:
    """The ``_meta`` the server got for one call of ``t_meta`` in a run
    with ``user``, and the context of the span the run ran in (with
    ``traced``: a span whose parent is in ``parent``, else a root span)."""
    tag = new_tag()
    model = ScriptedModel(turns([("t_meta", {})], "done"))

    async def go() -> tuple[seamkit.RunResult, SpanContext | None]:
        async with await seamkit.Agent.load(
            manifest(tiny_entry(tag, toolset="t")), model=model
        ) as agent:
            context = {"user": user} if user is not None else {}
            if not traced:
                return await agent.run("hi", context=context), None
            with TRACER.start_as_current_span("caller", context=parent) as current:
                return await agent.run("hi", context=context), current.get_span_context()

    result, context = asyncio.run(go())
    assert result.outcome.kind == "completed" and result.output == "done", result.outcome
    assert tagged(tag) == []
    return json.loads(results(result)["c1"]), context


def traceparent(context: SpanContext) -> str:
    """The W3C ``traceparent`` of ``context``."""
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"


# --- a run, end to end -----------------------------------------------------------------


@pytest.mark.parametrize("user", ["ann", None])
def test_a_call_in_a_span_carries_its_trace(user: str | None) -> None:
    meta, span = meta_received(user, traced=True)
    assert span is not None and span.is_valid
    expected = {"traceparent"} | ({"seamkit/user"} if user is not None else set())
    assert set(meta) == expected  # no tracestate: the span has none
    version, trace_id, parent_id, _ = meta["traceparent"].split("-")
    assert (version, trace_id) == ("00", f"{span.trace_id:032x}")
    assert len(parent_id) == 16 and int(parent_id, 16) != 0
    assert meta.get("seamkit/user") == user


def test_a_span_continuing_a_callers_trace_passes_its_tracestate_on() -> None:
    caller = extract({"traceparent": CALLER, "tracestate": "k=v"})
    meta, span = meta_received("ann", traced=True, parent=caller)
    assert span is not None
    _, trace_id, parent_id, _ = meta["traceparent"].split("-")
    assert trace_id == CALLER.split("-")[1]  # the caller's trace
    assert parent_id != CALLER.split("-")[2]  # under the run's span, not the caller's
    assert meta["tracestate"] == "k=v" and meta["seamkit/user"] == "ann"


def test_without_a_current_span_no_trace_context_is_sent() -> None:
    assert meta_received("ann") == ({"seamkit/user": "ann"}, None)
    assert meta_received(None) == (None, None)  # no _meta at all
