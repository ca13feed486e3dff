"""``seamkit serve`` speaks the Responses API: ``client.responses.create``
whole and streamed (``stream=True`` and ``client.responses.stream``),
``input`` as text and as items, ``instructions``, ``text.format`` and
``client.responses.parse``, ``previous_response_id`` (a response id is its
API key's), ``store: false``, ``client.responses.retrieve`` and a suspended
app's answer. A real ``seamkit serve`` process on 127.0.0.1 and a free
port, called with the official ``openai`` client.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
import seamkit
from hypothesis import given, strategies as st
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import BaseModel, TypeAdapter
from seamkit_serve._responses import parse_responses
from seamkit_serve._wire import Limits

from tests.plugins.test_serve import KEY_A, KEY_B, Served, stored
from tests.plugins.test_serve_format import SCHEMA, Record


@pytest.fixture(scope="module")
def chat(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    served = Served("chat", tmp_path_factory.mktemp("responses"))
    yield served
    log = served.stop()
    assert KEY_A not in log and KEY_B not in log


@pytest.fixture(scope="module")
def record(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    served = Served("record", tmp_path_factory.mktemp("responses-format"))
    yield served
    served.stop()


# --- whole and streamed ---------------------------------------------------------------


def test_a_whole_response_to_text_input(chat: Served) -> None:
    answer = chat.client().responses.create(model="chat", input="hi")
    assert answer.object == "response"
    assert answer.id.startswith("resp_")
    assert answer.status == "completed"
    assert answer.output_text == "Hello there."
    assert answer.output[0].type == "message"
    assert answer.usage is not None
    assert answer.usage.total_tokens == answer.usage.input_tokens + answer.usage.output_tokens


def test_input_items_and_instructions(chat: Served) -> None:
    answer = chat.client().responses.create(
        model="chat",
        instructions="Be brief.",
        input=[
            {"role": "user", "content": "hi"},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Hello."}],
            },
            {"role": "user", "content": [{"type": "input_text", "text": "again"}]},
        ],
    )
    assert answer.output_text == "Hello there."
    assert answer.instructions == "Be brief."


def test_a_streamed_response_with_stream_true(chat: Served) -> None:
    events = list(chat.client().responses.create(model="chat", input="hi", stream=True))
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert deltas == ["Hello", " there."]
    for kind in (
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
    ):
        assert kind in kinds
    assert events[-1].response.output_text == "Hello there."  # type: ignore[union-attr]


def test_a_streamed_response_with_the_stream_helper(chat: Served) -> None:
    with chat.client().responses.stream(model="chat", input="hi") as stream:
        texts = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert "".join(texts) == "Hello there."
    assert final.output_text == "Hello there."
    assert final.status == "completed"


# --- structured output ----------------------------------------------------------------


def test_text_format_json_schema(record: Served) -> None:
    answer = record.client().responses.create(
        model="record",
        input="Ann is 31",
        text={"format": {"type": "json_schema", "name": "record", "schema": SCHEMA}},
    )
    assert json.loads(answer.output_text) == {"name": "Ann", "age": 31}


def test_parse_with_a_pydantic_model(record: Served) -> None:
    parsed = record.client().responses.parse(model="record", input="Ann is 31", text_format=Record)
    assert parsed.output_parsed == Record(name="Ann", age=31)


def test_a_streamed_json_schema_sends_the_validated_json_once(record: Served) -> None:
    with record.client().responses.stream(
        model="record", input="Ann is 31", text_format=Record
    ) as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert len(deltas) == 1
    assert final.output_parsed == Record(name="Ann", age=31)


# --- previous_response_id, store, retrieve --------------------------------------------


def test_previous_response_id_continues_the_conversation(chat: Served) -> None:
    client = chat.client()
    first = client.responses.create(model="chat", input="first")
    second = client.responses.create(model="chat", input="second", previous_response_id=first.id)
    assert second.previous_response_id == first.id
    # the second is now the latest: it continues
    third = client.responses.create(model="chat", input="third", previous_response_id=second.id)
    assert third.status == "completed"


def test_a_response_that_is_not_the_latest_is_a_409(chat: Served) -> None:
    client = chat.client()
    first = client.responses.create(model="chat", input="first")
    client.responses.create(model="chat", input="second", previous_response_id=first.id)
    with pytest.raises(openai.ConflictError) as caught:
        client.responses.create(model="chat", input="branch", previous_response_id=first.id)
    assert caught.value.code == "response_not_latest"
    assert caught.value.response.headers["x-should-retry"] == "false"
    # store: false branches off without keeping anything
    branch = client.responses.create(
        model="chat", input="branch", previous_response_id=first.id, store=False
    )
    assert branch.status == "completed"


def test_another_keys_response_is_a_404(chat: Served) -> None:
    mine = chat.client(KEY_A).responses.create(model="chat", input="secret")
    theirs = chat.client(KEY_B)
    with pytest.raises(openai.NotFoundError) as caught:
        theirs.responses.create(model="chat", input="x", previous_response_id=mine.id)
    assert caught.value.code == "response_not_found"
    with pytest.raises(openai.NotFoundError):
        theirs.responses.retrieve(mine.id)
    forged = chat.client(KEY_A)
    for wrong in ("resp_../../x", "resp_" + "0" * 32, "nope"):
        with pytest.raises(openai.NotFoundError):
            forged.responses.retrieve(wrong)


def test_retrieve_returns_the_stored_response(chat: Served) -> None:
    client = chat.client()
    made = client.responses.create(model="chat", input="hi", metadata={"ticket": "42"})
    got = client.responses.retrieve(made.id)
    assert got.id == made.id
    assert got.output_text == "Hello there."
    assert got.metadata == {"ticket": "42"}


def test_store_false_keeps_nothing(chat: Served) -> None:
    client = chat.client()
    answer = client.responses.create(model="chat", input="hi", store=False)
    assert answer.output_text == "Hello there."
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(answer.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model="chat", input="x", previous_response_id=answer.id)


def test_a_named_session_holds_the_responses(chat: Served) -> None:
    client = chat.client(**{"X-Seamkit-Session": "s-responses"})
    first = client.responses.create(model="chat", input="one")
    client.responses.create(model="chat", input="two", previous_response_id=first.id)
    said = [m.text for m in stored(chat, "s-responses") if m.from_user]
    assert said == ["one", "two"]


# --- refusals and errors ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "param", "says"),
    [
        ({"background": True}, "background", "no background mode"),
        ({"include": ["reasoning.encrypted_content"]}, "include", "output items only"),
        ({"reasoning": {"effort": "low"}}, "reasoning", "configuration"),
        ({"tools": [{"type": "web_search"}]}, "tools[0]", "built-in tool"),
        ({"input": [{"type": "input_image", "image_url": "x"}]}, "input[0].type", "message"),
        ({"truncation": "auto"}, "truncation", "trim"),
        ({"text": {"format": {"type": "xml"}}}, "text.format", "json_schema"),
    ],
)
def test_refused_parameters_say_why(
    chat: Served, options: dict[str, Any], param: str, says: str
) -> None:
    body = {"model": "chat", "input": "hi", **options}
    with pytest.raises(openai.BadRequestError) as caught:
        chat.client().post("/responses", body=body, cast_to=httpx.Response)
    assert caught.value.param == param
    assert says in caught.value.message


def test_null_is_absent(chat: Served) -> None:
    body = {
        "model": "chat",
        "input": "hi",
        "background": None,
        "include": None,
        "tools": None,
        "previous_response_id": None,
        "reasoning": None,
    }
    raw = chat.client().post("/responses", body=body, cast_to=httpx.Response)
    assert raw.json()["status"] == "completed"


def test_values_that_ask_for_nothing_are_accepted(chat: Served) -> None:
    answer = chat.client().responses.create(
        model="chat",
        input="hi",
        include=[],  # what the Agents SDK always sends
        background=False,
        truncation="disabled",
        tools=[],
    )
    assert answer.status == "completed"


def test_a_wrong_model_or_key_is_openais_error(chat: Served) -> None:
    with pytest.raises(openai.NotFoundError):
        chat.client().responses.create(model="other", input="hi")
    with pytest.raises(openai.AuthenticationError):
        chat.client("sk-wrong").responses.create(model="chat", input="hi")


# --- a suspended app ---------------------------------------------------------------------


class _Pending(BaseModel):
    call_id: str
    tool: str
    digest: str


def test_a_suspended_run_answers_incomplete_with_its_pending_calls(tmp_path: Any) -> None:
    served = Served("approve", tmp_path, env={"SERVE_CANARY": "canary-xyz"})
    try:
        answer = served.client().responses.create(model="approve", input="refund A1")
        assert answer.status == "incomplete"
        assert answer.incomplete_details is not None
        assert answer.incomplete_details.reason == "approval_pending"
        metadata = answer.metadata or {}
        assert metadata["seamkit_outcome"] == "suspended"
        pending = [_Pending.model_validate(p) for p in json.loads(metadata["seamkit_pending"])]
        assert [p.tool for p in pending] == ["t_refund"]
        session = metadata["seamkit_session"]
        decided = httpx.post(
            f"{served.root}/v1/sessions/{session}/decisions",
            headers={"Authorization": f"Bearer {KEY_A}"},
            json={
                "decisions": [
                    {
                        "call_id": pending[0].call_id,
                        "action": "approve",
                        "digest": pending[0].digest,
                    }
                ]
            },
        )
        assert decided.status_code == 200, decided.text
        assert "canary-xyz" not in answer.model_dump_json()
    finally:
        served.stop()


def test_a_streamed_response_is_stored_before_it_completes(chat: Served) -> None:
    client = chat.client()
    for _ in range(3):  # the next request at once, each time
        with client.responses.stream(model="chat", input="one") as stream:
            first = stream.get_final_response()
        second = client.responses.create(model="chat", input="two", previous_response_id=first.id)
        assert second.status == "completed"
        assert client.responses.retrieve(first.id).output_text == "Hello there."


def test_a_streamed_suspended_run_ends_incomplete(tmp_path: Any) -> None:
    served = Served("approve", tmp_path, env={"SERVE_CANARY": "canary-xyz"})
    try:
        events = list(
            served.client().responses.create(model="approve", input="refund A1", stream=True)
        )
        last = events[-1]
        assert last.type == "response.incomplete"
        assert last.response.incomplete_details is not None  # type: ignore[union-attr]
        assert last.response.incomplete_details.reason == "approval_pending"  # type: ignore[union-attr]
        metadata = last.response.metadata or {}  # type: ignore[union-attr]
        assert json.loads(metadata["seamkit_pending"])[0]["tool"] == "t_refund"
    finally:
        served.stop()


def test_a_failed_run_is_not_retried_and_streams_response_failed(tmp_path: Any) -> None:
    counted = tmp_path / "acted.txt"
    served = Served("fails", tmp_path, env={"SERVE_COUNT_FILE": str(counted)})
    try:
        client = openai.OpenAI(base_url=f"{served.root}/v1", api_key="none")  # default retries
        with pytest.raises(openai.InternalServerError) as caught:
            client.responses.create(model="fails", input="hi")
        assert caught.value.response.headers["x-should-retry"] == "false"
        assert caught.value.response.headers["x-seamkit-outcome"] == "failed"
        assert counted.read_text().count("acted") == 1
        events = list(client.responses.create(model="fails", input="hi", stream=True))
        assert events[-1].type == "response.failed"
        assert events[-1].response.error is not None  # type: ignore[union-attr]
        assert events[-1].response.status == "failed"  # type: ignore[union-attr]
    finally:
        served.stop()


def test_concurrent_continuations_of_one_response_run_once(chat: Served) -> None:
    client = chat.client()
    first = client.responses.create(model="chat", input="first")
    outcomes: list[str] = []

    def go(i: int) -> None:
        try:
            client.responses.create(model="chat", input=f"next {i}", previous_response_id=first.id)
            outcomes.append("ok")
        except openai.ConflictError as exc:
            outcomes.append(str(exc.code))

    threads = [threading.Thread(target=go, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outcomes.count("ok") == 1  # one continues; the rest are told the session moved on
    assert set(outcomes) - {"ok"} <= {"response_not_latest", "session_busy"}


def test_every_answer_validates_against_the_sdks_own_types(chat: Served) -> None:
    """Not only the lenient parse of the SDK: each field its types require."""
    events = TypeAdapter(ResponseStreamEvent)
    headers = {"Authorization": f"Bearer {KEY_A}"}
    body = {"model": "chat", "input": "hi", "metadata": {"a": "b"}}
    whole = httpx.post(f"{chat.root}/v1/responses", headers=headers, json=body)
    Response.model_validate(whole.json())
    with httpx.stream(
        "POST", f"{chat.root}/v1/responses", headers=headers, json={**body, "stream": True}
    ) as streamed:
        lines = [line for line in streamed.iter_lines() if line.startswith("data: ")]
    kinds = [events.validate_python(json.loads(line[6:])).type for line in lines]
    assert kinds[-1] == "response.completed"


# --- the translation, as a law -----------------------------------------------------------

_ROLE = st.sampled_from(["user", "assistant", "system", "developer"])
_TEXT = st.text(st.characters(blacklist_categories=["Cs"]), max_size=20)


@given(
    items=st.lists(st.tuples(_ROLE, _TEXT, st.booleans()), max_size=6),
    last=_TEXT,
    instructions=st.none() | _TEXT,
)
def test_input_items_become_the_same_messages_in_order(
    items: list[tuple[str, str, bool]], last: str, instructions: str | None
) -> None:
    """Whatever the items' roles, texts and part forms, the run gets them in
    order, ``developer`` read as ``system``, ``instructions`` first."""

    def item(role: str, text: str, as_parts: bool) -> dict[str, Any]:
        kind = "output_text" if role == "assistant" else "input_text"
        content: object = [{"type": kind, "text": text}] if as_parts else text
        return {"type": "message", "role": role, "content": content}

    sent = [item(*each) for each in items] + [item("user", last, False)]
    body = {"model": "app", "input": sent, "instructions": instructions}
    asked = parse_responses(json.dumps(body).encode(), "app", Limits(10**6, 100))
    expected = [("system", instructions)] if instructions is not None else []
    expected += [("system" if r == "developer" else r, t) for r, t, _ in items]
    expected.append(("user", last))
    assert [(m.role, m.text) for m in asked.chat.messages] == expected


# --- client tools -------------------------------------------------------------------------

WEATHER = {
    "type": "function",
    "name": "weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


@pytest.fixture(scope="module")
def tools_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    served = Served("client", tmp_path_factory.mktemp("responses-tools"))
    yield served
    served.stop()


def test_a_client_tool_round_trip_with_previous_response_id(tools_app: Served) -> None:
    client = tools_app.client()
    first = client.responses.create(model="client", input="A1 and Oslo?", tools=[WEATHER])  # type: ignore[list-item]
    assert first.status == "completed"
    [call] = [item for item in first.output if item.type == "function_call"]
    assert call.name == "weather"
    assert json.loads(call.arguments) == {"city": "Oslo"}
    assert call.call_id.startswith("call_") and len(call.call_id) <= 40
    assert first.output_text == "Checking."  # the app's own lookup ran on the server
    done = client.responses.create(
        model="client",
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}],
        tools=[WEATHER],  # type: ignore[list-item]
    )
    assert done.output_text == "Order A1 ships; it is sunny in Oslo."


@pytest.mark.parametrize("store", [True, False])
def test_a_client_tool_round_trip_with_the_whole_conversation(
    tools_app: Served, store: bool
) -> None:
    """The client resends its items (as the Agents SDK does), stored or not:
    the server checks the ids and goes on where the calls were made."""
    client = tools_app.client()
    asked: list[Any] = [{"role": "user", "content": "A1 and Oslo?"}]
    first = client.responses.create(model="client", input=asked, tools=[WEATHER], store=store)  # type: ignore[list-item]
    [call] = [item for item in first.output if item.type == "function_call"]
    conversation = [
        *asked,
        *(item.model_dump(exclude_none=True) for item in first.output),
        {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"},
    ]
    done = client.responses.create(
        model="client",
        input=conversation,
        tools=[WEATHER],  # type: ignore[list-item]
        store=store,
    )
    assert done.output_text == "Order A1 ships; it is sunny in Oslo."


def test_a_streamed_client_call_has_its_argument_events(tools_app: Served) -> None:
    with tools_app.client().responses.stream(
        model="client",
        input="A1 and Oslo?",
        tools=[WEATHER],  # type: ignore[list-item]
    ) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert "response.function_call_arguments.delta" in kinds
    assert "response.function_call_arguments.done" in kinds
    [call] = [item for item in final.output if item.type == "function_call"]
    assert json.loads(call.arguments) == {"city": "Oslo"}


def test_a_forged_call_id_is_a_400_naming_it(tools_app: Served) -> None:
    client = tools_app.client()
    first = client.responses.create(model="client", input="A1 and Oslo?", tools=[WEATHER])  # type: ignore[list-item]
    forged = "call_" + "A" * 34
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(
            model="client",
            previous_response_id=first.id,
            input=[{"type": "function_call_output", "call_id": forged, "output": "sunny"}],
            tools=[WEATHER],  # type: ignore[list-item]
        )
    assert forged in caught.value.message
    assert caught.value.code == "unknown_tool_call"


@pytest.mark.parametrize("store", [True, False])
def test_the_conversation_goes_on_after_a_round_trip(tools_app: Served, store: bool) -> None:
    """The turn after the round trip, the whole conversation resent (the
    Agents SDK's way): it goes on in the session the ids name."""
    client = tools_app.client()
    asked: list[Any] = [{"role": "user", "content": "A1 and Oslo?"}]
    first = client.responses.create(model="client", input=asked, tools=[WEATHER], store=store)  # type: ignore[list-item]
    [call] = [item for item in first.output if item.type == "function_call"]
    conversation = [
        *asked,
        *(item.model_dump(exclude_none=True) for item in first.output),
        {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"},
    ]
    done = client.responses.create(
        model="client",
        input=conversation,
        tools=[WEATHER],
        store=store,  # type: ignore[list-item]
    )
    third = client.responses.create(
        model="client",
        input=[
            *conversation,
            *(item.model_dump(exclude_none=True) for item in done.output),
            {"role": "user", "content": "and tomorrow?"},
        ],
        tools=[WEATHER],  # type: ignore[list-item]
        store=store,
    )
    assert third.status == "completed"


def test_a_conversation_without_store_is_swept_when_idle(tools_app: Served) -> None:
    """store: false with tools: the server-made session has its expiry record."""
    from seamkit_serve._config import key_id  # the store's name for a key's sessions
    from seamkit_serve._handed import CallIds  # what a handed-out id says

    first = tools_app.client().responses.create(
        model="client",
        input="A1 and Oslo?",
        tools=[WEATHER],
        store=False,  # type: ignore[list-item]
    )
    [call] = [item for item in first.output if item.type == "function_call"]
    handed = CallIds.decode(call.call_id)
    assert handed is not None
    name = f"{key_id(KEY_A)}/run-{handed.nonce.hex()}"
    names = asyncio.run(seamkit.SQLiteSessionStore(tools_app.store).list())
    assert name in names and f"{name}/expires" in names


def test_a_failed_response_is_kept_and_the_conversation_goes_on_from_it(tmp_path: Any) -> None:
    served = Served("fails", tmp_path, env={"SERVE_COUNT_FILE": str(tmp_path / "acted.txt")})
    try:
        client = served.client()
        with pytest.raises(openai.InternalServerError) as caught:
            client.responses.create(model="fails", input="hi")
        [failed_id] = re.findall(r"resp_[0-9a-f]+", caught.value.message)
        kept = client.responses.retrieve(failed_id)
        assert kept.status == "failed" and kept.error is not None
        assert kept.error.code == "server_error"
        with pytest.raises(openai.InternalServerError):  # it fails again, but is no 409
            client.responses.create(model="fails", input="again", previous_response_id=failed_id)
    finally:
        served.stop()


@pytest.mark.parametrize(
    "item",
    [
        {"role": ["user"], "content": "x"},
        {"type": "message", "role": {}, "content": "x"},
        {"role": "user", "content": [{"type": ["input_text"], "text": "x"}]},
    ],
)
def test_a_malformed_item_is_a_400(chat: Served, item: dict[str, Any]) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        chat.client().responses.create(model="chat", input=[item])
    assert str(caught.value.body["param"]).startswith("input[0]")  # type: ignore[index]


def test_text_beyond_ascii_counts_as_the_client_sent_it(chat: Served) -> None:
    """6,000 'é' are 12 kB in the body (under max_body_bytes 20000), not the
    36 kB of their escaped form."""
    answer = chat.client().responses.create(model="chat", input="é" * 6000)
    assert answer.status == "completed"
