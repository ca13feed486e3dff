"""Approvals: asking (a hook's RequireApproval, a tool's own rule), suspended
runs, and the decisions that continue them, with a session and without."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import seamkit
from seamkit import Agent, Approve, CallInfo, Decisions, Edit, Reject, ResumeError, flow
from seamkit.testing import ScriptedModel

EFFECTS: list[tuple[str, dict[str, Any]]] = []


@seamkit.tool(
    approval={"when": {"properties": {"amount": {"minimum": 100}}, "required": ["amount"]}}
)
def refund(order: str, amount: int) -> str:
    """Refund an order."""
    EFFECTS.append(("refund", {"order": order, "amount": amount}))
    return f"refunded {amount} on {order}"


@seamkit.tool(effects="none")
def lookup(order: str) -> str:
    """Look an order up."""
    EFFECTS.append(("lookup", {"order": order}))
    return f"order {order}: 250 EUR"


@seamkit.tool(approval=True)
def delete(path: str) -> str:
    """Delete a file."""
    EFFECTS.append(("delete", {"path": path}))
    return f"deleted {path}"


@pytest.fixture(autouse=True)
def _clean() -> None:
    EFFECTS.clear()


def calls(*items: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"id": i, "name": n, "arguments": a} for i, n, a in items]}


def agent(tmp_path: Path, *turns: dict[str, Any], hooks: Any = (), **settings: Any) -> Agent:
    return Agent(
        ScriptedModel([*turns, {"text": "done"}]),
        tools=[refund, lookup, delete],
        hooks=list(hooks),
        settings=settings,
        plugin_hooks=False,
        store=tmp_path / "s.sqlite",
    )


def run(agent: Agent, input: Any, **options: Any) -> seamkit.RunResult:
    return asyncio.run(agent.run(input, **options))


# --- asking ------------------------------------------------------------------------


def test_a_tool_rule_suspends_the_call_and_the_batch_other_calls_run(tmp_path: Path) -> None:
    a = agent(
        tmp_path,
        calls(("c1", "lookup", {"order": "A1"}), ("c2", "refund", {"order": "A1", "amount": 250})),
    )
    result = run(a, "refund A1", session="s")
    assert isinstance(result.outcome, seamkit.Suspended)
    (pending,) = result.outcome.pending
    assert (pending.call_id, pending.tool, pending.hook) == ("c2", "refund", None)
    assert pending.arguments == {"order": "A1", "amount": 250}
    assert pending.reason == "refund needs approval" and len(pending.digest) == 24
    assert EFFECTS == [("lookup", {"order": "A1"})]  # the call that needs none ran
    assert result.output is None
    assert [m.role for m in result.transcript] == ["user", "assistant", "tool"]


def test_the_rule_is_checked_on_validated_arguments_and_below_it_nothing_waits(
    tmp_path: Path,
) -> None:
    a = agent(tmp_path, calls(("c1", "refund", {"order": "A1", "amount": 20})))
    result = run(a, "refund A1", session="s")
    assert result.outcome.kind == "completed"
    assert EFFECTS == [("refund", {"order": "A1", "amount": 20})]


def test_a_rule_that_cannot_be_decided_fails_closed() -> None:
    rule = seamkit.Tool(
        lambda x: x, name="t", approval={"when": {"$ref": "#/definitions/missing"}}
    ).approval
    assert rule.needed({"x": 1}) is True


def test_a_bad_when_schema_is_a_tool_definition_error() -> None:
    with pytest.raises(seamkit.ToolDefinitionError, match=r"approval\.when is not valid"):
        seamkit.tool(approval={"when": {"type": 12}})(lambda x: x)
    with pytest.raises(seamkit.ToolDefinitionError, match="approval must be"):
        seamkit.tool(approval="sometimes")(lambda x: x)  # type: ignore[call-overload]


class Asker:
    name = "asker"

    @seamkit.hookimpl
    def on_pre_tool_use(self, ctx: Any, call: seamkit.ToolCall) -> flow.PreToolUseFlow:
        if call.name == "lookup":
            return flow.RequireApproval(f"look up {call.arguments['order']}?")
        return None


def test_a_hook_asks_with_its_reason_and_name(tmp_path: Path) -> None:
    a = agent(tmp_path, calls(("c1", "lookup", {"order": "B2"})), hooks=[Asker()])
    result = run(a, "look", session="s")
    assert isinstance(result.outcome, seamkit.Suspended)
    (pending,) = result.outcome.pending
    assert (pending.reason, pending.hook) == ("look up B2?", "asker")
    assert EFFECTS == []


class Denier:
    name = "denier"

    @seamkit.hookimpl
    def on_pre_tool_use(self, ctx: Any, call: seamkit.ToolCall) -> flow.PreToolUseFlow:
        return flow.Skip("not allowed")


def test_a_later_skip_wins_over_asking(tmp_path: Path) -> None:
    a = agent(tmp_path, calls(("c1", "lookup", {"order": "B2"})), hooks=[Asker(), Denier()])
    result = run(a, "look", session="s")
    assert result.outcome.kind == "completed"
    assert result.transcript[2].text == "not allowed"


# --- deciding ----------------------------------------------------------------------


def suspended(tmp_path: Path, hooks: Any = (), **settings: Any) -> tuple[Agent, seamkit.RunResult]:
    a = agent(
        tmp_path,
        calls(
            ("c1", "refund", {"order": "A1", "amount": 250}),
            ("c2", "delete", {"path": "/tmp/x"}),
        ),
        hooks=hooks,
        **settings,
    )
    result = run(a, "go", session="s")
    assert isinstance(result.outcome, seamkit.Suspended)
    return a, result


def test_approve_runs_reject_answers_and_the_loop_goes_on(tmp_path: Path) -> None:
    a, first = suspended(tmp_path)
    assert isinstance(first.outcome, seamkit.Suspended)
    c1 = first.outcome.pending[0]
    result = run(
        a, Decisions({"c1": Approve(digest=c1.digest), "c2": Reject("no deleting")}), session="s"
    )
    assert result.outcome.kind == "completed" and result.output == "done"
    assert EFFECTS == [("refund", {"order": "A1", "amount": 250})]
    tools = [m.text for m in result.transcript if m.role == "tool"]
    assert tools == ["refunded 250 on A1", "no deleting"]


def test_edit_runs_the_edited_arguments_once_validated(tmp_path: Path) -> None:
    a, _ = suspended(tmp_path)
    with pytest.raises(ResumeError, match="do not fit 'refund'"):
        run(a, Decisions({"c1": Edit({"order": "A1", "amount": "lots"})}), session="s")
    result = run(
        a,
        Decisions({"c1": Edit({"order": "A1", "amount": 99})}, rest=Reject("later")),
        session="s",
    )
    assert result.outcome.kind == "completed"
    assert EFFECTS == [("refund", {"order": "A1", "amount": 99})]


@pytest.mark.parametrize(
    ("decisions", "match"),
    [
        ({"nope": Approve()}, "no pending call 'nope'"),
        ({"c1": Approve(digest="0" * 24)}, "does not match"),
    ],
)
def test_a_decision_that_does_not_fit_is_refused_and_nothing_runs(
    tmp_path: Path, decisions: dict[str, Any], match: str
) -> None:
    a, _ = suspended(tmp_path)
    with pytest.raises(ResumeError, match=match):
        run(a, Decisions(decisions), session="s")
    assert EFFECTS == []
    still = run(a, None, session="s")
    assert isinstance(still.outcome, seamkit.Suspended)
    assert all(p.decision is None for p in still.outcome.pending)


def test_decisions_one_at_a_time_keep_the_run_suspended_until_all_are_in(tmp_path: Path) -> None:
    a, _ = suspended(tmp_path)
    partial = run(a, Decisions({"c2": Reject("no")}), session="s")
    assert isinstance(partial.outcome, seamkit.Suspended)
    assert [p.decision.action if p.decision else None for p in partial.outcome.pending] == [
        None,
        "reject",
    ]
    assert EFFECTS == []
    with pytest.raises(ResumeError, match="already decided"):
        run(a, Decisions({"c2": Approve()}), session="s")
    done = run(a, Decisions({"c1": Approve()}), session="s")
    assert done.outcome.kind == "completed"
    assert EFFECTS == [("refund", {"order": "A1", "amount": 250})]


def test_a_new_message_is_refused_while_calls_wait(tmp_path: Path) -> None:
    a, _ = suspended(tmp_path)
    with pytest.raises(ResumeError, match="waiting for a decision: c1 \\(refund\\), c2"):
        run(a, "something else", session="s")
    assert EFFECTS == []


def test_nothing_to_continue_is_an_error(tmp_path: Path) -> None:
    a = agent(tmp_path)
    with pytest.raises(ResumeError, match="nothing to continue"):
        run(a, None, session="fresh")
    with pytest.raises(ResumeError, match="no call waiting"):
        run(a, Decisions({"x": Approve()}), session="fresh")


class Rewriter:
    """Rewrites the amount of every refund it sees to ``amounts[n]`` (the nth call)."""

    name = "rewriter"

    def __init__(self, *amounts: int) -> None:
        self.amounts = list(amounts)

    @seamkit.hookimpl
    def on_pre_tool_use(self, ctx: Any, call: seamkit.ToolCall) -> flow.PreToolUseFlow:
        if call.name != "refund" or not self.amounts:
            return None
        return flow.RewriteArgs({**call.arguments, "amount": self.amounts.pop(0)})


def test_a_rewrite_that_changes_what_was_approved_asks_again(tmp_path: Path) -> None:
    a, first = suspended(tmp_path, hooks=[Rewriter(300, 900)])
    assert isinstance(first.outcome, seamkit.Suspended)
    c1 = first.outcome.pending[0]
    assert c1.arguments["amount"] == 300  # shown after the rewrite
    again = run(a, Decisions({"c1": Approve(digest=c1.digest), "c2": Reject("no")}), session="s")
    assert isinstance(again.outcome, seamkit.Suspended)  # the hook now asks for 900
    (c1_again,) = again.outcome.pending
    assert c1_again.arguments["amount"] == 900 and c1_again.decision is None
    assert EFFECTS == []  # nothing nobody approved ran


def test_a_rewrite_that_keeps_the_digest_runs_what_was_approved(tmp_path: Path) -> None:
    a, first = suspended(tmp_path, hooks=[Rewriter(300, 300)])
    assert isinstance(first.outcome, seamkit.Suspended)
    result = run(a, Decisions({"c1": Approve()}, rest=Reject("no")), session="s")
    assert result.outcome.kind == "completed"
    assert EFFECTS == [("refund", {"order": "A1", "amount": 300})]


def test_pending_calls_expire(tmp_path: Path) -> None:
    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    a = Agent(
        ScriptedModel([calls(("c1", "delete", {"path": "/x"})), {"text": "done"}]),
        tools=[delete],
        settings={"approval_expires_seconds": 60},
        clock=lambda: now[0],
        plugin_hooks=False,
        store=tmp_path / "s.sqlite",
    )
    run(a, "go", session="s")
    now[0] += timedelta(seconds=61)
    result = run(a, None, session="s")
    assert result.outcome.kind == "completed"
    assert [m.text for m in result.transcript if m.role == "tool"] == ["approval expired"]
    assert EFFECTS == []


def test_the_pending_calls_are_hidden_from_hooks_and_kept_in_the_store(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []

    class Peek:
        name = "peek"

        @seamkit.hookimpl
        def on_completion(self, ctx: Any, result: Any) -> None:
            seen.append(dict(ctx.session_state))

    suspended(tmp_path, hooks=[Peek()])
    assert seen == [{}]
    stored = asyncio.run(seamkit.SQLiteSessionStore(tmp_path / "s.sqlite").load("s"))
    assert stored is not None
    assert [p["call_id"] for p in stored.state["seamkit.pending"]] == ["c1", "c2"]


def test_a_streamed_run_suspends_and_continues_like_a_run(tmp_path: Path) -> None:
    a = agent(tmp_path, calls(("c1", "delete", {"path": "/x"})))

    async def go() -> list[Any]:
        events = [e async for e in a.stream("go", session="s")]
        events += [e async for e in a.stream(Decisions({"c1": Approve()}), session="s")]
        return events

    finished = [e.result for e in asyncio.run(go()) if isinstance(e, seamkit.stream.RunFinished)]
    assert [r.outcome.kind for r in finished] == ["suspended", "completed"]
    assert EFFECTS == [("delete", {"path": "/x"})]


def test_observers_see_the_suspension_and_the_decision(tmp_path: Path) -> None:
    events: list[object] = []

    class Watch:
        name = "watch"

        @seamkit.hookimpl
        def on_run_event(self, ctx: Any, event: object) -> None:
            events.append(event)

    a, _ = suspended(tmp_path, hooks=[Watch()])
    run(a, Decisions({"c1": Approve()}, rest=Reject("no"), by="alice"), session="s")
    kinds = [type(e).__name__ for e in events if type(e).__name__.startswith("Call")]
    assert kinds == ["CallSuspended", "CallSuspended", "CallDecided", "CallDecided"]
    decided = [e for e in events if isinstance(e, seamkit.stream.CallDecided)]
    assert {e.pending.decision.by for e in decided if e.pending.decision} == {"alice"}


# --- without a session ---------------------------------------------------------------

KEY = {"state_key": "k-" + "9" * 30}


def alone(*turns: dict[str, Any], **settings: Any) -> Agent:
    return Agent(
        ScriptedModel([*turns, {"text": "done"}]),
        tools=[refund, lookup, delete],
        settings=settings,
        plugin_hooks=False,
    )


def test_a_sessionless_run_returns_a_signed_state_that_continues_it() -> None:
    a = alone(calls(("c1", "delete", {"path": "/x"})), **KEY)
    first = run(a, "go", context={"user": "ann"})
    assert isinstance(first.suspended, str)
    token = json.loads(json.dumps(first.suspended))  # JSON-safe
    result = run(a, Decisions({"c1": Approve()}), suspended=token, context={"user": "ann"})
    assert result.outcome.kind == "completed" and EFFECTS == [("delete", {"path": "/x"})]


def test_a_sessionless_state_is_refused_when_forged_expired_or_under_another_context() -> None:
    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    a = Agent(
        ScriptedModel([calls(("c1", "delete", {"path": "/x"})), {"text": "done"}]),
        tools=[delete],
        settings={**KEY, "approval_expires_seconds": 60},
        clock=lambda: now[0],
        plugin_hooks=False,
    )
    token = run(a, "go", context={"user": "ann"}).suspended
    assert token is not None
    body, _, mac = token.rpartition(".")
    forged = body[:-2] + ("A" if body[-2] != "A" else "B") + body[-1] + "." + mac
    decisions = Decisions({"c1": Approve()})
    with pytest.raises(ResumeError, match="not signed"):
        run(a, decisions, suspended=forged, context={"user": "ann"})
    with pytest.raises(ResumeError, match="another context"):
        run(a, decisions, suspended=token, context={"user": "mallory"})
    other = Agent(
        ScriptedModel([]), tools=[delete], settings={"state_key": "x"}, plugin_hooks=False
    )
    with pytest.raises(ResumeError, match="not signed"):
        run(other, decisions, suspended=token, context={"user": "ann"})
    now[0] += timedelta(seconds=61)
    with pytest.raises(ResumeError, match="expired"):
        run(a, decisions, suspended=token, context={"user": "ann"})
    assert EFFECTS == []


def test_without_a_state_key_a_sessionless_suspension_says_it_cannot_be_resumed() -> None:
    a = alone(calls(("c1", "delete", {"path": "/x"})))
    result = run(a, "go")
    assert result.outcome.kind == "suspended" and result.suspended is None
    assert [d.code for d in result.diagnostics] == ["suspended_without_state_key"]
    with pytest.raises(ResumeError, match="state_key"):
        run(a, Decisions({"c1": Approve()}), suspended="x.y")


def test_a_secret_state_key_never_shows(tmp_path: Path) -> None:
    canary = "sk-canary-7f3a9b2c41"
    a = alone(calls(("c1", "delete", {"path": "/x"})), state_key=canary)
    result = run(a, "go", context={"token": seamkit.Secret(canary)})
    assert canary not in result.model_dump_json()
    assert canary not in repr(a.settings) and canary not in json.dumps(
        a.settings.model_json_schema()
    )


# --- CallInfo ----------------------------------------------------------------------------


def test_call_info_is_injected_and_hidden_from_the_schema(tmp_path: Path) -> None:
    got: list[CallInfo] = []

    @seamkit.tool
    def charge(amount: int, info: CallInfo) -> str:
        got.append(info)
        return "ok"

    assert list(charge.parameters["properties"]) == ["amount"]
    a = Agent(
        ScriptedModel([calls(("c9", "charge", {"amount": 5})), {"text": "done"}]),
        tools=[charge],
        plugin_hooks=False,
    )
    run(a, "go")
    (info,) = got
    assert (info.call_id, info.attempt, info.tool) == ("c9", 1, "charge")
    assert len(info.idempotency_key) == 32


def test_a_schema_tool_with_three_parameters_receives_the_call_info() -> None:
    got: list[CallInfo] = []

    async def call(arguments: dict[str, Any], ctx: Any, info: CallInfo) -> str:
        got.append(info)
        return "ok"

    tool = seamkit.Tool.from_schema("svc", "", {"type": "object"}, call, effects="idempotent")
    a = Agent(
        ScriptedModel([calls(("c1", "svc", {})), {"text": "done"}]),
        tools=[tool],
        plugin_hooks=False,
    )
    run(a, "go")
    assert [i.call_id for i in got] == ["c1"] and tool.effects == "idempotent"


def test_effects_must_be_one_of_the_three() -> None:
    with pytest.raises(seamkit.ToolDefinitionError, match="effects must be one of"):
        seamkit.tool(effects="twice")(lambda x: x)  # type: ignore[call-overload]


def test_no_input_without_a_session_or_a_state_is_an_error() -> None:
    with pytest.raises(ResumeError, match="nothing to continue"):
        run(alone(), None)


class SecretWriter:
    """Puts a Secret into every pay call's arguments (a token a hook adds)."""

    name = "secret-writer"

    @seamkit.hookimpl
    def on_pre_tool_use(self, ctx: Any, call: seamkit.ToolCall) -> flow.PreToolUseFlow:
        return flow.RewriteArgs({**call.arguments, "token": seamkit.Secret(CANARY)})


CANARY = "sk-approval-canary-3k9"


def test_a_secret_a_hook_writes_never_reaches_the_pending_call_the_journal_or_the_store(
    tmp_path: Path,
) -> None:
    # (A tool that returns a secret on purpose carries it out: the guide's
    # "Secrets"; this one does not.)
    import sqlite3

    got: list[str] = []

    @seamkit.tool(approval=True)
    def pay(amount: int, token: str) -> str:
        got.append(token)
        return f"paid {amount}"

    rows: list[str] = []

    class Keep(seamkit.SQLiteSessionStore):
        async def journal_append(self, name: str, entries: Any) -> None:
            rows.extend(e.model_dump_json() for e in entries)
            await super().journal_append(name, entries)

    a = Agent(
        ScriptedModel([calls(("c1", "pay", {"amount": 5, "token": "-"})), {"text": "ok"}]),
        tools=[pay],
        hooks=[SecretWriter()],
        plugin_hooks=False,
        store=Keep(tmp_path / "s.sqlite"),
    )
    first = run(a, "go", session="s")
    assert isinstance(first.outcome, seamkit.Suspended)
    assert first.outcome.pending[0].arguments["token"] == "***"
    with sqlite3.connect(tmp_path / "s.sqlite") as db:
        suspended = "\n".join(str(row) for row in db.execute("SELECT * FROM sessions"))
    assert "seamkit.pending" in suspended and CANARY not in suspended
    result = run(a, Decisions({"c1": Approve()}), session="s")
    assert result.outcome.kind == "completed" and got == [CANARY]  # the tool got the value
    with sqlite3.connect(tmp_path / "s.sqlite") as db:
        dumped = "\n".join(str(row) for row in db.execute("SELECT * FROM sessions"))
    assert any('"started"' in row for row in rows)
    assert CANARY not in "\n".join(rows) and CANARY not in dumped
    assert CANARY not in first.model_dump_json() + result.model_dump_json()
