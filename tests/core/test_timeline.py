"""`seamkit.Timeline` and ``seamkit run --trace``: a run's spans from the
observer events, drawn at 80 columns."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import seamkit
from seamkit.testing import ScriptedModel

from tests.core.crashed import SESSION, crashed_session

ROOT = Path(__file__).resolve().parents[2]
HELLO = ROOT / "docs" / "examples" / "hello" / "app.yaml"
SEAMKIT = Path(sys.executable).parent / "seamkit"


@seamkit.tool
async def fetch_weather(city: str) -> str:
    """The weather in ``city`` (slowly)."""
    await asyncio.sleep(0.05)
    return f"sunny in {city}"


@seamkit.tool
async def fetch_news(topic: str) -> str:
    """The news on ``topic`` (slowly)."""
    await asyncio.sleep(0.05)
    return f"nothing new on {topic}"


@seamkit.tool
def explode() -> str:
    """Always fails."""
    raise RuntimeError("kaboom")


class Audit:
    """A hook that fires before every tool call and changes nothing."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    @seamkit.hookimpl
    def on_pre_tool_use(self, ctx: seamkit.HookContext, call: seamkit.ToolCall) -> None:
        self.seen.append(call.name)


def _calls(*calls: tuple[str, str, str]) -> dict[str, Any]:
    return {
        "tool_calls": [
            {"id": call_id, "name": name, "arguments": arguments}
            for call_id, name, arguments in calls
        ]
    }


def _two_concurrent_tools() -> ScriptedModel:
    return ScriptedModel(
        [
            _calls(
                ("w1", "fetch_weather", '{"city": "Oslo"}'),
                ("n1", "fetch_news", '{"topic": "tea"}'),
            ),
            {"text": "Sunny, and no news."},
        ],
        name="weather-script",
    )


def _traced_run(streaming: bool) -> tuple[seamkit.Timeline, seamkit.RunResult, Audit]:
    timeline = seamkit.Timeline(model_name="weather-script")
    audit = Audit()
    agent = seamkit.Agent(
        _two_concurrent_tools(),
        name="forecaster",
        tools=[fetch_weather, fetch_news],
        hooks=[audit, timeline],
        settings={"tool_concurrency": 2},
        plugin_hooks=False,
    )

    async def go() -> seamkit.RunResult:
        if not streaming:
            return await agent.run("Weather and news?")
        events = [e async for e in agent.stream("Weather and news?")]
        finished = events[-1]
        assert isinstance(finished, seamkit.stream.RunFinished)
        return finished.result

    return timeline, asyncio.run(go()), audit


@pytest.mark.parametrize("streaming", [False, True])
def test_a_run_with_two_concurrent_tools_and_a_hook_gives_nested_spans(streaming: bool) -> None:
    timeline, result, audit = _traced_run(streaming)
    assert result.outcome.kind == "completed"
    assert sorted(audit.seen) == ["fetch_news", "fetch_weather"]

    [run] = timeline.runs
    assert run.agent_name == "forecaster" and run.outcome == "completed"
    kinds = [s.kind for s in run.spans]
    assert kinds[0] == "run" and kinds.count("run") == 1
    assert kinds.count("turn") == 2
    assert kinds.count("model") == 2
    assert kinds.count("tool") == 2
    assert kinds.count("hook") == 2  # on_pre_tool_use, once per call

    root = run.spans[0]
    assert root.depth == 0 and root.start == 0.0 and root.error is None
    for span in run.spans[1:]:
        assert 0.0 <= span.start <= span.end <= root.end
        assert span.depth == (1 if span.kind == "turn" else 2)

    # Children follow their turn, in tree order.
    turn_of_next = 0
    for span in run.spans[1:]:
        if span.kind == "turn":
            turn_of_next = span.turn
        else:
            assert span.turn == turn_of_next
    turns = {s.turn: s for s in run.spans if s.kind == "turn"}
    for span in run.spans:
        if span.kind in ("model", "tool", "hook"):
            assert turns[span.turn].start <= span.start <= span.end <= turns[span.turn].end

    models = [s for s in run.spans if s.kind == "model"]
    assert [m.turn for m in models] == [1, 2]
    assert all(m.name == "weather-script" and m.usage is not None for m in models)

    tools = {s.name: s for s in run.spans if s.kind == "tool"}
    assert set(tools) == {"fetch_weather", "fetch_news"}
    assert tools["fetch_weather"].call_id == "w1" and tools["fetch_news"].call_id == "n1"
    weather, news = tools["fetch_weather"], tools["fetch_news"]
    assert weather.start < news.end and news.start < weather.end  # side by side
    assert weather.duration >= 0.04 and news.duration >= 0.04
    assert root.duration < weather.duration + news.duration  # not one after the other
    assert not any(s.error for s in run.spans)

    hooks = [s for s in run.spans if s.kind == "hook"]
    assert all(h.name == "on_pre_tool_use" and h.hooks == ("Audit",) for h in hooks)
    assert all(h.flow == "Continue" and h.turn == 1 for h in hooks)


def test_the_rendered_timeline_fits_80_columns_and_names_what_ran() -> None:
    timeline, _, _ = _traced_run(streaming=False)
    text = timeline.render(width=80)
    assert str(timeline) == text
    lines = text.splitlines()
    assert len(lines) == 1 + len(timeline.runs[0].spans)  # a header, one line per span
    assert all(len(line) <= 80 for line in lines), text
    assert lines[0].startswith("forecaster · run ")
    assert "completed" in lines[0] and "2 model calls" in lines[0] and "2 tool calls" in lines[0]
    assert lines[1].startswith("run ")
    assert any(line.startswith("  turn 1 ") for line in lines)
    assert any(line.startswith("    model weather-script") for line in lines)
    weather = next(line for line in lines if "tool fetch_weather" in line)
    news = next(line for line in lines if "tool fetch_news" in line)
    assert weather.startswith("    tool ") and news.startswith("    tool ")
    hooks = [line for line in lines if "hook on_pre_tool_use: Audit " in line]
    assert len(hooks) == 2 and not any("Continue" in line for line in hooks)
    for line in lines[1:]:
        assert line.endswith((" ms", " µs", " s")), line
        assert "▕" in line and line.rstrip().count("▏") == 1

    # Concurrent calls: both bars cover the middle of the run.
    def cells(line: str) -> str:
        return line[line.index("▕") + 1 : line.index("▏")]

    middle = len(cells(weather)) // 2
    assert cells(weather)[middle] == "█" and cells(news)[middle] == "█"


@pytest.mark.parametrize("width", [40, 60, 100, 132])
def test_every_width_is_respected_and_ascii_draws_plain_bars(width: int) -> None:
    timeline, _, _ = _traced_run(streaming=False)
    for ascii_only in (False, True):
        text = timeline.render(width, ascii=ascii_only)
        assert all(len(line) <= width for line in text.splitlines()), text
        if ascii_only:
            assert text.isascii() and "[" in text and "=" in text
    assert all(len(line) <= 40 for line in timeline.render(10).splitlines())


def test_a_failing_model_call_closes_its_span_as_an_error() -> None:
    timeline = seamkit.Timeline()
    agent = seamkit.Agent(ScriptedModel([]), hooks=[timeline], plugin_hooks=False)
    result = agent.run_sync("hi")
    assert result.outcome.kind == "failed"
    [run] = timeline.runs
    assert run.outcome == "failed"
    [model] = [s for s in run.spans if s.kind == "model"]
    assert model.error is not None and "ran out" in model.error
    assert model.end >= model.start and model.usage is None
    assert run.spans[0].error is not None
    text = timeline.render()
    assert "model call ✗" in text and all(len(line) <= 80 for line in text.splitlines())


def test_a_tool_that_raises_closes_its_span_as_an_error() -> None:
    timeline = seamkit.Timeline()
    model = ScriptedModel([_calls(("x1", "explode", "{}")), {"text": "sorry"}])
    agent = seamkit.Agent(model, tools=[explode], hooks=[timeline], plugin_hooks=False)
    result = agent.run_sync("hi")
    assert result.outcome.kind == "completed"
    [tool] = [s for s in timeline.runs[0].spans if s.kind == "tool"]
    assert tool.name == "explode" and tool.call_id == "x1" and tool.error == "raised"
    assert tool.end >= tool.start
    assert "tool explode ✗ raised" in timeline.render()


def test_a_hook_that_decides_shows_its_flow_and_a_skipped_call_has_no_tool_span() -> None:
    class Guard:
        @seamkit.hookimpl
        def on_pre_tool_use(self, ctx: seamkit.HookContext, call: seamkit.ToolCall) -> Any:
            return seamkit.flow.Skip("not today")

        @seamkit.hookimpl
        def on_completion(self, ctx: seamkit.HookContext, result: seamkit.RunResult) -> None:
            return None

    timeline = seamkit.Timeline()
    model = ScriptedModel([_calls(("x1", "explode", "{}")), {"text": "fine"}])
    agent = seamkit.Agent(model, tools=[explode], hooks=[Guard(), timeline], plugin_hooks=False)
    assert agent.run_sync("hi").outcome.kind == "completed"
    spans = timeline.runs[0].spans
    assert not any(s.kind == "tool" for s in spans)
    [guard] = [s for s in spans if s.name == "on_pre_tool_use"]
    assert guard.flow == "Skip" and guard.decided_by == "Guard" and guard.depth == 2
    [done] = [s for s in spans if s.name == "on_completion"]
    assert done.depth == 1 and spans[-1] == done  # beside the turns, last
    text = timeline.render()
    assert "hook on_pre_tool_use: Guard → Skip " in text
    assert "\n  hook on_completion: Guard " in text


def test_concurrent_runs_are_recorded_apart() -> None:
    timeline = seamkit.Timeline()
    agent = seamkit.Agent(
        ScriptedModel([{"text": "ok"}], each_run=True), hooks=[timeline], plugin_hooks=False
    )

    async def go() -> None:
        await asyncio.gather(agent.run("a"), agent.run("b"), agent.run("c"))

    asyncio.run(go())
    runs = timeline.runs
    assert len(runs) == 3 and len({r.run_id for r in runs}) == 3
    assert all([s.kind for s in r.spans] == ["run", "turn", "model"] for r in runs)
    assert timeline.render().count("\n\n") == 2
    timeline.clear()
    assert timeline.runs == [] and timeline.render() == ""


CANARY = "canary-tl-9c31e07a"


class Asker:
    """Asks for approval of every ``explode`` call."""

    @seamkit.hookimpl
    def on_pre_tool_use(
        self, ctx: seamkit.HookContext, call: seamkit.ToolCall
    ) -> seamkit.flow.PreToolUseFlow:
        if call.name != "explode":
            return None
        return seamkit.flow.RequireApproval("it blows up")


def _asking_agent(timeline: seamkit.Timeline, tmp_path: Path) -> seamkit.Agent:
    model = ScriptedModel(
        [
            _calls(("x1", "explode", "{}"), ("w1", "fetch_weather", '{"city": "Oslo"}')),
            {"text": "done"},
        ]
    )
    return seamkit.Agent(
        model,
        tools=[explode, fetch_weather],
        hooks=[Asker(), timeline],
        plugin_hooks=False,
        store=str(tmp_path / "s.sqlite"),
    )


@pytest.mark.parametrize(
    ("decision", "label"),
    [
        (seamkit.Approve(by="cli"), "approved explode (by cli)"),
        (seamkit.Reject("not now", by="key-42"), "rejected explode (by key-42): not now"),
        (seamkit.Edit({}, by="cli"), "edited explode (by cli)"),
    ],
    ids=["approve", "reject", "edit"],
)
def test_a_suspension_and_each_decision_show_with_who_decided(
    tmp_path: Path, decision: Any, label: str
) -> None:
    timeline = seamkit.Timeline()
    agent = _asking_agent(timeline, tmp_path)

    async def go() -> tuple[seamkit.RunResult, seamkit.RunResult]:
        first = await agent.run("go", session="s")
        return first, await agent.run(seamkit.Decisions({"x1": decision}), session="s")

    first, second = asyncio.run(go())
    assert first.outcome.kind == "suspended" and second.outcome.kind == "completed"
    suspended, resumed = timeline.runs
    assert suspended.outcome == "suspended" and resumed.outcome == "completed"
    [asked] = [s for s in suspended.spans if s.kind == "approval"]
    assert (asked.name, asked.call_id, asked.turn, asked.depth) == ("explode", "x1", 1, 2)
    assert asked.detail == "it blows up" and asked.decided_by == "Asker"
    assert asked.duration == 0.0 and asked.start == asked.end
    assert [s.name for s in suspended.spans if s.kind == "tool"] == ["fetch_weather"]
    # The continued run settles the waiting batch in the turn it belongs to
    # (the request's turn 1), then asks the model (turn 2).
    [decided] = [s for s in resumed.spans if s.kind == "decision"]
    assert (decided.name, decided.call_id, decided.flow) == ("explode", "x1", decision.action)
    assert decided.decided_by == decision.by and (decided.depth, decided.turn) == (2, 1)
    ran = [s for s in resumed.spans if s.kind == "tool"]
    if decision.action == "reject":
        assert ran == []
    else:  # it ran after the decision
        [tool] = ran
        assert tool.name == "explode" and tool.depth == 2 and tool.start >= decided.end
    text = timeline.render(width=100)
    assert "    approval asked: explode · it blows up " in text
    resumed_lines = text.split("\n\n")[1].splitlines()
    labels = [line.split("▕")[0].rstrip() for line in resumed_lines[1:]]
    assert labels[:3] == ["run", "  turn 1", f"    {label}"]
    assert labels[-2] == "  turn 2" and labels[-1].startswith("    model call · ")
    assert all(len(line) <= 100 for line in text.splitlines())
    assert "approval asked: explode - it blows up" in timeline.render(100, ascii=True)


def test_what_people_wrote_is_redacted_in_the_timeline(tmp_path: Path) -> None:
    timeline = seamkit.Timeline()
    agent = _asking_agent(timeline, tmp_path)
    context = {"key": seamkit.Secret(CANARY)}

    async def go() -> None:
        await agent.run("go", session="s", context=context)
        rejected = seamkit.Reject(f"no: {CANARY}", by=f"user {CANARY}")
        await agent.run(seamkit.Decisions({"x1": rejected}), session="s", context=context)

    asyncio.run(go())
    text = timeline.render(width=200)
    assert "rejected explode (by user ***): no: ***" in text
    assert CANARY not in text and CANARY not in repr(timeline.runs)


def test_a_run_continued_from_its_journal_shows_the_replay_and_the_call_in_doubt(
    tmp_path: Path,
) -> None:
    crashed = crashed_session(tmp_path)
    timeline = seamkit.Timeline()

    async def go() -> seamkit.RunResult:
        agent = await seamkit.Agent.load(crashed.app, store=crashed.store, hooks=[timeline])
        async with agent:
            return await agent.run(None, session=SESSION)

    result = asyncio.run(go())
    assert result.outcome.kind == "completed"
    [run] = timeline.runs
    [journal] = [s for s in run.spans if s.kind == "journal"]
    assert journal.depth == 1 and journal.detail == "1 turn, 1 result"
    [doubt] = [s for s in run.spans if s.kind == "in_doubt"]
    assert (doubt.name, doubt.call_id, doubt.turn, doubt.error) == ("charge", "k1", 1, "in doubt")
    assert not any(s.kind == "tool" for s in run.spans)  # nothing ran again
    assert [s.turn for s in run.spans if s.kind == "model"] == [2]  # turn 1 was reused
    labels = [line.split("▕")[0].rstrip() for line in timeline.render().splitlines()[1:]]
    assert labels == [
        "run",
        "  journal replayed · 1 turn, 1 result",
        "  turn 1",
        "    call charge ✗ in doubt",
        "  turn 2",
        "    model call · 29/11 tok",
    ]


def _seamkit(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["PYTHONIOENCODING"] = "utf-8"
    return subprocess.run(
        [str(SEAMKIT), *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=60,
        check=False,
    )


def test_seamkit_run_trace_prints_the_timeline_on_stderr() -> None:
    plain = _seamkit("run", str(HELLO), "What is 2 + 3?")
    traced = _seamkit("run", str(HELLO), "What is 2 + 3?", "--trace")
    assert plain.returncode == traced.returncode == 0, traced.stderr
    assert traced.stdout == plain.stdout and "2 + 3 = 5." in traced.stdout
    err = traced.stderr.splitlines()
    summary = next(i for i, line in enumerate(err) if line.startswith("[completed"))
    timeline = err[summary + 1 :]
    assert timeline[0].startswith("hello · run ") and "1 tool call" in timeline[0]
    assert all(len(line) <= 80 for line in err), traced.stderr
    labels = [line.split("▕")[0].rstrip() for line in timeline[1:]]
    assert labels == [
        "run",
        "  turn 1",
        "    model script.yaml · 3/0 tok",
        "    tool calc_add",
        "  turn 2",
        "    model script.yaml · 3/2 tok",
    ]
    assert "--trace" not in plain.stderr and "▕" not in plain.stderr
