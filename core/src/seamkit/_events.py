"""The seams, declared once: their names, arguments and argument types,
accepted flows and composition mode (`EVENTS`); and the pluggy markers of the
``seamkit`` project."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, get_args

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
    "accepted",
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
    ON_TEXT_DELTA = "on_text_delta"
    ON_MODEL_TURN_FINISHED = "on_model_turn_finished"
    ON_PRE_TOOL_USE = "on_pre_tool_use"
    ON_POST_TOOL_USE = "on_post_tool_use"
    ON_INVALID_TOOL_CALL = "on_invalid_tool_call"
    ON_ITERATION_END = "on_iteration_end"
    ON_OUTPUT = "on_output"
    ON_COMPLETION = "on_completion"


class Composition(enum.StrEnum):
    """How the flows of several hooks at one event combine."""

    CHAIN = "chain"
    """Each hook sees what the previous produced; Skip, Retry and Terminate end the chain."""
    ACCUMULATE = "accumulate"
    """Every hook sees the baseline; patches merge in order; Terminate discards them."""
    FIRST = "first"
    """The first flow that is not Continue wins."""
    HOLD = "hold"
    """A chain whose holds add up: each RewriteText feeds the next hook, and
    what is released is the shortest text any hook released."""
    ALL = "all"
    """Every hook runs; failures are logged; the outcome never changes."""


def accepted(alias: object) -> tuple[type, ...]:
    """The flow types of a `seamkit.flow` alias, without ``None``."""
    return tuple(t for t in get_args(alias) if t is not type(None))


@dataclass(frozen=True, slots=True)
class EventSpec:
    """What the kernel knows about one event: the one place it is declared.

    ``params`` maps each argument name to its type as the hookspec spells it
    (``ctx`` first); ``accepts`` is the event's `seamkit.flow` alias, from
    which ``flows`` comes; ``rewrites`` names, for each chained flow that
    replaces an argument, the argument the next hook sees replaced (the flow's
    ``applied_to`` says how). The hookspec, `HookStack`'s method and the test
    kit's `Recorder` of each event are checked against this by one test
    (tests/core/test_events.py), and the guide's event reference is generated
    from it.
    """

    event: HookEvent
    params: Mapping[str, str]
    accepts: object
    composition: Composition
    tool_event: bool = False
    rewrites: Mapping[type, str] = field(default_factory=dict)
    args: tuple[str, ...] = field(init=False)
    """The argument names, in order (``ctx`` first)."""
    flows: tuple[type, ...] = field(init=False)
    """The flow types the event accepts (``accepts`` without ``None``)."""
    threads: Mapping[type, int] = field(init=False)
    """For each rewriting flow, the index in ``args`` of what it replaces."""

    def __post_init__(self) -> None:
        args = tuple(self.params)
        object.__setattr__(self, "args", args)
        object.__setattr__(self, "flows", accepted(self.accepts))
        threads = {flow: args.index(arg) for flow, arg in self.rewrites.items()}
        object.__setattr__(self, "threads", threads)


EVENTS: dict[HookEvent, EventSpec] = {
    spec.event: spec
    for spec in (
        EventSpec(
            HookEvent.ON_REQUEST_START,
            {"ctx": "HookContext", "messages": "tuple[Message, ...]"},
            F.RequestStartFlow,
            Composition.CHAIN,
            rewrites={F.RewriteMessages: "messages"},
        ),
        EventSpec(
            HookEvent.ON_PRE_LLM,
            {"ctx": "HookContext", "request": "ModelRequest"},
            F.PreLlmFlow,
            Composition.ACCUMULATE,
        ),
        EventSpec(
            HookEvent.ON_TEXT_DELTA,
            {"ctx": "HookContext", "text": "str", "final": "bool"},
            F.TextDeltaFlow,
            Composition.HOLD,
            rewrites={F.RewriteText: "text"},
        ),
        EventSpec(
            HookEvent.ON_MODEL_TURN_FINISHED,
            {"ctx": "HookContext", "turn": "ModelTurn"},
            F.ModelTurnFinishedFlow,
            Composition.FIRST,
        ),
        EventSpec(
            HookEvent.ON_PRE_TOOL_USE,
            {"ctx": "HookContext", "call": "ToolCall"},
            F.PreToolUseFlow,
            Composition.CHAIN,
            tool_event=True,
            rewrites={F.RewriteArgs: "call", F.RequireApproval: "call"},
        ),
        EventSpec(
            HookEvent.ON_POST_TOOL_USE,
            {"ctx": "HookContext", "call": "ToolCall", "result": "ToolResult"},
            F.PostToolUseFlow,
            Composition.CHAIN,
            tool_event=True,
            rewrites={F.RewriteResult: "result"},
        ),
        EventSpec(
            HookEvent.ON_INVALID_TOOL_CALL,
            {
                "ctx": "HookContext",
                "call": "ToolCall",
                "error": "str",
                "available_tools": "tuple[str, ...]",
            },
            F.InvalidToolCallFlow,
            Composition.FIRST,
            tool_event=True,
        ),
        EventSpec(
            HookEvent.ON_ITERATION_END,
            {"ctx": "HookContext", "messages": "tuple[Message, ...]"},
            F.IterationEndFlow,
            Composition.FIRST,
        ),
        EventSpec(
            HookEvent.ON_OUTPUT,
            {"ctx": "HookContext", "output": "object"},
            F.OutputFlow,
            Composition.CHAIN,
            rewrites={F.RewriteOutput: "output"},
        ),
        EventSpec(
            HookEvent.ON_COMPLETION,
            {"ctx": "HookContext", "result": "RunResult"},
            F.CompletionFlow,
            Composition.ALL,
        ),
    )
}
"""Every seam, in the order a run reaches them: the single table of events."""
