"""The dispatcher: composition per event, failure policy, matchers, ordering."""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import time
from datetime import UTC

import pluggy
import pytest
import seamkit
from seamkit import (
    Document,
    HookConfig,
    HookError,
    HookEvent,
    HookStack,
    Message,
    ModelRequest,
    RequestPatch,
    ToolCall,
    ToolResult,
    ToolSpec,
    flow as F,
)
from seamkit._engine._dispatch import Dispatcher
from seamkit.plugins import ConfiguredHook
from seamkit.testing import make_context, run_event, scripted_hook

E = HookEvent
CALL = ToolCall(id="c1", name="memory_get", arguments={"q": 1})
REQUEST = ModelRequest(
    messages=(Message.user("hi"),), tools=(ToolSpec(name="a"), ToolSpec(name="b"))
)


def test_chain_threads_rewrites_and_reports_the_final_value() -> None:
    seen: list[dict[str, object]] = []

    def add(key: str):  # type: ignore[no-untyped-def]
        def fn(ctx, call):  # type: ignore[no-untyped-def]
            seen.append(dict(call.arguments))
            return F.RewriteArgs({**call.arguments, key: True})

        return fn

    hooks = [
        scripted_hook(E.ON_PRE_TOOL_USE, add("x"), name="h1"),
        scripted_hook(E.ON_PRE_TOOL_USE, None, name="h2"),
        scripted_hook(E.ON_PRE_TOOL_USE, add("y"), name="h3"),
    ]
    result = run_event(hooks, E.ON_PRE_TOOL_USE, CALL)
    assert result.flow == F.RewriteArgs({"q": 1, "x": True, "y": True})
    assert seen == [{"q": 1}, {"q": 1, "x": True}]


def test_chain_skip_ends_the_chain_and_names_the_hook() -> None:
    calls: list = []
    hooks = [
        scripted_hook(E.ON_PRE_TOOL_USE, F.Skip("not now"), name="guard", calls=calls),
        scripted_hook(E.ON_PRE_TOOL_USE, F.Terminate("never"), name="later", calls=calls),
    ]
    result = run_event(hooks, E.ON_PRE_TOOL_USE, CALL)
    assert result == (F.Skip("not now"), "guard")
    assert [name for name, _ in calls] == ["guard"]


def test_post_tool_use_first_hook_sees_real_output() -> None:
    seen = []
    hooks = [
        scripted_hook(
            E.ON_POST_TOOL_USE,
            lambda c, call, r: seen.append(r.content) or F.RewriteResult("[redacted]"),
            name="redact",
        ),
        scripted_hook(
            E.ON_POST_TOOL_USE,
            lambda c, call, r: seen.append(r.content) or F.RewriteResult(r.content[:4]),
            name="truncate",
        ),
    ]
    result = run_event(hooks, E.ON_POST_TOOL_USE, CALL, ToolResult(content="secret-output"))
    assert seen == ["secret-output", "[redacted]"]
    assert result.flow == F.RewriteResult("[red")


def test_request_start_rewrites_messages_in_chain() -> None:
    hooks = [
        scripted_hook(
            E.ON_REQUEST_START, lambda c, m: F.RewriteMessages([*m, Message.system("note")])
        )
    ]
    result = run_event(hooks, E.ON_REQUEST_START, (Message.user("hi"),))
    assert result.flow == F.RewriteMessages((Message.user("hi"), Message.system("note")))


def test_accumulate_every_hook_sees_the_baseline_and_patches_merge() -> None:
    seen = []

    def patch(p):  # type: ignore[no-untyped-def]
        return lambda c, r: seen.append(r) or F.PatchRequest(p)

    d1, d2 = Document(id="1", text="a"), Document(id="2", text="b")
    hooks = [
        scripted_hook(
            E.ON_PRE_LLM, patch(RequestPatch(extra_context=(d1,), active_tools=("a", "b")))
        ),
        scripted_hook(E.ON_PRE_LLM, patch(RequestPatch(extra_context=(d2,), active_tools=("b",)))),
    ]
    result = run_event(hooks, E.ON_PRE_LLM, REQUEST)
    assert seen == [REQUEST, REQUEST]
    assert result.flow == F.PatchRequest(RequestPatch(extra_context=(d1, d2), active_tools=("b",)))
    applied = result.flow.patch.apply(REQUEST)
    assert [t.name for t in applied.tools] == ["b"] and applied.extra_context == (d1, d2)


def test_accumulate_conflicts_and_empty_active_tools_are_diagnosed(caplog) -> None:  # type: ignore[no-untyped-def]
    ctx = make_context()
    hooks = [
        scripted_hook(
            E.ON_PRE_LLM,
            F.PatchRequest(RequestPatch(preamble="A", active_tools=("a",))),
            name="first",
        ),
        scripted_hook(
            E.ON_PRE_LLM,
            F.PatchRequest(RequestPatch(preamble="B", active_tools=("b",))),
            name="second",
        ),
    ]
    with caplog.at_level(logging.WARNING, logger="seamkit"):
        result = run_event(hooks, E.ON_PRE_LLM, REQUEST, ctx=ctx)
    assert result.flow.patch.preamble == "B"
    codes = {d.code: d for d in ctx.diagnostics}
    assert codes["patch_conflict"].hooks == ("first", "second")
    assert "both set preamble; 'second' wins" in codes["patch_conflict"].message
    assert codes["active_tools_empty"].hooks == ("first", "second")
    assert any("both set preamble" in r.getMessage() for r in caplog.records)


def test_accumulate_terminate_discards_the_merged_patch() -> None:
    hooks = [
        scripted_hook(E.ON_PRE_LLM, F.PatchRequest(RequestPatch(preamble="A"))),
        scripted_hook(E.ON_PRE_LLM, F.Terminate("budget"), name="budget"),
    ]
    assert run_event(hooks, E.ON_PRE_LLM, REQUEST) == (F.Terminate("budget"), "budget")


def test_empty_merged_patch_is_continue() -> None:
    hooks = [scripted_hook(E.ON_PRE_LLM, F.PatchRequest(RequestPatch()))]
    assert run_event(hooks, E.ON_PRE_LLM, REQUEST).flow == F.Continue()


def test_first_non_continue_wins() -> None:
    calls: list = []
    hooks = [
        scripted_hook(E.ON_ITERATION_END, F.Continue(), name="a", calls=calls),
        scripted_hook(E.ON_ITERATION_END, F.Terminate("done"), name="b", calls=calls),
        scripted_hook(E.ON_ITERATION_END, F.Terminate("other"), name="c", calls=calls),
    ]
    assert run_event(hooks, E.ON_ITERATION_END, ()) == (F.Terminate("done"), "b")
    assert [n for n, _ in calls] == ["a", "b"]


def test_completion_runs_every_hook_even_when_one_fails(caplog) -> None:  # type: ignore[no-untyped-def]
    calls: list = []
    ctx = make_context()
    hooks = [
        scripted_hook(
            E.ON_COMPLETION,
            raises=RuntimeError("db down"),
            name="save",
            calls=calls,
            on_error="fail",
        ),
        scripted_hook(E.ON_COMPLETION, F.Terminate("nope"), name="odd", calls=calls),
        scripted_hook(E.ON_COMPLETION, None, name="last", calls=calls),
    ]
    result = run_event(hooks, E.ON_COMPLETION, seamkit.RunResult(), ctx=ctx)
    assert result.flow == F.Continue()
    assert [n for n, _ in calls] == ["save", "odd", "last"]
    assert [d.code for d in ctx.diagnostics] == ["hook_skipped", "flow_ignored"]


def test_a_flow_the_event_does_not_accept_fails_closed_naming_everything() -> None:
    hooks = [scripted_hook(E.ON_PRE_LLM, F.Skip("x"), name="confused", on_error="skip")]
    with pytest.raises(HookError) as info:
        run_event(hooks, E.ON_PRE_LLM, REQUEST)
    assert info.value.message == (
        "hook 'confused' returned Skip at on_pre_llm, which accepts only Continue, "
        "PatchRequest, Terminate"
    )
    assert (info.value.hook, info.value.event, info.value.flow) == (
        "confused",
        "on_pre_llm",
        "Skip",
    )


def test_on_error_fail_names_the_hook_and_skip_logs_and_goes_on(caplog) -> None:  # type: ignore[no-untyped-def]
    boom = scripted_hook(E.ON_PRE_TOOL_USE, raises=ValueError("bad"), name="strict")
    with pytest.raises(
        HookError, match=r"hook 'strict' failed at on_pre_tool_use: ValueError: bad"
    ):
        run_event([boom], E.ON_PRE_TOOL_USE, CALL)
    ctx = make_context()
    lenient = scripted_hook(
        E.ON_PRE_TOOL_USE, raises=ValueError("bad"), name="lenient", on_error="skip"
    )
    with caplog.at_level(logging.WARNING, logger="seamkit"):
        assert run_event([lenient], E.ON_PRE_TOOL_USE, CALL, ctx=ctx).flow == F.Continue()
    assert ctx.diagnostics[0].code == "hook_skipped" and ctx.diagnostics[0].hooks == ("lenient",)


def test_async_hook_timeout_is_cancelled_not_left_running() -> None:
    state = {"finished": False, "cancelled": False}

    class Slow:
        name = "slow"
        timeout_seconds = 0.05
        on_error = "skip"

        @seamkit.hookimpl
        async def on_pre_llm(self, ctx, request):  # type: ignore[no-untyped-def]
            try:
                await asyncio.sleep(5)
                state["finished"] = True
            except asyncio.CancelledError:
                state["cancelled"] = True
                raise

    ctx = make_context()
    started = time.perf_counter()
    assert run_event([Slow()], E.ON_PRE_LLM, REQUEST, ctx=ctx).flow == F.Continue()
    assert time.perf_counter() - started < 2
    assert state == {"finished": False, "cancelled": True}
    assert "timed out after 0.05s" in ctx.diagnostics[0].message


def test_sync_hook_with_timeout_runs_in_a_worker_thread_without_does_inline() -> None:
    threads = {}

    def record(key):  # type: ignore[no-untyped-def]
        return lambda ctx, request: threads.__setitem__(key, threading.current_thread())

    async def main() -> None:
        loop_thread = threading.current_thread()
        d = Dispatcher(
            hooks=[
                scripted_hook(E.ON_PRE_LLM, record("inline"), name="i"),
                scripted_hook(E.ON_PRE_LLM, record("thread"), name="t", timeout_seconds=5),
            ]
        )
        await d.dispatch(E.ON_PRE_LLM, make_context(), REQUEST)
        assert threads["inline"] is loop_thread
        assert threads["thread"] is not loop_thread

    asyncio.run(main())


def test_sync_hook_timeout_under_fail_raises() -> None:
    slow = scripted_hook(E.ON_PRE_LLM, None, name="slow", delay=0.5, timeout_seconds=0.05)
    with pytest.raises(HookError, match=r"timed out after 0\.05s"):
        run_event([slow], E.ON_PRE_LLM, REQUEST)


def test_match_globs_the_final_tool_name_on_tool_events() -> None:
    calls: list = []
    hooks = [
        scripted_hook(E.ON_PRE_TOOL_USE, None, name="mem", match=["memory_*"], calls=calls),
        scripted_hook(E.ON_PRE_TOOL_USE, None, name="web", match=["web_*", "http?"], calls=calls),
    ]
    run_event(hooks, E.ON_PRE_TOOL_USE, CALL)
    assert [n for n, _ in calls] == ["mem"]
    calls.clear()
    run_event(
        hooks, E.ON_INVALID_TOOL_CALL, CALL.model_copy(update={"name": "http2"}), "bad", ("a",)
    )
    assert calls == []  # the scripted hooks listen at on_pre_tool_use only


def test_configured_instance_is_dispatched_only_at_its_event() -> None:
    from typing import Literal

    class MultiConfig(HookConfig):
        kind: Literal["multi"] = "multi"

    calls = []

    class Multi:
        @seamkit.hookimpl
        def on_pre_llm(self, ctx, request):  # type: ignore[no-untyped-def]
            calls.append("pre_llm")

        @seamkit.hookimpl
        def on_iteration_end(self, ctx, messages):  # type: ignore[no-untyped-def]
            calls.append("iteration_end")

    entry = ConfiguredHook(MultiConfig(event=E.ON_ITERATION_END), Multi(), "multi#0")
    d = Dispatcher(hooks=[entry])
    assert d.hooks_at(E.ON_PRE_LLM) == ()
    asyncio.run(d.dispatch(E.ON_PRE_LLM, make_context(), REQUEST))
    asyncio.run(d.dispatch(E.ON_ITERATION_END, make_context(), ()))
    assert calls == ["iteration_end"]
    # code hook objects take part at every event they implement
    Dispatcher(hooks=[Multi()])
    assert [r.name for r in Dispatcher(hooks=[Multi()]).hooks_at(E.ON_PRE_LLM)] == ["Multi"]


def test_order_plugin_wide_then_configured_then_code() -> None:
    from typing import Literal

    pm = pluggy.PluginManager("seamkit")
    pm.add_hookspecs(seamkit.hookspecs)

    class P:
        def __init__(self, label: str) -> None:
            self.label = label

        @seamkit.hookimpl
        def on_iteration_end(self, ctx, messages):  # type: ignore[no-untyped-def]
            order.append(self.label)

    class Early(P):
        @seamkit.hookimpl(tryfirst=True)
        def on_iteration_end(self, ctx, messages):  # type: ignore[no-untyped-def]
            order.append(self.label)

    order: list[str] = []
    pm.register(P("plugin-1"), name="p1")
    pm.register(P("plugin-2"), name="p2")
    pm.register(Early("plugin-first"), name="p3")

    class C(HookConfig):
        kind: Literal["c"] = "c"

    configured = ConfiguredHook(C(event=E.ON_ITERATION_END), P("configured"), "c#0")
    d = Dispatcher(pm, [configured, P("code")])
    asyncio.run(d.dispatch(E.ON_ITERATION_END, make_context(), ()))
    pluggy_order: list[str] = []
    order_ref = order
    order = pluggy_order
    pm.hook.on_iteration_end(ctx=None, messages=())
    assert order_ref[:3] == pluggy_order == ["plugin-first", "plugin-2", "plugin-1"]
    assert order_ref[3:] == ["configured", "code"]


def test_impl_may_take_fewer_arguments_but_not_unknown_ones() -> None:
    class Few:
        @seamkit.hookimpl
        def on_post_tool_use(self, result):  # type: ignore[no-untyped-def]
            return F.RewriteResult(result.content.upper())

    assert run_event(
        [Few()], E.ON_POST_TOOL_USE, CALL, ToolResult(content="x")
    ).flow == F.RewriteResult("X")

    class Wrong:
        @seamkit.hookimpl
        def on_pre_llm(self, ctx, req):  # type: ignore[no-untyped-def]
            return None

    with pytest.raises(seamkit.PluginError, match="on_pre_llm takes no argument 'req'"):
        Dispatcher(hooks=[Wrong()])


def test_hook_stack_is_a_hook_and_flattens() -> None:
    inner = HookStack(
        [scripted_hook(E.ON_PRE_LLM, F.PatchRequest(RequestPatch(preamble="x")), name="inner")]
    )
    outer = HookStack([inner, scripted_hook(E.ON_PRE_LLM, None, name="after")])
    assert [r.name for r in Dispatcher(hooks=[outer]).hooks_at(E.ON_PRE_LLM)] == ["inner", "after"]
    ctx = make_context()
    assert asyncio.run(outer.on_pre_llm(ctx, REQUEST)) == F.PatchRequest(RequestPatch(preamble="x"))
    pm = pluggy.PluginManager("seamkit")
    pm.add_hookspecs(seamkit.hookspecs)
    pm.register(outer)  # a stack registers with pluggy like any hook object


def test_scratchpad_operations_are_atomic_across_threads() -> None:
    pad = seamkit.Scratchpad()

    def bump() -> None:
        for _ in range(2000):
            pad.update("n", lambda v: v + 1, default=0)

    workers = [threading.Thread(target=bump) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert pad.get("n") == 8000
    assert pad.insert("k", 1) is None and pad.contains("k") and "k" in pad
    assert pad.remove("k") == 1 and not pad.contains("k")


def test_hook_context_fields() -> None:
    from datetime import datetime

    fixed = datetime(2026, 1, 1, tzinfo=UTC)
    ctx = make_context(agent_name="a", turn=2, properties={"user": "u1"}, clock=lambda: fixed)
    assert (ctx.agent_name, ctx.turn, ctx.is_streaming, ctx.now()) == ("a", 2, False, fixed)
    assert ctx.action_context.get("user") == "u1" and len(ctx.run_id) == 32


# --- an async hook that blocks the event loop past its time-out ------------------------


class _Blocking:
    """An async hook that blocks the loop (``time.sleep``) past its time-out."""

    name = "sleepy"
    timeout_seconds = 0.05

    def __init__(self, on_error: str) -> None:
        self.on_error = on_error

    @seamkit.hookimpl
    async def on_pre_llm(self, ctx: object, request: object) -> object:
        time.sleep(0.2)  # cannot be cancelled: the loop never gets control
        return seamkit.flow.Terminate("too late to count")


def test_a_hook_that_blocked_the_loop_past_its_time_out_is_reported_and_timed_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent = seamkit.Agent(
        seamkit.testing.ScriptedModel([{"text": "hi"}]),
        hooks=[_Blocking("skip")],
        plugin_hooks=False,
    )
    with caplog.at_level(logging.WARNING, logger="seamkit"):
        result = agent.run_sync("go")
    assert result.outcome == seamkit.Completed()  # its Terminate came too late: dropped
    codes = {d.code: d for d in result.diagnostics}
    blocked = codes["hook_blocked"]
    assert blocked.hooks == ("sleepy",) and blocked.event == "on_pre_llm"
    assert re.search(r"blocked the event loop for 0\.[2-9]s at on_pre_llm", blocked.message)
    assert "timeout_seconds=0.05 could not be enforced" in blocked.message
    assert "timed out after 0.05s (it blocked the event loop" in codes["hook_skipped"].message
    assert any("blocked the event loop" in r.getMessage() for r in caplog.records)


def test_a_fail_closed_hook_that_blocked_the_loop_past_its_time_out_fails_the_run() -> None:
    agent = seamkit.Agent(
        seamkit.testing.ScriptedModel([{"text": "hi"}]),
        hooks=[_Blocking("fail")],
        plugin_hooks=False,
    )
    result = agent.run_sync("go")
    assert isinstance(result.outcome, seamkit.Failed)
    assert "hook 'sleepy' failed at on_pre_llm: timed out after 0.05s" in result.outcome.error
    assert "hook_blocked" in {d.code for d in result.diagnostics}
