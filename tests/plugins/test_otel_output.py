"""seamkit-otel and structured output: the ``invoke_agent`` span of a run
with a declared output says so (``gen_ai.output.type`` ``json``, the
output's type and mode, how many answers were not accepted), its captured
output is the validated value's JSON, and a secret in a rejected answer is
in no span."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import seamkit
from opentelemetry.sdk.trace import ReadableSpan
from pydantic import BaseModel
from seamkit.testing import ScriptedModel

from tests.plugins.otel_helpers import Exported, exported

__all__ = ["exported"]

CANARY = "out-s3cret-canary-7781"
ACCEPTED = {"name": "Ann", "age": 31}


class Record(BaseModel):
    name: str
    age: int


def _run(agent: seamkit.Agent, streaming: bool, **options: Any) -> seamkit.RunResult:
    async def go() -> seamkit.RunResult:
        if not streaming:
            return await agent.run("Who is it?", **options)
        events = [e async for e in agent.stream("Who is it?", **options)]
        finished = events[-1]
        assert isinstance(finished, seamkit.stream.RunFinished)
        return finished.result

    return asyncio.run(go())


def _agent_span(exported: Exported) -> dict[str, Any]:
    (span,) = exported.named("invoke_agent")
    assert isinstance(span, ReadableSpan)
    return dict(span.attributes or {})


@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize("mode", ["tool", "native"])
def test_the_agent_span_records_the_output_its_mode_and_retries(
    exported: Exported, monkeypatch: pytest.MonkeyPatch, mode: seamkit.OutputMode, streaming: bool
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    script = [{"output": {"name": "Ann"}}, {"output": {"age": "x"}}, {"output": ACCEPTED}]
    output = seamkit.Output(Record, mode=mode)
    agent = seamkit.Agent(ScriptedModel(script), output=output)
    result = _run(agent, streaming)
    assert result.output == Record(**ACCEPTED)
    attributes = _agent_span(exported)
    assert attributes["gen_ai.output.type"] == "json"
    assert attributes["seamkit.output.type"] == "Record"
    assert attributes["seamkit.output.mode"] == mode
    assert attributes["seamkit.output.retries"] == 2
    (message,) = json.loads(str(attributes["gen_ai.output.messages"]))
    assert json.loads(message["parts"][0]["content"]) == ACCEPTED  # JSON, not a repr


def test_a_run_without_an_output_has_no_output_attributes(exported: Exported) -> None:
    _run(seamkit.Agent(ScriptedModel([{"text": "Ann."}])), False)
    attributes = _agent_span(exported)
    assert not {k for k in attributes if k.startswith(("gen_ai.output.type", "seamkit.output"))}


def test_a_secret_in_a_failed_answer_is_in_no_span(
    exported: Exported, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    bad = {"name": CANARY}  # no age: every answer fails, and says the secret
    script = [{"output": bad}, {"output": bad}, {"output": {"name": CANARY, "age": CANARY}}]
    agent = seamkit.Agent(ScriptedModel(script), output=seamkit.Output(Record, mode="native"))
    result = _run(agent, False, context={"token": seamkit.Secret(CANARY)})
    assert isinstance(result.outcome, seamkit.Failed)
    assert result.outcome.error.startswith("OutputInvalid:")
    attributes = _agent_span(exported)
    assert attributes["seamkit.output.retries"] == 3  # each answer not accepted, the last too
    assert attributes["error.type"] == "OutputInvalid"
    assert "gen_ai.output.messages" not in attributes  # no value: nothing accepted
    everything = exported.everything()
    assert "***" in everything  # the answers were captured, masked
    assert CANARY not in everything
