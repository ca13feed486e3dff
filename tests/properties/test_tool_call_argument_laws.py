"""The laws of checking a ``tool_call`` hook's arguments when the agent is
built, against tools whose signatures are generated.

- Arguments without placeholders: the agent builds exactly when the tool's
  own validation (the one every call goes through) takes them.
- Arguments with placeholders: a rejection is never wrong. Whatever the
  placeholders render to (drawn here), the call would fail too.
- Every rejection is located inside the hook's entry: ``hooks[0].tool_name``,
  ``hooks[0].arguments`` or an argument below it.
"""

from __future__ import annotations

import asyncio
import atexit
import re
from typing import Any

import pytest
import seamkit
from hypothesis import given, strategies as st
from seamkit.testing import ScriptedModel

from tests.properties._manifests import DEEP, scaled

# The deep profile runs for much longer than pytest-timeout allows a test;
# each example has its own 2 s deadline there instead.
pytestmark = [pytest.mark.timeout(0)] if DEEP else []

_LOOP = asyncio.new_event_loop()
atexit.register(_LOOP.close)

TYPES = {
    "int": "int",
    "str": "str",
    "float": "float",
    "bool": "bool",
    "ints": "list[int]",
    "table": "dict[str, int]",
    "maybe": "int | None",
}
NAMES = ["query", "limit", "user", "tags", "flag", "ratio", "extra"]
PLACEHOLDERS = ["{{ user_message }}", "{{ run_id }}", "n={{ run_id }}!", "{{ context.value }}"]
CONCRETE = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.floats(allow_nan=True, allow_infinity=False)
    | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=2)
    ),
    max_leaves=5,
)
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}")


@st.composite
def tools(draw: st.DrawFn) -> seamkit.Tool:
    """A function tool with drawn parameters: names, types, some with defaults."""
    names = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=4))
    required = draw(st.integers(0, len(names)))
    params = [
        f"{n}: {TYPES[draw(st.sampled_from(sorted(TYPES)))]}" + ("" if i < required else " = None")
        for i, n in enumerate(names)
    ]
    namespace: dict[str, Any] = {}
    exec(f"def lookup({', '.join(params)}) -> str:\n    return 'ok'\n", namespace)
    return seamkit.tool(namespace["lookup"])


def misspelt(name: str) -> str:
    return name[:-1] if len(name) > 1 else name + "x"


@st.composite
def arguments(draw: st.DrawFn, placeholders: bool) -> dict[str, Any]:
    keys = draw(st.lists(st.sampled_from(NAMES) | st.sampled_from(NAMES).map(misspelt), max_size=4))
    values = CONCRETE | st.sampled_from(PLACEHOLDERS) if placeholders else CONCRETE
    return {k: draw(values) for k in keys}


def build(tool: seamkit.Tool, args: dict[str, Any]) -> list[seamkit.Problem]:
    """Build an agent whose one hook calls ``tool`` with ``args``; the
    problems of its rejection (empty when it builds)."""
    hook = {"kind": "tool_call", "event": "on_request_start", "tool_name": "lookup"}
    manifest = {"name": "t", "model": "scripted:x", "hooks": [{**hook, "arguments": args}]}

    async def go() -> list[seamkit.Problem]:
        try:
            agent = await seamkit.Agent.load(manifest, tools=[tool], model=ScriptedModel([]))
        except seamkit.ManifestError as exc:
            return list(exc.problems)
        await agent.aclose()
        return []

    return _LOOP.run_until_complete(go())


def valid(tool: seamkit.Tool, args: dict[str, Any]) -> bool:
    try:
        tool.validate(args)
    except seamkit.InvalidToolCall:
        return False
    return True


def located_in_the_entry(problems: list[seamkit.Problem]) -> bool:
    return all(
        p.location[:2] == ("hooks", 0) and p.location[2:3] in [("arguments",), ("tool_name",)]
        for p in problems
    )


@scaled()
@given(tool=tools(), args=arguments(placeholders=False))
def test_concrete_arguments_build_exactly_when_the_tool_takes_them(
    tool: seamkit.Tool, args: dict[str, Any]
) -> None:
    problems = build(tool, args)
    assert (not problems) == valid(tool, args), problems
    assert located_in_the_entry(problems), problems


@scaled()
@given(tool=tools(), args=arguments(placeholders=True), data=st.data())
def test_a_rejection_of_arguments_with_placeholders_is_never_wrong(
    tool: seamkit.Tool, args: dict[str, Any], data: st.DataObject
) -> None:
    problems = build(tool, args)
    assert located_in_the_entry(problems), problems
    if not problems:
        return

    def render(value: Any) -> Any:
        if not isinstance(value, str) or not _PLACEHOLDER.search(value):
            return value
        whole = _PLACEHOLDER.fullmatch(value.strip())
        if whole is not None and whole.group(1).startswith("context."):
            return data.draw(CONCRETE, label=value)  # a context value: any type
        return _PLACEHOLDER.sub(lambda _: data.draw(st.text(max_size=4), label="text"), value)

    rendered = {k: render(v) for k, v in args.items()}
    assert not valid(tool, rendered), (problems, rendered)


def test_a_misspelt_argument_is_named_with_the_right_one() -> None:
    @seamkit.tool
    def search(query: str, limit: int = 5) -> str:
        return "ok"

    problems = build(search.replace(name="lookup"), {"qeury": "{{ user_message }}", "limit": "x"})
    assert [(p.path, p.message, p.hint) for p in problems] == [
        (
            "hooks[0].arguments.qeury",
            "unknown argument 'qeury' of tool 'lookup'",
            "did you mean 'query'? its arguments: limit, query",
        ),
        (
            "hooks[0].arguments",
            "missing required argument 'query' of tool 'lookup'",
            "did you mean 'query' where it says 'qeury'?",
        ),
        (
            "hooks[0].arguments.limit",
            "does not fit tool 'lookup': 'x' is not of type 'integer'",
            'the tool\'s schema here: {"default": 5, "type": "integer"}',
        ),
    ]
