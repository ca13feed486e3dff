"""seamkit-otel: each run as GenAI-convention spans (``invoke_agent``,
``chat``, ``execute_tool``), hook span events and the two GenAI client
metrics, through the plugin discovered from its installed distribution.

The providers are in-memory SDK ones given to the plugin with
`seamkit_otel.configure` (`exported`); a subprocess checks what the
environment alone does (``OTEL_SDK_DISABLED``, nothing configured).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from typing import Any

import pytest
import seamkit
import seamkit_otel
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode
from seamkit import flow
from seamkit.plugins import get_registry
from seamkit.testing import ScriptedModel

from tests.plugins.otel_helpers import Exported, exported

__all__ = ["exported"]

SEEN_SPANS: dict[str, int] = {}


@seamkit.tool
async def fetch_weather(city: str) -> str:
    """The weather in ``city`` (slowly)."""
    SEEN_SPANS["fetch_weather"] = trace.get_current_span().get_span_context().span_id
    await asyncio.sleep(0.05)
    return f"sunny in {city}"


@seamkit.tool
async def fetch_news(topic: str) -> str:
    """The news on ``topic`` (slowly)."""
    SEEN_SPANS["fetch_news"] = trace.get_current_span().get_span_context().span_id
    await asyncio.sleep(0.05)
    return f"nothing new on {topic}"


@seamkit.tool
def explode() -> str:
    """Always fails."""
    raise RuntimeError("kaboom")


class Cooler:
    """Lowers the temperature of every model call."""

    @seamkit.hookimpl
    def on_pre_llm(self, ctx: seamkit.HookContext) -> flow.PatchRequest:
        return flow.PatchRequest(seamkit.RequestPatch(temperature=0.25, max_tokens=300))


class Audit:
    """Watches every tool call and changes nothing."""

    @seamkit.hookimpl
    def on_pre_tool_use(self, ctx: seamkit.HookContext, call: seamkit.ToolCall) -> None:
        return None


def _model(*calls: tuple[str, str, dict[str, Any]]) -> ScriptedModel:
    first = {
        "tool_calls": [
            {"id": call_id, "name": name, "arguments": json.dumps(arguments)}
            for call_id, name, arguments in calls
        ]
    }
    return ScriptedModel([first, {"text": "Sunny, and no news at all."}], name="weather-script")


def _usage(span: ReadableSpan) -> tuple[int, int]:
    attributes = dict(span.attributes or {})
    tokens = attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]
    assert isinstance(tokens[0], int) and isinstance(tokens[1], int)
    return tokens[0], tokens[1]


def _tools(exported: Exported) -> dict[str, ReadableSpan]:
    return {
        str((t.attributes or {})["gen_ai.tool.name"]): t for t in exported.named("execute_tool")
    }


def _agent(model: ScriptedModel, **options: Any) -> seamkit.Agent:
    return seamkit.Agent(
        model,
        name="forecaster",
        tools=[fetch_weather, fetch_news, explode],
        hooks=[Cooler(), Audit()],
        settings={"tool_concurrency": 2},
        **options,
    )


def _run(agent: seamkit.Agent, *, streaming: bool = False, **options: Any) -> seamkit.RunResult:
    async def go() -> seamkit.RunResult:
        if not streaming:
            return await agent.run("Weather and news?", **options)
        events = [e async for e in agent.stream("Weather and news?", **options)]
        finished = events[-1]
        assert isinstance(finished, seamkit.stream.RunFinished)
        return finished.result

    return asyncio.run(go())


TWO_TOOLS = (("w1", "fetch_weather", {"city": "Oslo"}), ("n1", "fetch_news", {"topic": "tea"}))


def test_the_plugin_is_discovered_from_its_installed_distribution() -> None:
    info = get_registry().plugins["otel"]
    assert info.error is None and info.distribution == "seamkit-otel"
    assert "on_run_event" in info.hookimpls
    assert "telemetry" in get_registry().sections
    assert isinstance(seamkit_otel.plugin, seamkit_otel.OtelPlugin)


@pytest.mark.parametrize("streaming", [False, True], ids=["run", "stream"])
def test_a_run_is_an_agent_span_with_chat_and_tool_children(
    exported: Exported, streaming: bool
) -> None:
    result = _run(_agent(_model(*TWO_TOOLS)), streaming=streaming)
    assert result.outcome.kind == "completed"
    (run,) = exported.named("invoke_agent")
    chats = exported.named("chat")
    tools = exported.named("execute_tool")
    assert run.name == "invoke_agent forecaster" and run.parent is None
    assert [c.name for c in chats] == ["chat weather-script"] * 2
    assert sorted(t.name for t in tools) == [
        "execute_tool fetch_news",
        "execute_tool fetch_weather",
    ]
    for child in [*chats, *tools]:  # one trace, every span a child of the run's
        assert child.parent is not None and child.parent.span_id == run.context.span_id
        assert child.context.trace_id == run.context.trace_id
    attributes = dict(run.attributes or {})
    assert attributes["gen_ai.operation.name"] == "invoke_agent"
    assert attributes["gen_ai.agent.name"] == "forecaster"
    assert attributes["gen_ai.provider.name"] == "scripted"
    assert attributes["seamkit.run.outcome"] == "completed"
    assert attributes["seamkit.run.streaming"] is streaming
    totals = [sum(n) for n in zip(*map(_usage, chats), strict=True)]
    assert list(_usage(run)) == totals and totals[0] > 0 and totals[1] > 0
    assert "gen_ai.conversation.id" not in attributes
    assert run.status.status_code is StatusCode.UNSET


def test_a_chat_span_has_the_patched_request_usage_and_finish_reason(exported: Exported) -> None:
    _run(_agent(_model(*TWO_TOOLS)))
    first, second = exported.named("chat")
    a = dict(first.attributes or {})
    assert a["gen_ai.operation.name"] == "chat"
    assert a["gen_ai.provider.name"] == "scripted"
    assert a["gen_ai.request.model"] == "weather-script"
    assert a["gen_ai.request.temperature"] == 0.25  # after the hook's patch
    assert a["gen_ai.request.max_tokens"] == 300
    assert _usage(first)[0] > 0 and _usage(second)[1] > 0
    assert a["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert dict(second.attributes or {})["gen_ai.response.finish_reasons"] == ("stop",)
    assert first.kind is SpanKind.CLIENT


def test_prompt_cache_counts_are_on_the_chat_and_agent_spans_only_when_there_are_any(
    exported: Exported,
) -> None:
    usage = {"input_tokens": 1200, "output_tokens": 8, "cache_read_tokens": 1000}
    _run(_agent(ScriptedModel([{"text": "hi", "usage": usage}, {"text": "again"}])))
    (chat,) = exported.named("chat")
    (run,) = exported.named("invoke_agent")
    for span in (chat, run):
        a = dict(span.attributes or {})
        assert a["gen_ai.usage.input_tokens"] == 1200
        assert a["gen_ai.usage.cache_read.input_tokens"] == 1000
        assert "gen_ai.usage.cache_creation.input_tokens" not in a  # none written


def test_concurrent_tool_spans_overlap_and_each_is_current_in_its_tool(exported: Exported) -> None:
    SEEN_SPANS.clear()
    _run(_agent(_model(*TWO_TOOLS)))
    tools = {
        dict(t.attributes or {})["gen_ai.tool.name"]: t for t in exported.named("execute_tool")
    }
    weather, news = tools["fetch_weather"], tools["fetch_news"]
    assert dict(weather.attributes or {})["gen_ai.tool.call.id"] == "w1"
    assert dict(weather.attributes or {})["gen_ai.tool.type"] == "function"
    assert weather.start_time is not None and news.start_time is not None
    assert weather.end_time is not None and news.end_time is not None
    assert weather.start_time < news.end_time and news.start_time < weather.end_time  # side by side
    assert {
        "fetch_weather": weather.context.span_id,
        "fetch_news": news.context.span_id,
    } == SEEN_SPANS


def test_a_failing_tool_is_an_error_span(exported: Exported) -> None:
    _run(_agent(_model(("x1", "explode", {}))))
    (span,) = exported.named("execute_tool")
    assert span.status.status_code is StatusCode.ERROR
    assert "kaboom" in (span.status.description or "")
    assert dict(span.attributes or {})["error.type"] == "RuntimeError"
    (run,) = exported.named("invoke_agent")
    assert run.status.status_code is StatusCode.UNSET  # the run itself completed


def test_a_failed_model_call_is_an_error_chat_span_and_a_failed_run(exported: Exported) -> None:
    class Broken(ScriptedModel):
        async def complete(self, request: seamkit.ModelRequest) -> seamkit.ModelTurn:
            raise ConnectionError("the provider is down")

    result = _run(_agent(Broken([{"text": "never"}], name="broken")))
    assert result.outcome.kind == "failed"
    (chat,) = exported.named("chat")
    assert chat.status.status_code is StatusCode.ERROR
    assert dict(chat.attributes or {})["error.type"] == "ConnectionError"
    (run,) = exported.named("invoke_agent")
    assert run.status.status_code is StatusCode.ERROR
    points = exported.metric_points()["gen_ai.client.operation.duration"]
    assert [p["attributes"].get("error.type") for p in points] == ["ConnectionError"]


def test_each_hook_event_is_a_span_event_with_its_flow_and_duration(exported: Exported) -> None:
    _run(_agent(_model(*TWO_TOOLS)))
    (run,) = exported.named("invoke_agent")
    events = [dict(e.attributes or {}) for e in run.events if e.name == "seamkit.hook"]
    pre_llm = [e for e in events if e["seamkit.hook.event"] == "on_pre_llm"]
    assert len(pre_llm) == 2
    assert pre_llm[0]["seamkit.hook.flow"] == "PatchRequest"
    assert "Cooler" in pre_llm[0]["seamkit.hook.names"][0]
    assert isinstance(pre_llm[0]["seamkit.hook.duration"], float)
    pre_tool = [e for e in events if e["seamkit.hook.event"] == "on_pre_tool_use"]
    assert len(pre_tool) == 2 and all(e["seamkit.hook.flow"] == "Continue" for e in pre_tool)


def test_a_session_is_the_conversation_id(exported: Exported, tmp_path: Any) -> None:
    agent = _agent(_model(*TWO_TOOLS), store=str(tmp_path / "s.sqlite"))
    _run(agent, session="chat-42")
    (run,) = exported.named("invoke_agent")
    assert dict(run.attributes or {})["gen_ai.conversation.id"] == "chat-42"


def test_the_metrics_are_token_usage_and_operation_duration(exported: Exported) -> None:
    _run(_agent(_model(*TWO_TOOLS)))
    points = exported.metric_points()
    usage = {p["attributes"]["gen_ai.token.type"]: p for p in points["gen_ai.client.token.usage"]}
    (run,) = exported.named("invoke_agent")
    assert (usage["input"]["sum"], usage["output"]["sum"]) == _usage(run)
    assert usage["input"]["count"] == 2
    assert usage["input"]["attributes"]["gen_ai.operation.name"] == "chat"
    assert usage["input"]["attributes"]["gen_ai.provider.name"] == "scripted"
    assert usage["input"]["attributes"]["gen_ai.request.model"] == "weather-script"
    (duration,) = points["gen_ai.client.operation.duration"]
    assert duration["count"] == 2 and duration["sum"] > 0


def test_the_current_span_is_the_runs_parent(exported: Exported) -> None:
    tracer = exported.tracer_provider.get_tracer("tests")

    async def go() -> int:
        with tracer.start_as_current_span("request") as outer:
            await _agent(_model(*TWO_TOOLS)).run("hi")
            return outer.get_span_context().span_id

    outer_id = asyncio.run(go())
    (run,) = exported.named("invoke_agent")
    assert run.parent is not None and run.parent.span_id == outer_id
    assert trace.get_current_span() is trace.INVALID_SPAN  # every attach was undone


def test_content_is_recorded_only_when_asked(
    exported: Exported, monkeypatch: pytest.MonkeyPatch
) -> None:
    _run(_agent(_model(*TWO_TOOLS)))
    content_keys = {
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
    }
    assert not any(content_keys & set(s.attributes or {}) for s in exported.finished())
    exported.spans.clear()
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    _run(_agent(_model(*TWO_TOOLS), preamble="Be brief."))
    first_chat = exported.named("chat")[0]
    attributes = dict(first_chat.attributes or {})
    messages = json.loads(str(attributes["gen_ai.input.messages"]))
    assert messages == [
        {"role": "user", "parts": [{"type": "text", "content": "Weather and news?"}]}
    ]
    assert json.loads(str(attributes["gen_ai.system_instructions"])) == [
        {"type": "text", "content": "Be brief."}
    ]
    (output,) = json.loads(str(attributes["gen_ai.output.messages"]))
    assert output["finish_reason"] == "tool_call"  # the conventions' spelling
    assert output["parts"][0] == {
        "type": "tool_call",
        "id": "w1",
        "name": "fetch_weather",
        "arguments": {"city": "Oslo"},
    }
    tools = {
        dict(t.attributes or {})["gen_ai.tool.name"]: t for t in exported.named("execute_tool")
    }
    weather = dict(tools["fetch_weather"].attributes or {})
    assert json.loads(str(weather["gen_ai.tool.call.arguments"])) == {"city": "Oslo"}
    assert weather["gen_ai.tool.call.result"] == "sunny in Oslo"


def _manifest(telemetry: dict[str, Any] | None) -> dict[str, Any]:
    manifest: dict[str, Any] = {
        "name": "forecaster",
        "model": "scripted:unused",
        "tools": [{"kind": "function", "ref": "tests.plugins.test_otel:fetch_weather"}],
    }
    if telemetry is not None:
        manifest["telemetry"] = telemetry
    return manifest


def _loaded_run(telemetry: dict[str, Any] | None, message: str) -> seamkit.RunResult:
    async def go() -> seamkit.RunResult:
        model = _model(("w1", "fetch_weather", {"city": "Oslo"}))
        async with await seamkit.Agent.load(_manifest(telemetry), model=model) as agent:
            return await agent.run(message)

    return asyncio.run(go())


def test_the_telemetry_section_turns_content_and_tracing_on_and_off(exported: Exported) -> None:
    _loaded_run({"capture_content": True, "redact_patterns": ["order-[0-9]+"]}, "about order-1234")
    first_chat = exported.named("chat")[0]
    text = str(dict(first_chat.attributes or {})["gen_ai.input.messages"])
    assert "about ***" in text and "order-1234" not in text  # the user's pattern
    exported.spans.clear()
    _loaded_run({"enabled": False}, "hi")
    assert exported.finished() == []


def test_a_bad_redact_pattern_is_a_manifest_error_naming_the_field() -> None:
    with pytest.raises(seamkit.ManifestError) as info:
        asyncio.run(seamkit.Agent.load(_manifest({"redact_patterns": ["sk-(unclosed"]})))
    text = info.value.format()
    assert "telemetry.redact_patterns" in text and "not a regular expression" in text


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


_RUN_AND_REPORT = """
import asyncio, json, sys
import seamkit
from seamkit.plugins import get_registry
from seamkit.testing import ScriptedModel
registry = get_registry()
agent = seamkit.Agent(ScriptedModel([{"text": "ok"}]), name="a")
result = asyncio.run(agent.run("hi"))
print(json.dumps({
    "output": result.output,
    "hookimpls": registry.plugins["otel"].hookimpls,
    "observers": len(agent.observers),
    "sections": sorted(registry.sections),
    "otel_imported": "opentelemetry" in sys.modules,
}))
"""


def test_with_otel_sdk_disabled_the_plugin_registers_no_run_hookimpl() -> None:
    done = _python(_RUN_AND_REPORT, OTEL_SDK_DISABLED="true")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["output"] == "ok" and report["hookimpls"] == [] and report["observers"] == 0
    assert "telemetry" in report["sections"]  # manifests with a telemetry section still load
    assert report["otel_imported"] is False


def test_with_nothing_configured_opentelemetry_is_never_imported() -> None:
    done = _python(_RUN_AND_REPORT)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["hookimpls"] == ["on_run_event"] and report["observers"] == 1
    assert report["otel_imported"] is False


@seamkit.tool
def echo_token(token: str) -> str:
    """Say the token back (careless)."""
    return f"used {token}"


@seamkit.tool(timeout_seconds=0.05)
async def slow() -> str:
    """Never in time."""
    await asyncio.sleep(5)
    return "late"


class GivesToken:
    """Writes a secret into the arguments of every ``echo_token`` call, and
    sends every model call to a bigger model."""

    @seamkit.hookimpl
    def on_pre_tool_use(self, ctx: seamkit.HookContext, call: seamkit.ToolCall) -> Any:
        if call.name == "echo_token":
            return flow.RewriteArgs({"token": seamkit.Secret("hook-written-s3cret")})
        return None

    @seamkit.hookimpl
    def on_pre_llm(self, ctx: seamkit.HookContext) -> flow.PatchRequest:
        return flow.PatchRequest(seamkit.RequestPatch(additional_params={"model": "big-model"}))


def test_a_secret_a_hook_writes_into_arguments_is_masked_in_what_the_tool_says(
    exported: Exported, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    model = _model(("e1", "echo_token", {"token": "x"}))
    agent = seamkit.Agent(model, tools=[echo_token], hooks=[GivesToken()])
    assert _run(agent).outcome.kind == "completed"
    everything = exported.everything()
    assert "used ***" in everything and "hook-written-s3cret" not in everything


def test_the_metrics_name_the_model_each_call_asked(exported: Exported) -> None:
    agent = seamkit.Agent(
        _model(*TWO_TOOLS), tools=[fetch_weather, fetch_news], hooks=[GivesToken()]
    )
    _run(agent)
    assert {c.name for c in exported.named("chat")} == {"chat big-model"}
    points = exported.metric_points()
    for name in ("gen_ai.client.token.usage", "gen_ai.client.operation.duration"):
        assert {p["attributes"]["gen_ai.request.model"] for p in points[name]} == {"big-model"}


def test_a_tool_time_out_is_error_type_timeout(exported: Exported) -> None:
    agent = seamkit.Agent(_model(("s1", "slow", {})), tools=[slow])
    _run(agent)
    (span,) = exported.named("execute_tool")
    assert dict(span.attributes or {})["error.type"] == "timeout"
    assert span.status.status_code is StatusCode.ERROR


_APP_SET_ITS_OWN = """
import asyncio, json
import seamkit
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from seamkit.testing import ScriptedModel
spans = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(spans))
trace.set_tracer_provider(provider)
agent = seamkit.Agent(ScriptedModel([{"text": "ok"}]), name="mine")
asyncio.run(agent.run("hi"))
print(json.dumps([s.name for s in spans.get_finished_spans()]))
"""


def test_an_applications_own_global_provider_wins_over_the_environment() -> None:
    done = _python(_APP_SET_ITS_OWN, OTEL_TRACES_EXPORTER="console", OTEL_METRICS_EXPORTER="none")
    assert done.returncode == 0, done.stderr
    names = json.loads(done.stdout.splitlines()[-1])
    assert sorted(names) == ["chat script", "invoke_agent mine"]
    assert '"name": "invoke_agent' not in done.stdout  # not also to the console


class Withhold:
    """A post-tool guard that stops the run on the weather (issue 28)."""

    name = "withhold"

    @seamkit.hookimpl
    def on_post_tool_use(
        self, ctx: seamkit.HookContext, call: seamkit.ToolCall, result: seamkit.ToolResult
    ) -> seamkit.flow.PostToolUseFlow:
        return seamkit.flow.Terminate("no weather") if "sunny" in result.content else None


@pytest.mark.parametrize("streaming", [False, True], ids=["run", "stream"])
def test_a_result_a_guard_withheld_is_in_no_span_even_with_content_capture(
    exported: Exported, monkeypatch: pytest.MonkeyPatch, streaming: bool
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    agent = seamkit.Agent(
        _model(("w1", "fetch_weather", {"city": "Oslo"})),
        name="forecaster",
        tools=[fetch_weather],
        hooks=[Withhold()],
    )
    result = _run(agent, streaming=streaming)
    assert result.outcome.kind == "terminated"
    spans = exported.finished()
    everything = json.dumps([dict(s.attributes or {}) for s in spans], default=str)
    everything += json.dumps([s.status.description for s in spans], default=str)
    everything += json.dumps(
        [[dict(e.attributes or {}) for e in s.events] for s in spans], default=str
    )
    assert "sunny" not in everything
    (tool,) = _tools(exported).values()
    assert dict(tool.attributes or {})["gen_ai.tool.call.result"].startswith("Result withheld")
