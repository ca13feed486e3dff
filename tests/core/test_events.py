"""The events table is the one place an event is declared: every other place
that spells an event out (its hookspec, `HookStack`'s method, the testing
kit's `Recorder`, its `seamkit.flow` alias, the dispatcher's argument
threading, the guide's event reference) agrees with it in every respect."""

from __future__ import annotations

import collections.abc
import inspect
import re
import typing
from pathlib import Path

import pytest
import seamkit
import seamkit.plugins
from seamkit import HookEvent, HookStack, flow, hookimpl, hookspecs
from seamkit._events import EVENTS, Composition, EventSpec
from seamkit.testing import Recorder

DESIGN_ARGS = {
    "on_request_start": ("ctx", "messages"),
    "on_pre_llm": ("ctx", "request"),
    "on_text_delta": ("ctx", "text", "final"),
    "on_model_turn_finished": ("ctx", "turn"),
    "on_pre_tool_use": ("ctx", "call"),
    "on_post_tool_use": ("ctx", "call", "result"),
    "on_invalid_tool_call": ("ctx", "call", "error", "available_tools"),
    "on_iteration_end": ("ctx", "messages"),
    "on_output": ("ctx", "output"),
    "on_completion": ("ctx", "result"),
}
"""The design's table (shared/DESIGN.md): what the events table must keep."""


def _namespace() -> dict[str, object]:
    """The names the kernel's annotations use."""
    public = {name: getattr(seamkit, name) for name in seamkit.__all__}
    registration = {name: getattr(seamkit.plugins, name) for name in seamkit.plugins.__all__}
    return {
        **public,
        **registration,
        "F": flow,
        "Awaitable": collections.abc.Awaitable,
        "ObservedEvent": seamkit.stream.ObservedEvent,
    }


def _hints(fn: object) -> dict[str, object]:
    return typing.get_type_hints(fn, localns=_namespace())


def _declared(spec: EventSpec) -> dict[str, object]:
    """The table's argument types, evaluated."""
    ns = _namespace()
    return {name: eval(text, ns) for name, text in spec.params.items()}


def _alias_name(event: HookEvent) -> str:
    """``on_pre_tool_use`` → ``PreToolUseFlow``."""
    return "".join(word.title() for word in event.value.split("_")[1:]) + "Flow"


def test_the_table_lists_every_event_in_enum_order_with_the_design_arguments() -> None:
    assert list(EVENTS) == list(HookEvent)
    for event, spec in EVENTS.items():
        assert spec.event is event
        assert spec.args == DESIGN_ARGS[event.value]
        assert spec.args[0] == "ctx" and spec.params["ctx"] == "HookContext"


@pytest.mark.parametrize("event", list(HookEvent), ids=str)
def test_each_place_an_event_is_spelt_agrees_with_the_table(event: HookEvent) -> None:
    spec = EVENTS[event]
    declared = _declared(spec)
    alias = getattr(flow, _alias_name(event))

    # the flow alias: exported, and the table's flows are read from it
    assert _alias_name(event) in flow.__all__
    assert spec.accepts is alias
    assert set(typing.get_args(alias)) == {*spec.flows, type(None)}
    assert flow.Continue in spec.flows

    # the hookspec: names, types and return type as the table says
    fn = getattr(hookspecs, event.value)
    assert hasattr(fn, "seamkit_spec")
    assert tuple(inspect.signature(fn).parameters) == spec.args
    assert {
        name: param.annotation for name, param in inspect.signature(fn).parameters.items()
    } == dict(spec.params)
    hints = _hints(fn)
    assert hints.pop("return") == alias | collections.abc.Awaitable[alias]
    assert hints == declared
    assert spec.composition.value in fn.__doc__.lower() or (
        spec.composition is Composition.FIRST and "first non-continue" in fn.__doc__.lower()
    )
    for accepted in spec.flows:
        assert accepted.__name__ in fn.__doc__, (event, accepted)

    # HookStack: a hookimpl with the same arguments, returning the alias
    method = getattr(HookStack, event.value)
    assert hasattr(method, "seamkit_impl")
    assert inspect.iscoroutinefunction(method)
    assert tuple(inspect.signature(method).parameters)[1:] == spec.args
    stack_hints = _hints(method)
    assert stack_hints.pop("return") == alias
    assert stack_hints == declared

    # the testing kit's Recorder: a hookimpl taking exactly the arguments
    recorded = getattr(Recorder, event.value)
    assert hasattr(recorded, "seamkit_impl")
    assert tuple(inspect.signature(recorded).parameters) == ("self", *spec.args)

    # the dispatcher's threading: each rewriting flow is accepted here, knows
    # how to apply itself, and replaces an argument the event has
    for rewriting, arg in spec.rewrites.items():
        assert rewriting in spec.flows
        assert arg in spec.args and arg != "ctx"
        assert spec.threads[rewriting] == spec.args.index(arg)
        assert callable(rewriting.applied_to)
    if spec.composition is Composition.CHAIN:
        ending = {flow.Continue, flow.Skip, flow.Terminate, flow.Retry}
        assert set(spec.flows) - ending == set(spec.rewrites), "a chained flow must thread"
    elif spec.composition is Composition.HOLD:
        ending = {flow.Continue, flow.Hold, flow.Terminate}
        assert set(spec.flows) - ending == set(spec.rewrites), "a rewrite must thread"
    else:
        assert not spec.rewrites


def test_the_union_of_every_events_flows_is_flow() -> None:
    every = {f for spec in EVENTS.values() for f in spec.flows}
    assert every == set(typing.get_args(flow.Flow))


def test_the_event_reference_shows_the_tables_types_and_alias() -> None:
    from tests.test_event_reference import gen  # the generator as the docs test loads it

    text = gen.render()
    for event, spec in EVENTS.items():
        section = text.split(f"### `{event.value}`", 1)[1].split("\n### ", 1)[0]
        for name, written in spec.params.items():
            assert re.search(rf"\| `{name}` \| [^\n]*{re.escape(written)}", section), (
                event,
                name,
            )
        assert f"seamkit.flow.{_alias_name(event)}" in section


def test_registration_hookspecs_take_typed_register_protocols() -> None:
    expected = {
        "register_hook_kinds": seamkit.plugins.RegisterHookKind,
        "register_refresh_conditions": seamkit.plugins.RegisterRefreshCondition,
        "register_tool_kinds": seamkit.plugins.RegisterToolKind,
        "register_models": seamkit.plugins.RegisterModel,
        "register_manifest_sections": seamkit.plugins.RegisterSection,
        "register_session_stores": seamkit.plugins.RegisterStore,
    }
    for name, protocol in expected.items():
        fn = getattr(hookspecs, name)
        assert tuple(inspect.signature(fn).parameters) == ("register",)
        assert _hints(fn)["register"] is protocol
    assert tuple(inspect.signature(hookspecs.register_commands).parameters) == ("cli",)


def test_no_seam_or_register_callback_is_typed_any() -> None:
    seams = [getattr(hookspecs, e.value) for e in HookEvent]
    seams += [getattr(HookStack, e.value) for e in HookEvent]
    seams += [HookStack.dispatch, seamkit.testing.arun_event, seamkit.testing.run_event]
    protocols = [
        getattr(seamkit.plugins, name).__call__
        for name in seamkit.plugins.__all__
        if name.startswith("Register") and name != "Registrar"
    ]
    for fn in [*seams, *protocols]:
        for name, hint in _hints(fn).items():
            assert "Any" not in repr(hint), (fn, name, hint)
    assert typing.get_type_hints(flow.Dispatched)["flow"] == flow.Flow


def test_hookimpl_marks_for_the_seamkit_project() -> None:
    @hookimpl(tryfirst=True)
    def on_pre_llm(ctx, request):  # type: ignore[no-untyped-def]
        return None

    assert on_pre_llm.seamkit_impl["tryfirst"] is True  # type: ignore[attr-defined]


def test_the_guides_events_table_agrees_with_the_table() -> None:
    guide = (Path(__file__).parents[2] / "docs" / "guide.md").read_text()
    section = guide.split("\n## Events\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `on_")]
    assert len(rows) == len(EVENTS)
    modes = {Composition.FIRST: "first non-Continue", Composition.ALL: "all run"}
    for row, (event, spec) in zip(rows, EVENTS.items(), strict=True):
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[0] == f"`{event.value}`"
        assert cells[1] == f"`{', '.join(spec.args)}`"
        assert cells[2] == ", ".join(f.__name__ for f in spec.flows)
        assert cells[3] == f"`{_alias_name(event)}`"
        assert cells[4] == modes.get(spec.composition, spec.composition.value)
