"""``seamkit serve`` against what an attacker sends, with the official
``openai`` client and a real server on 127.0.0.1: the run's user is its API
key's identity unless the key may name users, request JSON nested too deep
is a 400, and a stored session that cannot be read is a 500 in OpenAI's
shape, whole and streamed.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import httpx
import openai
import pytest

from tests.plugins.test_serve import KEY_A, KEY_B, Served, ask, memory_app

KEY_C = "sk-serve-canary-cccc3333"


# --- who the run's user is -------------------------------------------------------------


@pytest.fixture(scope="module")
def whoami(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    served = Served("whoami_keys", tmp_path_factory.mktemp("whoami"), env={"SERVE_KEY_C": KEY_C})
    yield served
    log = served.stop()
    assert KEY_A not in log and KEY_B not in log and KEY_C not in log


def said(served: Served, key: str, **options: str) -> str:
    answer = ask(served.client(key), "who?", model="whoami", **options)
    return str(answer.choices[0].message.content)


def test_a_key_that_may_assert_users_acts_as_the_user_it_names(whoami: Served) -> None:
    assert said(whoami, KEY_A, user="ann") == "user=ann key=ops"
    assert said(whoami, KEY_A, user="zed") == "user=zed key=ops"
    assert said(whoami, KEY_A) == "user=ops key=ops"  # no user named: the key's own
    streamed = ask(whoami.client(KEY_A), "who?", model="whoami", user="bob", stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in streamed if c.choices) == (
        "user=bob key=ops"
    )


def test_a_key_with_a_list_of_users_acts_as_those_and_no_other(whoami: Served) -> None:
    assert said(whoami, KEY_C, user="ann") == "user=ann key=ann-app"
    assert said(whoami, KEY_C) == "user=ann-app key=ann-app"
    with pytest.raises(openai.PermissionDeniedError) as caught:
        said(whoami, KEY_C, user="bob")
    error = caught.value.body
    assert isinstance(error, dict)
    assert error["code"] == "user_not_allowed" and error["param"] == "user"
    assert "'bob'" in error["message"] and "assert_users" in error["message"]


def test_a_plain_keys_user_field_never_reaches_the_run(whoami: Served) -> None:
    from seamkit_serve._config import key_id  # the id the server derives from the key

    me = key_id(KEY_B)
    assert said(whoami, KEY_B, user="ann") == f"user={me} key={me}"
    assert KEY_B not in me  # the identity is a digest, never the key


def test_key_b_naming_ann_neither_reads_nor_writes_anns_memories(tmp_path: Path) -> None:
    app = memory_app(tmp_path)
    served = Served(str(app), tmp_path, cwd=tmp_path)
    try:
        ask(served.client(KEY_A), "my door code is 4321", model="memory", user="ann")
        ask(served.client(KEY_B), "what do you know about me?", model="memory", user="ann")
        with pytest.raises(openai.PermissionDeniedError):  # key A may act as ann only
            ask(served.client(KEY_A), "hello", model="memory", user="bob")
    finally:
        served.stop()
    from seamkit_serve._config import key_id

    b = key_id(KEY_B)
    # key B's run read its own memories (none), not ann's, and wrote its own
    assert (tmp_path / "calls.log").read_text() == f"get_memories ann\nget_memories {b}\n"
    memories = json.loads((tmp_path / "memories.json").read_text())
    assert memories == {"ann": ["my door code is 4321"], b: ["what do you know about me?"]}


@pytest.mark.parametrize(
    ("entries", "where", "says"),
    [
        ("{id: 'has space', key: k1}", ("serve", "api_keys", 0, "id"), "1 to 64 letters"),
        (
            "{id: ok, key: k1, assert_users: maybe}",
            ("serve", "api_keys", 0, "assert_users"),
            "true, false or a list of user names",
        ),
        ("{id: ok, secret: k1}", ("serve", "api_keys", 0, "key"), "'key' is missing"),
        ("{id: ok, key: k1}, {id: ok, key: k2}", ("serve", "api_keys"), "'ok' names two keys"),
    ],
)
def test_a_bad_key_entry_is_a_located_manifest_error(
    tmp_path: Path, entries: str, where: tuple[object, ...], says: str
) -> None:
    import seamkit

    app = tmp_path / "bad.yaml"
    app.write_text(f"name: bad\nmodel: scripted:x.yaml\nserve: {{api_keys: [{entries}]}}\n")
    with pytest.raises(seamkit.ManifestError) as caught:
        seamkit.AppConfig.load(app)
    problems = {p.location: p.message for p in caught.value.problems}
    assert says in problems[where], problems
    assert "k1" not in str(problems) and "k2" not in str(problems)  # keys stay secret


# --- request JSON nested too deep ------------------------------------------------------


@pytest.fixture(scope="module")
def chat(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    served = Served("chat", tmp_path_factory.mktemp("chat-hardening"))
    yield served
    served.stop()


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000,
        b'{"model":"whoami","messages":[{"role":"user","content":'
        + b"[" * 5000
        + b"]" * 5000
        + b"}]}",
    ],
    ids=["100k-brackets", "5000-levels-in-content"],
)
def test_json_nested_too_deep_is_a_400_in_openais_shape(whoami: Served, body: bytes) -> None:
    served = whoami  # the default body limit (1 MB): the nesting, not the size, is refused
    response = httpx.post(
        f"{served.root}/v1/chat/completions",
        content=body,
        headers={"Authorization": f"Bearer {KEY_A}", "Content-Type": "application/json"},
        timeout=30,
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and error["code"] == "json_too_deep"
    assert "64 deep" in error["message"]
    assert said(served, KEY_A) == "user=ops key=ops"  # still serving


# --- a stored session that cannot be read ----------------------------------------------


def test_a_damaged_session_is_a_500_whole_and_an_error_event_streamed(chat: Served) -> None:
    from seamkit_serve._config import key_id

    client = chat.client(KEY_A, **{"X-Seamkit-Session": "s-damaged"})
    ask(client, "hi")
    with closing(sqlite3.connect(chat.store)) as db, db:
        changed = db.execute(
            "UPDATE sessions SET transcript = x'00ff' WHERE name = ?",
            (f"{key_id(KEY_A)}/s-damaged",),
        ).rowcount
    assert changed == 1
    with pytest.raises(openai.InternalServerError) as caught:
        ask(client, "again")
    response = caught.value.response
    assert response.headers["x-should-retry"] == "false"
    error = response.json()["error"]
    assert error["type"] == "server_error" and error["code"] == "session_unreadable"
    assert "'s-damaged'" in error["message"] and str(chat.store) not in error["message"]

    with httpx.stream(
        "POST",
        f"{chat.root}/v1/chat/completions",
        json={"model": "chat", "messages": [{"role": "user", "content": "again"}], "stream": True},
        headers={"Authorization": f"Bearer {KEY_A}", "X-Seamkit-Session": "s-damaged"},
        timeout=30,
    ) as streamed:
        status, kind = streamed.status_code, streamed.headers.get("content-type")
        events = [line for line in streamed.iter_lines() if line.startswith("data: ")]
    assert (status, kind) == (200, "text/event-stream; charset=utf-8"), (status, kind)
    assert events[-1] == "data: [DONE]"
    errors = [json.loads(e[6:])["error"] for e in events[:-1] if "error" in json.loads(e[6:])]
    assert [e["code"] for e in errors] == ["session_unreadable"]
    # the official client raises the error event, with the server's message
    with pytest.raises(openai.APIError, match="'s-damaged' could not be read"):
        list(ask(client, "again", stream=True))
