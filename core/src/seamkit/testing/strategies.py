"""Hypothesis strategies for seamkit's types (needs ``seamkit[testing]``)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from .. import flow as F
from .._events import EVENTS, HookEvent
from .._patch import RequestPatch
from .._types import (
    Document,
    Message,
    MessageToolCall,
    ModelRequest,
    ModelTurn,
    RunResult,
    ToolCall,
    ToolResult,
    ToolSpec,
)

__all__ = [
    "documents",
    "event_arguments",
    "flows",
    "histories",
    "json_values",
    "messages",
    "model_requests",
    "output_schemas",
    "output_values",
    "request_patches",
    "tool_calls",
    "tool_names",
    "tool_results",
]

_text = st.text(max_size=40)

tool_names = st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_-]{0,15}", fullmatch=True)
"""Tool names that match the kernel's name grammar."""

json_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**31), 2**31) | _text,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)
"""JSON-compatible values (no floats, so equality survives a round-trip)."""

_arguments = st.dictionaries(st.text(max_size=8), json_values, max_size=4)


@st.composite
def tool_calls(draw: st.DrawFn, names: st.SearchStrategy[str] = tool_names) -> ToolCall:
    """Parsed tool calls with JSON-object arguments."""
    args = draw(_arguments)
    return ToolCall(
        id="call_" + draw(st.from_regex(r"[a-z0-9]{1,12}", fullmatch=True)),
        name=draw(names),
        arguments=args,
        raw_arguments=json.dumps(args),
        index=draw(st.integers(0, 7)),
    )


def tool_results() -> st.SearchStrategy[ToolResult]:
    """Tool results, errors among them."""
    return st.builds(
        ToolResult,
        call_id=st.just("call_x"),
        content=_text,
        is_error=st.booleans(),
        raised=st.booleans(),
    )


def documents() -> st.SearchStrategy[Document]:
    """Context documents."""
    return st.builds(Document, id=st.from_regex(r"[a-z]{1,6}", fullmatch=True), text=_text)


def messages() -> st.SearchStrategy[Message]:
    """Single messages of every role (tool messages answer a made-up id)."""
    return st.one_of(
        _text.map(Message.system),
        _text.map(Message.user),
        _text.map(Message.assistant),
        st.builds(Message.tool, st.from_regex(r"call_[a-z0-9]{1,8}", fullmatch=True), _text),
    )


@st.composite
def histories(draw: st.DrawFn, max_turns: int = 4) -> tuple[Message, ...]:
    """Well-formed conversations: a system message maybe, then user turns, each
    answered by text or by tool calls whose results follow."""
    out: list[Message] = []
    if draw(st.booleans()):
        out.append(Message.system(draw(_text)))
    for turn in range(draw(st.integers(0, max_turns))):
        out.append(Message.user(draw(_text)))
        calls = draw(st.lists(tool_calls(), max_size=3))
        if calls:
            wire = [
                MessageToolCall.make(f"call_{turn}_{i}", c.name, c.arguments)
                for i, c in enumerate(calls)
            ]
            out.append(Message.assistant("", wire))
            out.extend(Message.tool(w.id, draw(_text)) for w in wire)
        out.append(Message.assistant(draw(_text)))
    return tuple(out)


_LETTERS = st.sampled_from(["a", "b", "c", "d", "e"])


def request_patches(tools: st.SearchStrategy[str] = _LETTERS) -> st.SearchStrategy[RequestPatch]:
    """Request patches with any subset of fields set."""

    def maybe(s: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.none() | s

    return st.builds(
        RequestPatch,
        extra_context=maybe(st.lists(documents(), max_size=3).map(tuple)),
        additional_params=maybe(
            st.dictionaries(st.sampled_from("pqrs"), st.integers(), max_size=3)
        ),
        preamble=maybe(_text),
        temperature=maybe(st.sampled_from([0.0, 0.5, 1.0])),
        max_tokens=maybe(st.integers(1, 4096)),
        tool_choice=maybe(st.sampled_from(["auto", "none", "required", "a"])),
        history=maybe(st.lists(messages(), max_size=3).map(tuple)),
        active_tools=maybe(st.lists(tools, max_size=5).map(tuple)),
    )


def model_requests() -> st.SearchStrategy[ModelRequest]:
    """Model requests advertising some of the tools a..e."""
    return st.builds(
        ModelRequest,
        messages=histories(),
        preamble=st.none() | _text,
        extra_context=st.lists(documents(), max_size=2).map(tuple),
        tools=st.lists(st.sampled_from("abcde"), unique=True, max_size=5).map(
            lambda names: tuple(ToolSpec(name=n) for n in names)
        ),
    )


# --- declared outputs (`seamkit.Output`) ----------------------------------------

_KEYS = st.sampled_from(["a", "b", "name", "items", "x_1", "total", "é", 'q"k', "b\\s", " "])
_STRINGS = st.text(max_size=12) | st.sampled_from(["", '"', "\\", "\\u", "{", "]", "😀", "\n"])
_SCALARS: tuple[dict[str, Any], ...] = (
    {"type": "string"},
    {"type": "integer"},
    {"type": "number"},
    {"type": "boolean"},
)


@st.composite
def _output_schema(draw: st.DrawFn, depth: int, root: bool) -> dict[str, Any]:
    kinds = ["object"] if root else ["scalar", "scalar", "enum"]
    if depth > 0 and not root:
        kinds += ["array", "object"]
    kind = draw(st.sampled_from(kinds))
    if kind == "scalar":
        return dict(draw(st.sampled_from(_SCALARS)))
    if kind == "enum":
        choices = draw(st.lists(_STRINGS, min_size=1, max_size=4, unique=True))
        return {"type": "string", "enum": choices}
    if kind == "array":
        return {"type": "array", "items": draw(_output_schema(depth - 1, False))}
    names = draw(st.lists(_KEYS, min_size=0 if not root else 1, max_size=4, unique=True))
    properties = {name: draw(_output_schema(max(0, depth - 1), False)) for name in names}
    required = [name for name in names if draw(st.booleans())]
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def output_values(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """JSON values that fit ``schema``, one of the schemas `output_schemas`
    draws (``type`` string, integer, number, boolean, array or object;
    ``enum``; ``properties`` with ``required``): an object always has its
    required fields and some of its optional ones, in the schema's order.
    Numbers are finite and integers fit a double, so a value survives a JSON
    round-trip equal to itself."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "string":
        return _STRINGS
    if kind == "integer":
        return st.integers(-(2**53), 2**53)
    if kind == "number":
        return st.integers(-(10**6), 10**6) | st.floats(
            allow_nan=False, allow_infinity=False, width=64
        )
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        return st.lists(output_values(schema["items"]), max_size=3)
    properties: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", ()))
    return st.fixed_dictionaries(
        {k: output_values(v) for k, v in properties.items() if k in required},
        optional={k: output_values(v) for k, v in properties.items() if k not in required},
    )


def output_schemas(
    *, depth: int = 2, objects_only: bool = True
) -> st.SearchStrategy[tuple[dict[str, Any], st.SearchStrategy[Any]]]:
    """``(schema, values)`` pairs for testing a declared output: a JSON
    Schema (``Output(schema)``) and a strategy of the values that fit it
    (`output_values`). The schema is an object with string, integer, number,
    boolean, enum, array and nested-object properties, required and optional
    ones (``additionalProperties: false``), nested up to ``depth`` levels;
    with ``objects_only=False`` the root may be any of those types (the kind
    of output `seamkit.Output` wraps as ``{"response": ...}``). Keys and
    strings include quotes, backslashes and non-ASCII characters, the text a
    streamed answer is most likely to be cut inside::

        @given(data=st.data(), drawn=output_schemas())
        def test_answers_parse(data, drawn):
            schema, values = drawn
            value = data.draw(values)
            assert Output(schema).parse(json.dumps(value)) == value
    """
    root = st.just(True) if objects_only else st.booleans()
    return root.flatmap(lambda r: _output_schema(depth, r)).map(lambda s: (s, output_values(s)))


def flows(event: HookEvent | str) -> st.SearchStrategy[Any]:
    """Flows that ``event`` accepts (``None`` among them, meaning Continue)."""
    accepted = EVENTS[HookEvent(event)].flows
    reason = st.text(min_size=1, max_size=10)
    options: dict[type, st.SearchStrategy[Any]] = {
        F.Continue: st.just(F.Continue()) | st.none(),
        F.PatchRequest: request_patches().map(F.PatchRequest),
        F.RewriteMessages: st.lists(messages(), max_size=3).map(F.RewriteMessages),
        F.RewriteArgs: _arguments.map(F.RewriteArgs),
        F.RewriteResult: _text.map(F.RewriteResult),
        F.Skip: reason.map(F.Skip),
        F.Terminate: reason.map(F.Terminate),
        F.Retry: st.builds(F.Retry, st.none() | reason),
        F.Repair: st.builds(F.Repair, tool_names, st.none() | _arguments),
        F.Fail: reason.map(F.Fail),
        F.RequireApproval: st.builds(F.RequireApproval, reason, st.none() | _arguments),
        F.Hold: st.integers(0, 12).map(F.Hold),
        F.RewriteText: st.builds(F.RewriteText, _text, st.integers(0, 12)),
        F.RewriteOutput: json_values.map(F.RewriteOutput),
    }
    return st.one_of(*(options[t] for t in accepted))


def _by_type() -> dict[str, st.SearchStrategy[Any]]:
    """The strategy an event argument is drawn from, by its type as the
    events table spells it: a new event with these types needs nothing here."""
    return {
        "tuple[Message, ...]": histories(),
        "ModelRequest": model_requests(),
        "ModelTurn": _text.map(lambda t: ModelTurn(message=Message.assistant(t))),
        "ToolCall": tool_calls(),
        "ToolResult": tool_results(),
        "str": _text,
        "bool": st.booleans(),
        "tuple[str, ...]": st.lists(tool_names, max_size=3).map(tuple),
        "RunResult": _text.map(lambda t: RunResult(output=t)),
        "object": json_values,
    }


def event_arguments(
    event: HookEvent | str, **drawn_from: st.SearchStrategy[Any]
) -> st.SearchStrategy[tuple[Any, ...]]:
    """Arguments (after ``ctx``) for a dispatch of ``event``, in the order of
    its hookspec. Name an argument to draw it from your own strategy instead
    (``event_arguments("on_post_tool_use", call=tool_calls(st.just("search")))``);
    the others keep theirs. An argument the event does not take is a
    ``TypeError`` listing the ones it does."""
    e = HookEvent(event)
    params = dict(EVENTS[e].params)
    del params["ctx"]
    names = tuple(params)
    unknown = sorted(set(drawn_from) - set(names))
    if unknown:
        raise TypeError(
            f"{e.value} has no argument {', '.join(map(repr, unknown))}; "
            f"its arguments after ctx: {', '.join(names)}"
        )
    by_type = _by_type()
    return st.tuples(*(drawn_from[n] if n in drawn_from else by_type[params[n]] for n in names))
