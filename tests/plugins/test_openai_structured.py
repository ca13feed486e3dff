"""The ``openai`` provider and structured output, over real sockets against
the replay server (`tests/plugins/openai_server.py`): the ``response_format``
a native run sends (and that no other mode sends), the output tool a tool run
sends, and every shape a server answers with — content JSON, a refusal
(whole and streamed), a stream cut at the token limit, a dropped stream —
plus argument fragments that reach ``Agent.stream`` as partial values."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
import seamkit
from pydantic import BaseModel
from seamkit.stream import OutputDelta, OutputRetry, RunFinished, ToolArgumentsDelta
from seamkit_openai import OpenAIConfig, OpenAIModel, build_model

from tests.plugins.openai_server import ReplayServer, Reply


class Person(BaseModel):
    name: str
    age: int
    tags: list[str]


VALUE = {"name": "Ada", "age": 36, "tags": ["maths", "engines"]}
ANSWER = json.dumps(VALUE)


@pytest.fixture(scope="module")
def server() -> Iterator[ReplayServer]:
    with ReplayServer() as running:
        yield running


def model_for(server: ReplayServer, name: str, **options: Any) -> OpenAIModel:
    return build_model(
        OpenAIConfig(provider="openai", name=name, base_url=server.base_url, **options)
    )


def bodies(server: ReplayServer, model: str) -> list[dict[str, Any]]:
    return [r.body for r in server.requests if r.body.get("model") == model]


def content(text: str | None, *, refusal: str | None = None, finish: str = "stop") -> Reply:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if refusal is not None:
        message["refusal"] = refusal
    return Reply.json({"choices": [{"index": 0, "message": message, "finish_reason": finish}]})


def call(arguments: str, name: str = "final_result", call_id: str = "call_1") -> Reply:
    tool_call = {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }
    message = {"role": "assistant", "content": None, "tool_calls": [tool_call]}
    return Reply.json(
        {"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}
    )


def delta(finish: str | None = None, **fields: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": fields, "finish_reason": finish}]}


def pieces(text: str, size: int = 7) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def streamed_call(arguments: str, name: str = "final_result") -> Reply:
    """A tool call streamed as OpenAI does: id and name first, then fragments."""
    first = {"index": 0, "id": "call_s", "type": "function"}
    events = [
        delta(role="assistant", tool_calls=[{**first, "function": {"name": name, "arguments": ""}}])
    ]
    events += [
        delta(tool_calls=[{"index": 0, "function": {"arguments": piece}}])
        for piece in pieces(arguments)
    ]
    events.append(delta("tool_calls"))
    return Reply.sse(events)


def native(**options: Any) -> seamkit.ModelRequest:
    output = seamkit.Output(Person, mode="native", **options)
    return seamkit.ModelRequest(
        messages=(seamkit.Message.user("who?"),), output=output.spec("native")
    )


# --- the request on the wire ------------------------------------------------------


def test_a_native_request_sends_the_schema_as_response_format(server: ReplayServer) -> None:
    server.script("r-native", content(ANSWER), content(ANSWER))
    model = model_for(server, "r-native")
    asyncio.run(model.complete(native(name="person", description="The person asked about.")))
    asyncio.run(model.complete(native()))
    described, plain = bodies(server, "r-native")
    schema = seamkit.Output(Person).json_schema  # all fields required: strict by default
    assert described["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "person",
            "schema": schema,
            "strict": True,
            "description": "The person asked about.",
        },
    }
    assert plain["response_format"]["json_schema"] == {
        "name": "final_result",
        "schema": schema,
        "strict": True,
    }  # no description when none is set


def test_a_native_request_says_strict_as_the_output_does(server: ReplayServer) -> None:
    server.script("r-strict", content(ANSWER))
    asyncio.run(model_for(server, "r-strict").complete(native(strict=False)))
    assert bodies(server, "r-strict")[0]["response_format"]["json_schema"]["strict"] is False


def test_the_users_additional_params_win_over_the_response_format(server: ReplayServer) -> None:
    server.script("r-params", content(ANSWER))
    request = native().model_copy(
        update={"additional_params": {"response_format": {"type": "json_object"}}}
    )
    asyncio.run(model_for(server, "r-params").complete(request))
    assert bodies(server, "r-params")[0]["response_format"] == {"type": "json_object"}


def test_a_tool_run_sends_the_output_tool_required_and_no_response_format(
    server: ReplayServer,
) -> None:
    server.script("r-tool", call(ANSWER))
    agent = seamkit.Agent(model_for(server, "r-tool"))
    result = asyncio.run(agent.run("who?", output=seamkit.Output(Person, mode="tool")))
    assert result.output == Person(**VALUE)
    (body,) = bodies(server, "r-tool")
    assert "response_format" not in body
    assert body["tool_choice"] == "required"
    (tool,) = body["tools"]
    assert tool["function"]["name"] == "final_result"
    assert tool["function"]["parameters"] == seamkit.Output(Person).json_schema


def test_a_prompted_run_sends_the_schema_in_the_preamble_and_no_response_format(
    server: ReplayServer,
) -> None:
    server.script("r-prompted", content(ANSWER))
    agent = seamkit.Agent(model_for(server, "r-prompted"))
    result = asyncio.run(agent.run("who?", output=seamkit.Output(Person, mode="prompted")))
    assert result.output == Person(**VALUE)
    (body,) = bodies(server, "r-prompted")
    assert "response_format" not in body
    assert "tools" not in body
    assert '"age"' in body["messages"][0]["content"]


def test_the_model_serves_native_tool_and_prompted_so_auto_is_native(
    server: ReplayServer,
) -> None:
    model = model_for(server, "r-auto")
    assert model.output_modes == {"native", "tool", "prompted"}
    server.script("r-auto", content(ANSWER))
    result = asyncio.run(seamkit.Agent(model).run("who?", output=Person))
    assert result.output == Person(**VALUE)
    assert bodies(server, "r-auto")[0]["response_format"]["type"] == "json_schema"


def test_native_output_false_makes_auto_use_the_output_tool(server: ReplayServer) -> None:
    model = model_for(server, "r-off", native_output=False)
    assert model.output_modes == {"tool", "prompted"}
    server.script("r-off", call(ANSWER))
    result = asyncio.run(seamkit.Agent(model).run("who?", output=Person))
    assert result.output == Person(**VALUE)
    (body,) = bodies(server, "r-off")
    assert "response_format" not in body
    assert body["tools"][0]["function"]["name"] == "final_result"


def test_native_output_false_and_mode_native_is_an_error_that_says_what_to_do(
    server: ReplayServer,
) -> None:
    agent = seamkit.Agent(model_for(server, "r-off-native", native_output=False))
    result = asyncio.run(agent.run("who?", output=seamkit.Output(Person, mode="native")))
    assert isinstance(result.outcome, seamkit.Failed)
    assert "native_output: false" in result.outcome.error
    assert bodies(server, "r-off-native") == []  # nothing was sent


# --- what the server answers ------------------------------------------------------


def test_content_json_is_the_answer_whole_and_streamed(server: ReplayServer) -> None:
    events = [delta(role="assistant", content="")]
    events += [delta(content=piece) for piece in pieces(ANSWER)]
    events.append(delta("stop"))
    server.script("a-json", content(ANSWER), Reply.sse(events))
    agent = seamkit.Agent(model_for(server, "a-json"), output=Person)
    whole = asyncio.run(agent.run("who?"))
    assert whole.output == Person(**VALUE)
    assert whole.text == ANSWER

    async def go() -> list[Any]:
        return [e async for e in agent.stream("who?")]

    stream = asyncio.run(go())
    assert stream[-1].result.output == Person(**VALUE)
    partials = [e.partial for e in stream if isinstance(e, OutputDelta)]
    assert partials and partials[-1] == VALUE


def test_a_refusal_is_a_refusal_turn_with_its_text(server: ReplayServer) -> None:
    server.script("a-refuse", content(None, refusal="I can't help with that."))
    turn = asyncio.run(model_for(server, "a-refuse").complete(native()))
    assert turn.finish_reason == "refusal"
    assert turn.message.text == "I can't help with that."


def test_a_streamed_refusal_yields_its_text_and_ends_in_a_refusal_turn(
    server: ReplayServer,
) -> None:
    events = [
        delta(role="assistant", content=None, refusal=""),
        delta(refusal="I'm sorry, "),
        delta(refusal="I can't help with that."),
        delta("stop"),
    ]
    server.script("a-refuse-s", Reply.sse(events))
    model = model_for(server, "a-refuse-s")

    async def go() -> list[Any]:
        return [item async for item in model.stream(native())]

    *texts, turn = asyncio.run(go())
    assert texts == ["I'm sorry, ", "I can't help with that."]  # text guards see them
    assert turn.finish_reason == "refusal"
    assert turn.message.text == "I'm sorry, I can't help with that."


def test_a_refusal_ends_a_structured_run_failed_with_one_call(server: ReplayServer) -> None:
    server.script("a-refuse-run", content(None, refusal="No."))
    agent = seamkit.Agent(model_for(server, "a-refuse-run"), output=Person)
    result = asyncio.run(agent.run("who?"))
    assert isinstance(result.outcome, seamkit.Failed)
    assert result.outcome.error == "OutputInvalid: the model refused: No."
    assert result.output is None
    assert len(bodies(server, "a-refuse-run")) == 1


def test_a_stream_cut_at_the_token_limit_is_a_length_turn_the_run_retries(
    server: ReplayServer,
) -> None:
    cut = [delta(content=piece) for piece in pieces(ANSWER[:20])] + [delta("length")]
    whole = [delta(content=ANSWER), delta("stop")]
    server.script("a-length", Reply.sse(cut), Reply.sse(cut), Reply.sse(whole))
    model = model_for(server, "a-length")

    async def turn() -> Any:
        return [item async for item in model.stream(native())][-1]

    assert asyncio.run(turn()).finish_reason == "length"

    async def run() -> list[Any]:
        agent = seamkit.Agent(model, output=Person)
        return [e async for e in agent.stream("who?")]

    events = asyncio.run(run())
    result = events[-1].result
    assert result.output == Person(**VALUE)
    cut_answer, feedback = bodies(server, "a-length")[-1]["messages"][-2:]
    assert cut_answer == {"role": "assistant", "content": ANSWER[:20]}
    assert feedback["role"] == "user"  # the run told the model the JSON did not validate
    assert "not valid JSON" in feedback["content"]
    assert any(isinstance(e, OutputRetry) for e in events)


def test_an_output_tool_call_cut_at_the_token_limit_is_retried_not_an_error(
    server: ReplayServer,
) -> None:
    cut = [
        delta(tool_calls=[{"index": 0, "id": "c1", "function": {"name": "final_result"}}]),
        delta(tool_calls=[{"index": 0, "function": {"arguments": ANSWER[:15]}}]),
        delta("length"),
    ]
    server.script("a-length-tool", Reply.sse(cut), streamed_call(ANSWER))
    agent = seamkit.Agent(model_for(server, "a-length-tool"))

    async def run() -> list[Any]:
        return [e async for e in agent.stream("who?", output=seamkit.Output(Person, mode="tool"))]

    assert asyncio.run(run())[-1].result.output == Person(**VALUE)
    assert len(bodies(server, "a-length-tool")) == 2


@pytest.mark.parametrize("dropped", [False, True], ids=["ended", "dropped"])
def test_a_structured_stream_cut_before_done_is_a_model_error(
    server: ReplayServer, dropped: bool
) -> None:
    events = [delta(content=piece) for piece in pieces(ANSWER[:20])]
    name = f"a-cut-{dropped}"
    server.script(name, Reply.sse(events, done=False, cut=dropped))
    model = model_for(server, name, max_retries=0)

    async def go() -> list[Any]:
        return [item async for item in model.stream(native())]

    with pytest.raises(seamkit.ModelError, match=r"cut off before \[DONE\].*middle of the text"):
        asyncio.run(go())


# --- streaming partial values and equal values across modes -------------------------


def test_argument_fragments_reach_the_agent_stream_as_output_deltas(
    server: ReplayServer,
) -> None:
    model = model_for(server, "p-tool")
    request = seamkit.ModelRequest(
        messages=(seamkit.Message.user("who?"),),
        output=seamkit.Output(Person, mode="tool").spec("tool"),
    )
    server.script("p-tool", streamed_call(ANSWER), streamed_call(ANSWER))
    items = asyncio.run(_collect(model.stream(request)))
    fragments = [i for i in items if isinstance(i, ToolArgumentsDelta)]
    assert "".join(f.text for f in fragments) == ANSWER
    assert {(f.index, f.id, f.name) for f in fragments} == {(0, "call_s", "final_result")}

    agent = seamkit.Agent(model, output=seamkit.Output(Person, mode="tool"))
    events = asyncio.run(_collect(agent.stream("who?")))
    partials = [e.partial for e in events if isinstance(e, OutputDelta)]
    assert len(partials) > 1  # the value grew while the arguments arrived
    assert partials[-1] == VALUE
    assert isinstance(events[-1], RunFinished)
    assert events[-1].result.output == Person(**VALUE)


def test_a_whole_answer_to_a_streamed_request_yields_each_call_as_one_fragment(
    server: ReplayServer,
) -> None:
    server.script("p-whole", call(ANSWER))  # a server that ignores stream: true
    items = asyncio.run(_collect(model_for(server, "p-whole").stream(native())))
    assert items[:-1] == [ToolArgumentsDelta(0, "call_1", "final_result", ANSWER)]
    assert isinstance(items[-1], seamkit.ModelTurn)


async def _collect(items: Any) -> list[Any]:
    return [item async for item in items]


def test_a_native_run_and_a_tool_run_give_equal_values(server: ReplayServer) -> None:
    server.script("e-native", content(ANSWER))
    server.script("e-tool", streamed_call(ANSWER))
    native_run = asyncio.run(
        seamkit.Agent(model_for(server, "e-native")).run(
            "who?", output=seamkit.Output(Person, mode="native")
        )
    )
    tool_events = asyncio.run(
        _collect(
            seamkit.Agent(model_for(server, "e-tool")).stream(
                "who?", output=seamkit.Output(Person, mode="tool")
            )
        )
    )
    assert native_run.output == tool_events[-1].result.output == Person(**VALUE)
    assert "response_format" in bodies(server, "e-native")[0]
    assert "response_format" not in bodies(server, "e-tool")[0]
