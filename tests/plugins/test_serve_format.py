"""``seamkit serve`` honours a client's ``response_format`` for an app that
declares no output: the run answers in native mode, and the reply is the
validated JSON, whole and streamed; ``chat.completions.parse`` with a
pydantic model works; a bad ``response_format`` is a 400 naming the field.
A real ``seamkit serve`` process on 127.0.0.1 and a free port, called with
the official ``openai`` client.

The ``record`` app's scripted model answers as the request asks: first
``{"name": "Ann"}``, then ``{"name": "Ann", "age": 31}``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from pydantic import BaseModel

from tests.plugins.test_serve import Served


class Record(BaseModel):
    name: str
    age: int


SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
RECORD = {"type": "json_schema", "json_schema": {"name": "record", "schema": SCHEMA}}
HI = [{"role": "user", "content": "Ann is 31"}]


@pytest.fixture(scope="module")
def record(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    served = Served("record", tmp_path_factory.mktemp("format"))
    yield served
    served.stop()


def client(served: Served, **headers: str) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=f"{served.root}/v1", api_key="none", max_retries=0, default_headers=headers
    )


def ask(served: Served, **options: Any) -> Any:
    return client(served).chat.completions.create(model="record", messages=HI, **options)


@pytest.mark.parametrize("strict", [None, False, True])
def test_a_json_schema_reply_is_the_validated_json(record: Served, strict: bool | None) -> None:
    asked = {"type": "json_schema", "json_schema": {"name": "record", "schema": SCHEMA}}
    if strict is not None:
        asked["json_schema"]["strict"] = strict  # type: ignore[index]
    answer = ask(record, response_format=asked)
    assert json.loads(answer.choices[0].message.content) == {"name": "Ann", "age": 31}
    assert answer.choices[0].finish_reason == "stop"


def test_a_streamed_json_schema_reply_sends_the_validated_json_once(record: Served) -> None:
    chunks = list(ask(record, response_format=RECORD, stream=True))
    sent = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(sent) == 1  # never the rejected first answer
    assert json.loads(sent[0]) == {"name": "Ann", "age": 31}


def test_parse_with_a_pydantic_model(record: Served) -> None:
    parsed = client(record).chat.completions.parse(
        model="record",
        messages=HI,  # type: ignore[arg-type]
        response_format=Record,
    )
    assert parsed.choices[0].message.parsed == Record(name="Ann", age=31)


def test_json_object_takes_any_object(record: Served) -> None:
    answer = ask(record, response_format={"type": "json_object"})
    assert json.loads(answer.choices[0].message.content) == {"name": "Ann"}


def test_text_is_no_format(record: Served) -> None:
    answer = ask(record, response_format={"type": "text"})
    assert answer.choices[0].message.content is not None


def test_a_session_keeps_the_json_the_client_saw(record: Served) -> None:
    session = client(record, **{"X-Seamkit-Session": "s-format"})
    first = session.chat.completions.create(model="record", messages=HI, response_format=RECORD)  # type: ignore[arg-type]
    seen = first.choices[0].message.content
    conversation = [
        *HI,
        {"role": "assistant", "content": seen},
        {"role": "user", "content": "again"},
    ]
    second = session.chat.completions.create(
        model="record",
        messages=conversation,  # type: ignore[arg-type]
        response_format=RECORD,  # type: ignore[arg-type]
    )
    assert json.loads(second.choices[0].message.content) == {"name": "Ann", "age": 31}


@pytest.mark.parametrize(
    ("response_format", "param", "says"),
    [
        ("json", "response_format", "must be an object"),
        ({"type": "xml"}, "response_format.type", "use one of: text, json_object, json_schema"),
        ({"type": "json_schema"}, "response_format.json_schema", "name and a schema"),
        (
            {"type": "json_schema", "json_schema": {"name": "r"}},
            "response_format.json_schema.schema",
            "must be a JSON Schema object",
        ),
        (
            {"type": "json_schema", "json_schema": {"name": "r", "schema": {"type": 5}}},
            "response_format.json_schema.schema",
            "not a valid JSON Schema",
        ),
        (
            {"type": "json_schema", "json_schema": {"name": "no spaces", "schema": SCHEMA}},
            "response_format.json_schema.name",
            "1 to 64 letters",
        ),
        (
            {
                "type": "json_schema",
                "json_schema": {
                    "name": "r",
                    "strict": True,
                    "schema": {"type": "object", "properties": {"a": {"type": "string"}}},
                },
            },
            "response_format.json_schema.schema",
            "cannot be strict",
        ),
        (
            {"type": "json_schema", "json_schema": {"name": "r", "schema": SCHEMA, "x": 1}},
            "response_format.json_schema.x",
            "takes name, schema, strict and description",
        ),
    ],
)
def test_a_bad_response_format_is_a_400_naming_the_field(
    record: Served, response_format: object, param: str, says: str
) -> None:
    response = httpx.post(
        f"{record.root}/v1/chat/completions",
        json={"model": "record", "messages": HI, "response_format": response_format},
        timeout=30,
    )
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["param"] == param
    assert says in error["message"]
    assert "Traceback" not in response.text


@pytest.mark.parametrize("stream", [False, True])
def test_answers_that_never_fit_fail_the_run_and_are_not_retried(
    tmp_path_factory: pytest.TempPathFactory, stream: bool
) -> None:
    served = Served("record_bad", tmp_path_factory.mktemp("bad"))
    try:
        if stream:
            with pytest.raises(openai.APIError, match="OutputInvalid"):
                list(ask(served, response_format=RECORD, stream=True))
        else:
            with pytest.raises(openai.InternalServerError, match="OutputInvalid") as caught:
                ask(served, response_format=RECORD)
            assert caught.value.response.headers["x-should-retry"] == "false"
            assert caught.value.response.headers["x-seamkit-outcome"] == "failed"
    finally:
        served.stop()


def test_an_app_whose_model_takes_no_native_output_refuses_a_format_before_running(
    tmp_path: Path,
) -> None:
    app = tmp_path / "plain.yaml"
    app.write_text(
        "name: plain\n"
        "model: {provider: openai, name: m, base_url: 'http://127.0.0.1:9/v1', "
        "native_output: false}\n"
    )
    served = Served(str(app), tmp_path)
    try:
        with pytest.raises(openai.BadRequestError) as caught:
            client(served).chat.completions.create(
                model="plain",
                messages=HI,  # type: ignore[arg-type]
                response_format=RECORD,  # type: ignore[arg-type]
            )
        assert caught.value.body["param"] == "response_format"  # type: ignore[index]
        assert "takes no JSON Schema response format" in caught.value.message
    finally:
        served.stop()
