"""Events and hookspecs: one hookspec per event, with the design's argument names."""

from __future__ import annotations

import inspect

from seamkit import HookEvent, hookimpl, hookspecs
from seamkit._events import EVENTS

DESIGN_ARGS = {
    "on_request_start": ("ctx", "messages"),
    "on_pre_llm": ("ctx", "request"),
    "on_model_turn_finished": ("ctx", "turn"),
    "on_pre_tool_use": ("ctx", "call"),
    "on_post_tool_use": ("ctx", "call", "result"),
    "on_invalid_tool_call": ("ctx", "call", "error", "available_tools"),
    "on_iteration_end": ("ctx", "messages"),
    "on_completion": ("ctx", "result"),
}


def test_every_event_is_a_hookspec_with_the_design_arguments() -> None:
    assert {e.value for e in HookEvent} == set(DESIGN_ARGS)
    for event in HookEvent:
        spec = getattr(hookspecs, event.value)
        assert tuple(inspect.signature(spec).parameters) == DESIGN_ARGS[event.value]
        assert EVENTS[event].args == DESIGN_ARGS[event.value]
        assert hasattr(spec, "seamkit_spec")


def test_registration_hookspecs_exist() -> None:
    for name, args in {
        "register_hook_kinds": ("register",),
        "register_refresh_conditions": ("register",),
        "register_tool_kinds": ("register",),
        "register_models": ("register",),
        "register_commands": ("cli",),
    }.items():
        assert tuple(inspect.signature(getattr(hookspecs, name)).parameters) == args


def test_hookimpl_marks_for_the_seamkit_project() -> None:
    @hookimpl(tryfirst=True)
    def on_pre_llm(ctx, request):  # type: ignore[no-untyped-def]
        return None

    assert on_pre_llm.seamkit_impl["tryfirst"] is True  # type: ignore[attr-defined]
