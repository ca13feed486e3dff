"""The law of schema tools: `Tool.call` accepts exactly the arguments
jsonschema accepts, whatever the schema's shape (flat objects of typed
properties take a quicker path, which must agree)."""

from __future__ import annotations

import asyncio
from typing import Any

import jsonschema
import seamkit
from hypothesis import given, settings, strategies as st

JSON_TYPES = ["string", "integer", "number", "boolean", "object", "array", "null"]
NAMES = st.sampled_from(["a", "b", "c", "d"])
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.0, 1.0, 2.5, -1.0]),
    st.text(max_size=3),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(NAMES, inner, max_size=2),
    max_leaves=4,
)


@st.composite
def schemas(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(NAMES, unique=True, max_size=4))
    properties: dict[str, Any] = {}
    for name in names:
        prop: dict[str, Any] = {"type": draw(st.sampled_from(JSON_TYPES))}
        if draw(st.booleans()):
            prop["description"] = "d"
        if draw(st.integers(0, 5)) == 0:  # now and then a shape the quick path leaves alone
            prop = {"type": sorted({prop["type"], "null"})}
        properties[name] = prop
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    schema["required"] = draw(st.lists(st.sampled_from(names), unique=True)) if names else []
    if draw(st.booleans()):
        schema["additionalProperties"] = draw(st.booleans())
    return schema


async def _ok(arguments: dict[str, Any], ctx: seamkit.ActionContext) -> str:
    return "ok"


@settings(max_examples=400, deadline=None)
@given(schemas(), st.dictionaries(NAMES, VALUES, max_size=4))
def test_a_schema_tool_accepts_exactly_what_jsonschema_accepts(
    schema: dict[str, Any], arguments: dict[str, Any]
) -> None:
    tool = seamkit.Tool.from_schema("t", "A tool.", schema, _ok)
    expected = jsonschema.Draft202012Validator(schema).is_valid(arguments)
    try:
        result = asyncio.run(tool.call(arguments))
    except seamkit.InvalidToolCall:
        accepted = False
    else:
        accepted = True
        assert result.content == "ok"
    assert accepted == expected, (schema, arguments)


def test_arguments_that_are_not_plain_json_take_the_slow_path() -> None:
    schema = {"type": "object", "properties": {"1": {"type": "integer"}, "s": {"type": "string"}}}
    tool = seamkit.Tool.from_schema("t", "A tool.", schema, _ok)
    try:  # an int key is "1" in JSON, whose value must then be an integer
        asyncio.run(tool.call({1: "x"}))  # type: ignore[dict-item]
    except seamkit.InvalidToolCall as exc:
        assert "not of type 'integer'" in str(exc)
    else:
        raise AssertionError("an int key slipped past the check")
    try:  # a lone surrogate is no text JSON can carry
        asyncio.run(tool.call({"s": "\ud800"}))
    except seamkit.InvalidToolCall:
        pass
    else:
        raise AssertionError("a lone surrogate slipped past the check")
