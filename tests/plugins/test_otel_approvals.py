"""seamkit-otel on runs that wait for a person or continue after a crash:
span events for a call that began to wait, each decision (and who made
it), a call in doubt and a journal replay; the counters; no secret in any
of them. Spans go to the in-memory providers of `otel_helpers`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import seamkit
from opentelemetry.sdk.trace import ReadableSpan
from seamkit.testing import ScriptedModel

from tests.core.crashed import SESSION, crashed_session
from tests.plugins.otel_helpers import Exported, exported

__all__ = ["exported"]

CANARY = "canary-otel-apr-41d9e2"


@seamkit.tool
def refund(order: str, amount: int) -> str:
    """Refund ``amount`` on ``order``."""
    return f"refunded {amount} on {order}"


@seamkit.tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: 250 EUR"


class Asker:
    """Asks for approval of every refund, with a reason over its arguments."""

    @seamkit.hookimpl
    def on_pre_tool_use(
        self, ctx: seamkit.HookContext, call: seamkit.ToolCall
    ) -> seamkit.flow.PreToolUseFlow:
        if call.name != "refund":
            return None
        arguments = call.arguments
        return seamkit.flow.RequireApproval(
            f"Refund of {arguments.get('amount')} on {arguments.get('order')}"
        )


def _agent(tmp_path: Path, order: str = "A1") -> seamkit.Agent:
    first = {
        "tool_calls": [
            {"id": "l1", "name": "lookup", "arguments": json.dumps({"order": order})},
            {
                "id": "r1",
                "name": "refund",
                "arguments": json.dumps({"order": order, "amount": 250}),
            },
        ]
    }
    return seamkit.Agent(
        ScriptedModel([first, {"text": "Done."}]),
        name="shop",
        tools=[refund, lookup],
        hooks=[Asker()],
        store=str(tmp_path / "s.sqlite"),
    )


def _suspend_and_decide(
    agent: seamkit.Agent, decide: Any, context: dict[str, Any] | None = None
) -> tuple[seamkit.RunResult, seamkit.RunResult]:
    async def go() -> tuple[seamkit.RunResult, seamkit.RunResult]:
        first = await agent.run("refund it", session="s", context=context)
        assert isinstance(first.outcome, seamkit.Suspended)
        (pending,) = first.outcome.pending
        decisions = seamkit.Decisions({pending.call_id: decide(pending)})
        return first, await agent.run(decisions, session="s", context=context)

    return asyncio.run(go())


def _events(span: ReadableSpan, name: str) -> list[dict[str, Any]]:
    return [dict(e.attributes or {}) for e in span.events if e.name == name]


def _tools(exported: Exported) -> dict[str, ReadableSpan]:
    return {
        str((t.attributes or {})["gen_ai.tool.call.id"]): t for t in exported.named("execute_tool")
    }


def test_a_suspension_and_an_approval_are_span_events_and_the_call_says_who_let_it_run(
    exported: Exported, tmp_path: Path
) -> None:
    first, second = _suspend_and_decide(
        _agent(tmp_path), lambda p: seamkit.Approve(digest=p.digest, by="key-1")
    )
    assert isinstance(first.outcome, seamkit.Suspended) and second.outcome.kind == "completed"
    (pending,) = first.outcome.pending
    suspended, resumed = exported.named("invoke_agent")
    attributes = dict(suspended.attributes or {})
    assert attributes["seamkit.run.outcome"] == "suspended"
    assert attributes["seamkit.run.pending"] == 1
    assert "seamkit.run.pending" not in dict(resumed.attributes or {})
    (asked,) = _events(suspended, "seamkit.approval.requested")
    assert asked == {
        "gen_ai.tool.name": "refund",
        "gen_ai.tool.call.id": "r1",
        "seamkit.approval.digest": pending.digest,
        "seamkit.approval.reason": "Refund of 250 on A1",
        "seamkit.approval.hook": "Asker",
        "seamkit.turn": 1,
    }
    assert not _events(resumed, "seamkit.approval.requested")
    (decided,) = _events(resumed, "seamkit.approval.decided")
    assert decided == {
        "gen_ai.tool.name": "refund",
        "gen_ai.tool.call.id": "r1",
        "seamkit.approval.digest": pending.digest,
        "seamkit.approval.action": "approve",
        "seamkit.approval.by": "key-1",
        "seamkit.turn": 1,
    }
    tools = _tools(exported)
    assert set(tools) == {"l1", "r1"}  # the lookup ran in the first run, the refund once
    refund_span = dict(tools["r1"].attributes or {})
    assert refund_span["seamkit.approval.action"] == "approve"
    assert refund_span["seamkit.approval.by"] == "key-1"
    assert tools["r1"].parent is not None
    assert tools["r1"].parent.span_id == resumed.context.span_id
    assert "seamkit.approval.by" not in dict(tools["l1"].attributes or {})
    points = exported.metric_points()
    (requested,) = points["seamkit.approval.requests"]
    assert requested["value"] == 1 and requested["attributes"] == {"gen_ai.tool.name": "refund"}
    (decisions,) = points["seamkit.approval.decisions"]
    assert decisions["value"] == 1
    assert decisions["attributes"] == {
        "gen_ai.tool.name": "refund",
        "seamkit.approval.action": "approve",
    }


def test_a_rejection_says_why_and_by_whom_and_nothing_runs(
    exported: Exported, tmp_path: Path
) -> None:
    _suspend_and_decide(_agent(tmp_path), lambda p: seamkit.Reject("too much", by="cli"))
    _, resumed = exported.named("invoke_agent")
    (decided,) = _events(resumed, "seamkit.approval.decided")
    assert decided["seamkit.approval.action"] == "reject"
    assert decided["seamkit.approval.by"] == "cli"
    assert decided["seamkit.approval.reason"] == "too much"
    assert set(_tools(exported)) == {"l1"}


def test_a_decision_without_who_has_no_by(exported: Exported, tmp_path: Path) -> None:
    _suspend_and_decide(_agent(tmp_path), lambda p: seamkit.Edit({"order": "A1", "amount": 20}))
    _, resumed = exported.named("invoke_agent")
    (decided,) = _events(resumed, "seamkit.approval.decided")
    assert decided["seamkit.approval.action"] == "edit" and "seamkit.approval.by" not in decided
    assert "gen_ai.tool.call.arguments" not in decided  # content is off
    assert dict(_tools(exported)["r1"].attributes or {})["seamkit.approval.action"] == "edit"


def test_a_journal_replay_and_a_call_in_doubt_are_span_events_and_counted(
    exported: Exported, tmp_path: Path
) -> None:
    crashed = crashed_session(tmp_path)

    async def go() -> seamkit.RunResult:
        async with await seamkit.Agent.load(crashed.app, store=crashed.store) as agent:
            return await agent.run(None, session=SESSION)

    assert asyncio.run(go()).outcome.kind == "completed"
    (run,) = exported.named("invoke_agent")
    (replayed,) = _events(run, "seamkit.journal.replayed")
    assert replayed == {"seamkit.journal.turns": 1, "seamkit.journal.results": 1}
    (doubt,) = _events(run, "seamkit.tool.in_doubt")
    assert doubt == {"gen_ai.tool.name": "charge", "gen_ai.tool.call.id": "k1", "seamkit.turn": 1}
    assert not exported.named("execute_tool")  # nothing ran again
    (counted,) = exported.metric_points()["seamkit.tool.in_doubt"]
    assert counted["value"] == 1 and counted["attributes"] == {"gen_ai.tool.name": "charge"}


def test_no_secret_shows_in_what_approvals_record(
    exported: Exported, tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    context = {"api_key": seamkit.Secret(CANARY)}
    edited = {"order": f"A1 {CANARY}", "amount": 20}
    _suspend_and_decide(
        _agent(tmp_path, order=f"A1-{CANARY}"),
        lambda p: seamkit.Edit(edited, by=f"key {CANARY}"),
        context,
    )
    _, resumed = exported.named("invoke_agent")
    (decided,) = _events(resumed, "seamkit.approval.decided")
    assert decided["seamkit.approval.by"] == "key ***"
    assert json.loads(str(decided["gen_ai.tool.call.arguments"])) == {
        "order": "A1 ***",
        "amount": 20,
    }
    everything = exported.everything()
    assert "seamkit.approval.requested" in everything and "A1-***" in everything
    assert CANARY not in everything
