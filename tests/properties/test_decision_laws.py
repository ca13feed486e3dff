"""The laws of decisions:

- decisions given in any order and any split reach the same final transcript
  as all of them at once;
- a suspended run's state, serialized and read back, continues exactly as the
  same run kept in a session does;
- no decision runs a call whose arguments differ from what was approved:
  whatever hooks rewrite, every call that runs has the digest of an approval
  given for that call.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

import seamkit
from hypothesis import given, settings, strategies as st
from seamkit import Agent, Approve, Decisions, Edit, Reject, flow
from seamkit._approval import arguments_digest
from seamkit.testing import ScriptedModel

EXAMPLES = min(settings.default.max_examples, 120)
"""Each example runs several agents on a real SQLite store."""

RAN: list[tuple[str, str, dict[str, Any]]] = []


@seamkit.tool(approval=True)
def act(n: int) -> str:
    """Acts on the world."""
    RAN.append(("act", "", {"n": n}))
    return f"acted {n}"


def _script(count: int) -> list[dict[str, Any]]:
    calls = [{"id": f"c{i}", "name": "act", "arguments": {"n": i}} for i in range(count)]
    return [{"tool_calls": calls}, {"text": "done"}]


def _agent(count: int, hooks: list[object] | None = None, **settings: Any) -> Agent:
    return Agent(
        ScriptedModel(_script(count)),
        tools=[act],
        hooks=hooks or [],
        settings=settings,
        plugin_hooks=False,
    )


def _run(agent: Agent, input: Any, **options: Any) -> seamkit.RunResult:
    return asyncio.run(agent.run(input, **options))


decision = st.one_of(
    st.just(Approve()),
    st.text(min_size=1, max_size=8).map(Reject),
    st.integers(0, 50).map(lambda n: Edit({"n": n})),
)


@st.composite
def decided(draw: st.DrawFn) -> tuple[int, dict[str, Any], list[list[str]]]:
    """A number of calls, a decision for each, and the decisions split into
    groups given one after the other, in a random order."""
    count = draw(st.integers(1, 4))
    decisions = {f"c{i}": draw(decision) for i in range(count)}
    order = draw(st.permutations(list(decisions)))
    cuts = sorted(draw(st.sets(st.integers(1, max(1, count - 1)), max_size=count - 1)))
    groups = [list(order[a:b]) for a, b in zip([0, *cuts], [*cuts, count], strict=False)]
    return count, decisions, [g for g in groups if g]


def _transcript(result: seamkit.RunResult) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in result.transcript]


@settings(max_examples=EXAMPLES, deadline=None)
@given(decided())
def test_decisions_in_any_order_and_split_reach_the_same_transcript(
    case: tuple[int, dict[str, Any], list[list[str]]],
) -> None:
    count, decisions, groups = case
    with tempfile.TemporaryDirectory() as tmp:
        at_once = _agent(count)
        store = Path(tmp) / "a.sqlite"
        _run(at_once, "go", session="s", store=store)
        RAN.clear()
        whole = _run(at_once, Decisions(decisions), session="s", store=store)
        ran_whole = sorted(map(str, RAN))
        split = _agent(count)
        other = Path(tmp) / "b.sqlite"
        _run(split, "go", session="s", store=other)
        RAN.clear()
        result = None
        for group in groups:
            result = _run(
                split, Decisions({k: decisions[k] for k in group}), session="s", store=other
            )
    assert result is not None
    assert result.outcome.kind == whole.outcome.kind == "completed"
    assert _transcript(result) == _transcript(whole)
    assert sorted(map(str, RAN)) == ran_whole  # each decided call ran once, as decided


@settings(max_examples=EXAMPLES, deadline=None)
@given(decided())
def test_a_serialized_suspended_state_continues_like_a_session(
    case: tuple[int, dict[str, Any], list[list[str]]],
) -> None:
    count, decisions, groups = case
    key = {"state_key": "law-key"}
    with tempfile.TemporaryDirectory() as tmp:
        kept = _agent(count, **key)
        store = Path(tmp) / "s.sqlite"
        _run(kept, "go", session="s", store=store)
        in_session = None
        for group in groups:
            in_session = _run(
                kept, Decisions({k: decisions[k] for k in group}), session="s", store=store
            )
    alone = _agent(count, **key)
    result = _run(alone, "go", context={"user": "u"})
    for group in groups:
        token = json.loads(json.dumps(result.suspended))  # out and back in, as JSON
        result = _run(
            alone,
            Decisions({k: decisions[k] for k in group}),
            suspended=token,
            context={"user": "u"},
        )
    assert in_session is not None
    assert result.outcome == in_session.outcome
    assert _transcript(result) == _transcript(in_session)


class Rewrites:
    """A hook that rewrites each call's ``n`` to the next drawn value (or
    leaves it, or asks again), whenever the call passes on_pre_tool_use."""

    name = "rewrites"

    def __init__(self, values: list[int | None]) -> None:
        self.values = values

    @seamkit.hookimpl
    def on_pre_tool_use(self, ctx: Any, call: seamkit.ToolCall) -> flow.PreToolUseFlow:
        value = self.values.pop(0) if self.values else None
        if value is None:
            return None
        return flow.RewriteArgs({"n": value})


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    st.integers(1, 3),
    st.lists(st.none() | st.integers(0, 3), max_size=12),
    st.lists(st.tuples(st.integers(0, 2), decision, st.booleans()), max_size=8),
)
def test_no_decision_runs_arguments_nobody_approved(
    count: int, rewrites: list[int | None], attempts: list[tuple[int, Any, bool]]
) -> None:
    approved: set[tuple[str, str]] = set()
    with tempfile.TemporaryDirectory() as tmp:
        agent = _agent(count, hooks=[Rewrites(rewrites)])
        store = Path(tmp) / "s.sqlite"
        RAN.clear()
        result = _run(agent, "go", session="s", store=store)
        for index, choice, right_digest in attempts:
            if not isinstance(result.outcome, seamkit.Suspended):
                break
            waiting = [p for p in result.outcome.pending if p.decision is None]
            if not waiting:
                break
            pending = waiting[index % len(waiting)]
            digest = pending.digest if right_digest else "0" * 24
            if isinstance(choice, Approve):
                choice = Approve(digest=digest)
                granted = arguments_digest(pending.tool, pending.arguments)
            elif isinstance(choice, Edit):
                choice = Edit(choice.arguments, digest=digest)
                granted = arguments_digest(pending.tool, choice.arguments)
            else:
                granted = ""
            try:
                result = _run(agent, Decisions({pending.call_id: choice}), session="s", store=store)
            except seamkit.ResumeError:
                assert not right_digest  # only a wrong digest is refused here
                continue
            if granted:
                approved.add((pending.call_id, granted))
    ran = {arguments_digest("act", args) for _, _, args in RAN}
    granted_digests = {digest for _, digest in approved}
    assert ran <= granted_digests  # everything that ran was approved exactly so
