"""The testing kit plugin authors use: harness, ready checks, pytest plugin."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import seamkit
from hypothesis import given, settings, strategies as st
from seamkit import HookEvent, ModelRequest, RequestPatch, ToolCall, ToolResult, flow as F
from seamkit.testing import check_hook_composes, run_event
from seamkit.testing.strategies import event_arguments, tool_calls


class Brief:
    """A well-behaved hook: asks for short answers."""

    @seamkit.hookimpl
    def on_pre_llm(self, ctx, request):  # type: ignore[no-untyped-def]
        return F.PatchRequest(RequestPatch(max_tokens=200, additional_params={"brief": True}))


class Confused:
    """Returns a flow its event does not accept."""

    @seamkit.hookimpl
    def on_pre_llm(self, ctx, request):  # type: ignore[no-untyped-def]
        return F.Skip("wrong event for this")


def test_check_hook_composes_passes_for_a_good_hook() -> None:
    check_hook_composes(Brief(), HookEvent.ON_PRE_LLM, max_examples=50)
    check_hook_composes(Brief, HookEvent.ON_PRE_LLM, max_examples=20)  # factory form


def test_check_hook_composes_catches_a_bad_flow() -> None:
    with pytest.raises(AssertionError, match="returned a flow on_pre_llm does not accept"):
        check_hook_composes(Confused(), HookEvent.ON_PRE_LLM, max_examples=10)


class SearchOnly:
    """Misbehaves only for calls of the tool ``search``, which the default
    strategy for tool names almost never draws."""

    def __init__(self) -> None:
        self.seen: list[tuple[ToolCall, ToolResult]] = []

    @seamkit.hookimpl
    def on_post_tool_use(self, ctx, call, result):  # type: ignore[no-untyped-def]
        self.seen.append((call, result))
        return F.Skip("not here") if call.name == "search" else None


def test_check_hook_composes_draws_from_the_arguments_given() -> None:
    check_hook_composes(SearchOnly(), "on_post_tool_use", max_examples=30)  # default: passes
    searches = event_arguments("on_post_tool_use", call=tool_calls(st.just("search")))
    with pytest.raises(AssertionError, match="returned a flow on_post_tool_use does not accept"):
        check_hook_composes(SearchOnly(), "on_post_tool_use", args=searches, max_examples=10)


def test_args_may_be_any_strategy_of_the_argument_tuple() -> None:
    hook = SearchOnly()
    call = ToolCall(id="call_1", name="calc", arguments={"a": 1})
    results = st.builds(ToolResult, call_id=st.just("call_1"), content=st.text(max_size=5))
    check_hook_composes(
        hook, "on_post_tool_use", args=st.tuples(st.just(call), results), max_examples=20
    )
    assert hook.seen and all(seen_call == call for seen_call, _ in hook.seen)
    assert all(result.call_id == "call_1" for _, result in hook.seen)


def test_args_that_do_not_fit_the_event_are_a_type_error() -> None:
    with pytest.raises(
        TypeError, match=r"on_post_tool_use's 2 arguments after ctx \(call, result\)"
    ):
        check_hook_composes(SearchOnly(), "on_post_tool_use", args=st.just(("only one",)))
    with pytest.raises(
        TypeError, match="on_pre_llm has no argument 'call'; its arguments after ctx: request"
    ):
        event_arguments("on_pre_llm", call=tool_calls())


@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_event_arguments_follow_each_hookspec(data: st.DataObject) -> None:
    from seamkit._events import EVENTS

    for event, spec in EVENTS.items():
        drawn = data.draw(event_arguments(event))
        assert isinstance(drawn, tuple) and len(drawn) == len(spec.args) - 1, event


def test_run_event_harness() -> None:
    result = run_event([Brief()], "on_pre_llm", ModelRequest())
    assert result.flow.patch.max_tokens == 200


def test_pytest_plugin_imports_hypothesis_only_when_used(tmp_path: Path) -> None:
    (tmp_path / "test_kit.py").write_text(
        textwrap.dedent("""
        import sys

        def test_a_no_fixture(seamkit_context, seamkit_run_event):
            assert "hypothesis" not in sys.modules
            assert seamkit_context.turn == 1

        def test_b_strategies(seamkit_strategies):
            assert "hypothesis" in sys.modules
            assert seamkit_strategies.messages().example().role
    """)
    )
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:hypothesispytest",
            str(tmp_path / "test_kit.py"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert "2 passed" in out.stdout, out.stdout + out.stderr
