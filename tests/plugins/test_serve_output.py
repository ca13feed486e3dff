"""``seamkit serve`` with an app that declares an output: the reply is the
validated value's JSON (streamed: sent once, when the run completed; never
a rejected answer or a partial), a run that ends ``failed(OutputInvalid)``
is an error reply, and a client that sends the whole visible conversation
back continues its session. A real server (uvicorn, on 127.0.0.1 and a free
port, in this process so that the test can declare the app's output) called
with the official ``openai`` client.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
import seamkit
import uvicorn
from pydantic import BaseModel
from seamkit_serve import ServerOptions, create_app

APPS = Path(__file__).resolve().parent.parent / "fixtures" / "serve"


class Record(BaseModel):
    name: str
    age: int


ACCEPTED = {"name": "Ann", "age": 31}


class Served:
    """``APP`` served in a thread, its agent given ``output``."""

    def __init__(self, app: str, tmp: Path, output: seamkit.Output[Any]) -> None:
        self.store = tmp / "sessions.sqlite"
        original = seamkit.Agent.load

        async def load(*args: Any, **options: Any) -> seamkit.Agent:
            agent = await original(*args, **options)
            agent.output = output  # the app declares its output (Agent.output)
            return agent

        self._patch = pytest.MonkeyPatch()
        self._patch.setattr(seamkit.Agent, "load", load)
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self.port: int = self._sock.getsockname()[1]
        options = ServerOptions(str(APPS / f"{app}.yaml"), store=str(self.store))
        config = uvicorn.Config(create_app(options), log_level="warning", lifespan="on")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=lambda: self._server.run(sockets=[self._sock]), daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            assert self._thread.is_alive() and time.monotonic() < deadline, "never started"
            time.sleep(0.02)

    def client(self, session: str | None = None) -> openai.OpenAI:
        headers = {"X-Seamkit-Session": session} if session else None
        return openai.OpenAI(
            base_url=f"http://127.0.0.1:{self.port}/v1",
            api_key="none",
            max_retries=0,
            default_headers=headers,
        )

    def stored(self, session: str) -> list[seamkit.Message]:
        store = seamkit.SQLiteSessionStore(self.store)
        loaded = asyncio.run(store.load(f"anonymous/{session}"))
        return list(loaded.transcript) if loaded else []

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(15)
        self._sock.close()
        self._patch.undo()


@pytest.fixture(params=["native", "tool"])
def record(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Served]:
    served = Served("record", tmp_path, seamkit.Output(Record, mode=request.param))
    yield served
    served.stop()


def ask(client: openai.OpenAI, *messages: dict[str, str], **options: Any) -> Any:
    return client.chat.completions.create(model="record", messages=list(messages), **options)


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def test_a_whole_reply_is_the_validated_values_json(record: Served) -> None:
    answer = ask(record.client(), user("Ann is 31"))
    assert json.loads(answer.choices[0].message.content) == ACCEPTED
    assert answer.choices[0].finish_reason == "stop"


def test_a_streamed_reply_sends_the_json_once_and_no_rejected_answer(record: Served) -> None:
    chunks = list(ask(record.client(), user("Ann is 31"), stream=True))
    contents = [c.choices[0].delta.content for c in chunks if c.choices]
    sent = [c for c in contents if c]
    assert len(sent) == 1  # no text delta, no partial: the value, once validated
    assert json.loads(sent[0]) == ACCEPTED
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"


@pytest.mark.parametrize("stream", [False, True])
def test_a_follow_up_with_the_whole_visible_conversation_continues_the_session(
    record: Served, stream: bool
) -> None:
    client = record.client("s-record")
    first = ask(client, user("Ann is 31"))
    seen = first.choices[0].message.content
    conversation = [user("Ann is 31"), {"role": "assistant", "content": seen}, user("again")]
    if stream:
        second = "".join(
            c.choices[0].delta.content or ""
            for c in ask(client, *conversation, stream=True)
            if c.choices
        )
    else:
        second = ask(client, *conversation).choices[0].message.content
    assert json.loads(second) == ACCEPTED
    transcript = record.stored("s-record")
    users = [m.text for m in transcript if m.from_user]
    assert users == ["Ann is 31", "again"]  # the run's feedback is no user message
    feedback = [m for m in transcript if m.role in ("user", "tool") and not m.from_user]
    assert any("age" in m.text for m in feedback)  # saved, feedback included
    # and a client that sends only its new message continues it too
    third = ask(client, user("once more")).choices[0].message.content
    assert json.loads(third) == ACCEPTED


def test_a_reply_the_client_edited_is_not_what_the_session_keeps(record: Served) -> None:
    """The client's copy of a reply is not matched (it may be what hooks made
    of the answer); the session keeps the model's turns, never the edit."""
    client = record.client("s-forged")
    ask(client, user("Ann is 31"))
    edited = json.dumps({"name": "EDITED BY CLIENT", "age": 99})
    again = ask(client, user("Ann is 31"), {"role": "assistant", "content": edited}, user("again"))
    assert json.loads(again.choices[0].message.content or "") == ACCEPTED
    transcript = record.stored("s-forged")
    assert [m.text for m in transcript if m.from_user] == ["Ann is 31", "again"]
    assert not any("EDITED BY CLIENT" in m.text for m in transcript)


@pytest.mark.parametrize("stream", [False, True])
def test_a_run_that_ends_output_invalid_is_an_error_reply(tmp_path: Path, stream: bool) -> None:
    served = Served("record_bad", tmp_path, seamkit.Output(Record, mode="native"))
    try:
        client = served.client()
        if stream:
            with pytest.raises(openai.APIError, match="OutputInvalid"):
                list(ask(client, user("Ann"), stream=True))
        else:
            with pytest.raises(openai.InternalServerError, match="OutputInvalid") as raised:
                ask(client, user("Ann"))
            assert raised.value.status_code == 500
    finally:
        served.stop()


def test_the_apps_own_schema_or_json_object_is_accepted_and_another_refused(
    record: Served,
) -> None:
    client = record.client()
    parsed = client.chat.completions.parse(
        model="record",
        messages=[user("Ann is 31")],  # type: ignore[list-item]
        response_format=Record,
    )
    assert parsed.choices[0].message.parsed == Record(**ACCEPTED)
    whole = ask(client, user("Ann is 31"), response_format={"type": "json_object"})
    assert json.loads(whole.choices[0].message.content) == ACCEPTED
    other = {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}
    with pytest.raises(openai.BadRequestError) as caught:
        ask(
            client,
            user("Ann is 31"),
            response_format={"type": "json_schema", "json_schema": {"name": "o", "schema": other}},
        )
    assert caught.value.code == "response_format_conflict"
    assert "its own output" in caught.value.message
