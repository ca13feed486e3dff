"""The faults issue 17 names, each pinned by its own example (the laws in
tests/properties/test_run_laws.py generate the rest of each class): malformed
flows, bad model output, plugins that exit at import or build, and secrets in
what hooks, tools and models say."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any, ClassVar, Literal

import pytest
import seamkit
from click.testing import CliRunner
from seamkit import (
    Agent,
    FunctionCall,
    Message,
    MessageToolCall,
    ModelTurn,
    RequestPatch,
    Secret,
    SQLiteSessionStore,
    flow as F,
)
from seamkit._cli._group import cli
from seamkit.plugins import load_plugins, reset_registry
from seamkit.testing import ScriptedModel, build_agent

from tests.conftest import entry_point


@seamkit.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Played:
    """A model that plays the turns it is given (built any way), then ``done``."""

    def __init__(self, *turns: object) -> None:
        self.turns = list(turns)

    async def complete(self, request: Any) -> Any:
        return self.turns.pop(0) if self.turns else ModelTurn(message=Message.assistant("done"))

    async def stream(self, request: Any) -> Any:
        yield await self.complete(request)


def calls_turn(*calls: tuple[str, str, str]) -> ModelTurn:
    wire = [MessageToolCall(id=i, function=FunctionCall(name=n, arguments=a)) for i, n, a in calls]
    return ModelTurn(message=Message.assistant("", wire))


def tool_messages(result: seamkit.RunResult) -> list[tuple[str | None, str]]:
    return [(m.tool_call_id, m.text) for m in result.transcript if m.role == "tool"]


# --- malformed flows ------------------------------------------------------------------------


class Returns:
    """A code hook named ``bad`` returning one value at one event."""

    name = "bad"
    on_error = "skip"  # a malformed flow fails the run whatever the policy

    def __init__(self, event: str, value: object) -> None:
        def answer(ctx: Any) -> object:
            return value

        setattr(self, event, seamkit.hookimpl(answer))


@pytest.mark.parametrize(
    ("event", "flow", "says"),
    [
        ("on_request_start", F.RewriteMessages([1, 2, 3]), "messages[0] is int, not a Message"),
        ("on_request_start", F.RewriteMessages(None), "messages is None, not a list of Message"),
        ("on_pre_llm", F.PatchRequest(None), "patch is None, not a RequestPatch"),
        (
            "on_pre_llm",
            F.PatchRequest(RequestPatch(max_tokens="9")),
            "patch.max_tokens is str, not int",
        ),
        ("on_pre_tool_use", F.Skip(None), "reason is None, not str"),
        (
            "on_pre_tool_use",
            F.RewriteArgs({1: 2}),
            "arguments has a key of type int; its keys must be str",
        ),
        ("on_post_tool_use", F.RewriteResult(12345), "content is int, not str"),
        ("on_invalid_tool_call", F.Repair("add", [1]), "arguments is list, not a dict"),
        ("on_iteration_end", F.Terminate(b"x"), "reason is bytes, not str"),
    ],
)
def test_a_malformed_flow_fails_the_run_naming_the_hook_and_the_session_is_saved(
    event: str, flow: object, says: str, tmp_path: Path
) -> None:
    agent = Agent(
        ScriptedModel(
            [{"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}, {"name": "no"}]}]
        ),
        tools=[add],
        hooks=[Returns(event, flow)],
        plugin_hooks=False,
    )
    store = SQLiteSessionStore(tmp_path / "s.sqlite")
    result = asyncio.run(agent.run("go", session="s", store=store))  # never raises
    kind = type(flow).__name__
    assert result.outcome == seamkit.Failed(
        error=f"hook 'bad' returned a malformed {kind} at {event}: {says}"
    )
    stored = asyncio.run(store.load("s"))
    assert stored is not None and stored.transcript == result.transcript


def test_a_malformed_flow_is_a_hook_error_in_the_testing_kit_too() -> None:
    with pytest.raises(seamkit.HookError) as info:
        call = seamkit.ToolCall(id="c1", name="add")
        seamkit.testing.run_event(
            [Returns("on_pre_tool_use", F.Skip(None))], "on_pre_tool_use", call
        )
    assert (info.value.hook, info.value.event, info.value.flow) == (
        "bad",
        "on_pre_tool_use",
        "Skip",
    )


def test_retry_without_feedback_sends_the_default_text() -> None:
    agent = Agent(
        ScriptedModel([{"tool_calls": [{"name": "nope"}]}, {"text": "ok"}]),
        tools=[add],
        hooks=[Returns("on_invalid_tool_call", F.Retry())],
        plugin_hooks=False,
    )
    result = agent.run_sync("go")
    assert result.outcome == seamkit.Completed()
    assert tool_messages(result) == [("call_1_0", "unknown tool 'nope'. Available tools: add.")]


# --- model output ---------------------------------------------------------------------------


def test_arguments_nested_100000_deep_are_an_invalid_call() -> None:
    deep = '{"a": ' + "[" * 100_000 + "]" * 100_000 + ', "b": 1}'
    result = Agent(Played(calls_turn(("c1", "add", deep))), tools=[add]).run_sync("go")
    assert result.outcome == seamkit.Completed() and result.output == "done"
    [(call_id, text)] = tool_messages(result)
    assert call_id == "c1"
    assert text.startswith("invalid arguments for tool 'add': arguments are nested deeper than 64")


def test_the_argument_depth_limit_is_a_setting() -> None:
    nested = '{"a": 1, "b": 2, "c": ' + "[" * 80 + "]" * 80 + "}"

    @seamkit.tool
    def take(a: int, b: int, c: Any = None) -> int:
        """Take anything as c."""
        return a + b

    for limit, expected in ((64, "nested deeper than 64"), (100, "3")):
        agent = Agent(
            Played(calls_turn(("c1", "take", nested))),
            tools=[take],
            settings={"max_argument_depth": limit},
        )
        [(_, text)] = tool_messages(agent.run_sync("go"))
        assert expected in text
    with pytest.raises(ValueError):
        seamkit.Settings(max_argument_depth=201)


@pytest.mark.parametrize(
    "raw",
    ['{"a": NaN, "b": 1}', '{"a": ' + "1" * 5000 + ', "b": 1}', "[1]", "not json"],
)
def test_arguments_json_cannot_hold_are_an_invalid_call(raw: str) -> None:
    result = Agent(Played(calls_turn(("c1", "add", raw))), tools=[add]).run_sync("go")
    assert result.outcome == seamkit.Completed()
    [(_, text)] = tool_messages(result)
    assert text.startswith("invalid arguments for tool 'add': arguments ")


def test_an_empty_call_id_gets_a_fresh_one_and_the_result_is_kept() -> None:
    result = Agent(Played(calls_turn(("", "add", '{"a": 1, "b": 2}'))), tools=[add]).run_sync("go")
    assert result.outcome == seamkit.Completed()
    [call] = result.transcript[1].tool_calls or ()
    assert call.id.startswith("call_") and len(call.id) == 29
    assert tool_messages(result) == [(call.id, "3")]
    [note] = [d for d in result.diagnostics if d.code == "tool_call_id_assigned"]
    assert f"had no id; it was given the id {call.id!r}" in note.message


def test_duplicate_call_ids_are_made_unique() -> None:
    turn = calls_turn(("x", "add", '{"a": 1, "b": 2}'), ("x", "add", '{"a": 3, "b": 4}'))
    result = Agent(Played(turn), tools=[add]).run_sync("go")
    first, second = result.transcript[1].tool_calls or ()
    assert first.id == "x" and second.id != "x"
    assert tool_messages(result) == [("x", "3"), (second.id, "7")]


def test_valid_results_are_kept_when_invalid_calls_fail_the_run() -> None:
    valid = [(f"v{i}", "add", '{"a": 1, "b": 2}') for i in range(3)]
    invalid = [(f"i{i}", "nope", "{}") for i in range(4)]
    result = Agent(Played(calls_turn(*valid, *invalid)), tools=[add]).run_sync("go")
    assert result.outcome == seamkit.Failed(
        error="the model made 4 invalid tool calls; max_invalid_tool_calls is 3"
    )
    assert [i for i, _ in tool_messages(result)] == ["v0", "v1", "v2", "i0", "i1", "i2", "i3"]
    assert [t for _, t in tool_messages(result)][:3] == ["3", "3", "3"]


@pytest.mark.parametrize(
    "message",
    [
        Message.user("I am the model"),
        Message.tool("c1", "a result"),
        Message.system("obey"),
    ],
)
def test_a_model_turn_that_is_not_an_assistant_message_fails_the_run(message: Message) -> None:
    result = Agent(Played(ModelTurn(message=message)), tools=[add]).run_sync("go")
    assert result.outcome.kind == "failed"
    assert result.outcome.error.startswith(
        f"the model answered with a {message.role!r} message; a model turn is an assistant"
    )
    assert result.transcript == (Message.user("go"),)  # not accepted into the transcript


@pytest.mark.parametrize("turn", [None, "text", {"role": "assistant"}])
def test_a_model_returning_something_else_fails_the_run(turn: object) -> None:
    result = Agent(Played(turn), tools=[add]).run_sync("go")
    assert result.outcome == seamkit.Failed(
        error=f"the model returned {type(turn).__name__}, not a ModelTurn (hint: a model's "
        "complete() returns, and its stream() ends with, a seamkit.ModelTurn)"
    )


# --- plugins that exit ----------------------------------------------------------------------


@pytest.fixture
def exiting_plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    (tmp_path / "skfault_exit.py").write_text("import sys\nsys.exit(3)\n")
    (tmp_path / "skfault_interrupt.py").write_text("raise KeyboardInterrupt\n")
    (tmp_path / "skfault_register.py").write_text(
        "import sys, seamkit\n"
        "@seamkit.hookimpl\n"
        "def register_hook_kinds(register):\n"
        "    sys.exit('no')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    return [
        entry_point("exit", "skfault_exit"),
        entry_point("interrupt", "skfault_interrupt"),
        entry_point("register", "skfault_register"),
    ]


def test_a_plugin_exiting_at_import_or_registration_is_a_load_error(
    exiting_plugins: list[Any], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="seamkit"):
        registry = load_plugins(entry_points=exiting_plugins)
    errors = {name: registry.plugins[name].error for name in ("exit", "interrupt", "register")}
    assert errors == {
        "exit": "import failed: SystemExit(3): the plugin called sys.exit()",
        "interrupt": "import failed: KeyboardInterrupt: the plugin raised it (or Ctrl-C was "
        "pressed) while it loaded",
        "register": "registration failed: SystemExit('no'): the plugin called sys.exit()",
    }
    assert registry.kind("tool", "function") is not None  # the rest loaded
    assert len([r for r in caplog.records if "failed to load" in r.getMessage()]) == 3


def test_seamkit_plugins_lists_a_plugin_that_exits(exiting_plugins: list[Any]) -> None:
    reset_registry(load_plugins(entry_points=exiting_plugins))
    done = CliRunner().invoke(cli, ["plugins", "--json"])
    assert done.exit_code == 0, done.output
    rows = {row["name"]: row for row in json.loads(done.output)}
    assert "SystemExit(3)" in rows["exit"]["error"]


def test_a_hook_factory_calling_sys_exit_is_a_build_error() -> None:
    class ExitConfig(seamkit.HookConfig):
        kind: Literal["exits"] = "exits"

    def factory(config: Any, build: Any) -> object:
        raise SystemExit(2)

    class Plugin:
        @seamkit.hookimpl
        def register_hook_kinds(self, register: Any) -> None:
            register(ExitConfig, factory, events={"on_pre_llm"})

    with pytest.raises(seamkit.ManifestError) as info:
        asyncio.run(
            build_agent(
                {"hooks": [{"kind": "exits", "event": "on_pre_llm"}]},
                plugins=[Plugin()],
                script=[{"text": "hi"}],
            )
        )
    assert info.value.format() == (
        "hooks[0]: hook kind 'exits' could not build this hook: SystemExit(2) "
        "(the factory called sys.exit())"
    )


# --- secrets in what the run writes -----------------------------------------------------------

HOOK_SECRET, CONTEXT_SECRET = "hook-s3cret-41", "context-s3cret-42"


class LeakConfig(seamkit.HookConfig):
    kind: Literal["leak"] = "leak"
    default_on_error: ClassVar[Literal["skip", "fail"]] = "skip"
    token: Secret[str]


class Leak:
    def __init__(self, config: LeakConfig, build: Any) -> None:
        self.token = config.token

    @seamkit.hookimpl
    def on_pre_llm(self, ctx: seamkit.HookContext) -> None:
        raise PermissionError(f"{self.token.get_secret_value()} refused")


class LeakPlugin:
    @seamkit.hookimpl
    def register_hook_kinds(self, register: Any) -> None:
        register(LeakConfig, Leak, events={"on_pre_llm"})


@pytest.mark.parametrize("on_error", ["skip", "fail"])
def test_a_hook_s_secret_never_reaches_the_log_the_diagnostic_or_the_outcome(
    on_error: str, caplog: pytest.LogCaptureFixture
) -> None:
    manifest = {
        "hooks": [
            {"kind": "leak", "event": "on_pre_llm", "token": HOOK_SECRET, "on_error": on_error}
        ]
    }

    async def go() -> seamkit.RunResult:
        async with await build_agent(
            manifest, plugins=[LeakPlugin()], script=[{"text": "hi"}]
        ) as agent:
            return await agent.run("go")

    with caplog.at_level(logging.DEBUG):
        result = asyncio.run(go())
    texts = [r.getMessage() for r in caplog.records] + [d.message for d in result.diagnostics]
    if on_error == "fail":
        texts.append(result.outcome.error)
        assert result.outcome.error.startswith(
            "hook 'leak@hooks[0]' failed at on_pre_llm: PermissionError: *** refused"
        )
    else:
        assert "PermissionError: *** refused" in result.diagnostics[0].message
        assert any("*** refused" in r.getMessage() for r in caplog.records)
    assert not any(HOOK_SECRET in t for t in texts)


def test_context_secrets_are_masked_in_outcomes_diagnostics_and_invalid_call_texts() -> None:
    class Noisy:
        name = "noisy"

        @seamkit.hookimpl
        def on_model_turn_finished(self, ctx: seamkit.HookContext, turn: Any) -> Any:
            token = ctx.action_context["token"].get_secret_value()
            ctx.diagnostics.append(seamkit.Diagnostic(code="mine", message=f"saw {token}"))
            return F.Terminate(f"stop {token}") if ctx.turn == 2 else None

    agent = Agent(
        Played(calls_turn(("c1", CONTEXT_SECRET, "{}")), ModelTurn(message=Message.assistant("x"))),
        tools=[add],
        hooks=[Noisy()],
        plugin_hooks=False,
    )
    result = agent.run_sync("go", context={"token": Secret(CONTEXT_SECRET)})
    assert result.outcome == seamkit.Terminated(
        reason="stop ***", hook="noisy", event="on_model_turn_finished"
    )
    assert [d.message for d in result.diagnostics if d.code == "mine"] == ["saw ***"] * 2
    assert tool_messages(result) == [("c1", "unknown tool '***'. Available tools: add.")]
