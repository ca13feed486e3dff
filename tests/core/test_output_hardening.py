"""A declared output against what a hostile answer, a careless hook or a
long stream would do to it (issue 30's review): a hook's value is checked
whole, ``NaN`` is not JSON, a schema that is not plain JSON is refused,
wrapped schemas keep their definitions, fences and long streams cost what
their length does, partials a run did not accept are taken back, and an
error's quoted answer is masked before it is cut."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import seamkit
from pydantic import BaseModel, Field
from seamkit import (
    Agent,
    ModelRequest,
    ModelTurn,
    Output,
    OutputDefinitionError,
    OutputInvalid,
    flow as F,
)
from seamkit._partial import Partial
from seamkit.stream import OutputDelta, OutputRetry, RunFinished
from seamkit.testing import ScriptedModel


class Invoice(BaseModel):
    customer: str
    total: float


class Aliased(BaseModel):
    customer_name: str = Field(alias="customerName")


GOOD = {"customer": "Ada", "total": 3.5}


class Rewriting:
    """An on_output hook returning a fixed flow (or changing the value in place)."""

    name = "shaper"

    def __init__(self, flow: object = None, mutate: bool = False) -> None:
        self.flow = flow
        self.mutate = mutate

    @seamkit.hookimpl
    def on_output(self, ctx: seamkit.HookContext, output: object) -> F.OutputFlow:
        if self.mutate:
            assert isinstance(output, Invoice)
            output.total = "lots"  # type: ignore[assignment]  # a careless hook
        return self.flow  # type: ignore[return-value]


def _run(hooks: list[object], output: Any = Invoice, turns: Any = None) -> seamkit.RunResult:
    model = ScriptedModel(turns or [{"output": GOOD}])
    return Agent(model, output=output, hooks=hooks, plugin_hooks=False).run_sync("go")


def test_a_rewrite_to_an_instance_built_without_validation_fails_the_run() -> None:
    bad = Invoice.model_construct(customer="Ada", total="lots")
    result = _run([Rewriting(F.RewriteOutput(bad))])
    assert result.outcome.kind == "failed" and result.output is None
    assert "hook 'shaper' at on_output rewrote the output" in result.outcome.error


def test_a_value_a_hook_changed_in_place_is_checked_before_the_run_completes() -> None:
    result = _run([Rewriting(None, mutate=True)])
    assert result.outcome.kind == "failed" and result.output is None
    assert "left the output as a value that does not fit it" in result.outcome.error


def test_a_good_rewrite_and_aliases_pass_the_whole_check() -> None:
    result = _run([Rewriting(F.RewriteOutput(Invoice(customer="Bo", total=1)))])
    assert result.output == Invoice(customer="Bo", total=1.0)
    aliased = _run([Rewriting(None)], output=Aliased, turns=[{"output": {"customerName": "Cy"}}])
    assert aliased.output == Aliased(customerName="Cy")


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_not_json(constant: str) -> None:
    with pytest.raises(OutputInvalid, match="not valid JSON"):
        Output(Invoice).parse(f'{{"customer": "Ada", "total": {constant}}}')


def test_a_schema_that_is_not_plain_json_is_a_definition_error() -> None:
    with pytest.raises(OutputDefinitionError, match="plain JSON"):
        Output({"type": "object", "properties": {"a": {"type": str}}})
    cyclic: dict[str, Any] = {"type": "object"}
    cyclic["properties"] = {"self": cyclic}
    with pytest.raises(OutputDefinitionError, match="plain JSON"):
        Output(cyclic)


def test_a_wrapped_schema_keeps_its_definitions_at_the_root() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "array",
        "items": {"$ref": "#/definitions/Item"},
        "definitions": {"Item": {"type": "integer"}},
    }
    output = Output(schema)
    asked = output.json_schema
    assert asked["definitions"] == {"Item": {"type": "integer"}}
    assert asked["$schema"] == schema["$schema"]
    assert asked["properties"]["response"] == {"type": "array", "items": schema["items"]}
    assert output.parse('{"response": [1, 2]}') == [1, 2]
    with pytest.raises(OutputInvalid):
        output.parse('{"response": ["x"]}')


def test_a_fence_with_a_long_run_of_spaces_parses_in_linear_time() -> None:
    started = time.perf_counter()
    with pytest.raises(OutputInvalid):
        Output(Invoice).parse("```json\n" + " " * 200_000 + "x")
    assert Output(Invoice).parse('```json\n{"customer": "A", "total": 1}\n```').total == 1.0
    assert time.perf_counter() - started < 1.0


def test_a_long_stream_of_small_pieces_costs_its_length() -> None:
    text = json.dumps({"a": ["x" * 20] * 5000})  # 120 KB in 4-character pieces
    partial = Partial()
    snapshots = []
    started = time.perf_counter()
    for i in range(0, len(text), 4):
        if (snapshot := partial.feed(text[i : i + 4])) is not None:
            snapshots.append(snapshot)
    assert time.perf_counter() - started < 2.0  # no copy of the text per piece
    value = snapshots[-1]()
    assert isinstance(value, dict) and value["a"][:2] == ["x" * 20] * 2


def test_a_text_that_stops_being_json_shows_the_last_partial_that_was() -> None:
    partial = Partial()
    snapshots = [partial.feed(piece) for piece in ['{"a": [1, ', "2, ", "oops", " 3]}"]]
    shown = [s() for s in snapshots if s is not None]
    assert shown[-1] == {"a": [1, 2]}
    assert partial.finish() is None  # the whole text is not JSON


class Refusing:
    """Streams the start of an answer, then refuses."""

    output_modes = frozenset({"native"})

    async def complete(self, request: ModelRequest) -> ModelTurn:
        raise AssertionError("streamed only")

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ModelTurn]:
        yield '{"customer": "Ada", '
        message = seamkit.Message.assistant('{"customer": "Ada", I cannot help with that')
        yield ModelTurn(message=message, finish_reason="refusal")


async def test_partials_of_an_answer_that_is_refused_are_taken_back() -> None:
    events = [e async for e in Agent(Refusing(), output=Invoice).stream("go")]
    kinds = [type(e) for e in events]
    assert OutputDelta in kinds and OutputRetry in kinds
    assert kinds.index(OutputRetry) > kinds.index(OutputDelta)
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.result.outcome.kind == "failed"
    assert "the model refused" in finished.result.outcome.error


async def test_an_answer_quoted_in_the_error_is_masked_before_it_is_cut() -> None:
    secret = "s3cr3t-" + "k" * 30
    answer = "x" * 180 + secret  # the secret straddles the cut at 200 characters
    model = ScriptedModel([{"text": answer}])
    agent = Agent(model, output=Output(Invoice, retries=0), plugin_hooks=False)
    result = await agent.run("go", context={"key": seamkit.Secret(secret)})
    assert result.outcome.kind == "failed"
    error = result.outcome.error
    assert "s3cr3t" not in error and "kkkkk" not in error
