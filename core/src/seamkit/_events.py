"""The eight seams: their names, arguments, accepted flows and composition
mode; and the pluggy markers of the ``seamkit`` project."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pluggy
from pluggy import HookimplOpts

from . import flow as F

__all__ = [
    "EVENTS",
    "OBSERVER",
    "PROJECT",
    "Composition",
    "EventSpec",
    "HookEvent",
    "hookimpl",
    "hookimpls_of",
    "hookspec",
]

PROJECT = "seamkit"
"""The pluggy project name, which is also the entry-point group plugins use."""

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)
"""Marks a function or method as a seamkit hookimpl (``@seamkit.hookimpl``)."""

OBSERVER = "on_run_event"
"""The hookspec of run observers (not a seam: it cannot change the run)."""

_PARSER = pluggy.PluginManager(PROJECT)
"""Only reads markers, with pluggy's own rules: nothing is registered in it."""


def hookimpls_of(obj: object) -> dict[str, tuple[Callable[..., Any], HookimplOpts]]:
    """Every attribute of ``obj`` marked ``@seamkit.hookimpl``, by the hookspec
    it implements (``specname`` honoured), with its pluggy options.

    The one way seamkit finds hookimpls: plugin modules, hook objects passed
    in code and hook objects built from manifest entries alike.
    """
    found: dict[str, tuple[Callable[..., Any], HookimplOpts]] = {}
    for attr in dir(obj):
        if attr.startswith("__"):
            continue
        opts = _PARSER.parse_hookimpl_opts(obj, attr)
        if opts is not None:
            found[opts.get("specname") or attr] = (getattr(obj, attr), opts)
    return found


class HookEvent(enum.StrEnum):
    """The named events of a run. Each value is also the name of a hookspec."""

    ON_REQUEST_START = "on_request_start"
    ON_PRE_LLM = "on_pre_llm"
    ON_MODEL_TURN_FINISHED = "on_model_turn_finished"
    ON_PRE_TOOL_USE = "on_pre_tool_use"
    ON_POST_TOOL_USE = "on_post_tool_use"
    ON_INVALID_TOOL_CALL = "on_invalid_tool_call"
    ON_ITERATION_END = "on_iteration_end"
    ON_COMPLETION = "on_completion"


class Composition(enum.StrEnum):
    """How the flows of several hooks at one event combine."""

    CHAIN = "chain"
    """Each hook sees what the previous produced; Skip and Terminate end the chain."""
    ACCUMULATE = "accumulate"
    """Every hook sees the baseline; patches merge in order; Terminate discards them."""
    FIRST = "first"
    """The first flow that is not Continue wins."""
    ALL = "all"
    """Every hook runs; failures are logged; the outcome never changes."""


@dataclass(frozen=True, slots=True)
class EventSpec:
    """What the kernel knows about one event."""

    event: HookEvent
    args: tuple[str, ...]
    flows: tuple[type, ...]
    composition: Composition
    tool_event: bool = False


EVENTS: dict[HookEvent, EventSpec] = {
    spec.event: spec
    for spec in (
        EventSpec(
            HookEvent.ON_REQUEST_START,
            ("ctx", "messages"),
            (F.Continue, F.RewriteMessages, F.Terminate),
            Composition.CHAIN,
        ),
        EventSpec(
            HookEvent.ON_PRE_LLM,
            ("ctx", "request"),
            (F.Continue, F.PatchRequest, F.Terminate),
            Composition.ACCUMULATE,
        ),
        EventSpec(
            HookEvent.ON_MODEL_TURN_FINISHED,
            ("ctx", "turn"),
            (F.Continue, F.Terminate),
            Composition.FIRST,
        ),
        EventSpec(
            HookEvent.ON_PRE_TOOL_USE,
            ("ctx", "call"),
            (F.Continue, F.RewriteArgs, F.Skip, F.Terminate),
            Composition.CHAIN,
            tool_event=True,
        ),
        EventSpec(
            HookEvent.ON_POST_TOOL_USE,
            ("ctx", "call", "result"),
            (F.Continue, F.RewriteResult, F.Terminate),
            Composition.CHAIN,
            tool_event=True,
        ),
        EventSpec(
            HookEvent.ON_INVALID_TOOL_CALL,
            ("ctx", "call", "error", "available_tools"),
            (F.Continue, F.Retry, F.Repair, F.Skip, F.Terminate, F.Fail),
            Composition.FIRST,
            tool_event=True,
        ),
        EventSpec(
            HookEvent.ON_ITERATION_END,
            ("ctx", "messages"),
            (F.Continue, F.Terminate),
            Composition.FIRST,
        ),
        EventSpec(
            HookEvent.ON_COMPLETION,
            ("ctx", "result"),
            (F.Continue,),
            Composition.ALL,
        ),
    )
}
