"""Generate the event reference of docs/guide.md from the hookspecs and the flow types.

    python docs/gen_events.py           # (re)write the reference between its markers
    python docs/gen_events.py --check   # exit 1 if the reference is stale

Everything comes from the kernel: the events, their order, the flows each one
accepts and its composition mode from ``seamkit._events.EVENTS``; what each
event is for and its argument names and types from ``seamkit.hookspecs``; the
fields of the argument types from their pydantic models; each flow's
constructor and meaning from its dataclass in ``seamkit.flow``; the observer
events from ``seamkit.stream``. The only text kept here is one example body
per *flow type* (``EXAMPLE_BODIES``, not one per event): the example of an
event is the hookspec's signature returning its first accepted flow other than
``Continue``. tests/test_event_reference.py runs every (event, flow) example
through the kernel's own dispatcher. ``SCOPE_NOTES`` adds, for the events
that change what the model sees, whether the change lasts the whole run or
one model call; the tests check those claims against real runs.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import dataclasses
import enum
import inspect
import itertools
import re
import sys
import tomllib
import types
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "guide.md"
COMMAND = "python docs/gen_events.py"
BEGIN = (
    "<!-- BEGIN generated events: written by `python docs/gen_events.py` from "
    "seamkit.hookspecs, seamkit.flow and seamkit.stream; edit those, not this -->"
)
END = "<!-- END generated events -->"

HOOK_CONTEXT_ANCHOR = "#the-hook-context"
OBSERVING_ANCHOR = "#observing-a-run"

EXAMPLE_BODIES: dict[str, str] = {
    "Continue": "Continue()",
    "PatchRequest": "PatchRequest(RequestPatch(temperature=0.2))",
    "RewriteMessages": 'RewriteMessages([Message.system("Answer in English."), *messages])',
    "RewriteArgs": 'RewriteArgs({**call.arguments, "limit": 10})',
    "RewriteResult": "RewriteResult(result.content[:4000])",
    "Skip": 'Skip(f"{call.name} is not allowed here")',
    "Terminate": 'Terminate(f"stopped at turn {ctx.turn}")',
    "Retry": 'Retry(f"not accepted at turn {ctx.turn}: check every field and try again")',
    "Repair": "Repair(call.name.lower(), call.arguments)",
    "Fail": 'Fail(f"invalid tool call: {error}")',
    "RequireApproval": 'RequireApproval(f"{call.name} acts on the world: a person decides")',
    "Hold": 'Hold(0 if final else len(text.rpartition(" ")[2]))',
    "RewriteText": 'RewriteText(text.replace("internal.example.com", "[host]"))',
    "RewriteOutput": "RewriteOutput(output)",
}
"""What an example hookimpl returns, by flow type: it may use the arguments of
every event that accepts the flow, and the names ``example_imports()`` brings."""

EXAMPLE_SEAMKIT_NAMES = ("Message", "RequestPatch")
"""The names from ``seamkit`` the example bodies use besides the flow types."""

OBSERVER_BODY = 'print(f"turn {ctx.turn}: {type(event).__name__}")'
"""What the example run observer does (observers return nothing)."""

# --- how long a change lasts (prose kept here, shown after an event's "what and when") ---

REQUEST_PATCHES_ANCHOR = "#request-patches"

SCOPE_NOTES: dict[str, str] = {
    "on_request_start": (
        "**For the whole run.** The messages a `RewriteMessages` returns replace the "
        "run's messages: every model call of the run is built from them, and "
        "`RunResult.transcript` keeps them, so a session saves them and later runs "
        "on it see them too. To change one model call only, return a `PatchRequest` "
        "at [`on_pre_llm`](#on_pre_llm)."
    ),
    "on_pre_llm": (
        "**For this one model call.** A `PatchRequest` changes only the request "
        "about to be sent: the next call starts again from the run's messages and "
        "settings, and the transcript (so a session) is unchanged, a patched "
        "`history` included. The patches of several hooks merge: "
        "`extra_context` appends, `additional_params` merges key by key, "
        "`active_tools` narrows, and every other field is last writer wins (a "
        "`patch_conflict` diagnostic names both hooks); see "
        f"[Request patches]({REQUEST_PATCHES_ANCHOR}). To change what the model sees "
        "for the rest of the run, rewrite the messages at "
        "[`on_request_start`](#on_request_start)."
    ),
}
"""A paragraph after an event's description: how long what its hooks change
lasts (the run, or one model call). tests/test_event_reference.py checks each
claim against a run."""


class GeneratorError(Exception):
    """The kernel and this generator disagree (a flow without an example body,
    a hookspec whose arguments differ from the event's)."""


# --- reading the kernel -------------------------------------------------------


def _kernel() -> tuple[types.ModuleType, types.ModuleType, types.ModuleType, types.ModuleType]:
    import seamkit
    import seamkit._events as events
    import seamkit.flow as flow
    import seamkit.hookspecs as hookspecs

    return seamkit, events, flow, hookspecs


def _namespace() -> dict[str, Any]:
    """Every name the kernel's annotations use (some are imported only for type checking)."""
    import collections.abc

    import seamkit
    import seamkit.plugins as plugins
    import seamkit.stream as stream

    public = {name: getattr(seamkit, name) for name in seamkit.__all__}
    registration = {name: getattr(plugins, name) for name in plugins.__all__}
    return {
        **public,
        **registration,
        **{name: getattr(stream, name) for name in stream.__all__},
        "F": seamkit.flow,
        "Awaitable": collections.abc.Awaitable,
    }


def flow_types() -> tuple[type, ...]:
    """Every flow type, in the order of ``seamkit.flow.Flow``."""
    _, _, flow, _ = _kernel()
    return typing.get_args(flow.Flow)


def _hints(obj: Any) -> dict[str, Any]:
    module = sys.modules[obj.__module__]
    return typing.get_type_hints(obj, globalns=vars(module), localns=_namespace())


def type_text(tp: Any) -> str:
    """A type as a plugin author would write it: ``dict[str, Any] | None``."""
    if tp is None or tp is type(None):
        return "None"
    if tp is Any:
        return "Any"
    if tp is Ellipsis:
        return "..."
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        return type_text(args[0])
    if origin is typing.Literal:
        return "Literal[" + ", ".join(_literal(a) for a in args) + "]"
    if origin is typing.Union or origin is types.UnionType:
        return " | ".join(type_text(a) for a in args)
    if origin is not None:
        name = getattr(origin, "__name__", str(origin))
        return f"{name}[{', '.join(type_text(a) for a in args)}]" if args else name
    if isinstance(tp, type):
        return tp.__name__
    return str(tp).removeprefix("typing.")


def _literal(value: object) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)


def constructor(cls: type) -> str:
    """``Name(field: type, other: type = default)`` of a dataclass (a flow or a run
    event), or of a class's ``__init__`` (an event that computes a field lazily)."""
    if not dataclasses.is_dataclass(cls):
        hints = _hints(cls.__init__)
        shown = []
        for name, param in inspect.signature(cls).parameters.items():
            text = f"{name}: {type_text(hints[name])}"
            if param.default is not inspect.Parameter.empty:
                text += f" = {param.default!r}"
            shown.append(text)
        return f"{cls.__name__}({', '.join(shown)})"
    hints = _hints(cls)
    params = []
    for field in dataclasses.fields(cls):
        text = f"{field.name}: {type_text(hints[field.name])}"
        if field.default is not dataclasses.MISSING:
            text += f" = {field.default!r}"
        params.append(text)
    return f"{cls.__name__}({', '.join(params)})"


def _prose(text: str | None) -> str:
    """A docstring as one Markdown paragraph (RST roles and literals become code spans)."""
    if not text:
        return ""
    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"`\1`", inspect.cleandoc(text))
    text = text.replace("``", "`")
    return " ".join(text.split())


def _first_sentence(text: str | None) -> str:
    para = _prose((text or "").split("\n\n")[0])
    end = para.find(". ")
    return para if end < 0 else para[: end + 1]


def _what_and_when(doc: str | None, flow_names: set[str]) -> str:
    """The hookspec's docstring without its closing "Mode: Flow, Flow." sentence,
    which the reference shows as tables."""
    text = _prose(doc)
    sentences = re.split(r"(?<=\.)\s+", text)
    last = sentences[-1] if sentences else ""
    match = re.fullmatch(r"[A-Z][\w -]*: (\w+(?:, \w+)*)(?: only)?\.", last)
    if match and set(match.group(1).split(", ")) <= flow_names and len(sentences) > 1:
        sentences = sentences[:-1]
    return " ".join(sentences)


def _attribute_docs(cls: type) -> dict[str, str]:
    """``name -> docstring`` of the assignments in a class body followed by a string."""
    tree = ast.parse(inspect.getsource(cls))
    body = tree.body[0].body if isinstance(tree.body[0], ast.ClassDef) else []
    out: dict[str, str] = {}
    for node, nxt in itertools.pairwise(body):
        if (
            isinstance(node, ast.Assign)
            and isinstance(nxt, ast.Expr)
            and isinstance(nxt.value, ast.Constant)
            and isinstance(nxt.value.value, str)
        ):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = nxt.value.value
    return out


def composition_text(mode: enum.Enum) -> str:
    """What a composition mode means, from its docstring in ``seamkit._events``."""
    doc = _attribute_docs(type(mode)).get(mode.name)
    if not doc:
        raise GeneratorError(f"Composition.{mode.name} has no docstring")
    return _prose(doc)


def _models_in(tp: Any) -> list[type]:
    """The pydantic models ``tp`` is or holds one level down (``tuple[Message, ...]``)."""
    from pydantic import BaseModel

    found: list[type] = []
    for candidate in (tp, *typing.get_args(tp)):
        if (
            isinstance(candidate, type)
            and issubclass(candidate, BaseModel)
            and candidate not in found
        ):
            found.append(candidate)
    return found


def _default(field: Any) -> str:
    if field.is_required():
        return "required"
    factory = field.default_factory
    if factory is not None:
        made = factory()
        text = repr(made) if type(made) in (dict, list, tuple) else f"{type(made).__name__}()"
    else:
        text = repr(field.default)
    return f"`{text}`"


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def _fields_table(model: Any) -> list[str]:
    hints = {name: field.annotation for name, field in model.model_fields.items()}
    lines = [
        f"`{model.__name__}`: {_first_sentence(model.__doc__)}",
        "",
        "| field | type | default |",
        "| --- | --- | --- |",
    ]
    for name, field in model.model_fields.items():
        lines.append(
            f"| `{name}` | {_cell(f'`{type_text(hints[name])}`')} | {_cell(_default(field))} |"
        )
    return [*lines, ""]


# --- the examples -------------------------------------------------------------


def example_imports() -> str:
    """The imports every example assumes (run before each one by the tests)."""
    flows = sorted(cls.__name__ for cls in flow_types())
    return "\n".join(
        [
            "import seamkit",
            _from_import("seamkit", sorted(EXAMPLE_SEAMKIT_NAMES)),
            _from_import("seamkit.flow", flows),
        ]
    )


def _line_length() -> int:
    """ruff's line length (``ruff format`` also formats the guide's code blocks)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    length: int = config.get("tool", {}).get("ruff", {}).get("line-length", 88)
    return length


def _from_import(module: str, names: Sequence[str]) -> str:
    """``from module import a, b`` as ``ruff format`` writes it: one line if it
    fits, else one name a line in parentheses."""
    line = f"from {module} import {', '.join(names)}"
    if len(line) <= _line_length():
        return line
    return "\n".join([f"from {module} import (", *(f"    {n}," for n in names), ")"])


def _imported_names() -> set[str]:
    tree = ast.parse(example_imports())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            names |= {alias.asname or alias.name for alias in node.names}
    return names


def _used_names(expression: str) -> set[str]:
    tree = ast.parse(expression, mode="eval")
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


def spec_args(event: str) -> tuple[str, ...]:
    """The argument names of an event's hookspec, checked against the kernel's table."""
    _, events, _, hookspecs = _kernel()
    names = tuple(inspect.signature(getattr(hookspecs, event)).parameters)
    expected = events.EVENTS[events.HookEvent(event)].args
    if names != expected:
        raise GeneratorError(f"hookspec {event}{names} differs from the event's args {expected}")
    return names


def example(event: str, flow: type) -> str:
    """A hookimpl for ``event`` that returns ``flow``, as the reference shows it."""
    body = EXAMPLE_BODIES.get(flow.__name__)
    if body is None:
        raise GeneratorError(f"no example body for flow {flow.__name__}: add one to EXAMPLE_BODIES")
    args = spec_args(event)
    unknown = _used_names(body) - set(args) - _imported_names() - set(dir(builtins))
    if unknown:
        raise GeneratorError(
            f"the example body of {flow.__name__} uses {sorted(unknown)}, which {event} lacks"
        )
    return f"@seamkit.hookimpl\ndef {event}({', '.join(args)}):\n    return {body}"


def example_flow(event: str) -> type:
    """The flow an event's example returns: the first it accepts other than Continue."""
    _, events, flow, _ = _kernel()
    accepted: tuple[type, ...] = events.EVENTS[events.HookEvent(event)].flows
    return next((f for f in accepted if f is not flow.Continue), flow.Continue)


def observer_example() -> str:
    """The example run observer, with the hookspec's arguments."""
    _, events, _, hookspecs = _kernel()
    args = ", ".join(inspect.signature(getattr(hookspecs, events.OBSERVER)).parameters)
    return f"@seamkit.hookimpl\ndef {events.OBSERVER}({args}):\n    {OBSERVER_BODY}"


# --- the page -----------------------------------------------------------------


def alias_name(event: str) -> str:
    """The name of an event's `seamkit.flow` alias (``PreToolUseFlow``)."""
    _, events, flow, _ = _kernel()
    accepts = events.EVENTS[events.HookEvent(event)].accepts
    (name,) = (n for n in flow.__all__ if n.endswith("Flow") and getattr(flow, n) is accepts)
    return str(name)


def _arguments(spec: Any, fn: Callable[..., Any]) -> list[str]:
    """The arguments table of an event (names and types from the events
    table; the hookspec's hints for the fields of model types), then a fields
    table per model type."""
    hints = _hints(fn)
    hints.pop("return", None)
    lines = ["| argument | type |", "| --- | --- |"]
    models: list[type] = []
    for name, written in spec.params.items():
        if name == "ctx":
            shown = f"[`{written}`]({HOOK_CONTEXT_ANCHOR})"
        else:
            shown = f"`{written}`"
            models += [m for m in _models_in(hints[name]) if m not in models]
        lines.append(f"| `{name}` | {_cell(shown)} |")
    lines.append("")
    for model in models:
        lines += _fields_table(model)
    return lines


def _event_section(event: Any) -> list[str]:
    _, events, _, hookspecs = _kernel()
    spec = events.EVENTS[event]
    fn = getattr(hookspecs, event.value)
    names = {cls.__name__ for cls in flow_types()}
    lines = [f"### `{event.value}`", "", _what_and_when(fn.__doc__, names), ""]
    if event.value in SCOPE_NOTES:
        lines += [SCOPE_NOTES[event.value], ""]
    lines += _arguments(spec, fn)
    mode = spec.composition
    alias = alias_name(event.value)
    lines += [
        f"Returns `seamkit.flow.{alias}` (an `async def` hookimpl: an awaitable of it): "
        f"annotate the hookimpl with it and `mypy --strict` reports a flow the event does "
        f"not accept.",
        "",
        f"Composition: **{mode.value}** (`Composition.{mode.name}`). {composition_text(mode)}",
        "",
        "| flow it accepts | meaning |",
        "| --- | --- |",
    ]
    for cls in spec.flows:
        lines.append(
            f"| {_cell(f'`{constructor(cls)}`')} | {_cell(_first_sentence(cls.__doc__))} |"
        )
    lines += ["", "```python", example(event.value, example_flow(event.value)), "```", ""]
    return lines


def _flows_section() -> list[str]:
    _, events, _, _ = _kernel()
    lines = [
        "### Flows at a glance",
        "",
        "| flow | meaning | accepted at |",
        "| --- | --- | --- |",
    ]
    for cls in flow_types():
        at = [f"`{e.value}`" for e, spec in events.EVENTS.items() if cls in spec.flows]
        not_at = [f"`{e.value}`" for e, spec in events.EVENTS.items() if cls not in spec.flows]
        if not not_at:
            where = "every event"
        elif len(not_at) < len(at):
            where = "every event but " + ", ".join(not_at)
        else:
            where = ", ".join(at) or "no event"
        lines.append(
            f"| {_cell(f'`{constructor(cls)}`')} | {_cell(_first_sentence(cls.__doc__))} "
            f"| {where} |"
        )
    lines += [
        "",
        "| composition | how the flows of several hooks at one event combine |",
        "| --- | --- |",
    ]
    lines += [f"| **{m.value}** | {_cell(composition_text(m))} |" for m in events.Composition]
    return [*lines, ""]


def _observer_section() -> list[str]:
    import seamkit.stream as stream

    _, events, _, hookspecs = _kernel()
    fn = getattr(hookspecs, events.OBSERVER)
    lines = [
        f"### Observers: `{events.OBSERVER}`",
        "",
        _prose(fn.__doc__) + f" See [Observing a run]({OBSERVING_ANCHOR}).",
        "",
        "| argument | type |",
        "| --- | --- |",
    ]
    for name, param in inspect.signature(fn).parameters.items():
        shown = f"`{param.annotation}`"
        if name == "ctx":
            shown = f"[{shown}]({HOOK_CONTEXT_ANCHOR})"
        lines.append(f"| `{name}` | {_cell(shown)} |")
    lines += [
        "",
        "| event (`seamkit.stream`) | what | also streamed |",
        "| --- | --- | --- |",
    ]
    for cls in typing.get_args(stream.ObservedEvent):
        streamed = "yes" if cls in stream.STREAMED else "no (observers only)"
        lines.append(
            f"| {_cell(f'`{constructor(cls)}`')} | {_cell(_first_sentence(cls.__doc__))} "
            f"| {streamed} |"
        )
    lines += ["", "```python", observer_example(), "```", ""]
    return lines


def render() -> str:
    """The reference, markers included."""
    _, events, _, _ = _kernel()
    lines = [
        BEGIN,
        "",
        "The events in the order of `seamkit.HookEvent`, then the run observer. A hook",
        "may take fewer arguments than listed (pluggy matches them by name), and",
        "returning `None` is the same as `Continue()`. Every example is a complete",
        "hookimpl (a function of a plugin module, or a method of a hook object with",
        "`self` first) and assumes these imports:",
        "",
        "```python",
        example_imports(),
        "```",
        "",
    ]
    lines += _flows_section()
    for event in events.HookEvent:
        lines += _event_section(event)
    lines += _observer_section()
    lines.append(END)
    return "\n".join(lines)


def _spliced(guide: str, block: str) -> str:
    head, sep, rest = guide.partition(BEGIN)
    _, sep2, tail = rest.partition(END)
    if not sep or not sep2:
        raise GeneratorError(f"the guide lacks the markers {BEGIN!r} and {END!r}")
    return head + block + tail


def committed(guide: str) -> str:
    """The block (markers included) as it stands in ``guide``'s text."""
    start, end = guide.find(BEGIN), guide.find(END)
    if start < 0 or end < start:
        raise GeneratorError(f"the guide lacks the markers {BEGIN!r} and {END!r}")
    return guide[start : end + len(END)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the reference is stale")
    parser.add_argument("--guide", type=Path, default=GUIDE, help="the guide to update")
    args = parser.parse_args(argv)
    guide: Path = args.guide
    current = guide.read_text(encoding="utf-8")
    try:
        text = _spliced(current, render())
    except GeneratorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if current == text:
        print(f"{guide} event reference is up to date")
        return 0
    if args.check:
        print(f"{guide} event reference is stale; regenerate it with `{COMMAND}`", file=sys.stderr)
        return 1
    guide.write_text(text, encoding="utf-8", newline="\n")
    print(f"wrote the event reference of {guide}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
