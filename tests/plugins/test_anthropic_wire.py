"""The anthropic provider's request body: each mapping rule of the wire, as
the body a `ModelRequest` becomes (no network)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import seamkit
from seamkit import Document, Message, MessageToolCall, ModelRequest, OutputSpec, ToolSpec
from seamkit.injection import inject_tool_result
from seamkit.plugins import render_documents as openai_documents
from seamkit_anthropic import AnthropicCache, AnthropicConfig, AnthropicModel
from seamkit_anthropic._wire import request_body, wire_id
from seamkit_openai import OpenAIConfig
from seamkit_openai._wire import request_body as openai_body

EPHEMERAL = {"type": "ephemeral"}


def config(**fields: Any) -> AnthropicConfig:
    fields.setdefault("cache", "off")
    return AnthropicConfig(provider="anthropic", name="claude-test", **fields)


def body(request: ModelRequest, *, stream: bool = False, **fields: Any) -> dict[str, Any]:
    return request_body(request, config(**fields), stream=stream)


def ask(*messages: Message, **fields: Any) -> ModelRequest:
    return ModelRequest(messages=messages or (Message.user("hi"),), **fields)


def call(call_id: str, name: str = "add", arguments: str = '{"a": 1}') -> MessageToolCall:
    return MessageToolCall.model_validate(
        {"id": call_id, "function": {"name": name, "arguments": arguments}}
    )


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def marked(b: dict[str, Any]) -> list[tuple[str, Any]]:
    """Where the breakpoints are: ('tools', i), ('system', i), ('messages', (i, j))."""
    out: list[tuple[str, Any]] = []
    out += [("tools", i) for i, t in enumerate(b.get("tools", ())) if "cache_control" in t]
    out += [("system", i) for i, s in enumerate(b.get("system", ())) if "cache_control" in s]
    for i, m in enumerate(b["messages"]):
        out += [("messages", (i, j)) for j, c in enumerate(m["content"]) if "cache_control" in c]
    return out


# --- the top of the body -------------------------------------------------------


def test_model_and_max_tokens_come_from_the_config_unless_the_request_says() -> None:
    assert body(ask())["model"] == "claude-test"
    assert body(ask())["max_tokens"] == 4096
    assert body(ask(), max_tokens=100)["max_tokens"] == 100
    assert body(ask(max_tokens=7), max_tokens=100)["max_tokens"] == 7


def test_the_preamble_is_a_system_block_list() -> None:
    assert body(ask(preamble="Be brief."))["system"] == [text("Be brief.")]
    assert "system" not in body(ask())


def test_leading_system_messages_follow_the_preamble_as_system_blocks() -> None:
    b = body(ask(Message.system("one"), Message.system("two"), Message.user("hi"), preamble="P"))
    assert b["system"] == [text("P"), text("one"), text("two")]
    assert b["messages"] == [{"role": "user", "content": [text("hi")]}]


def test_documents_are_their_own_system_block_in_the_openai_providers_format() -> None:
    docs = (Document(id='a"1', text="alpha", metadata={"k": 1}), Document(id="b", text="beta"))
    b = body(ask(Message.system("lead"), preamble="P", extra_context=docs))
    assert b["system"] == [text("P"), text("lead"), text(openai_documents(docs))]


def test_a_later_system_message_is_user_text_where_it_stood() -> None:
    b = body(ask(Message.user("hi"), Message.assistant("yo"), Message.system("be nice")))
    assert b["messages"][-1] == {"role": "user", "content": [text("<system>be nice</system>")]}


def test_temperature_is_sent_when_set() -> None:
    assert body(ask(temperature=0.3))["temperature"] == 0.3
    assert "temperature" not in body(ask())


def test_tools_are_name_description_input_schema_in_request_order() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    b = body(ask(tools=(ToolSpec(name="zed", parameters=schema), ToolSpec(name="abe"))))
    assert b["tools"] == [
        {"name": "zed", "description": "", "input_schema": schema},
        {
            "name": "abe",
            "description": "",
            "input_schema": {"type": "object", "properties": {}},
        },
    ]
    assert "tool_choice" not in b


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", {"type": "auto"}),
        ("required", {"type": "any"}),
        ("none", {"type": "none"}),
        ("add", {"type": "tool", "name": "add"}),
    ],
)
def test_tool_choice_maps_to_anthropics_objects(choice: str, wire: dict[str, Any]) -> None:
    assert body(ask(tools=(ToolSpec(name="add"),), tool_choice=choice))["tool_choice"] == wire


def test_parallel_tool_use_is_turned_off_by_config_or_by_openais_parameter() -> None:
    tools = (ToolSpec(name="add"),)
    off = {"type": "auto", "disable_parallel_tool_use": True}
    assert body(ask(tools=tools), parallel_tool_calls=False)["tool_choice"] == off
    by_param = body(ask(tools=tools, additional_params={"parallel_tool_calls": False}))
    assert by_param["tool_choice"] == off
    assert "parallel_tool_calls" not in by_param
    forced = body(ask(tools=tools, tool_choice="required"), parallel_tool_calls=False)
    assert forced["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}


def test_native_output_is_an_output_config_json_schema_when_the_config_allows() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    request = ask(output=OutputSpec(mode="native", name="out", json_schema=schema))
    b = body(request, native_output=True)
    assert b["output_config"] == {"format": {"type": "json_schema", "schema": schema}}
    with pytest.raises(seamkit.ModelError, match="native_output: false"):
        body(request)


def test_the_models_output_modes_follow_native_output() -> None:
    assert "native" not in AnthropicModel(config()).output_modes
    assert "native" in AnthropicModel(config(native_output=True)).output_modes


def test_extra_body_then_additional_params_are_merged_last() -> None:
    request = ask(additional_params={"top_k": 5, "metadata": {"user_id": "u"}})
    b = body(request, extra_body={"top_k": 1, "stop_sequences": ["X"]})
    assert (b["top_k"], b["stop_sequences"], b["metadata"]) == (5, ["X"], {"user_id": "u"})
    assert list(b)[-3:] == ["top_k", "stop_sequences", "metadata"]


@pytest.mark.parametrize("key", ["messages", "stream", "system", "cache_control"])
def test_reserved_keys_are_refused(key: str) -> None:
    with pytest.raises(seamkit.ModelError, match=key):
        body(ask(additional_params={key: 1}))
    with pytest.raises(ValueError, match=key):
        config(extra_body={key: 1})


def test_the_stream_flag() -> None:
    assert body(ask(), stream=True)["stream"] is True
    assert "stream" not in body(ask())


# --- messages ----------------------------------------------------------------------


def test_user_images_become_base64_or_url_sources() -> None:
    parts = [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0K"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
    ]
    b = body(ask(Message(role="user", content=parts)))
    assert b["messages"][0]["content"] == [
        text("look"),
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0K"},
        },
        {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
    ]


def test_a_user_part_the_provider_does_not_send_is_an_error_naming_its_type() -> None:
    parts = [{"type": "input_audio", "input_audio": {"data": "x", "format": "wav"}}]
    with pytest.raises(seamkit.ModelError, match="'input_audio'"):
        body(ask(Message(role="user", content=parts)))


def test_no_empty_text_blocks() -> None:
    b = body(ask(Message.user("hi"), Message.assistant("", [call("c1")]), Message.tool("c1", "")))
    assert b["messages"][1]["content"] == [
        {"type": "tool_use", "id": "c1", "name": "add", "input": {"a": 1}}
    ]
    assert b["messages"][2]["content"] == [{"type": "tool_result", "tool_use_id": "c1"}]


def test_an_assistants_parts_go_in_their_order_verbatim_with_calls_in_their_places() -> None:
    thinking = {"type": "thinking", "thinking": "hmm", "signature": "sig=="}
    redacted = {"type": "redacted_thinking", "data": "opaque"}
    answer = Message(
        role="assistant",
        content=[thinking, text("Let me add."), redacted],
        tool_calls=(call("toolu_1"),),
    )
    b = body(ask(Message.user("2+2?"), answer, Message.tool("toolu_1", "4")))
    assert b["messages"][1]["content"] == [
        thinking,
        text("Let me add."),
        redacted,
        {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 1}},
    ]


def test_interleaved_thinking_is_echoed_in_its_order() -> None:
    first = {"type": "thinking", "thinking": "one", "signature": "s1"}
    second = {"type": "thinking", "thinking": "two", "signature": "s2"}
    answer = Message(
        role="assistant",
        content=[
            first,
            {"type": "tool_use", "id": "toolu_1"},
            second,
            text("and"),
            {"type": "tool_use", "id": "toolu_2"},
        ],
        tool_calls=(call("toolu_1"), call("toolu_2"), call("toolu_3")),
    )
    b = body(
        ask(
            Message.user("go"),
            answer,
            *(Message.tool(i, "ok") for i in ("toolu_1", "toolu_2", "toolu_3")),
        )
    )
    kinds = [(x["type"], x.get("id")) for x in b["messages"][1]["content"]]
    assert kinds == [
        ("thinking", None),
        ("tool_use", "toolu_1"),
        ("thinking", None),
        ("text", None),
        ("tool_use", "toolu_2"),
        ("tool_use", "toolu_3"),  # a call no stand-in placed comes last
    ]
    assert b["messages"][1]["content"][1]["input"] == {"a": 1}
    assert answer.text == "and"


def test_arguments_that_are_not_an_object_go_as_raw_arguments() -> None:
    calls = [
        call("c1", arguments="[1, 2]"),
        call("c2", arguments='{"a": '),
        call("c3", arguments=""),
    ]
    b = body(
        ask(
            Message.user("hi"),
            Message.assistant("", calls),
            *(Message.tool(c.id, "ok") for c in calls),
        )
    )
    inputs = [block["input"] for block in b["messages"][1]["content"]]
    assert inputs == [{"_raw_arguments": "[1, 2]"}, {"_raw_arguments": '{"a": '}, {}]


def test_tool_results_are_a_user_turn_flagged_when_errors() -> None:
    b = body(
        ask(
            Message.user("hi"),
            Message.assistant("", [call("c1"), call("c2")]),
            Message.tool("c1", "4"),
            Message.tool("c2", "boom", is_error=True),
        )
    )
    assert b["messages"][2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "c1", "content": "4"},
            {"type": "tool_result", "tool_use_id": "c2", "content": "boom", "is_error": True},
        ],
    }


def test_consecutive_same_role_messages_merge_with_tool_results_first() -> None:
    b = body(
        ask(
            Message.user("a"),
            Message.user("b"),
            Message.assistant("", [call("c1")]),
            Message.system("mind"),
            Message.tool("c1", "4"),
            Message.user("next"),
        )
    )
    assert [m["role"] for m in b["messages"]] == ["user", "assistant", "user"]
    assert b["messages"][0]["content"] == [text("a"), text("b")]
    assert b["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "c1", "content": "4"},
        text("<system>mind</system>"),
        text("next"),
    ]


def test_ids_are_sanitised_the_same_way_in_tool_use_and_tool_result() -> None:
    odd = "call:7/ä"
    b = body(ask(Message.user("hi"), Message.assistant("", [call(odd)]), Message.tool(odd, "4")))
    use_id = b["messages"][1]["content"][0]["id"]
    assert use_id == b["messages"][2]["content"][0]["tool_use_id"] == wire_id(odd)
    assert use_id.startswith("call_7__") and len(use_id) == len("call_7__") + 7
    assert wire_id(odd) == wire_id(odd)
    assert wire_id("toolu_01-Ab") == "toolu_01-Ab"
    assert wire_id("a.b") != wire_id("a/b")


@pytest.mark.parametrize("name", ["has space", "x" * 129, "dotted.name"])
def test_a_tool_name_the_api_refuses_is_an_error_naming_it(name: str) -> None:
    with pytest.raises(seamkit.ModelError, match=repr(name)[:20]):
        body(ask(tools=(ToolSpec(name=name),)))
    with pytest.raises(seamkit.ModelError, match=repr(name)[:20]):
        body(
            ask(Message.user("hi"), Message.assistant("", [call("c", name)]), Message.tool("c", ""))
        )


def test_a_forced_tool_with_thinking_enabled_is_a_clear_error() -> None:
    thinking = {"thinking": {"type": "enabled", "budget_tokens": 2048}}
    request = ask(tools=(ToolSpec(name="out"),), tool_choice="out", additional_params=thinking)
    with pytest.raises(seamkit.ModelError, match="thinking") as failure:
        body(request)
    assert failure.value.hint is not None and "native" in failure.value.hint
    with pytest.raises(seamkit.ModelError, match="thinking"):
        body(ask(tools=(ToolSpec(name="out"),), tool_choice="required"), extra_body=thinking)
    adaptive = {"thinking": {"type": "adaptive"}}
    assert body(ask(tools=(ToolSpec(name="out"),), tool_choice="out", additional_params=adaptive))


def test_a_transcript_ending_with_an_assistant_message_is_refused() -> None:
    with pytest.raises(seamkit.ModelError, match="prefill"):
        body(ask(Message.user("hi"), Message.assistant("Sure, ")))


# --- cache breakpoints ---------------------------------------------------------------


def session() -> ModelRequest:
    """A request after one tool loop and a new user turn, with tools, a preamble
    and documents."""
    return ask(
        Message.user("q1"),
        Message.assistant("", [call("toolu_1")]),
        Message.tool("toolu_1", "4"),
        Message.assistant("It is 4."),
        Message.user("q2"),
        preamble="P",
        extra_context=(Document(id="d", text="doc"),),
        tools=(ToolSpec(name="add"), ToolSpec(name="mul")),
    )


def test_auto_places_e_p_s_t() -> None:
    b = body(session(), cache="auto")
    assert marked(b) == [("tools", 1), ("system", 0), ("messages", (2, 0)), ("messages", (4, 0))]
    assert b["messages"][4]["content"][0]["cache_control"] == EPHEMERAL
    assert "cache_control" not in b["system"][1]  # the documents


@pytest.mark.parametrize(
    ("n", "where"),
    [
        (1, [("messages", (4, 0))]),
        (2, [("messages", (2, 0)), ("messages", (4, 0))]),
        (3, [("system", 0), ("messages", (2, 0)), ("messages", (4, 0))]),
    ],
)
def test_breakpoints_n_takes_the_first_n_of_e_p_s_t(n: int, where: list[Any]) -> None:
    assert marked(body(session(), cache={"breakpoints": n})) == where


@pytest.mark.parametrize(
    "description",
    [
        AnthropicCache.model_fields["breakpoints"].description,
        AnthropicConfig.model_fields["cache"].description,
    ],
)
def test_the_config_describes_the_breakpoints_in_the_codes_order(description: str | None) -> None:
    said = description or ""
    places = [
        "end of the conversation",
        "previous request",
        "after the system text",
        "after the tools",
    ]
    assert all(p in said for p in places), said
    assert [said.index(p) for p in places] == sorted(said.index(p) for p in places)


def test_off_places_none_and_1h_is_said_only_when_configured() -> None:
    assert marked(body(session(), cache="off")) == []
    long = body(session(), cache={"ttl": "1h"})
    assert long["tools"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    short = body(session(), cache={"ttl": "5m"})
    assert short["tools"][-1]["cache_control"] == EPHEMERAL


def test_p_skips_injected_pairs_and_e_skips_thinking_empty_text_and_system_notes() -> None:
    thinking = {"type": "thinking", "thinking": "t", "signature": "s"}
    messages = [
        Message.user("q1"),
        Message(role="assistant", content=[thinking, text("A1")]),
        Message.user("q2"),
    ]
    with_pair = inject_tool_result(
        messages, name="clock", arguments={}, content="12:00", placement="stable"
    )
    b = body(ask(*with_pair, Message.system("note")), cache="auto")
    # P: the block before the model's answer (q1), not before the injected pair.
    # E: the pair's tool_result, not the <system> note after it.
    roles = [m["role"] for m in b["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user"]
    assert marked(b) == [("tools", 0), ("messages", (0, 0)), ("messages", (4, 0))]
    assert b["messages"][4]["content"][1] == text("<system>note</system>")
    assert "cache_control" not in b["messages"][1]["content"][0]


def test_bodies_are_deterministic() -> None:
    first = json.dumps(body(session(), cache="auto", stream=True))
    assert first == json.dumps(body(session(), cache="auto", stream=True))


# --- the openai provider and another provider's transcript ---------------------------


def test_openai_sends_an_assistant_message_with_a_thinking_part_as_plain_text() -> None:
    answer = Message(
        role="assistant",
        content=[{"type": "thinking", "thinking": "hmm", "signature": "s"}, text("Four.")],
    )
    request = ModelRequest(messages=(Message.user("2+2?"), answer, Message.user("thanks")))
    sent = openai_body(request, OpenAIConfig(provider="openai", name="gpt"), stream=False)
    assert sent["messages"][1] == {"role": "assistant", "content": "Four."}
    kept = Message(role="assistant", content=[text("a"), text("b")])
    again = openai_body(
        ModelRequest(messages=(Message.user("x"), kept, Message.user("y"))),
        OpenAIConfig(provider="openai", name="gpt"),
        stream=False,
    )
    assert again["messages"][1]["content"] == [text("a"), text("b")]


def test_openai_leaves_out_the_stand_ins_of_calls_in_an_anthropic_turn() -> None:
    answer = Message(
        role="assistant",
        content=[
            {"type": "thinking", "thinking": "hmm", "signature": "s"},
            {"type": "tool_use", "id": "toolu_1"},
            text("Adding."),
        ],
        tool_calls=(call("toolu_1"),),
    )
    request = ModelRequest(messages=(Message.user("2+2?"), answer, Message.tool("toolu_1", "4")))
    sent = openai_body(request, OpenAIConfig(provider="openai", name="gpt"), stream=False)
    assert sent["messages"][1]["content"] == "Adding."
    assert [c["id"] for c in sent["messages"][1]["tool_calls"]] == ["toolu_1"]


def test_openais_own_assistant_parts_are_left_out_and_its_text_kept() -> None:
    answer = Message(
        role="assistant",
        content=[
            text("Here."),
            {"type": "refusal", "refusal": "no"},
            {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
            {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}},
            {"type": "file", "file": {"file_id": "f"}},
            text("There."),
        ],
    )
    b = body(ask(Message.user("hi"), answer, Message.user("ok")))
    assert b["messages"][1]["content"] == [text("Here."), text("There.")]


def test_a_transcript_starting_with_an_assistant_message_is_refused() -> None:
    with pytest.raises(seamkit.ModelError, match="starts with an assistant"):
        body(ask(Message.user(""), Message.assistant("hello"), Message.user("hi")))


def test_an_opaque_part_carrying_a_breakpoint_is_sent_without_it() -> None:
    tool = {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {}}
    stored = {**tool, "cache_control": EPHEMERAL}
    answer = Message(role="assistant", content=[stored, text("Found it.")])
    b = body(ask(Message.user("q"), answer, Message.user("thanks")), cache="off")
    assert b["messages"][1]["content"] == [tool, text("Found it.")]
    assert answer.content == [stored, text("Found it.")]


def test_a_transcript_with_tool_calls_and_no_tools_declares_stand_ins_it_cannot_call() -> None:
    paired = inject_tool_result(
        [Message.user("hi")], name="clock", arguments={}, content="12:00", placement="stable"
    )
    b = body(ask(*paired))
    assert [t["name"] for t in b["tools"]] == ["clock"]
    assert b["tools"][0]["input_schema"] == {"type": "object", "properties": {}}
    assert b["tool_choice"] == {"type": "none"}
    assert "tools" not in body(ask(Message.user("hi")))
