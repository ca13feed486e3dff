"""A pending call keeps its decision across a save: decisions that come one
call at a time (the crash harness found that the second one could not be
made, because the first, stored in the session's state, did not load back)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
import seamkit
from seamkit import Approve, Decisions, Edit, PendingCall, Reject, Suspended
from seamkit.testing import ScriptedModel


@pytest.mark.parametrize(
    "decision", [Approve(digest="d" * 24, by="cli"), Reject("no"), Edit({"amount": 1}), None]
)
def test_a_pending_call_reads_back_with_its_decision(
    decision: Approve | Reject | Edit | None,
) -> None:
    pending = PendingCall(
        call_id="c1",
        tool="refund",
        arguments={"amount": 5},
        reason="refund needs approval",
        digest="d" * 24,
        requested_at=datetime(2026, 1, 1, tzinfo=UTC),
        decision=decision,
    )
    assert PendingCall.model_validate(pending.model_dump(mode="json")) == pending


@seamkit.tool(approval=True)
def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


async def test_decisions_one_call_at_a_time_reach_the_end(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            {
                "tool_calls": [
                    {"name": "refund", "arguments": {"order": "A"}},
                    {"name": "refund", "arguments": {"order": "B"}},
                ]
            },
            {"text": "done"},
        ]
    )
    agent = seamkit.Agent(model, tools=[refund], plugin_hooks=False)
    store = str(tmp_path / "s.sqlite")
    first = await agent.run("refund A and B", session="s", store=store)
    assert isinstance(first.outcome, Suspended)
    a, b = first.outcome.pending
    second = await agent.run(
        Decisions({a.call_id: Approve(digest=a.digest)}), session="s", store=store
    )
    assert isinstance(second.outcome, Suspended)
    assert [p.decision is not None for p in second.outcome.pending] == [True, False]
    last = await agent.run(Decisions({b.call_id: Reject("not B")}), session="s", store=store)
    assert last.outcome.kind == "completed" and last.output == "done"
    results = [m.text for m in last.transcript if m.role == "tool"]
    assert results == ["refunded A", "not B"]
