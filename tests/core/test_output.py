"""A declared output (`seamkit.Output`, issue 30): what it accepts, how it
parses and explains an answer, when it can be strict, how it refuses a bad
definition, and how a run with it ends (refusals, terminal tools, per-run
outputs, ``RunResult.text``, ``--json``, secrets)."""

from __future__ import annotations

import dataclasses
import json
import sys
import typing
from collections.abc import AsyncIterator
from typing import Any, NotRequired

import pytest
import seamkit
from pydantic import BaseModel
from seamkit import (
    Agent,
    Message,
    ModelRequest,
    ModelTurn,
    Output,
    OutputDefinitionError,
    OutputInvalid,
)
from seamkit._output import strict_problem
from seamkit.testing import ScriptedModel
from typing_extensions import TypedDict


class Invoice(BaseModel):
    customer: str
    total: float


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Person(TypedDict):
    name: str
    age: NotRequired[int]


class WithDefault(BaseModel):
    a: str
    b: int = 0


SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name", "tags"],
}


# --- what can be an output ------------------------------------------------------------------


def test_a_pydantic_model_parses_to_an_instance_and_dumps_to_json() -> None:
    output = Output(Invoice)
    value = output.parse('{"customer": "Ada", "total": 3}')
    assert value == Invoice(customer="Ada", total=3.0)
    assert output.dump(value) == {"customer": "Ada", "total": 3.0}
    assert output.type_name == "Invoice" and not output.wrapped
    assert output.json_schema["type"] == "object"


def test_a_dataclass_and_a_typeddict_are_outputs() -> None:
    assert Output(Point).parse('{"x": 1, "y": 2}') == Point(1, 2)
    person = Output(Person)
    assert person.parse('{"name": "Bo"}') == {"name": "Bo"}
    assert person.json_schema["required"] == ["name"]


class OldStyle(typing.TypedDict):
    name: str


def test_a_typing_typeddict_works_where_pydantic_takes_it_and_is_refused_where_not() -> None:
    if sys.version_info >= (3, 12):
        assert Output(OldStyle).parse('{"name": "x"}') == {"name": "x"}
        return
    with pytest.raises(OutputDefinitionError) as caught:  # not a bare pydantic error
        Output(OldStyle)
    assert str(caught.value).startswith("OldStyle cannot be an output")
    assert "typing_extensions.TypedDict" in str(caught.value)


def test_a_scalar_or_list_type_is_wrapped_and_taken_wrapped_or_bare() -> None:
    number = Output(int)
    assert number.wrapped
    assert number.json_schema == {
        "type": "object",
        "properties": {"response": {"type": "integer"}},
        "required": ["response"],
        "additionalProperties": False,
    }
    assert number.parse("3") == 3 and number.parse('{"response": 4}') == 4
    words = Output(list[str])
    assert words.parse('["a", "b"]') == ["a", "b"]
    assert words.parse('{"response": ["c"]}') == ["c"]
    assert words.dump(["a"]) == ["a"]


def test_a_json_schema_mapping_is_an_output_whose_value_is_the_json() -> None:
    output = Output(SCHEMA)
    assert output.type_name == "schema"
    assert output.parse('{"name": "x", "tags": []}') == {"name": "x", "tags": []}
    with pytest.raises(OutputInvalid) as caught:
        output.parse('{"name": 1, "tags": [2]}')
    assert caught.value.errors == (
        "name: 1 is not of type 'string'",
        "tags[0]: 2 is not of type 'string'",
    )


def test_a_fenced_answer_is_parsed() -> None:
    assert Output(Invoice).parse('```json\n{"customer": "A", "total": 1}\n```').total == 1.0
    assert Output(list[int]).parse("```\n[1, 2]\n```") == [1, 2]


# --- what a failed answer says ----------------------------------------------------------------


def test_an_answer_that_does_not_fit_lists_each_field_and_keeps_the_answer() -> None:
    with pytest.raises(OutputInvalid) as caught:
        Output(Invoice).parse('{"customer": 1}')
    assert caught.value.errors == (
        "customer: Input should be a valid string",
        "total: Field required",
    )
    assert caught.value.answer == '{"customer": 1}'
    assert str(caught.value).startswith("OutputInvalid: customer: ")


def test_an_answer_that_is_not_json_says_where() -> None:
    with pytest.raises(OutputInvalid) as caught:
        Output(Invoice).parse('{"customer": ')
    [error] = caught.value.errors
    assert error.startswith("the answer is not valid JSON: ") and "at position" in error


def test_a_wrong_root_is_named_as_the_answer() -> None:
    with pytest.raises(OutputInvalid) as caught:
        Output(SCHEMA).parse("[1]")
    assert caught.value.errors[0].startswith("(answer): ")


# --- strict schemas ---------------------------------------------------------------------------


def test_strict_problem_names_an_optional_field() -> None:
    problem = strict_problem(Output(WithDefault).json_schema)
    assert problem is not None and problem.startswith("b: an optional field")


def test_strict_problem_names_one_of_and_a_root_that_is_not_an_object() -> None:
    one_of = {
        "type": "object",
        "properties": {"a": {"oneOf": [{"type": "string"}, {"type": "integer"}]}},
        "required": ["a"],
    }
    assert strict_problem(one_of) == "a: 'oneOf' is not allowed in a strict schema"
    assert strict_problem({"type": "array"}) == "(root): a strict schema's root must be an object"
    assert strict_problem(Output(Invoice).json_schema) is None


def test_strict_none_is_strict_only_when_the_schema_allows_it() -> None:
    assert Output(Invoice).strict is True
    assert Output(Invoice).json_schema["additionalProperties"] is False
    assert Output(WithDefault).strict is False
    assert "additionalProperties" not in Output(WithDefault).json_schema
    assert Output(int).strict is True  # the wrapper object is strict-shaped
    assert Output(Invoice, strict=False).strict is False


def test_strict_true_on_a_schema_that_cannot_be_strict_is_refused_naming_the_construct() -> None:
    with pytest.raises(OutputDefinitionError) as caught:
        Output(WithDefault, strict=True)
    assert "cannot be strict: b: an optional field" in str(caught.value)
    assert caught.value.construct is not None and caught.value.construct.startswith("b:")
    assert "strict: false" in (caught.value.hint or "")


# --- definitions that cannot be outputs ---------------------------------------------------------


class NotAType:
    """Something pydantic cannot describe."""


@pytest.mark.parametrize(
    ("options", "says", "hint"),
    [
        ({"mode": "json"}, "output mode 'json' is not one of auto, tool, native, prompted", "mode"),
        ({"retries": -1}, "output retries must be a whole number >= 0, not -1", "retries: 2"),
        ({"retries": True}, "not True", "retries: 2"),
        ({"retries": 1.5}, "not 1.5", "retries: 2"),
        ({"name": "final answer"}, "output name 'final answer' must be 1 to 64", "name:"),
        ({"name": ""}, "output name '' must be", "name:"),
    ],
)
def test_a_bad_option_is_refused_saying_what_would_be_right(
    options: dict[str, Any], says: str, hint: str
) -> None:
    with pytest.raises(OutputDefinitionError) as caught:
        Output(Invoice, **options)
    assert says in str(caught.value)
    assert hint in (caught.value.hint or "")


def test_a_schema_that_is_not_a_json_schema_is_refused() -> None:
    with pytest.raises(OutputDefinitionError) as caught:
        Output({"type": "nope"})
    assert "the output schema is not a valid JSON Schema" in str(caught.value)
    assert "(at type)" in str(caught.value)


def test_a_type_pydantic_cannot_describe_is_refused_naming_it() -> None:
    with pytest.raises(OutputDefinitionError) as caught:
        Output(NotAType)
    assert str(caught.value).startswith("NotAType cannot be an output")
    assert "JSON Schema mapping" in (caught.value.hint or "")


@seamkit.tool
def final_result(x: int) -> str:
    """An app tool that happens to have the output tool's name."""
    return str(x)


def test_an_output_tool_named_like_an_app_tool_is_refused() -> None:
    with pytest.raises(OutputDefinitionError) as caught:
        Agent(ScriptedModel([]), tools=[final_result], output=Output(Invoice, mode="tool"))
    assert "the output tool 'final_result' has the name of a tool" in str(caught.value)
    assert "Output(T, name=...)" in (caught.value.hint or "")
    renamed = Output(Invoice, mode="tool", name="answer")
    assert Agent(ScriptedModel([]), tools=[final_result], output=renamed).output is renamed
    # native mode has no output tool: no clash
    Agent(ScriptedModel([]), tools=[final_result], output=Output(Invoice, mode="native"))


# --- runs ---------------------------------------------------------------------------------------


class Refusing:
    """A model that refuses, as a provider reports it."""

    output_modes = frozenset({"native"})

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest) -> ModelTurn:
        self.requests.append(request)
        return ModelTurn(
            message=Message.assistant("I can't help with that."), finish_reason="refusal"
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[object]:
        yield await self.complete(request)


def test_a_refusal_fails_the_run_at_once() -> None:
    model = Refusing()
    result = Agent(model, output=Invoice, plugin_hooks=False).run_sync("go")
    assert result.outcome.kind == "failed"
    assert result.outcome.error == "OutputInvalid: the model refused: I can't help with that."
    assert result.output is None and result.text == "I can't help with that."
    assert len(model.requests) == 1


@seamkit.tool(terminal=True)
def finish(customer: str, total: str) -> str:
    """Close the order; its result is the run's answer."""
    return json.dumps({"customer": customer, "total": total})


def test_a_terminal_tools_result_is_validated_as_the_answer() -> None:
    good = ScriptedModel(
        [{"tool_calls": [{"name": "finish", "arguments": {"customer": "c", "total": "2"}}]}]
    )
    result = Agent(good, tools=[finish], output=Invoice, plugin_hooks=False).run_sync("go")
    assert result.outcome.kind == "completed"
    assert result.output == Invoice(customer="c", total=2.0)


def test_a_terminal_tools_result_that_does_not_fit_fails_without_a_retry() -> None:
    bad = ScriptedModel(
        [{"tool_calls": [{"name": "finish", "arguments": {"customer": "c", "total": "lots"}}]}]
    )
    result = Agent(bad, tools=[finish], output=Invoice, plugin_hooks=False).run_sync("go")
    assert result.outcome.kind == "failed"
    assert result.outcome.error.startswith("OutputInvalid: total: ")
    assert "(after 1 answer)" in result.outcome.error
    assert result.output is None and len(bad.requests) == 1


def test_a_runs_output_replaces_the_agents() -> None:
    model = ScriptedModel([{"output": {"customer": "c", "total": 1}}, {"output": 7}])
    agent = Agent(model, output=Invoice, plugin_hooks=False)
    assert agent.run_sync("go").output == Invoice(customer="c", total=1.0)
    result = agent.run_sync("go", output=int)
    assert result.output == 7
    assert model.requests[1].output is not None
    assert model.requests[1].output.json_schema["properties"]["response"] == {"type": "integer"}


def test_result_text_is_the_models_answer_and_output_the_value() -> None:
    model = ScriptedModel(
        [{"output": {"customer": "c", "total": "x"}}, {"output": {"customer": "c", "total": 3}}]
    )
    result = Agent(model, output=Output(Invoice, mode="native"), plugin_hooks=False).run_sync("go")
    assert result.outcome.kind == "completed"
    assert result.output == Invoice(customer="c", total=3.0)
    assert result.text == '{"customer": "c", "total": 3}'
    [note] = result.diagnostics
    assert note.code == "output_retry" and "total: Input should be a valid number" in note.message
    feedback = result.transcript[2]
    assert feedback.role == "user" and not feedback.from_user
    assert feedback.text.startswith("Your answer was not accepted:\n- total: ")


def test_the_json_shape_of_a_result_carries_the_value_as_json() -> None:
    model = ScriptedModel([{"output": {"customer": "c", "total": 3}}])
    result = Agent(model, output=Output(Invoice, mode="tool"), plugin_hooks=False).run_sync("go")
    shape = json.loads(json.dumps(result.model_dump(mode="json")))
    assert shape["output"] == {"customer": "c", "total": 3.0}
    assert shape["text"] == ""  # tool mode: the answer was the output tool's arguments
    assert shape["outcome"] == {"kind": "completed"}


def test_a_failed_run_has_no_output_and_says_how_many_answers() -> None:
    model = ScriptedModel([{"text": "no"}, {"text": "still no"}])
    result = Agent(
        model, output=Output(Invoice, mode="native", retries=1), plugin_hooks=False
    ).run_sync("go")
    assert result.outcome.kind == "failed" and result.output is None
    error = result.outcome.error
    assert error.startswith("OutputInvalid: the answer is not valid JSON")
    assert "(after 2 answers); last answer: 'still no'" in error


@pytest.mark.parametrize("mode", ["native", "tool"])
def test_a_secret_in_an_answer_is_in_no_error_feedback_or_diagnostic(mode: str) -> None:
    canary = "canary-7f3e9a"
    model = ScriptedModel(
        [
            {"output": {"customer": 1, "total": canary}},
            {"text": f"not json {canary}"},
            {"output": {"customer": canary, "total": "x"}},
        ]
    )
    agent = Agent(model, output=Output(Invoice, mode=mode), plugin_hooks=False)
    result = agent.run_sync("go", context={"k": seamkit.Secret(canary)})
    assert result.outcome.kind == "failed"
    assert canary not in result.outcome.error
    feedback = [m.text for m in result.transcript if m.role in ("user", "tool")]
    assert feedback and not any(canary in text for text in feedback)
    assert result.diagnostics and not any(canary in d.message for d in result.diagnostics)
    for request in model.requests[1:]:  # what the model was told back
        assert not any(canary in m.text for m in request.messages if m.role != "assistant")
