"""`@seamkit.tool`: schemas from type hints, injection hidden from the model,
and every outcome of a call turned into a result."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import enum
import threading
from typing import Annotated, Any, Literal

import pytest
import seamkit
from pydantic import BaseModel, Field
from seamkit import ActionContext, Injected, InvalidToolCall, Secret, Tool, ToolResult


def call(t: Tool, arguments: Any, context: ActionContext | None = None) -> ToolResult:
    return asyncio.run(t.call(arguments, context))


# --- the decorator ---------------------------------------------------------


def test_plain_decorator_takes_name_and_description_from_the_function() -> None:
    @seamkit.tool
    def greet(who: str) -> str:
        """Greet someone by name."""
        return f"hello {who}"

    assert isinstance(greet, Tool)
    assert (greet.name, greet.description) == ("greet", "Greet someone by name.")
    assert greet.spec.name == "greet"
    assert greet("ann") == "hello ann"  # still callable as the function
    assert call(greet, {"who": "bob"}).content == "hello bob"


def test_decorator_with_options() -> None:
    @seamkit.tool(
        name="finish", description="Stop here.", tags={"x", "y"}, terminal=True, timeout_seconds=2
    )
    async def done(answer: str) -> str:
        """Ignored docstring."""
        return answer

    assert (done.name, done.description) == ("finish", "Stop here.")
    assert done.tags == frozenset({"x", "y"})
    assert done.terminal and done.timeout_seconds == 2
    assert call(done, {"answer": "42"}).content == "42"


def test_a_tool_without_docstring_has_an_empty_description() -> None:
    @seamkit.tool
    def f() -> int:
        return 1

    assert f.description == ""
    assert f.parameters == {"additionalProperties": False, "properties": {}, "type": "object"}
    assert call(f, {}).content == "1"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"name": ""}, "a tool needs a non-empty name"),
        ({"timeout_seconds": 0}, "timeout_seconds must be a number > 0, not 0"),
        ({"timeout_seconds": "5"}, "timeout_seconds must be a number > 0, not '5'"),
    ],
)
def test_bad_decorator_options_are_clear_errors(options: dict[str, Any], message: str) -> None:
    def f() -> None: ...

    with pytest.raises(seamkit.SeamkitError, match=message):
        seamkit.tool(**options)(f)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("has space", "tool name 'has space' is not valid"),
        ("x" * 65, "longer than 64 characters"),
    ],
)
def test_a_verbatim_name_must_fit_the_grammar(name: str, message: str) -> None:
    def f() -> None: ...

    odd = seamkit.tool(name=name)(f)  # fine under a toolset, which sanitises it
    with pytest.raises(seamkit.SeamkitError, match=message):
        seamkit.ToolMap.of([odd])


def test_star_args_are_refused() -> None:
    def f(*items: int) -> None: ...

    with pytest.raises(seamkit.SeamkitError, match=r"\*items is not supported"):
        seamkit.tool(f)


# --- schemas -----------------------------------------------------------------


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Address(BaseModel):
    street: str
    zip: str | None = None


@dataclasses.dataclass
class Point:
    x: float
    y: float = 0.0


def test_schema_covers_the_usual_types() -> None:
    @seamkit.tool
    def everything(
        s: str,
        i: int,
        f: float,
        b: bool,
        color: Color,
        mode: Literal["fast", "slow"],
        items: list[int],
        labels: dict[str, str],
        address: Address,
        point: Point,
        note: str | None = None,
        count: int = 3,
    ) -> None:
        """Take everything."""

    p = everything.parameters
    props = p["properties"]
    assert p["required"] == [
        "s",
        "i",
        "f",
        "b",
        "color",
        "mode",
        "items",
        "labels",
        "address",
        "point",
    ]
    assert p["additionalProperties"] is False
    assert props["s"] == {"type": "string"}
    assert props["i"] == {"type": "integer"}
    assert props["f"] == {"type": "number"}
    assert props["b"] == {"type": "boolean"}
    assert props["mode"] == {"enum": ["fast", "slow"], "type": "string"}
    assert props["items"] == {"items": {"type": "integer"}, "type": "array"}
    assert props["labels"] == {"additionalProperties": {"type": "string"}, "type": "object"}
    assert props["note"] == {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}
    assert props["count"] == {"default": 3, "type": "integer"}
    assert p["$defs"]["Color"]["enum"] == ["red", "blue"]
    assert props["address"] == {"$ref": "#/$defs/Address"}
    assert p["$defs"]["Address"]["required"] == ["street"]
    assert p["$defs"]["Point"]["properties"]["x"] == {"type": "number"}


def test_arguments_are_converted_to_the_annotated_types() -> None:
    seen: dict[str, Any] = {}

    @seamkit.tool
    def take(color: Color, address: Address, point: Point, when: dt.date) -> str:
        seen.update(color=color, address=address, point=point, when=when)
        return "ok"

    result = call(
        take,
        {"color": "red", "address": {"street": "Main"}, "point": {"x": 1}, "when": "2026-01-02"},
    )
    assert result.content == "ok"
    assert seen == {
        "color": Color.RED,
        "address": Address(street="Main"),
        "point": Point(1.0),
        "when": dt.date(2026, 1, 2),
    }


def test_per_argument_descriptions_from_annotated_field() -> None:
    @seamkit.tool
    def f(q: Annotated[str, Field(description="What to look for.")], n: int = 5) -> None:
        """Search.

        Args:
            q: Overridden by the Field description.
            n: How many results.
        """

    assert f.parameters["properties"]["q"]["description"] == "What to look for."
    assert f.parameters["properties"]["n"]["description"] == "How many results."
    assert f.description == "Search."


@pytest.mark.parametrize(
    "doc",
    [
        "Look things up.\n\nArgs:\n    q: The query.\n    n: How many.\n",
        "Look things up.\n\nParameters\n----------\n"
        "q : str\n    The query.\nn : int\n    How many.\n",
        "Look things up.\n\n:param q: The query.\n:param n: How many.\n",
    ],
    ids=["google", "numpy", "rest"],
)
def test_per_argument_descriptions_from_the_docstring(doc: str) -> None:
    def lookup(q: str, n: int = 1) -> None: ...

    lookup.__doc__ = doc
    t = seamkit.tool(lookup)
    assert t.description == "Look things up."
    assert t.parameters["properties"]["q"]["description"] == "The query."
    assert t.parameters["properties"]["n"]["description"] == "How many."


def test_a_parameter_named_like_a_pydantic_attribute_works() -> None:
    @seamkit.tool
    def f(schema: str, model_config: int, copy: bool = False) -> str:
        return f"{schema}/{model_config}/{copy}"

    assert list(f.parameters["properties"]) == ["schema", "model_config", "copy"]
    assert call(f, {"schema": "s", "model_config": 2}).content == "s/2/False"


# --- injection ----------------------------------------------------------------


def test_injected_parameters_are_hidden_and_receive_their_values() -> None:
    got: dict[str, Any] = {}

    @seamkit.tool
    def act(
        ctx: ActionContext,
        action_context: Any,
        query: str,
        _user_id: str,
        client: Annotated[object, Injected("http")],
    ) -> str:
        got.update(ctx=ctx, action_context=action_context, user=_user_id, client=client)
        return "done"

    props = act.parameters["properties"]
    assert list(props) == ["query"] and act.parameters["required"] == ["query"]
    assert act.injected == {
        "ctx": None,
        "action_context": None,
        "_user_id": "user_id",
        "client": "http",
    }
    http = object()
    context = ActionContext(user_id="u-1", http=http, unrelated="x")
    assert call(act, {"query": "q"}, context).content == "done"
    assert got == {"ctx": context, "action_context": context, "user": "u-1", "client": http}


def test_an_argument_under_an_injected_name_is_invalid_and_never_used() -> None:
    @seamkit.tool
    def f(q: str, _role: str = "guest", **extra: Any) -> str:
        return _role

    with pytest.raises(InvalidToolCall) as info:
        call(f, {"q": "x", "_role": "admin"})
    assert info.value.errors == ("'_role' is not an argument of this tool",)
    assert call(f, {"q": "x", "other": 1}).content == "guest"


def test_a_tool_gets_only_what_it_asks_for() -> None:
    @seamkit.tool
    def pure(text: str, **extra: Any) -> dict[str, Any]:
        return {"text": text, "extra": extra}

    context = ActionContext(token=Secret("t"), user="u")
    result = call(pure, {"text": "a"}, context)
    assert result.content == '{"text":"a","extra":{}}'


def test_missing_required_dependency_is_an_error_result_naming_it() -> None:
    @seamkit.tool
    def lookup(q: str, _api_key: str) -> str:
        return "never"

    result = call(lookup, {"q": "x"}, ActionContext(user="u"))
    assert result.is_error and result.raised
    assert result.content == (
        "Error: tool 'lookup' needs the context property 'api_key' (parameter '_api_key'), "
        "and this request's context does not provide it"
    )


def test_an_optional_dependency_falls_back_to_its_default() -> None:
    @seamkit.tool
    def hello(_user: str = "anonymous") -> str:
        return f"hi {_user}"

    assert call(hello, {}).content == "hi anonymous"
    assert call(hello, {}, ActionContext(user="ann")).content == "hi ann"


def test_secrets_are_injected_plain_unless_the_parameter_wants_the_secret() -> None:
    @seamkit.tool
    def show(_token: str, wrapped: Annotated[Secret[str], Injected("token")]) -> str:
        assert isinstance(wrapped, Secret)
        return f"{_token}|{wrapped}"

    assert call(show, {}, ActionContext(token=Secret("abc"))).content == "abc|***"


# --- calling ------------------------------------------------------------------


def test_invalid_arguments_raise_invalid_tool_call_in_words_for_the_model() -> None:
    @seamkit.tool
    def add(a: int, b: int) -> int:
        return a + b

    with pytest.raises(InvalidToolCall) as info:
        call(add, {"a": "two", "c": 1})
    error = info.value
    assert error.tool == "add"
    assert error.errors == (
        "a: Input should be a valid integer",
        "missing required argument 'b'",
        "unexpected argument 'c' (arguments: a, b)",
    )
    assert str(error).startswith("invalid arguments for tool 'add': a: Input should be")
    with pytest.raises(InvalidToolCall, match="a: Input should be a valid integer"):
        call(add, {"a": "5", "b": 1})  # strict: what the schema rejects, the tool rejects
    with pytest.raises(InvalidToolCall, match="must be a JSON object, not list"):
        call(add, [1, 2])


def test_exceptions_become_raised_error_results() -> None:
    @seamkit.tool
    def broken(x: int) -> int:
        raise ValueError(f"cannot handle {x}")

    result = call(broken, {"x": 3})
    assert result == ToolResult(
        content="Error: ValueError: cannot handle 3", is_error=True, raised=True
    )


def test_returned_errors_are_not_raised() -> None:
    @seamkit.tool
    def refuse(x: int) -> ToolResult:
        return ToolResult.error(f"{x} is too big")

    result = asyncio.run(refuse.call({"x": 9}, call_id="c1"))
    assert result == ToolResult(call_id="c1", content="9 is too big", is_error=True, raised=False)


def test_async_tool_time_out_is_a_raised_error() -> None:
    @seamkit.tool(timeout_seconds=0.05)
    async def slow() -> str:
        await asyncio.sleep(5)
        return "late"

    result = call(slow, {})
    assert result.raised and result.content == "Error: tool 'slow' timed out after 0.05s"


def test_sync_tool_runs_inline_without_time_out_and_in_a_thread_with_one() -> None:
    def where() -> int:
        return threading.get_ident()

    main = threading.get_ident()
    assert call(seamkit.tool(where), {}).content == str(main)
    threaded = call(seamkit.tool(timeout_seconds=5)(where), {}).content
    assert threaded != str(main)


def test_sync_tool_time_out_holds() -> None:
    release = threading.Event()

    @seamkit.tool(timeout_seconds=0.05)
    def stuck() -> str:
        release.wait(5)
        return "late"

    try:
        result = call(stuck, {})
    finally:
        release.set()
    assert result.raised and "timed out after 0.05s" in result.content


def test_results_are_serialised_for_the_model() -> None:
    values: list[Any] = [
        "plain text",
        {"a": [1, 2]},
        Address(street="Main"),
        Point(1, 2),
        dt.datetime(2026, 1, 2, 3, 4, tzinfo=dt.UTC),
        None,
        Color.BLUE,
    ]
    expected = [
        "plain text",
        '{"a":[1,2]}',
        '{"street":"Main","zip":null}',
        '{"x":1,"y":2}',
        '"2026-01-02T03:04:00Z"',
        "null",
        '"blue"',
    ]
    for value, text in zip(values, expected, strict=True):

        @seamkit.tool
        def give() -> Any:
            return value  # noqa: B023

        assert call(give, {}).content == text


def test_a_result_that_cannot_be_json_is_a_raised_error() -> None:
    @seamkit.tool
    def give() -> Any:
        class Opaque:
            pass

        return [Opaque()]

    result = call(give, {})
    assert result.raised
    assert result.content == (
        "Error: tool 'give' returned a list that cannot be written as JSON: "
        "TypeError: Opaque is not JSON-serialisable"
    )


def test_a_returned_secret_stays_masked() -> None:
    @seamkit.tool
    def give() -> Any:
        return {"key": Secret("k")}

    assert call(give, {}).content == '{"key":"***"}'


def test_call_id_is_stamped_on_the_result() -> None:
    @seamkit.tool
    async def f() -> str:
        return "x"

    assert asyncio.run(f.call({}, call_id="call_9")).call_id == "call_9"


def test_replace_keeps_the_analysed_signature() -> None:
    @seamkit.tool
    def f(a: int) -> int:
        return a

    g = f.replace(name="g", timeout_seconds=1)
    assert (g.name, g.timeout_seconds, g.parameters) == ("g", 1, f.parameters)
    assert f.name == "f" and repr(g) == "<Tool g(a)>"
    with pytest.raises(TypeError, match="unknown field"):
        f.replace(colour="red")


# --- names ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("memory_server_get_memories", "memory_server_get_memories"),
        ("memory server/get memories!", "memory_server_get_memories_"),
        ("9lives", "_9lives"),
        ("-dash", "_-dash"),
        ("a..b", "a_b"),
        ("über", "_ber"),
        ("", ""),
        ("x" * 70, "x" * 64),
    ],
)
def test_sanitize_toolname(raw: str, clean: str) -> None:
    assert seamkit.sanitize_toolname(raw) == clean
