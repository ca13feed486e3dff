"""Calls that wait for a person, as the server tells its clients of them:
which apps may suspend a run at all (`may_ask`), and the text and JSON an
answer carries (`notice`, `described`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import seamkit

__all__ = ["described", "may_ask", "notice", "waiting"]


def may_ask(agent: seamkit.Agent) -> bool:
    """Whether a run of ``agent`` could stop to wait for approval: a tool
    whose own rule is not ``never``, or any hook at ``on_pre_tool_use``
    (any of them may answer `seamkit.flow.RequireApproval`)."""
    if agent.hooks_at("on_pre_tool_use"):
        return True
    return any(tool.approval.mode != "never" for tool in agent.tools.values())


def waiting(pending: Sequence[seamkit.PendingCall]) -> list[seamkit.PendingCall]:
    """The calls of ``pending`` no decision has been given for yet."""
    return [p for p in pending if p.decision is None]


def notice(pending: Sequence[seamkit.PendingCall], redact: seamkit.Redactor) -> str:
    """The assistant text of an answer whose run waits: each call's tool,
    call id and reason, one a line."""
    lines = [f"- {p.tool} (call {p.call_id}): {p.reason}" for p in pending]
    return redact("Waiting for approval:\n" + "\n".join(lines))


def described(
    pending: Sequence[seamkit.PendingCall], redact: seamkit.Redactor
) -> list[dict[str, object]]:
    """The ``seamkit.pending`` list of an answer: each call's id, tool,
    arguments (as the model sent them, after any rewrite), reason, the hook
    that asked (``null``: the tool's own rule), the digest an approval must
    name, and when it was asked. Every string is masked by ``redact``."""
    return [
        {
            "call_id": p.call_id,
            "tool": p.tool,
            "arguments": _masked(p.arguments, redact),
            "reason": redact(p.reason),
            "hook": p.hook,
            "digest": p.digest,
            "requested_at": p.requested_at.isoformat(),
        }
        for p in pending
    ]


def _masked(value: Any, redact: seamkit.Redactor) -> Any:
    """``value`` (JSON) with every string masked."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {str(k): _masked(v, redact) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_masked(v, redact) for v in value]
    return value
