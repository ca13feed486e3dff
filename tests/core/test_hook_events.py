"""A hook entry that names several events (``events: [a, b]``): its errors,
located; its equivalence with the entry written out once per event; the
kind's ``shared`` opt-in; and ``seamkit validate`` on it."""

from __future__ import annotations

import asyncio
import functools
import json
from pathlib import Path
from typing import Any, ClassVar, Literal

import jsonschema
import pytest
import seamkit
import seamkit_tool_call
from click.testing import CliRunner
from hypothesis import event, given, strategies as st
from seamkit import Agent, AppConfig, HookEvent, ManifestError, Message, RunResult
from seamkit._cli._group import cli
from seamkit.flow import RewriteArgs, RewriteMessages, RewriteResult
from seamkit.plugins import PluginInfo, add_plugin, load_plugins, reset_registry
from seamkit.testing import ScriptedModel, build_agent

# --- a guard-like kind on four events, and one that shares its instance -------------


class StampConfig(seamkit.HookConfig):
    """Leaves its text at every event it runs at; ``fail`` makes it raise."""

    kind: Literal["stamp"] = "stamp"
    text: str
    fail: bool = False


class Stamp:
    def __init__(self, config: StampConfig, build: Any) -> None:
        self.config = config

    def _check(self) -> None:
        if self.config.fail:
            raise RuntimeError(f"{self.config.text} failed")

    @seamkit.hookimpl
    def on_request_start(self, ctx: Any, messages: Any) -> Any:
        self._check()
        return RewriteMessages([*messages, Message.system(f"{self.config.text}@start")])

    @seamkit.hookimpl
    def on_pre_tool_use(self, ctx: Any, call: Any) -> Any:
        self._check()
        return RewriteArgs({"text": f"{call.arguments['text']}+{self.config.text}"})

    @seamkit.hookimpl
    def on_post_tool_use(self, ctx: Any, call: Any, result: Any) -> Any:
        self._check()
        return RewriteResult(f"{result.content}|{self.config.text}")

    @seamkit.hookimpl
    def on_completion(self, ctx: Any, result: Any) -> None:
        self._check()


STAMP_EVENTS = ("on_request_start", "on_pre_tool_use", "on_post_tool_use", "on_completion")


class TallyConfig(seamkit.HookConfig):
    kind: Literal["tally"] = "tally"
    default_on_error: ClassVar[Literal["skip", "fail"]] = "skip"


class SharedTallyConfig(seamkit.HookConfig):
    kind: Literal["shared_tally"] = "shared_tally"
    default_on_error: ClassVar[Literal["skip", "fail"]] = "skip"


class PreviewTallyConfig(seamkit.HookConfig):
    kind: Literal["preview_tally"] = "preview_tally"


class Tally:
    """Counts the events it sees; every instance built is kept in ``built``."""

    built: ClassVar[list[Tally]] = []

    def __init__(self, config: seamkit.HookConfig, build: Any) -> None:
        self.config = config
        self.seen: list[str] = []
        Tally.built.append(self)

    @seamkit.hookimpl
    def on_request_start(self, ctx: Any) -> None:
        self.seen.append("on_request_start")

    @seamkit.hookimpl
    def on_completion(self, ctx: Any) -> None:
        self.seen.append("on_completion")


class Plugin:
    @seamkit.hookimpl
    def register_hook_kinds(self, register: Any) -> None:
        register(StampConfig, Stamp, events=set(STAMP_EVENTS))
        tally_events = {"on_request_start", "on_completion"}
        register(TallyConfig, Tally, events=tally_events)
        register(SharedTallyConfig, Tally, events=tally_events, shared=True)
        register(
            PreviewTallyConfig, Tally, events={"on_request_start"}, preview_events={"on_completion"}
        )


@seamkit.tool
def echo(text: str) -> str:
    """Say it back."""
    return text


SCRIPT = [{"tool_calls": [{"name": "echo", "arguments": {"text": "hi"}}]}, {"text": "done"}]


def registry() -> seamkit.Registry:
    reg = load_plugins()
    add_plugin(reg, Plugin(), PluginInfo(name="stamps", module="stamps"))
    return reg


def problems(tmp_path: Path, hooks: str) -> list[str]:
    """The lines `ManifestError.format` gives for a manifest with these hooks."""
    path = tmp_path / "app.yaml"
    path.write_text("name: demo\nmodel: scripted:s.yaml\nhooks:\n" + hooks)
    with pytest.raises(ManifestError) as info:
        AppConfig.load(path, registry=registry())
    return [line.removeprefix(f"{path}:") for line in info.value.format().splitlines()]


# --- parsing and errors, located ---------------------------------------------------------


def test_an_events_entry_gives_one_config_per_event_in_its_place() -> None:
    app = AppConfig.load(
        {
            "name": "a",
            "model": "scripted:s.yaml",
            "hooks": [
                {"kind": "stamp", "event": "on_completion", "text": "a"},
                {"kind": "stamp", "events": ["on_post_tool_use", "on_request_start"], "text": "b"},
                {"kind": "stamp", "event": "on_request_start", "text": "c"},
            ],
        },
        registry=registry(),
    )
    assert [(h.event.value, getattr(h, "text", None)) for h in app.hooks] == [
        ("on_completion", "a"),
        ("on_post_tool_use", "b"),
        ("on_request_start", "b"),
        ("on_request_start", "c"),
    ]
    assert app.hook_entries == (0, 1, 1, 2)
    assert "events" not in app.hooks[1].model_fields_set


def test_event_and_events_together_say_what_to_write(tmp_path: Path) -> None:
    lines = problems(
        tmp_path,
        "  - kind: stamp\n    text: x\n    event: on_request_start\n"
        "    events: [on_post_tool_use]\n",
    )
    assert lines == [
        "7:13: hooks[0].events: give 'event' or 'events', not both",
        "  hint: for one event keep 'event: on_request_start'; for several write "
        "'events: [on_request_start, on_post_tool_use]' and remove 'event'",
    ]


def test_neither_event_nor_events_lists_what_the_kind_supports(tmp_path: Path) -> None:
    lines = problems(tmp_path, "  - kind: stamp\n    text: x\n")
    assert lines == [
        "4:5: hooks[0].event: this hook entry names no event",
        "  hint: add 'event: on_completion', or 'events: [...]' for several events; hook kind "
        "'stamp' supports: on_completion, on_post_tool_use, on_pre_tool_use, on_request_start",
    ]


def test_an_empty_events_list_is_an_error(tmp_path: Path) -> None:
    lines = problems(tmp_path, "  - kind: stamp\n    text: x\n    events: []\n")
    assert lines[0] == "6:13: hooks[0].events: 'events' lists no event"
    assert len(lines) == 2  # no second problem about the missing 'event'


def test_events_must_be_a_list(tmp_path: Path) -> None:
    lines = problems(tmp_path, "  - kind: stamp\n    text: x\n    events: on_completion\n")
    assert lines[0] == (
        "6:13: hooks[0].events: 'events' must be a list of event names, got \"on_completion\""
    )
    assert lines[1] == (
        "  hint: write 'events: [on_completion, ...]', or 'event: on_completion' for one event"
    )


def test_an_event_listed_twice_is_located(tmp_path: Path) -> None:
    lines = problems(
        tmp_path,
        "  - kind: stamp\n    text: x\n"
        "    events: [on_request_start, on_completion, on_request_start]\n",
    )
    assert lines == [
        "6:47: hooks[0].events[2]: event on_request_start is listed twice (also at events[0])",
        "  hint: list each event once",
    ]


def test_an_unsupported_event_is_located_and_lists_the_supported(tmp_path: Path) -> None:
    lines = problems(
        tmp_path,
        "  - kind: stamp\n    text: x\n    event: on_completion\n"
        "  - kind: stamp\n    text: y\n    events:\n      - on_request_start\n      - on_pre_llm\n",
    )
    assert lines == [
        "11:9: hooks[1].events[1]: hook kind 'stamp' does not support event on_pre_llm",
        "  hint: it supports: on_completion, on_post_tool_use, on_pre_tool_use, on_request_start",
    ]


def test_an_unknown_event_name_is_located(tmp_path: Path) -> None:
    lines = problems(tmp_path, "  - kind: stamp\n    text: x\n    events: [on_start]\n")
    assert lines[0].startswith("6:14: hooks[0].events[0]: Input should be 'on_request_start'")
    assert lines[0].endswith('got "on_start"')


def test_a_preview_event_in_events_needs_the_preview(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SEAMKIT_ENABLE_PREVIEW", raising=False)
    hooks = "  - kind: preview_tally\n    events: [on_request_start, on_completion]\n"
    lines = problems(tmp_path, hooks)
    assert lines == [
        "5:32: hooks[0].events[1]: event on_completion of kind 'preview_tally' is a preview",
        "  hint: set SEAMKIT_ENABLE_PREVIEW=1 to use preview kinds and events",
    ]
    monkeypatch.setenv("SEAMKIT_ENABLE_PREVIEW", "1")
    path = tmp_path / "app.yaml"
    app = AppConfig.load(path, registry=registry())
    assert [h.event for h in app.hooks] == ["on_request_start", "on_completion"]


def test_every_problem_of_several_entries_is_reported_in_order(tmp_path: Path) -> None:
    lines = problems(
        tmp_path,
        "  - kind: stamp\n    events: [on_request_start, on_completion]\n"
        "  - kind: stamp\n    text: y\n    events: []\n",
    )
    assert [line.split(": ")[1] for line in lines if not line.startswith(" ")] == [
        "hooks[0].text",
        "hooks[1].events",
    ]
    assert sum("hooks[0].text" in line for line in lines) == 1  # once, not once per event


def test_common_rules_apply_per_event(tmp_path: Path) -> None:
    """``match`` only on tool events, ``on_error: fail`` never on on_completion:
    each event of the entry is checked, and the message names it."""
    lines = problems(
        tmp_path,
        "  - kind: stamp\n    text: x\n    match: [echo]\n"
        "    events: [on_pre_tool_use, on_request_start]\n"
        "  - kind: stamp\n    text: y\n    on_error: fail\n"
        "    events: [on_post_tool_use, on_completion]\n",
    )
    assert lines[0] == (
        "6:12: hooks[0].match: 'match' is only allowed on tool events, not on on_request_start"
    )
    assert lines[2] == ("10:15: hooks[1].on_error: on_error 'fail' is not allowed on on_completion")


def test_on_error_defaults_and_time_outs_apply_per_event() -> None:
    async def go() -> Any:
        async with await build_agent(
            {
                "hooks": [
                    {
                        "kind": "stamp",
                        "name": "guard",
                        "text": "g",
                        "timeout_seconds": 2,
                        "match": ["ech*"],
                        "events": ["on_pre_tool_use", "on_post_tool_use"],
                    },
                    {"kind": "stamp", "text": "x", "events": ["on_request_start", "on_completion"]},
                ]
            },
            plugins=[Plugin()],
            script=SCRIPT,
            tools=[echo],
        ) as agent:
            return {e: agent._dispatcher.hooks_at(HookEvent(e)) for e in STAMP_EVENTS}

    refs = asyncio.run(go())
    for tool_event in ("on_pre_tool_use", "on_post_tool_use"):
        (ref,) = refs[tool_event]
        assert (ref.name, ref.timeout_seconds, ref.on_error, ref.match) == (
            "guard",
            2,
            "fail",
            ("ech*",),
        )
    assert refs["on_request_start"][0].on_error == "fail"
    assert refs["on_completion"][0].on_error == "skip"  # on_completion's default
    assert refs["on_request_start"][0].name == refs["on_completion"][0].name == "stamp@hooks[1]"


def test_hooks_keep_their_order_at_each_event() -> None:
    async def go() -> Any:
        hooks = [
            {"kind": "stamp", "name": "a", "text": "a", "events": STAMP_EVENTS[::-1]},
            {"kind": "stamp", "name": "b", "text": "b", "event": "on_request_start"},
            {"kind": "stamp", "name": "c", "text": "c", "events": ["on_post_tool_use"]},
            {"kind": "stamp", "name": "d", "text": "d", "events": STAMP_EVENTS[:2]},
        ]
        async with await build_agent(
            {"hooks": hooks}, plugins=[Plugin()], script=SCRIPT, tools=[echo]
        ) as agent:
            return {e: agent.hooks_at(e) for e in STAMP_EVENTS}

    assert asyncio.run(go()) == {
        "on_request_start": ("a", "b", "d"),
        "on_pre_tool_use": ("a", "d"),
        "on_post_tool_use": ("a", "c"),
        "on_completion": ("a",),
    }


# --- equivalence with the entries written out ---------------------------------------------

_ENTRY = st.fixed_dictionaries(
    {
        "events": st.lists(st.sampled_from(STAMP_EVENTS), min_size=1, max_size=4, unique=True),
        "text": st.sampled_from(["p", "q", "r"]),
        "fail": st.booleans(),
        "on_error": st.sampled_from([None, None, "skip", "fail"]),
        "timeout_seconds": st.sampled_from([None, 3]),
        "match": st.sampled_from([None, None, None, ["echo"], ["other"]]),
        "single_as_event": st.booleans(),
    }
)


def _written(entries: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The hooks of the manifest with ``events:`` entries, and the same written
    out as one entry per event."""
    grouped: list[dict[str, Any]] = []
    separate: list[dict[str, Any]] = []
    for index, drawn in enumerate(entries):
        entry: dict[str, Any] = {"kind": "stamp", "name": f"h{index}", "text": drawn["text"]}
        for key in ("fail", "on_error", "timeout_seconds", "match"):
            if drawn[key] not in (None, False):
                entry[key] = drawn[key]
        events = drawn["events"]
        if len(events) == 1 and drawn["single_as_event"]:
            grouped.append({**entry, "event": events[0]})
        else:
            grouped.append({**entry, "events": events})
        separate.extend({**entry, "event": event} for event in events)
    return grouped, separate


@functools.cache
def _stamps_only() -> seamkit.Registry:
    """One registry for every example: the built-ins and the test kinds (the
    manifest model is derived once, and configs of both agents compare)."""
    reg = load_plugins(entry_points=[])
    add_plugin(reg, Plugin(), PluginInfo(name="stamps", module="stamps"))
    return reg


async def _outcome(hooks: list[dict[str, Any]]) -> Any:
    """What an agent with these hooks is and does: its hooks per event, their
    configs, and a run's result, or the problems that stopped it being built."""
    try:
        agent = await Agent.load(
            {"name": "a", "model": "scripted:inline", "hooks": hooks},
            model=ScriptedModel(SCRIPT),
            tools=[echo],
            registry=_stamps_only(),
        )
    except ManifestError as exc:  # the same problems, if at other locations
        return "invalid", frozenset(p.message for p in exc.problems)
    async with agent:
        refs = {e: agent._dispatcher.hooks_at(e) for e in HookEvent}
        assert agent.config is not None
        configs = [(c, c.model_fields_set, c.error_policy) for c in agent.config.hooks]
        result: RunResult = await agent.run("go")
    return refs, configs, result.transcript, result.outcome, result.output, result.diagnostics


@given(st.lists(_ENTRY, min_size=1, max_size=4))
def test_an_events_entry_builds_what_the_entries_written_out_build(entries: Any) -> None:
    grouped, separate = _written(entries)
    outcome = asyncio.run(_outcome(grouped))
    event("built" if outcome[0] != "invalid" else "invalid")
    assert outcome == asyncio.run(_outcome(separate))


# --- the tool_call kind checks each event through events: ----------------------------------


def test_tool_call_validates_against_each_event(tmp_path: Path) -> None:
    lines = problems(
        tmp_path,
        "  - kind: tool_call\n    tool_name: echo\n    frequency: once\n"
        "    events: [on_request_start, on_completion]\n"
        "  - kind: tool_call\n    tool_name: echo\n"
        "    arguments: {text: '{{ output }}'}\n"
        "    events: [on_request_start, on_completion]\n",
    )
    assert lines == [
        "4:5: hooks[0]: frequency is only for on_request_start: at on_completion the tool is "
        "called and nothing is injected",
        "8:5: hooks[1]: {{ output }} exists only at on_completion (for event on_request_start)",
    ]


def test_tool_call_through_events_injects_at_start_and_calls_at_completion() -> None:
    calls: list[str] = []

    @seamkit.tool
    def remember(text: str) -> str:
        """Keep a note."""
        calls.append(text)
        return f"noted {text}"

    async def go() -> RunResult:
        async with await build_agent(
            {
                "hooks": [
                    {
                        "kind": "tool_call",
                        "tool_name": "remember",
                        "arguments": {"text": "{{ user_message }}"},
                        "events": ["on_request_start", "on_completion"],
                    }
                ]
            },
            plugins=[seamkit_tool_call],
            script=[{"text": "done"}],
            tools=[remember],
        ) as agent:
            assert agent.hooks_at("on_request_start") == ("tool_call@hooks[0]",)
            assert agent.hooks_at("on_completion") == ("tool_call@hooks[0]",)
            return await agent.run("hello")

    result = asyncio.run(go())
    assert calls == ["hello", "hello"]
    assert [m.content for m in result.transcript if m.role == "tool"] == ["noted hello"]


def test_a_build_problem_of_an_events_entry_is_reported_once() -> None:
    with pytest.raises(ManifestError) as info:
        asyncio.run(
            build_agent(
                {
                    "hooks": [
                        {
                            "kind": "tool_call",
                            "tool_name": "nowhere",
                            "events": ["on_request_start", "on_completion"],
                        }
                    ]
                },
                plugins=[seamkit_tool_call],
                script=[{"text": "done"}],
            )
        )
    assert len(info.value.problems) == 1
    assert info.value.problems[0].location[:2] == ("hooks", 0)


# --- the shared opt-in --------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "instances"), [("tally", 2), ("shared_tally", 1)])
def test_instances_are_shared_only_when_the_kind_says_so(kind: str, instances: int) -> None:
    Tally.built.clear()

    async def go() -> None:
        async with await build_agent(
            {"hooks": [{"kind": kind, "events": ["on_request_start", "on_completion"]}]},
            plugins=[Plugin()],
            script=[{"text": "done"}],
        ) as agent:
            await agent.run("hello")

    asyncio.run(go())
    assert len(Tally.built) == instances
    if instances == 1:
        (shared,) = Tally.built
        assert shared.config.event == "on_request_start"  # the entry's first event
        assert shared.seen == ["on_request_start", "on_completion"]
    else:
        assert [t.seen for t in Tally.built] == [["on_request_start"], ["on_completion"]]
        assert [t.config.event for t in Tally.built] == ["on_request_start", "on_completion"]


def test_entries_written_separately_never_share_an_instance() -> None:
    Tally.built.clear()
    hooks = [
        {"kind": "shared_tally", "event": "on_request_start"},
        {"kind": "shared_tally", "event": "on_completion"},
    ]
    asyncio.run(build_agent({"hooks": hooks}, plugins=[Plugin()], script=[{"text": "done"}]))
    assert len(Tally.built) == 2


# --- the command line -----------------------------------------------------------------------


def test_validate_locates_an_unsupported_event_of_an_events_entry(tmp_path: Path) -> None:
    reset_registry(registry())
    app = tmp_path / "app.yaml"
    app.write_text(
        "name: demo\nmodel: scripted:s.yaml\nhooks:\n"
        "  - kind: stamp\n    text: x\n    events: [on_request_start, on_pre_llm]\n"
    )
    result = CliRunner().invoke(cli, ["validate", str(app)])
    assert result.exit_code == 1
    assert (
        f"{app}:6:32: hooks[0].events[1]: hook kind 'stamp' does not support event on_pre_llm"
        in result.output
    )
    assert "it supports: on_completion, on_post_tool_use" in result.output
    assert "Traceback" not in result.output


def test_validate_counts_the_hooks_an_events_entry_gives(tmp_path: Path) -> None:
    reset_registry(registry())
    app = tmp_path / "app.yaml"
    app.write_text(
        "name: demo\nmodel: scripted:s.yaml\nhooks:\n"
        "  - kind: stamp\n    text: x\n    events: [on_request_start, on_completion]\n"
    )
    (tmp_path / "s.yaml").write_text("- text: hi\n")
    result = CliRunner().invoke(cli, ["validate", str(app)])
    assert result.exit_code == 0, result.output
    assert "2 hooks from 1 entry)" in result.output


# --- the schema ----------------------------------------------------------------------------


def test_the_schema_describes_events_next_to_event() -> None:
    reset_registry(registry())
    result = CliRunner().invoke(cli, ["schema"])
    assert result.exit_code == 0, result.output
    schema = json.loads(result.output)
    stamp = schema["$defs"]["StampConfig"]
    properties = list(stamp["properties"])
    assert properties.index("events") == properties.index("event") + 1
    assert stamp["properties"]["events"] == {
        "description": stamp["properties"]["events"]["description"],
        "type": "array",
        "items": {"type": "string", "enum": sorted(STAMP_EVENTS)},
        "minItems": 1,
        "uniqueItems": True,
    }
    assert "event" not in stamp["required"]
    assert stamp["oneOf"] == [{"required": ["event"]}, {"required": ["events"]}]
    # What an editor checking against the schema says of the entries.
    validator = jsonschema.Draft202012Validator(schema)
    base = {"name": "a", "model": "scripted:s.yaml"}

    def accepted(entry: dict[str, Any]) -> bool:
        return validator.is_valid({**base, "hooks": [{"kind": "stamp", "text": "x", **entry}]})

    assert accepted({"event": "on_completion"})
    assert accepted({"events": ["on_completion", "on_request_start"]})
    assert not accepted({})
    assert not accepted({"event": "on_completion", "events": ["on_request_start"]})
    assert not accepted({"events": []})
    assert not accepted({"events": ["on_completion", "on_completion"]})
    assert not accepted({"events": ["on_pre_llm"]})
