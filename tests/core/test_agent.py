"""The agent run: one drive loop for run and stream, atomic tool batches,
invalid calls, limits, cancellation."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest
import seamkit
from seamkit import Agent, Message, flow, stream as S
from seamkit.testing import Recorder, ScriptedModel, build_agent, stream_run


@seamkit.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@seamkit.tool(terminal=True)
def final_answer(answer: str) -> str:
    """Give the final answer."""
    return answer


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


_SIGNATURES: dict[str, Callable[..., Any]] = {
    "on_request_start": lambda self, ctx, messages: self.reply(ctx, messages),
    "on_pre_llm": lambda self, ctx, request: self.reply(ctx, request),
    "on_pre_tool_use": lambda self, ctx, call: self.reply(ctx, call),
    "on_post_tool_use": lambda self, ctx, call, result: self.reply(ctx, call, result),
    "on_invalid_tool_call": lambda self, ctx, call, error, available_tools: self.reply(
        ctx, call, error, available_tools
    ),
}


def Hook(event: str, answer: Any, name: str = "guard", **attrs: Any) -> object:
    """A code hook answering one event with a fixed flow (or a function of its args)."""

    def reply(self: Any, *args: Any) -> Any:
        return answer(*args) if callable(answer) else answer

    cls = type(
        "Hook", (), {"reply": reply, event: seamkit.hookimpl(_SIGNATURES[event]), "name": name}
    )
    hook = cls()
    for key, value in attrs.items():
        setattr(hook, key, value)
    return hook


def make_agent(
    script: list[dict[str, Any]], hooks: list[object] = (), **options: Any
) -> tuple[Agent, Recorder]:
    recorder = Recorder()
    options.setdefault("tools", [add, final_answer])
    agent = Agent(
        model=ScriptedModel(script), hooks=[*hooks, recorder], plugin_hooks=False, **options
    )
    return agent, recorder


def roles(result: seamkit.RunResult) -> list[str]:
    return [m.role for m in result.transcript]


# --- the corpus: each scenario runs both ways ----------------------------------------

SCENARIOS: dict[str, tuple[list[dict[str, Any]], Callable[[], list[object]], dict[str, Any]]] = {
    "text only": ([{"text": "hello", "deltas": ["hel", "lo"]}], lambda: [], {}),
    "one tool": ([{"tool_calls": [call("add", a=1, b=2)]}, {"text": "3"}], lambda: [], {}),
    "two tools": (
        [{"tool_calls": [call("add", a=1, b=2), call("add", a=3, b=4)]}, {"text": "3 and 7"}],
        lambda: [],
        {},
    ),
    "unknown tool then fixed": (
        [
            {"tool_calls": [call("sub", a=1)]},
            {"tool_calls": [call("add", a=1, b=1)]},
            {"text": "2"},
        ],
        lambda: [],
        {},
    ),
    "terminate before the model": (
        [{"text": "never"}],
        lambda: [Hook("on_pre_llm", flow.Terminate("closed"))],
        {},
    ),
    "rewrite at request start": (
        [{"text": "ok", "expect": {"last_user": "rewritten"}}],
        lambda: [Hook("on_request_start", flow.RewriteMessages([Message.user("rewritten")]))],
        {},
    ),
    "skip a tool": (
        [{"tool_calls": [call("add", a=1, b=2)]}, {"text": "skipped"}],
        lambda: [Hook("on_pre_tool_use", flow.Skip("not now"))],
        {},
    ),
    "rewrite args and result": (
        [{"tool_calls": [call("add", a=1, b=2)]}, {"text": "done"}],
        lambda: [
            Hook("on_pre_tool_use", flow.RewriteArgs({"a": 10, "b": 20}), name="args"),
            Hook(
                "on_post_tool_use",
                lambda ctx, c, r: flow.RewriteResult(r.content + "!"),
                name="result",
            ),
        ],
        {},
    ),
    "terminal tool": (
        [{"tool_calls": [call("final_answer", answer="42")]}, {"text": "never"}],
        lambda: [],
        {},
    ),
    "max turns": (
        [{"tool_calls": [call("add", a=1, b=1)]}] * 3,
        lambda: [],
        {"settings": {"max_turns": 2}},
    ),
    "repair": (
        [{"tool_calls": [call("plus", a=1, b=1)]}, {"text": "2"}],
        lambda: [Hook("on_invalid_tool_call", flow.Repair("add"))],
        {},
    ),
    "patched preamble": (
        [{"text": "ok"}],
        lambda: [Hook("on_pre_llm", flow.PatchRequest(seamkit.RequestPatch(preamble="be brief")))],
        {"preamble": "be long"},
    ),
}


def _run_both(name: str) -> tuple[Any, Any, Recorder, Recorder, Any]:
    script, hooks, options = SCENARIOS[name]
    a1, r1 = make_agent(script, hooks(), **options)
    a2, r2 = make_agent(script, hooks(), **options)
    plain = a1.run_sync("go")
    streamed = asyncio.run(stream_run(a2, "go"))
    return plain, streamed.result, r1, r2, streamed


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_run_and_stream_behave_the_same(name: str) -> None:
    plain, streamed, r1, r2, _ = _run_both(name)
    assert streamed is not None
    assert plain.transcript == streamed.transcript
    assert plain.outcome == streamed.outcome
    assert plain.output == streamed.output
    assert plain.usage == streamed.usage
    # on_text_delta is the one event that sees the stream's pieces (the
    # whole text, once, in a run that does not stream): the others agree
    assert [(c.event, c.turn, c.args) for c in r1.calls if c.event != "on_text_delta"] == [
        (c.event, c.turn, c.args) for c in r2.calls if c.event != "on_text_delta"
    ]
    assert {c.is_streaming for c in r1.calls} == {False}
    assert {c.is_streaming for c in r2.calls} == {True}


def test_the_corpus_outcomes() -> None:
    expected = {
        "text only": ("completed", "hello", ["user", "assistant"]),
        "one tool": ("completed", "3", ["user", "assistant", "tool", "assistant"]),
        "terminate before the model": ("terminated", None, ["user"]),
        "rewrite at request start": ("completed", "ok", ["user", "assistant"]),
        "terminal tool": ("completed", "42", ["user", "assistant", "tool"]),
        "max turns": ("max_turns", "", ["user", "assistant", "tool", "assistant", "tool"]),
    }
    for name, (kind, output, shape) in expected.items():
        plain = _run_both(name)[0]
        assert (plain.outcome.kind, plain.output, roles(plain)) == (kind, output, shape), name


def test_stream_events_in_order() -> None:
    _, _, _, _, streamed = _run_both("two tools")
    kinds = [type(e).__name__ for e in streamed.events if not isinstance(e, S.HookFired)]
    assert kinds == [
        "ToolCallEmitted",
        "ToolCallEmitted",
        "TurnFinished",
        "ToolExecutionStart",  # live, as each body starts
        "ToolExecutionStart",
        "ToolCompleted",  # committed together once the batch settled
        "ToolCompleted",
        "TextDelta",
        "TurnFinished",
        "RunFinished",
    ]
    results = [e.result.content for e in streamed.of(S.ToolCompleted)]
    assert results == ["3", "7"]
    text = _run_both("text only")[4]
    assert [e.text for e in text.of(S.TextDelta)] == ["hel", "lo"]


def test_skip_surfaces_a_result_without_execution_start() -> None:
    plain, _, recorder, _, streamed = _run_both("skip a tool")
    assert streamed.of(S.ToolExecutionStart) == []
    assert [e.result.content for e in streamed.of(S.ToolCompleted)] == ["not now"]
    assert "on_post_tool_use" not in recorder.events
    assert plain.transcript[2] == Message.tool("call_1_0", "not now")


def test_rewritten_call_is_the_one_executed_and_surfaced() -> None:
    plain, _, _, _, streamed = _run_both("rewrite args and result")
    (start,) = streamed.of(S.ToolExecutionStart)
    assert start.call.arguments == {"a": 10, "b": 20}
    assert plain.transcript[2].content == "30!"


def test_hooks_fire_in_the_documented_order() -> None:
    recorder = _run_both("one tool")[2]
    assert recorder.events == [
        "on_request_start",
        "on_pre_llm",
        "on_text_delta",  # the call's argument text
        "on_model_turn_finished",
        "on_pre_tool_use",
        "on_post_tool_use",
        "on_iteration_end",
        "on_pre_llm",
        "on_text_delta",  # the answer
        "on_model_turn_finished",
        "on_completion",
    ]
    turns = [c.turn for c in recorder.calls]
    assert turns == [0, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2]


# --- atomic batches ---------------------------------------------------------------


def test_sequential_terminate_never_starts_the_remaining_calls() -> None:
    ran: list[int] = []

    @seamkit.tool
    def work(n: int) -> int:
        ran.append(n)
        return n

    stopper = Hook(
        "on_post_tool_use",
        lambda ctx, c, r: flow.Terminate("enough") if c.arguments["n"] == 0 else None,
    )
    agent, _ = make_agent(
        [{"tool_calls": [call("work", n=0), call("work", n=1)]}], [stopper], tools=[work]
    )
    streamed = asyncio.run(stream_run(agent, "go"))
    result = streamed.result
    assert result is not None and ran == [0]
    assert result.outcome == seamkit.Terminated(
        reason="enough", hook="guard", event="on_post_tool_use"
    )
    # the first call started (live) and ran: a result is kept (issue 17),
    # but not the content the hook stopped (issue 28); the second never
    # started, so nothing answers it
    assert roles(result) == ["user", "assistant", "tool"]
    assert result.transcript[2] == Message.tool(
        "call_1_0", "Result withheld by guard: enough", is_error=True
    )
    (completed,) = streamed.of(S.ToolCompleted)
    assert completed.result.is_error and completed.result.content.startswith("Result withheld")
    assert [e.call.index for e in streamed.of(S.ToolExecutionStart)] == [0]
    assert [e.call.index for e in streamed.of(S.ToolCompleted)] == [0]


def test_concurrent_batch_drains_in_flight_drops_the_rest_and_reports_the_lowest_index() -> None:
    started: list[int] = []
    finished: list[int] = []

    @seamkit.tool
    async def work(n: int) -> int:
        started.append(n)
        await asyncio.sleep(0.05 if n == 0 else 0)
        finished.append(n)
        return n

    def guard(ctx: Any, c: seamkit.ToolCall) -> Any:
        return flow.Terminate(f"stop at {c.index}") if c.index in (1, 2) else None

    calls = [call("work", n=i) for i in range(5)]
    agent, _ = make_agent(
        [{"tool_calls": calls}],
        [Hook("on_pre_tool_use", guard)],
        tools=[work],
        settings={"tool_concurrency": 3},
    )

    async def go() -> Any:
        out = await stream_run(agent, "go")
        pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        return out, pending

    streamed, pending = asyncio.run(go())
    assert pending == []
    assert streamed.result.outcome == seamkit.Terminated(
        reason="stop at 1", hook="guard", event="on_pre_tool_use"
    )
    assert started == [0] and finished == [0]  # call 0 was in flight: drained, not cancelled
    assert 3 not in started and 4 not in started
    # call 0 ran: its result is kept (issue 17); the stopped calls have none
    assert roles(streamed.result) == ["user", "assistant", "tool"]
    assert [e.call.index for e in streamed.of(S.ToolCompleted)] == [0]


def test_concurrent_results_are_committed_in_call_order() -> None:
    @seamkit.tool
    async def slow(n: int) -> int:
        await asyncio.sleep(0.03 * (3 - n))
        return n

    agent, _ = make_agent(
        [{"tool_calls": [call("slow", n=i) for i in range(3)]}, {"text": "ok"}],
        tools=[slow],
        settings={"tool_concurrency": 3},
    )
    streamed = asyncio.run(stream_run(agent, "go"))
    assert [m.content for m in streamed.result.transcript if m.role == "tool"] == ["0", "1", "2"]
    assert [e.call.index for e in streamed.of(S.ToolCompleted)] == [0, 1, 2]


def test_a_failing_tool_is_an_error_the_model_sees() -> None:
    @seamkit.tool
    def boom() -> str:
        raise RuntimeError("disk full")

    agent, _ = make_agent([{"tool_calls": [call("boom")]}, {"text": "sorry"}], tools=[boom])
    result = agent.run_sync("go")
    assert result.outcome.kind == "completed"
    assert result.transcript[2].content == "Error: RuntimeError: disk full"


def test_a_fail_closed_hook_fails_the_run_and_skip_records_a_diagnostic() -> None:
    def broken(ctx: Any, c: Any) -> Any:
        raise ValueError("bad hook")

    agent, recorder = make_agent(
        [{"tool_calls": [call("add", a=1, b=1)]}, {"text": "x"}],
        [Hook("on_pre_tool_use", broken)],
    )
    result = agent.run_sync("go")
    assert result.outcome.kind == "failed"
    assert "hook 'guard' failed at on_pre_tool_use: ValueError: bad hook" in result.outcome.error
    assert recorder.events[-1] == "on_completion"
    agent, _ = make_agent(
        [{"tool_calls": [call("add", a=1, b=1)]}, {"text": "x"}],
        [Hook("on_pre_tool_use", broken, on_error="skip")],
    )
    result = agent.run_sync("go")
    assert result.outcome.kind == "completed"
    assert [d.code for d in result.diagnostics] == ["hook_skipped"]


# --- invalid calls -------------------------------------------------------------------


def test_invalid_calls_continue_then_fail_past_the_limit() -> None:
    script = [{"tool_calls": [call("nope")]}] * 3 + [{"text": "never"}]
    agent, recorder = make_agent(script, settings={"max_invalid_tool_calls": 2})
    result = agent.run_sync("go")
    assert result.outcome == seamkit.Failed(
        error="the model made 3 invalid tool calls; max_invalid_tool_calls is 2"
    )
    first_error = result.transcript[2]
    assert first_error.content == "unknown tool 'nope'. Available tools: add, final_answer."
    invalid = [c for c in recorder.calls if c.event == "on_invalid_tool_call"]
    assert invalid[0].args[1:] == ("unknown tool 'nope'", ("add", "final_answer"))


def test_bad_json_and_schema_failures_are_invalid_calls() -> None:
    script = [
        {"tool_calls": [{"name": "add", "arguments": "{not json"}]},
        {"tool_calls": [call("add", a="x", b=1)]},
        {"text": "gave up"},
    ]
    agent, _ = make_agent(script)
    result = agent.run_sync("go")
    tool_texts = [m.content for m in result.transcript if m.role == "tool"]
    assert tool_texts[0].startswith(
        "invalid arguments for tool 'add': arguments are not valid JSON"
    )
    assert tool_texts[1].startswith("invalid arguments for tool 'add': a: Input should be a valid")
    assert result.outcome.kind == "completed"


@pytest.mark.parametrize(
    ("answer", "outcome", "tool_text"),
    [
        (flow.Retry("use add"), "completed", "use add"),
        (flow.Skip("skipped it"), "completed", "skipped it"),
        (flow.Terminate("stop"), "terminated", None),
        (flow.Fail("broken"), "failed", None),
    ],
)
def test_invalid_call_flows(answer: Any, outcome: str, tool_text: str | None) -> None:
    agent, _ = make_agent(
        [{"tool_calls": [call("nope")]}, {"text": "ok"}], [Hook("on_invalid_tool_call", answer)]
    )
    result = agent.run_sync("go")
    assert result.outcome.kind == outcome
    tools = [m.content for m in result.transcript if m.role == "tool"]
    assert tools == ([tool_text] if tool_text else [])
    if outcome == "terminated":
        assert result.outcome == seamkit.Terminated(
            reason="stop", hook="guard", event="on_invalid_tool_call"
        )
    if outcome == "failed":
        assert result.outcome == seamkit.Failed(error="broken")


def test_repair_goes_through_pre_tool_use() -> None:
    plain, _, recorder, _, _ = _run_both("repair")
    pre = [c for c in recorder.calls if c.event == "on_pre_tool_use"]
    assert pre[0].args[0].name == "add"
    assert plain.transcript[2].content == "2"


# --- limits and cancellation ------------------------------------------------------------


def test_tool_choice_is_checked_before_the_model_is_called() -> None:
    patch = seamkit.RequestPatch(tool_choice="add", active_tools=("final_answer",))
    agent, _ = make_agent([{"text": "never"}], [Hook("on_pre_llm", flow.PatchRequest(patch))])
    result = agent.run_sync("go")
    assert result.outcome == seamkit.Failed(
        error="tool_choice names 'add', which is not advertised (active_tools removed it) "
        "(hint: advertised tools: final_answer)"
    )
    assert result.usage.requests == 0


class SlowModel:
    def __init__(self) -> None:
        self.asked = asyncio.Event()  # set once the run has reached the model

    async def complete(self, request: Any) -> Any:
        self.asked.set()
        await asyncio.sleep(10)

    async def stream(self, request: Any) -> Any:
        self.asked.set()
        await asyncio.sleep(10)
        yield ""


def test_run_timeout_cancels_cleanly() -> None:
    recorder = Recorder()
    agent = Agent(
        model=SlowModel(),
        hooks=[recorder],
        settings={"run_timeout_seconds": 0.05},
        plugin_hooks=False,
    )

    async def go() -> Any:
        result = await agent.run("go")
        return result, [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]

    result, pending = asyncio.run(go())
    assert result.outcome == seamkit.Cancelled() and pending == []
    assert recorder.events[-1] == "on_completion"
    assert recorder.calls[-1].args[0].outcome == seamkit.Cancelled()


def test_cancelling_the_task_fires_on_completion_and_reraises() -> None:
    recorder = Recorder()
    model = SlowModel()
    agent = Agent(model=model, hooks=[recorder], plugin_hooks=False)

    async def go() -> None:
        task = asyncio.ensure_future(agent.run("go"))
        await model.asked.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    assert recorder.calls[-1].event == "on_completion"
    assert recorder.calls[-1].args[0].outcome == seamkit.Cancelled()


def test_closing_a_stream_early_cancels_the_run() -> None:
    recorder = Recorder()
    model = SlowModel()
    agent = Agent(model=model, hooks=[recorder], plugin_hooks=False)

    async def go() -> list[asyncio.Task[Any]]:
        events = agent.stream("go")
        consumer = asyncio.ensure_future(events.__anext__())
        await model.asked.wait()
        consumer.cancel()
        await asyncio.gather(consumer, return_exceptions=True)
        await events.aclose()
        return [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]

    assert asyncio.run(go()) == []
    assert recorder.calls[-1].args[0].outcome == seamkit.Cancelled()


def test_a_model_error_fails_the_run_with_its_message() -> None:
    agent, recorder = make_agent([])
    result = agent.run_sync("go")
    assert result.outcome.kind == "failed"
    assert "ran out after 0 turns" in result.outcome.error
    assert recorder.events[-1] == "on_completion"


def test_context_reaches_tools_and_hooks() -> None:
    @seamkit.tool
    def whoami(_user: str) -> str:
        return _user

    seen: list[Any] = []
    agent, _ = make_agent(
        [{"tool_calls": [call("whoami")]}, {"text": "ok"}],
        [Hook("on_pre_llm", lambda ctx, r: seen.append(ctx.action_context.get("user")))],
        tools=[whoami],
    )
    result = agent.run_sync("go", context={"user": "ann"})
    assert result.transcript[2].content == "ann" and seen == ["ann", "ann"]


# --- building from a manifest ------------------------------------------------------------


def test_agent_load_from_a_manifest_with_the_testing_kit() -> None:
    class Note:
        def __init__(self, config: Any, agent: Any) -> None:
            self.text = config.text

        @seamkit.hookimpl
        def on_request_start(self, ctx: Any, messages: Any) -> Any:
            return flow.RewriteMessages([*messages, Message.system(self.text)])

    from typing import Literal

    class NoteConfig(seamkit.HookConfig):
        kind: Literal["note"] = "note"
        text: str

    class Plugin:
        @seamkit.hookimpl
        def register_hook_kinds(self, register: Any) -> None:
            register(NoteConfig, Note, events={"on_request_start"})

    async def go() -> Any:
        async with await build_agent(
            {"hooks": [{"kind": "note", "event": "on_request_start", "text": "be kind"}]},
            plugins=[Plugin()],
            script=[{"text": "hi"}],
            tools=[add],
        ) as agent:
            assert agent.hooks_at("on_request_start") == ("note@hooks[0]",)
            return await agent.run("hello")

    result = asyncio.run(go())
    assert [m.text for m in result.transcript] == ["hello", "be kind", "hi"]


def test_a_bad_model_is_a_manifest_error() -> None:
    with pytest.raises(seamkit.ManifestError) as info:
        asyncio.run(Agent.load({"name": "x", "model": "nowhere:gpt"}))
    assert "model: unknown model provider 'nowhere'" in info.value.format()


# --- regressions found in review -----------------------------------------------------


def test_a_tool_raising_its_own_timeout_error_is_a_tool_error_not_a_time_out() -> None:
    @seamkit.tool
    def flaky() -> str:
        raise TimeoutError("upstream read timed out")

    agent, _ = make_agent([{"tool_calls": [call("flaky")]}, {"text": "ok"}], tools=[flaky])
    result = agent.run_sync("go")
    assert result.outcome.kind == "completed"
    assert result.transcript[2].content == "Error: TimeoutError: upstream read timed out"
    slow = seamkit.tool(timeout_seconds=5)(flaky.function)
    assert asyncio.run(slow.call({})).content == "Error: TimeoutError: upstream read timed out"


def test_a_model_raising_timeout_error_fails_the_run() -> None:
    class Broken:
        async def complete(self, request: Any) -> Any:
            raise TimeoutError("provider timed out")

        async def stream(self, request: Any) -> Any:
            raise TimeoutError("provider timed out")
            yield ""

    result = Agent(model=Broken(), plugin_hooks=False).run_sync("go")
    assert result.outcome == seamkit.Failed(error="TimeoutError: provider timed out")


def test_on_completion_runs_to_the_end_when_a_stream_is_closed_early() -> None:
    seen: list[str] = []

    class Saver:
        @seamkit.hookimpl
        async def on_completion(self, ctx: Any, result: Any) -> None:
            seen.append("save: start")
            await asyncio.sleep(0.05)
            seen.append("save: done")

    class Audit:
        @seamkit.hookimpl
        def on_completion(self, ctx: Any, result: Any) -> None:
            seen.append("audit")

    agent = Agent(
        model=ScriptedModel([{"text": "hi"}]), hooks=[Saver(), Audit()], plugin_hooks=False
    )

    async def go() -> list[Any]:
        async for event in agent.stream("go"):
            if isinstance(event, S.TurnFinished):
                break  # closes the stream while on_completion runs
        # it goes on in the background (0.05 s): wait for it, not a fixed time
        for _ in range(500):
            if not (left := [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]):
                break
            await asyncio.sleep(0.01)
        return left

    assert asyncio.run(go()) == []
    assert seen == ["save: start", "save: done", "audit"]


def test_a_run_stopped_mid_batch_leaves_a_history_the_next_run_can_send() -> None:
    agent, _ = make_agent(
        [{"tool_calls": [call("add", a=1, b=2)]}, {"text": "fine"}],
        [Hook("on_pre_tool_use", lambda ctx, c: flow.Terminate("no") if ctx.turn == 1 else None)],
    )
    first = agent.run_sync("go")
    assert roles(first) == ["user", "assistant"]  # nothing of the batch committed
    second = agent.run_sync("again", history=first.transcript)
    assert roles(second) == ["user", "assistant", "tool", "user", "assistant"]
    assert second.transcript[2] == Message.tool("call_1_0", seamkit._engine._agent.UNANSWERED)


def test_rewrite_args_may_hold_any_json_friendly_value() -> None:
    @seamkit.tool
    def day(when: dt.date) -> str:
        return when.isoformat()

    agent, _ = make_agent(
        [{"tool_calls": [call("day", when="2026-01-01")]}, {"text": "ok"}],
        [Hook("on_pre_tool_use", flow.RewriteArgs({"when": dt.date(2026, 1, 2)}))],
        tools=[day],
    )
    streamed = asyncio.run(stream_run(agent, "go"))
    (start,) = streamed.of(S.ToolExecutionStart)
    assert start.call.raw_arguments == '{"when":"2026-01-02"}'
    assert streamed.result.transcript[2].content == "2026-01-02"


def test_an_empty_context_is_kept_as_given() -> None:
    seen: list[str] = []
    agent, _ = make_agent(
        [{"text": "ok"}], [Hook("on_pre_llm", lambda ctx, r: seen.append(ctx.action_context))]
    )
    context = seamkit.ActionContext(context_id="req-42")
    agent.run_sync("go", context=context)
    assert seen[0] is context
