"""Core types: JSON round-trips and the OpenAI chat format."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError
from seamkit import (
    Document,
    Failed,
    Message,
    MessageToolCall,
    ModelRequest,
    RunResult,
    Secret,
    Terminated,
    ToolCall,
    ToolResult,
    Usage,
)

OPENAI_TRANSCRIPT = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "What is 2+3?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "calc_add", "arguments": '{"a": 2, "b": 3}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "5"},
    {"role": "assistant", "content": "5"},
]


def test_openai_transcript_round_trips_unchanged() -> None:
    messages = [Message.model_validate(m) for m in OPENAI_TRANSCRIPT]
    assert [m.to_openai() for m in messages] == OPENAI_TRANSCRIPT
    result = RunResult(output="5", transcript=tuple(messages))
    again = RunResult.model_validate_json(result.model_dump_json())
    assert again == result
    assert [m.to_openai() for m in again.transcript] == OPENAI_TRANSCRIPT


def test_constructors_build_the_wire_shape() -> None:
    call = MessageToolCall.make("c1", "get", {"q": "x"})
    assert Message.assistant("", [call]).to_openai() == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get", "arguments": '{"q": "x"}'}}
        ],
    }
    assert Message.tool("c1", "ok").to_openai() == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "ok",
    }
    assert Message.system("s").role == "system"
    assert Message.user("u").text == "u"


def test_message_shape_is_checked() -> None:
    with pytest.raises(ValidationError, match="tool_call_id"):
        Message(role="tool", content="x")
    with pytest.raises(ValidationError, match="only assistant"):
        Message(role="user", content="x", tool_calls=(MessageToolCall.make("a", "b", {}),))


def test_content_parts_give_text() -> None:
    m = Message(
        role="user",
        content=[
            {"type": "text", "text": "a"},
            {"type": "image_url", "image_url": {"url": "u"}},
            {"type": "text", "text": "b"},
        ],
    )
    assert m.text == "ab"
    assert Message.model_validate_json(m.model_dump_json()) == m


def test_tool_call_parses_arguments_and_keeps_raw_text() -> None:
    good = ToolCall.from_message(MessageToolCall.make("1", "f", '{"a": 1}'), index=2)
    assert good.arguments == {"a": 1} and good.raw_arguments == '{"a": 1}'
    assert good.index == 2 and good.arguments_error is None
    bad = ToolCall.from_message(MessageToolCall.make("2", "f", "{oops"))
    assert bad.arguments == {} and bad.raw_arguments == "{oops"
    assert "not valid JSON" in (bad.arguments_error or "")
    listy = ToolCall.from_message(MessageToolCall.make("3", "f", "[1]"))
    assert "JSON object" in (listy.arguments_error or "")


def test_tool_result_error_is_not_raised() -> None:
    r = ToolResult.error("no such user")
    assert (r.is_error, r.raised, r.content) == (True, False, "no such user")


def test_outcomes_round_trip_by_kind() -> None:
    for outcome in (Terminated(reason="r", hook="h"), Failed(error="e")):
        result = RunResult(outcome=outcome, usage=Usage(input_tokens=1))
        assert RunResult.model_validate(json.loads(result.model_dump_json())).outcome == outcome


def test_model_request_round_trips() -> None:
    req = ModelRequest(
        messages=(Message.user("hi"),),
        extra_context=(Document(id="d", text="t"),),
        additional_params={"seed": 1},
        tool_choice="auto",
    )
    assert ModelRequest.model_validate_json(req.model_dump_json()) == req


def test_secret_prints_as_mask_everywhere() -> None:
    s = Secret("sk-canary")
    assert "sk-canary" not in f"{s} {s!r} {s:>20}"
    assert s.get_secret_value() == "sk-canary"
    assert s == Secret("sk-canary") and s != Secret("other")
    doc = Document(id="d", text="t", metadata={"key": s})
    assert "sk-canary" not in repr(doc) and "sk-canary" not in str(doc.model_dump())
