"""The `approval` hook kind of seamkit-approval, found through its installed
distribution: a manifest app whose refund calls wait for a person, the
decisions that continue it, globs, ``when`` (failing closed), located
manifest errors, the reason template, and no secret in any reason."""

from __future__ import annotations

import asyncio
import fnmatch
import json
import math
import uuid
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import seamkit
import yaml
from hypothesis import given, settings, strategies as st
from seamkit.flow import RequireApproval
from seamkit.plugins import get_registry
from seamkit.testing import make_context
from seamkit_approval import ApprovalHook, ApprovalHookConfig, ReasonTemplate

CANARY = "canary-apr-5e8d21c7"

TOOLS = '''
"""The shop's tools; each effect is a line in {log!r}."""

import seamkit


def _did(text: str) -> None:
    with open({log!r}, "a", encoding="utf-8") as out:
        out.write(text + "\\n")


@seamkit.tool
def refund(order: str, amount: float, note: str = "") -> str:
    """Refund ``amount`` EUR on ``order``."""
    _did(f"refund {{order}} {{amount}}")
    return f"refunded {{amount}} EUR on {{order}}"


@seamkit.tool
def refund_card(order: str, amount: float = 100.0) -> str:
    """Refund onto the card of ``order``."""
    _did(f"refund_card {{order}} {{amount}}")
    return "refunded to the card"


@seamkit.tool(effects="none")
def lookup(order: str) -> str:
    """Look an order up."""
    _did(f"lookup {{order}}")
    return f"order {{order}}: 250 EUR, paid"
'''

WHEN = {"properties": {"amount": {"minimum": 100}}, "required": ["amount"]}


class Shop:
    """A manifest app in a folder of its own: the tools above as the toolset
    ``shop``, a scripted model, the given hook entries, a SQLite store."""

    def __init__(self, folder: Path, hooks: list[dict[str, Any]], turns: list[Any]) -> None:
        self.folder = folder
        self.log = folder / "effects.log"
        module = f"shop_{uuid.uuid4().hex[:12]}"  # a module per app: imports are cached
        (folder / f"{module}.py").write_text(TOOLS.format(log=str(self.log)), encoding="utf-8")
        (folder / "script.yaml").write_text(yaml.safe_dump(turns), encoding="utf-8")
        self.app = folder / "app.yaml"
        manifest = {
            "name": "shop",
            "model": "scripted:script.yaml",
            "tools": [{"kind": "function", "ref": module, "toolset": "shop"}],
            "hooks": hooks,
        }
        self.app.write_text(yaml.safe_dump(manifest, sort_keys=False), encoding="utf-8")
        self.store = str(folder / "sessions.sqlite")

    async def agent(self) -> seamkit.Agent:
        return await seamkit.Agent.load(self.app, store=self.store)

    def effects(self) -> list[str]:
        return self.log.read_text(encoding="utf-8").splitlines() if self.log.exists() else []


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": json.dumps(arguments)}


def approval(**fields: Any) -> dict[str, Any]:
    return {
        "kind": "approval",
        "name": "big-refunds",
        "event": "on_pre_tool_use",
        "tools": ["shop_refund*"],
        "reason": "Refund of {amount} EUR on order {order}",
        **fields,
    }


def tool_results(result: seamkit.RunResult) -> dict[str, str]:
    return {m.tool_call_id or "": m.text for m in result.transcript if m.role == "tool"}


# --- discovery ----------------------------------------------------------------------


def test_the_kind_is_discovered_through_its_installed_distribution() -> None:
    registry = get_registry()
    info = registry.kind("hook", "approval")
    assert info is not None and info.plugin == "approval" and info.model is ApprovalHookConfig
    assert {e.value for e in info.events} == {"on_pre_tool_use"}
    plugin = registry.plugins["approval"]
    assert plugin.error is None and plugin.distribution == "seamkit-approval"
    (entry,) = [
        ep for ep in metadata.distribution("seamkit-approval").entry_points if ep.group == "seamkit"
    ]
    assert (entry.name, entry.value) == ("approval", "seamkit_approval")


def test_the_entry_is_a_guard_that_fails_closed_by_default() -> None:
    config = ApprovalHookConfig.model_validate(approval())
    assert config.error_policy == "fail"


# --- suspended, then decided ----------------------------------------------------------


def test_a_matching_call_is_suspended_with_its_reason_and_approved_runs_once(
    tmp_path: Path,
) -> None:
    shop = Shop(
        tmp_path,
        [approval()],
        [
            {
                "tool_calls": [
                    call("c1", "shop_lookup", order="A1"),
                    call("c2", "shop_refund", order="A1", amount=250),
                ]
            },
            {"text": "Refunded."},
        ],
    )

    async def go() -> tuple[seamkit.RunResult, seamkit.RunResult]:
        async with await shop.agent() as agent:
            first = await agent.run("refund A1", session="s")
            assert isinstance(first.outcome, seamkit.Suspended)
            (pending,) = first.outcome.pending
            decided = seamkit.Decisions(
                {pending.call_id: seamkit.Approve(digest=pending.digest, by="cli")}
            )
            second = await agent.run(decided, session="s")
            # Decided already, and nothing left to continue: nothing runs twice.
            with pytest.raises(seamkit.ResumeError, match="no call waiting"):
                await agent.run(decided, session="s")
            with pytest.raises(seamkit.ResumeError, match="nothing to continue"):
                await agent.run(None, session="s")
            return first, second

    first, second = asyncio.run(go())
    assert isinstance(first.outcome, seamkit.Suspended)
    (pending,) = first.outcome.pending
    assert pending.call_id == "c2" and pending.tool == "shop_refund"
    assert pending.reason == "Refund of 250 EUR on order A1"
    assert pending.hook == "big-refunds"
    assert pending.arguments == {"order": "A1", "amount": 250}
    assert second.outcome.kind == "completed" and second.output == "Refunded."
    assert tool_results(second) == {
        "c1": "order A1: 250 EUR, paid",
        "c2": "refunded 250.0 EUR on A1",
    }
    assert shop.effects() == ["lookup A1", "refund A1 250.0"]  # the lookup did not wait


def test_a_rejected_call_gives_the_model_the_reason_and_never_runs(tmp_path: Path) -> None:
    shop = Shop(
        tmp_path,
        [approval(name=None)],
        [{"tool_calls": [call("c1", "shop_refund", order="B2", amount=900)]}, {"text": "OK."}],
    )

    async def go() -> tuple[seamkit.RunResult, seamkit.RunResult]:
        async with await shop.agent() as agent:
            first = await agent.run("refund B2", session="s")
            assert isinstance(first.outcome, seamkit.Suspended)
            rejected = seamkit.Reject("too much; ask a manager", by="key-7")
            return first, await agent.run(seamkit.Decisions({"c1": rejected}), session="s")

    first, second = asyncio.run(go())
    assert isinstance(first.outcome, seamkit.Suspended)
    (pending,) = first.outcome.pending
    assert pending.hook == "approval@hooks[0]"  # unnamed: the kind and the entry's place
    assert pending.reason == "Refund of 900 EUR on order B2"
    assert second.outcome.kind == "completed"
    assert tool_results(second) == {"c1": "too much; ask a manager"}
    assert shop.effects() == []


# --- which calls ---------------------------------------------------------------------


def test_globs_choose_the_tools_and_other_calls_run_at_once(tmp_path: Path) -> None:
    shop = Shop(
        tmp_path,
        [approval(tools=["shop_refund_?ard", "*_lookup_x"], reason="{order}")],
        [
            {
                "tool_calls": [
                    call("c1", "shop_refund", order="A1", amount=500),
                    call("c2", "shop_refund_card", order="A2"),
                    call("c3", "shop_lookup", order="A3"),
                ]
            },
            {"text": "Done."},
        ],
    )

    async def go() -> seamkit.RunResult:
        async with await shop.agent() as agent:
            return await agent.run("go", session="s")

    result = asyncio.run(go())
    assert isinstance(result.outcome, seamkit.Suspended)
    assert [p.call_id for p in result.outcome.pending] == ["c2"]
    assert sorted(shop.effects()) == ["lookup A3", "refund A1 500.0"]


def test_a_pattern_that_matches_no_tool_yet_is_logged_when_the_agent_is_built(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    shop = Shop(tmp_path, [approval(tools=["shop_refnud", "shop_refund*"])], [])

    async def go() -> None:
        async with await shop.agent():
            pass

    with caplog.at_level("WARNING", logger="seamkit_approval"):
        asyncio.run(go())
    (record,) = caplog.records
    assert "'shop_refnud' match no tool of the agent yet" in record.getMessage()
    assert "shop_refund, shop_refund_card" in record.getMessage()


def test_matching_is_by_the_whole_final_name_and_case_matters() -> None:
    hook = ApprovalHook(
        ApprovalHookConfig.model_validate(approval(tools=["refund", "pay_*", "[ab]x"]))
    )
    assert [hook.matches(n) for n in ("refund", "refunds", "Refund", "xrefund")] == [
        True,
        False,
        False,
        False,
    ]
    assert hook.matches("pay_out") and hook.matches("pay_") and not hook.matches("PAY_out")
    assert hook.matches("ax") and hook.matches("bx") and not hook.matches("cx")


@pytest.mark.parametrize(
    ("amount", "asked"), [(50, False), (99.5, False), (100, True), (5000, True)]
)
def test_when_asks_only_for_arguments_that_fit_it(
    tmp_path: Path, amount: float, asked: bool
) -> None:
    shop = Shop(
        tmp_path,
        [approval(when=WHEN)],
        [{"tool_calls": [call("c1", "shop_refund", order="A1", amount=amount)]}, {"text": "ok"}],
    )

    async def go() -> seamkit.RunResult:
        async with await shop.agent() as agent:
            return await agent.run("go", session="s")

    result = asyncio.run(go())
    assert (result.outcome.kind == "suspended") is asked
    assert shop.effects() == ([] if asked else [f"refund A1 {float(amount)}"])


def test_when_sees_the_arguments_as_the_tool_validated_them(tmp_path: Path) -> None:
    # refund_card's amount defaults to 100: a call that leaves it out still
    # refunds 100, so it needs approval as if it had said so.
    shop = Shop(
        tmp_path,
        [approval(when=WHEN, reason="Card refund of {amount} on {order}")],
        [{"tool_calls": [call("c1", "shop_refund_card", order="C3")]}, {"text": "ok"}],
    )

    async def go() -> seamkit.RunResult:
        async with await shop.agent() as agent:
            return await agent.run("go", session="s")

    result = asyncio.run(go())
    assert isinstance(result.outcome, seamkit.Suspended)
    (pending,) = result.outcome.pending
    # The reason shows the call as the model made it, and says what it lacks.
    assert pending.reason == "Card refund of <missing amount> on C3"


def _hook(**fields: Any) -> ApprovalHook:
    return ApprovalHook(ApprovalHookConfig.model_validate(approval(**fields)))


def _call(name: str = "shop_refund", **arguments: Any) -> seamkit.ToolCall:
    return seamkit.ToolCall(id="c1", name=name, arguments=arguments)


def test_when_fails_closed_on_what_it_cannot_decide(tmp_path: Path) -> None:
    ctx = make_context()
    unresolvable = _hook(when={"$ref": "#/$defs/nowhere"})  # valid schema, errs on use
    assert unresolvable.asks(_call(order="A1", amount=1), ctx)
    hook = _hook(when=WHEN)
    assert not hook.asks(_call(order="A1", amount=1), ctx)
    assert hook.asks(_call(order="A1", amount=math.nan), ctx)  # not JSON
    assert hook.asks(_call(order="A1", amount=1, extra=object()), ctx)  # not JSON
    assert not hook.asks(_call("shop_lookup", amount=math.nan), ctx)  # not its tool

    @seamkit.tool
    def shop_refund(order: str, amount: float) -> str:
        """A refund."""
        return "done"

    with_tool = make_context(tools={"shop_refund": shop_refund})
    assert not hook.asks(_call(order="A1", amount=1), with_tool)
    assert hook.asks(_call(order="A1", amount="lots"), with_tool)  # the tool refuses them


def test_a_hook_before_it_that_rewrites_the_arguments_is_what_it_judges(tmp_path: Path) -> None:
    class Doubler:
        @seamkit.hookimpl
        def on_pre_tool_use(
            self, ctx: seamkit.HookContext, call: seamkit.ToolCall
        ) -> seamkit.flow.PreToolUseFlow:
            amount = call.arguments.get("amount", 0)
            return seamkit.flow.RewriteArgs({**call.arguments, "amount": amount * 2})

    hook = _hook(when=WHEN)
    flow, by = seamkit.testing.run_event(
        [Doubler(), hook], "on_pre_tool_use", _call(order="A1", amount=60)
    )
    assert isinstance(flow, RequireApproval) and by is not None
    assert flow.reason == "Refund of 120 EUR on order A1"
    assert flow.arguments == {"order": "A1", "amount": 120}


# --- manifest errors ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "where", "words"),
    [
        ({"when": {"type": "nonsense"}}, ("hooks", 0, "when"), "when is not a valid JSON Schema"),
        ({"when": {"minimum": "ten"}}, ("hooks", 0, "when"), "when is not a valid JSON Schema"),
        ({"tools": []}, ("hooks", 0, "tools"), "tools is empty"),
        ({"tools": ["refund", " "]}, ("hooks", 0, "tools"), "empty name"),
        ({"reason": "Refund of {amount.value}"}, ("hooks", 0, "reason"), "top-level argument"),
        ({"reason": "{args[0]}"}, ("hooks", 0, "reason"), "top-level argument"),
        ({"reason": "{amount!r}"}, ("hooks", 0, "reason"), "format spec"),
        ({"reason": "{amount:>{width}}"}, ("hooks", 0, "reason"), "format spec"),
        ({"reason": "{}"}, ("hooks", 0, "reason"), "top-level argument"),
        ({"reason": "{0}"}, ("hooks", 0, "reason"), "top-level argument"),
        ({"reason": "Refund {amount"}, ("hooks", 0, "reason"), "braces do not pair up"),
        ({"reason": "Refund {{ amount }}"}, ("hooks", 0, "reason"), "literal text"),
        ({"reason": ""}, ("hooks", 0, "reason"), ""),
        ({"event": "on_post_tool_use"}, ("hooks", 0, "event"), "does not support event"),
    ],
)
def test_a_bad_entry_is_a_manifest_error_naming_the_entry_and_field(
    tmp_path: Path, fields: dict[str, Any], where: tuple[Any, ...], words: str
) -> None:
    shop = Shop(
        tmp_path,
        [
            {
                "kind": "approval",
                "name": "n",
                "event": "on_pre_tool_use",
                "tools": ["shop_refund"],
                "reason": "r",
                **fields,
            }
        ],
        [],
    )
    with pytest.raises(seamkit.ManifestError) as caught:
        asyncio.run(shop.agent())
    (problem,) = caught.value.problems
    assert tuple(problem.location) == where, problem
    assert words in problem.message, problem
    text = str(caught.value)
    assert "app.yaml:" in text and "hooks[0]." in text, text


def test_a_schema_error_says_where_in_the_schema_and_gives_an_example(tmp_path: Path) -> None:
    shop = Shop(tmp_path, [approval(when={"properties": {"amount": {"minimum": "ten"}}})], [])
    with pytest.raises(seamkit.ManifestError) as caught:
        asyncio.run(shop.agent())
    (problem,) = caught.value.problems
    assert "properties/amount/minimum" in problem.message
    assert problem.hint is not None and "minimum: 100" in problem.hint


# --- the reason -----------------------------------------------------------------------


def test_the_reason_renders_every_value_safely() -> None:
    template = ReasonTemplate("{order}: {amount} {items} {flag} {none} {gone} {{}}")
    shown = template.render(
        {"order": "A1", "amount": 2.5, "items": ["x", {"y": 1}], "flag": True, "none": None}
    )
    assert shown == 'A1: 2.5 ["x",{"y":1}] true null <missing gone> {}'
    assert template.names == ("order", "amount", "items", "flag", "none", "gone")
    long = ReasonTemplate("{text}").render({"text": "x" * 1000})
    assert len(long) == 200 and long.endswith("...")
    odd = ReasonTemplate("{thing}").render({"thing": object()})
    assert odd == '"<object>"'


def test_no_secret_ever_shows_in_the_reason(tmp_path: Path) -> None:
    shop = Shop(
        tmp_path,
        [approval(reason="Refund of {amount} on {order}: {note}")],
        [
            {
                "tool_calls": [
                    call("c1", "shop_refund", order=f"A1-{CANARY}", amount=5, note=CANARY)
                ]
            },
            {"text": "ok"},
        ],
    )

    async def go() -> seamkit.RunResult:
        async with await shop.agent() as agent:
            context = {"api_key": seamkit.Secret(CANARY)}
            return await agent.run("go", session="s", context=context)

    result = asyncio.run(go())
    assert isinstance(result.outcome, seamkit.Suspended)
    (pending,) = result.outcome.pending
    assert CANARY not in pending.reason
    assert pending.reason == "Refund of 5 on A1-***: ***"


def test_a_secret_a_hook_wrote_into_the_arguments_is_masked_too() -> None:
    class Signer:
        @seamkit.hookimpl
        def on_pre_tool_use(
            self, ctx: seamkit.HookContext, call: seamkit.ToolCall
        ) -> seamkit.flow.PreToolUseFlow:
            secret = seamkit.Secret(CANARY)
            arguments = {**call.arguments, "note": secret, "nested": {"key": secret}}
            return seamkit.flow.RewriteArgs(arguments)

    hook = _hook(reason="{order} {note} {nested} {echo}")
    flow, _ = seamkit.testing.run_event(
        [Signer(), hook], "on_pre_tool_use", _call(order="A1", amount=5, echo=f"x{CANARY}x")
    )
    assert isinstance(flow, RequireApproval)
    assert CANARY not in flow.reason
    assert flow.reason == 'A1 *** {"key":"***"} x***x'


# --- the law ----------------------------------------------------------------------------

VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-1000, 1000),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=2),
)
ARGUMENTS = st.dictionaries(st.sampled_from(["amount", "order", "note"]), VALUES, max_size=3)
NAMES = st.sampled_from(["shop_refund", "shop_refund_card", "shop_lookup", "refund", "shop_Refund"])
LAW_HOOK = _hook(when=WHEN, reason="{amount} {order}")
LAW_CONTEXT = make_context()


def _json(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_json(v) for v in value)
    return True


@settings(max_examples=300, deadline=None)
@given(NAMES, ARGUMENTS)
def test_the_hook_asks_iff_the_tool_matches_and_when_holds_or_cannot_be_decided(
    name: str, arguments: dict[str, Any]
) -> None:
    flow = LAW_HOOK.on_pre_tool_use(LAW_CONTEXT, _call(name, **arguments))
    amount = arguments.get("amount")
    number = isinstance(amount, int | float) and not isinstance(amount, bool)
    # JSON Schema's `minimum` says nothing about what is not a number.
    holds = "amount" in arguments and (not number or amount >= 100)
    undecidable = not all(_json(v) for v in arguments.values())
    expected = fnmatch.fnmatchcase(name, "shop_refund*") and (holds or undecidable)
    assert isinstance(flow, RequireApproval) is expected
    assert flow is None or isinstance(flow, RequireApproval)
    if flow is not None:
        assert flow.arguments is None  # the call is shown as it is
