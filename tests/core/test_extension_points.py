"""The kernel's extension points of this round, each through the public API:
schema tools with streamed chunks, run observers, the redactor, model
configs, manifest sections, and the review's run-time bugs."""

from __future__ import annotations

import asyncio
import base64
import itertools
from collections.abc import AsyncIterator
from typing import Any, Literal
from urllib.parse import quote

import pydantic
import pytest
import seamkit
from pydantic import BaseModel
from seamkit import stream as S
from seamkit.plugins import BuildContext, PluginInfo, add_plugin, load_plugins
from seamkit.testing import ScriptedModel

CANARY = "canary-7f3a9-secret"


def _call(name: str, arguments: str, call_id: str = "c1") -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": name, "arguments": arguments}]}


def _run(
    agent: seamkit.Agent, input: str, streamed: bool, **options: Any
) -> tuple[seamkit.RunResult, list[str], list[str]]:
    """Run ``agent`` (`Agent.run`, or `Agent.stream` when ``streamed``): its
    result, what the stream showed (each `TextDelta`, each
    `ToolOutputDelta`, each event's repr), and its `TextDelta` texts."""
    if not streamed:
        return agent.run_sync(input, **options), [], []

    async def go() -> list[Any]:
        return [e async for e in agent.stream(input, **options)]

    events = asyncio.run(go())
    assert isinstance(events[-1], S.RunFinished)
    shown = [e.text for e in events if isinstance(e, S.TextDelta | S.ToolOutputDelta)]
    deltas = [e.text for e in events if isinstance(e, S.TextDelta)]
    return events[-1].result, [*shown, *map(repr, events)], deltas


def test_a_schema_tool_validates_with_json_meaning_and_streams_its_chunks() -> None:
    schema = {
        "type": "object",
        "properties": {
            "topic": {"type": "string", "description": "What about"},
            "style": {"enum": ["dry", "pun"]},
            "depth": {"type": "object", "properties": {"n": {"type": "integer"}}},
            "note": {"type": ["string", "null"]},
        },
        "required": ["topic"],
        "additionalProperties": False,
    }
    seen: list[tuple[dict[str, Any], seamkit.ActionContext]] = []

    async def joke(arguments: dict[str, Any], ctx: seamkit.ActionContext) -> AsyncIterator[str]:
        seen.append((arguments, ctx))
        for part in ("a ", "b ", "c"):
            yield part

    tool = seamkit.Tool.from_schema("joke", "Tells a joke", schema, joke)
    assert tool.spec.parameters == schema  # the model sees it as given
    with pytest.raises(seamkit.InvalidToolCall):
        asyncio.run(tool.call({"topic": 5}))
    with pytest.raises(seamkit.InvalidToolCall):
        asyncio.run(tool.call({"topic": "x", "depth": {"n": "5"}}))  # "5" is no integer
    with pytest.raises(seamkit.InvalidToolCall):
        asyncio.run(tool.call({"topic": "x", "extra": 1}))
    model = ScriptedModel([_call("joke", '{"topic": "cats", "style": "pun"}'), {"text": "done"}])
    agent = seamkit.Agent(model, tools=[tool], plugin_hooks=False)

    async def streamed() -> list[Any]:
        return [e async for e in agent.stream("go", context={"user": "ann"})]

    events = asyncio.run(streamed())
    deltas = [e.text for e in events if isinstance(e, S.ToolOutputDelta)]
    assert deltas == ["a ", "b ", "c"]
    done = [e for e in events if isinstance(e, S.ToolCompleted)]
    assert done[0].result.content == "a b c"
    assert seen[0][0] == {"topic": "cats", "style": "pun"} and seen[0][1]["user"] == "ann"


def test_a_schema_that_is_not_json_schema_is_a_definition_error() -> None:
    async def call(arguments: dict[str, Any], ctx: seamkit.ActionContext) -> str:
        return ""

    with pytest.raises(seamkit.ToolDefinitionError):
        seamkit.Tool.from_schema("bad", "", {"type": "object", "properties": 5}, call)
    with pytest.raises(seamkit.ToolDefinitionError):
        seamkit.Tool.from_schema("bad", "", {"type": "string"}, call)


class _Observer:
    def __init__(self) -> None:
        self.events: list[Any] = []

    @seamkit.hookimpl
    def on_run_event(self, ctx: seamkit.HookContext, event: Any) -> None:
        self.events.append(event)


@pytest.mark.parametrize("streaming", [False, True])
def test_an_observer_sees_every_start_with_its_end_in_run_and_stream(streaming: bool) -> None:
    @seamkit.tool
    def boom() -> str:
        """Fails."""
        raise RuntimeError("no")

    observer = _Observer()
    model = ScriptedModel([_call("boom", "{}"), {"text": "ok"}])
    agent = seamkit.Agent(model, tools=[boom], hooks=[observer], plugin_hooks=False)

    async def go() -> None:
        if streaming:
            [e async for e in agent.stream("hi", session=None)]
        else:
            await agent.run("hi")

    asyncio.run(go())
    kinds = [type(e).__name__ for e in observer.events]
    assert kinds[0] == "RunStarted" and kinds[-1] == "RunFinished"
    assert kinds.count("ModelCallStarted") == kinds.count("ModelCallEnded") == 2
    assert kinds.count("ToolExecutionStart") == kinds.count("ToolExecutionEnd") == 1
    ended = next(e for e in observer.events if isinstance(e, S.ToolExecutionEnd))
    assert ended.result is not None and ended.result.raised and ended.duration >= 0
    started = next(e for e in observer.events if isinstance(e, S.ModelCallStarted))
    assert started.request.tools[0].name == "boom"  # the request as sent


def test_a_failing_model_call_still_ends_its_span() -> None:
    observer = _Observer()
    agent = seamkit.Agent(ScriptedModel([]), hooks=[observer], plugin_hooks=False)
    result = agent.run_sync("hi")
    assert result.outcome.kind == "failed"
    ended = [e for e in observer.events if isinstance(e, S.ModelCallEnded)]
    assert len(ended) == 1 and ended[0].error is not None and "ran out" in ended[0].error


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "stream"])
def test_a_failing_observer_changes_nothing_and_its_log_hides_secrets(
    caplog: pytest.LogCaptureFixture, streamed: bool
) -> None:
    class Leaky:
        @seamkit.hookimpl
        def on_run_event(self, ctx: seamkit.HookContext, event: object) -> None:
            raise RuntimeError(f"token {ctx.action_context.get('token').get_secret_value()}")

    agent = seamkit.Agent(ScriptedModel([{"text": "ok"}]), hooks=[Leaky()], plugin_hooks=False)
    result, shown, _ = _run(agent, "hi", streamed, context={"token": seamkit.Secret(CANARY)})
    assert result.outcome.kind == "completed" and result.output == "ok"
    assert "run observer" in caplog.text and "token ***" in caplog.text
    assert CANARY not in caplog.text
    assert not [text for text in shown if CANARY in text]


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "stream"])
def test_the_model_echoing_a_secret_shows_it_masked_in_every_delta(streamed: bool) -> None:
    """The model writes the secret (plain, then base64), streamed in pieces
    that cut it: no delta, no event and no result holds it."""
    encoded = base64.b64encode(CANARY.encode()).decode()
    text = f"the token is {CANARY}, or {encoded} encoded"
    cuts = [0, 15, 16, 22, 30, 40, 44, len(text)]
    deltas = [text[a:b] for a, b in itertools.pairwise(cuts)]
    model = ScriptedModel([{"text": text, "deltas": deltas}])
    agent = seamkit.Agent(model, plugin_hooks=False)
    result, shown, released = _run(agent, "hi", streamed, context={"token": seamkit.Secret(CANARY)})
    assert result.output == "the token is ***, or *** encoded"
    seen = [*shown, result.model_dump_json()]
    assert not [t for t in seen if CANARY in t or encoded in t or CANARY[:8] in t]
    if streamed:  # the pieces that could begin the secret waited; the rest streamed at once
        assert "".join(released) == result.output and len(released) > 1


def test_redact_masks_a_secret_and_its_encodings() -> None:
    secret = seamkit.Secret(CANARY)
    text = " | ".join(
        [
            CANARY,
            base64.b64encode(CANARY.encode()).decode(),
            base64.urlsafe_b64encode(CANARY.encode()).decode().rstrip("="),
            quote(CANARY + "/x", safe=""),
            repr(CANARY),
        ]
    )
    masked = seamkit.redact(text, [secret])
    assert CANARY not in masked
    assert base64.b64encode(CANARY.encode()).decode() not in masked
    assert masked.count("***") >= 4


def test_a_hook_raising_its_own_timeout_error_is_a_failure_not_a_crash() -> None:
    class Raises:
        on_error = "skip"

        @seamkit.hookimpl
        def on_completion(self, ctx: seamkit.HookContext, result: seamkit.RunResult) -> None:
            raise TimeoutError("mine")

        @seamkit.hookimpl
        def on_pre_llm(self, ctx: seamkit.HookContext, request: Any) -> None:
            raise TimeoutError("mine too")

    agent = seamkit.Agent(ScriptedModel([{"text": "hi"}]), hooks=[Raises()], plugin_hooks=False)
    result = agent.run_sync("x")  # never raises
    assert result.outcome.kind == "completed"
    messages = [d.message for d in result.diagnostics]
    assert any("TimeoutError: mine too" in m for m in messages), messages


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "stream"])
def test_a_secret_written_by_rewrite_args_is_scrubbed_from_the_tool_error(streamed: bool) -> None:
    @seamkit.tool
    def login(password: str) -> str:
        """Logs in."""
        raise ValueError(f"wrong password {password}")

    class Inject:
        @seamkit.hookimpl
        def on_pre_tool_use(self, ctx: seamkit.HookContext, call: seamkit.ToolCall) -> Any:
            return seamkit.flow.RewriteArgs({"password": seamkit.Secret(CANARY)})

    model = ScriptedModel([_call("login", '{"password": "x"}'), {"text": "ok"}])
    agent = seamkit.Agent(model, tools=[login], hooks=[Inject()], plugin_hooks=False)
    result, shown, _ = _run(agent, "go", streamed)
    assert CANARY not in result.model_dump_json()
    assert not [text for text in shown if CANARY in text]
    assert "***" in result.transcript[2].text


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "stream"])
def test_a_secret_a_schema_tool_rejects_is_scrubbed_from_the_invalid_call(
    caplog: pytest.LogCaptureFixture, streamed: bool
) -> None:
    async def pick(arguments: dict[str, Any], ctx: seamkit.ActionContext) -> str:
        return "never"

    schema = {"type": "object", "properties": {"key": {"enum": ["a", "b"]}}, "required": ["key"]}
    tool = seamkit.Tool.from_schema("pick", "Pick one.", schema, pick)

    class Inject:
        @seamkit.hookimpl
        def on_pre_tool_use(self, ctx: seamkit.HookContext, call: seamkit.ToolCall) -> Any:
            return seamkit.flow.RewriteArgs({"key": seamkit.Secret(CANARY)})

    model = ScriptedModel([_call("pick", '{"key": "a"}'), {"text": "ok"}])
    agent = seamkit.Agent(model, tools=[tool], hooks=[Inject()], plugin_hooks=False)
    result, shown, _ = _run(agent, "go", streamed)
    assert "is not one of" in result.transcript[2].text  # the model still learns why
    assert CANARY not in result.model_dump_json() and CANARY not in caplog.text
    assert not [text for text in shown if CANARY in text]


def test_action_agent_receives_the_running_agent_and_is_hidden() -> None:
    got: list[object] = []

    @seamkit.tool
    def who(action_agent: seamkit.Agent) -> str:
        """Names the agent."""
        got.append(action_agent)
        return action_agent.name

    assert "action_agent" not in who.parameters["properties"]
    model = ScriptedModel([_call("who", "{}"), {"text": "ok"}])
    agent = seamkit.Agent(model, name="me", tools=[who], plugin_hooks=False)
    result = agent.run_sync("go")
    assert got == [agent] and result.transcript[2].text == "me"


class _OptionsConfig(seamkit.ModelConfig):
    temperature: float = 0.5


class _Section(BaseModel):
    """A plugin-owned section."""

    url: str


class _EchoModel:
    def __init__(self, config: _OptionsConfig) -> None:
        self.config = config

    async def complete(self, request: seamkit.ModelRequest) -> seamkit.ModelTurn:
        return seamkit.ModelTurn(message=seamkit.Message.assistant(f"t={self.config.temperature}"))

    async def stream(self, request: seamkit.ModelRequest) -> AsyncIterator[Any]:
        yield await self.complete(request)


class _Plugin:
    @seamkit.hookimpl
    def register_models(self, register: Any) -> None:
        register("echo", lambda config, build: _EchoModel(config), config=_OptionsConfig)

    @seamkit.hookimpl
    def register_manifest_sections(self, register: Any) -> None:
        register("thing", _Section)


def _registry() -> seamkit.plugins.Registry:
    registry = load_plugins(entry_points=[])
    add_plugin(registry, _Plugin(), PluginInfo(name="echo"))
    assert registry.plugins["echo"].error is None
    return registry


def test_a_model_mapping_is_validated_by_the_providers_config() -> None:
    registry = _registry()
    app = {"name": "a", "model": {"provider": "echo", "name": "m", "temperature": 0.9}}
    agent = asyncio.run(seamkit.Agent.load(app, registry=registry))
    assert agent.run_sync("x").output == "t=0.9"
    short = asyncio.run(seamkit.Agent.load({"name": "a", "model": "echo:m"}, registry=registry))
    assert short.run_sync("x").output == "t=0.5"
    with pytest.raises(seamkit.ManifestError) as caught:
        seamkit.AppConfig.load(
            {"name": "a", "model": {"provider": "echo", "name": "m", "tmp": 1}}, registry=registry
        )
    assert "model.tmp" in caught.value.format() and "temperature" in caught.value.format()


def test_a_plugin_section_is_validated_reaches_factories_and_is_in_the_schema() -> None:
    registry = _registry()
    app = seamkit.AppConfig.load(
        {"name": "a", "model": "echo:m", "thing": {"url": "u"}}, registry=registry
    )
    section = app.section("thing")
    assert isinstance(section, _Section) and section.url == "u"
    with pytest.raises(seamkit.ManifestError) as caught:
        seamkit.AppConfig.load({"name": "a", "model": "echo:m", "thing": {}}, registry=registry)
    assert "thing.url" in caught.value.format()
    with pytest.raises(seamkit.ManifestError):
        seamkit.AppConfig.load({"name": "a", "model": "echo:m", "unknown": 1}, registry=registry)
    from seamkit._manifest import manifest_schema

    assert "thing" in manifest_schema(registry)["properties"]


def test_a_build_context_is_typed_and_public() -> None:
    build = BuildContext("app", _registry())
    assert build.section("thing") is None and len(build.tools) == 0


class _Source:
    def __init__(self) -> None:
        self.names = ["a"]

    async def current(self) -> list[seamkit.Tool]:
        return [seamkit.Tool(lambda n=n: n, name=n) for n in self.names]


def test_a_tool_source_is_asked_at_each_run_and_a_clash_keeps_the_old_map() -> None:
    source = _Source()

    class SourceConfig(seamkit.ToolConfig):
        kind: Literal["src"] = "src"

    async def resolve(config: SourceConfig, build: BuildContext) -> _Source:
        return source

    class Plugin:
        @seamkit.hookimpl
        def register_tool_kinds(self, register: Any) -> None:
            register(SourceConfig, resolve)

    registry = load_plugins(entry_points=[])
    add_plugin(registry, Plugin(), PluginInfo(name="src"))

    @seamkit.tool
    def b() -> str:
        """Code tool b."""
        return "b"

    app = {"name": "a", "model": "scripted:x", "tools": [{"kind": "src"}]}
    script = ScriptedModel([{"text": "1"}, {"text": "2"}, {"text": "3"}])
    agent = asyncio.run(seamkit.Agent.load(app, registry=registry, model=script, tools=[b]))
    assert sorted(agent.tools) == ["a", "b"]
    source.names = ["a", "c"]
    agent.run_sync("x")
    assert sorted(agent.tools) == ["a", "b", "c"]
    source.names = ["b"]  # clashes with the code tool
    result = agent.run_sync("x")
    assert sorted(agent.tools) == ["a", "b", "c"]
    assert any(d.code == "tools_not_refreshed" for d in result.diagnostics)


class _ToolsSection(BaseModel):
    """A section that adds tools."""

    names: list[str]


def _section_registry(source: _Source | None = None) -> seamkit.plugins.Registry:
    async def tools(section: _ToolsSection, build: BuildContext) -> Any:
        if source is not None:
            return source
        return [seamkit.Tool(lambda n=n: n, name=n) for n in section.names]

    class Plugin:
        @seamkit.hookimpl
        def register_manifest_sections(self, register: Any) -> None:
            register("extra", _ToolsSection, tools=tools)

    registry = load_plugins(entry_points=[])
    add_plugin(registry, Plugin(), PluginInfo(name="extra"))
    assert registry.plugins["extra"].error is None
    return registry


def test_a_section_adds_tools_and_a_clash_names_the_section() -> None:
    registry = _section_registry()
    app = {"name": "a", "model": "scripted:x", "extra": {"names": ["x", "y"]}}
    model = ScriptedModel([])
    agent = asyncio.run(seamkit.Agent.load(app, registry=registry, model=model))
    assert sorted(agent.tools) == ["x", "y"]
    assert agent.tools.origin("x") == "the manifest section 'extra'"

    @seamkit.tool
    def x() -> str:
        """Code tool x."""
        return "x"

    with pytest.raises(seamkit.ManifestError) as caught:
        asyncio.run(seamkit.Agent.load(app, registry=registry, model=model, tools=[x]))
    assert "the manifest section 'extra'" in caught.value.format()
    bare = {"name": "a", "model": "scripted:x"}
    without = asyncio.run(seamkit.Agent.load(bare, registry=registry, model=model))
    assert len(without.tools) == 0  # an absent section adds nothing


def test_a_section_tool_source_is_asked_at_each_run() -> None:
    source = _Source()
    registry = _section_registry(source)
    app = {"name": "a", "model": "scripted:x", "extra": {"names": []}}
    script = ScriptedModel([{"text": "1"}, {"text": "2"}])
    agent = asyncio.run(seamkit.Agent.load(app, registry=registry, model=script))
    assert list(agent.tools) == ["a"]
    source.names = ["a", "b"]
    agent.run_sync("x")
    assert sorted(agent.tools) == ["a", "b"]


class _PoliteSource(_Source):
    """A source that leaves out the names the agent has and says so once."""

    def __init__(self, taken: list[str]) -> None:
        super().__init__()
        self.taken = taken
        self.notes: list[seamkit.Diagnostic] = []
        self.said: set[str] = set()

    async def current(self) -> list[seamkit.Tool]:
        tools = await super().current()
        for t in tools:
            if t.name in self.taken and t.name not in self.said:
                self.said.add(t.name)
                self.notes.append(seamkit.Diagnostic(code="left_out", message=t.name))
        return [t for t in tools if t.name not in self.taken]

    def diagnostics(self) -> list[seamkit.Diagnostic]:
        notes, self.notes = self.notes, []
        return notes


def test_a_section_sees_the_entries_and_code_tools_and_its_source_says_what_it_left_out() -> None:
    seen: list[list[str]] = []
    source = _PoliteSource([])

    async def tools(section: _ToolsSection, build: BuildContext) -> Any:
        seen.append(sorted(build.tools))
        source.taken = list(build.tools)
        return source

    class Plugin:
        @seamkit.hookimpl
        def register_manifest_sections(self, register: Any) -> None:
            register("extra", _ToolsSection, tools=tools)

    registry = load_plugins(entry_points=[])
    add_plugin(registry, Plugin(), PluginInfo(name="extra"))

    @seamkit.tool
    def a() -> str:
        """Code tool a."""
        return "a"

    app = {"name": "a", "model": "scripted:x", "extra": {"names": []}}
    script = ScriptedModel([{"text": "1"}, {"text": "2"}])
    agent = asyncio.run(seamkit.Agent.load(app, registry=registry, model=script, tools=[a]))
    assert seen == [["a"]] and list(agent.tools) == ["a"]  # no clash: no ManifestError
    first = agent.run_sync("x")
    assert [(d.code, d.message) for d in first.diagnostics] == [("left_out", "a")]
    source.taken = []
    source.names = ["b"]
    second = agent.run_sync("x")
    assert second.diagnostics == () and sorted(agent.tools) == ["a", "b"]


def test_a_stream_ending_in_a_tool_result_streams_its_chunks_and_is_that_result() -> None:
    cleaned: list[str] = []
    kept: list[object] = []  # holds the stream, so only an explicit close can run its finally

    async def chunks() -> AsyncIterator[Any]:
        try:
            yield "part "
            yield seamkit.ToolResult.error("Error: Broken: the rest is lost")
            yield "never"
        finally:
            cleaned.append("closed")

    async def call(arguments: dict[str, Any], ctx: seamkit.ActionContext) -> AsyncIterator[Any]:
        stream = chunks()
        kept.append(stream)
        return stream

    tool = seamkit.Tool.from_schema("s", "Streams.", {"type": "object", "properties": {}}, call)
    model = ScriptedModel([_call("s", "{}"), {"text": "ok"}])
    agent = seamkit.Agent(model, tools=[tool], plugin_hooks=False)

    seen_closed: list[list[str]] = []

    async def streamed() -> list[Any]:
        events = []
        async for event in agent.stream("go"):
            if isinstance(event, S.ToolCompleted):
                seen_closed.append(list(cleaned))  # closed by now, not at the loop's end
            events.append(event)
        return events

    events = asyncio.run(streamed())
    assert seen_closed == [["closed"]]
    assert [e.text for e in events if isinstance(e, S.ToolOutputDelta)] == ["part "]
    done = next(e for e in events if isinstance(e, S.ToolCompleted))
    assert done.result.content == "Error: Broken: the rest is lost" and done.result.is_error
    assert cleaned == ["closed"]


def test_a_validator_sees_the_whole_manifest_being_loaded() -> None:
    seen: list[object] = []

    class Peek(seamkit.ToolConfig):
        kind: Literal["peek"] = "peek"

        @pydantic.model_validator(mode="after")
        def _look(self, info: pydantic.ValidationInfo) -> Peek:
            seen.append((info.context or {}).get("manifest", {}).get("extra"))
            return self

    async def resolve(config: Peek, build: BuildContext) -> list[seamkit.Tool]:
        return []

    class Plugin:
        @seamkit.hookimpl
        def register_tool_kinds(self, register: Any) -> None:
            register(Peek, resolve)

    registry = _section_registry()
    add_plugin(registry, Plugin(), PluginInfo(name="peek"))
    app = {"name": "a", "model": "scripted:x", "extra": {"names": []}, "tools": [{"kind": "peek"}]}
    seamkit.AppConfig.load(app, registry=registry)
    assert seen == [{"names": []}]
