"""``seamkit serve`` and runs that wait for a person: a real server process
on 127.0.0.1 and a free port (`Served`), the official ``openai`` client for
chat completions, ``httpx`` for ``POST /v1/sessions/{name}/decisions``.

The served app, ``tests/fixtures/serve/approve.yaml``, has a scripted model
that asks for a refund of 250 and then says "Done."; its refund tool needs
approval from 100 up and writes each effect to a file, so a test counts
what ran.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import seamkit
from seamkit._approval import arguments_digest

from tests.plugins.test_serve import APPS, KEY_A, KEY_B, Served

CANARY = "sk-approval-canary-7q7q"
DONE = "data: [DONE]"


class Approvals:
    """The served ``approve`` app, what its tool did, and every answer body
    the tests received (searched for secrets at the end)."""

    def __init__(self, tmp: Path, app: str | Path = "approve") -> None:
        self.effects = tmp / "effects.log"
        self.effects.touch()
        env = {"SERVE_EFFECTS": str(self.effects), "SERVE_CANARY": CANARY}
        self.served = Served(str(app), tmp, env=env)
        self.bodies: list[str] = []

    def ran(self) -> list[str]:
        """The refunds the tool made, one line each."""
        return self.effects.read_text().splitlines()

    def client(self, key: str = KEY_A, **headers: str) -> openai.OpenAI:
        return self.served.client(key, **headers)

    def suspend(self, **headers: str) -> tuple[str, dict[str, Any]]:
        """A chat completion that suspends: its session and its one pending call."""
        raw = self.client(**headers).chat.completions.with_raw_response.create(
            model="approve", messages=[{"role": "user", "content": "refund order A1"}]
        )
        self.bodies.append(raw.text)
        answer = raw.parse()
        extra = answer.model_extra or {}
        [pending] = extra["seamkit"]["pending"]
        return raw.headers["x-seamkit-session"], pending

    def decide(
        self, session: str, *decisions: dict[str, Any], key: str = KEY_A, **body: Any
    ) -> httpx.Response:
        response = httpx.post(
            f"{self.served.root}/v1/sessions/{session}/decisions",
            json={"decisions": list(decisions), **body},
            headers={"authorization": f"Bearer {key}"},
            timeout=30,
        )
        self.bodies.append(response.text)
        return response

    def stored(self, session: str, key: str = KEY_A) -> seamkit.StoredSession | None:
        from seamkit_serve._config import key_id  # the store's name for the key's session

        store = seamkit.SQLiteSessionStore(self.served.store)
        return asyncio.run(store.load(f"{key_id(key)}/{session}"))

    def rows(self) -> str:
        """Every row of the store (sessions and journal), as SQL text."""
        with contextlib.closing(sqlite3.connect(self.served.store)) as db:
            return "\n".join(db.iterdump())

    def sessions(self) -> list[str]:
        return asyncio.run(seamkit.SQLiteSessionStore(self.served.store).list())


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Approvals]:
    approvals = Approvals(tmp_path_factory.mktemp("approve"))
    yield approvals
    log = approvals.served.stop()
    # no key, and no manifest secret, in any answer or in the log
    for secret in (KEY_A, KEY_B, CANARY):
        assert secret not in log
        assert not [body for body in approvals.bodies if secret in body]
    assert "Traceback" not in log


def approve(pending: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"call_id": pending["call_id"], "action": "approve", "digest": pending["digest"], **more}


def sse_events(text: str) -> list[Any]:
    """The data of each event of an SSE body, ``[DONE]`` as the string."""
    out: list[Any] = []
    for line in text.splitlines():
        if line.startswith("data: "):
            data = line[len("data: ") :]
            out.append(data if data == "[DONE]" else json.loads(data))
    return out


# --- a run that suspends ----------------------------------------------------------------


def test_a_suspended_run_answers_with_what_waits(app: Approvals) -> None:
    before = app.ran()
    raw = app.client().chat.completions.with_raw_response.create(
        model="approve", messages=[{"role": "user", "content": "refund order A1"}]
    )
    app.bodies.append(raw.text)
    answer = raw.parse()
    assert raw.headers["x-seamkit-outcome"] == "suspended"
    session = raw.headers["x-seamkit-session"]  # a session the server made: no header was sent
    assert session.startswith("run-")
    choice = answer.choices[0]
    assert choice.finish_reason == "stop"
    extra = (answer.model_extra or {})["seamkit"]
    assert extra["outcome"] == "suspended" and extra["session"] == session
    [pending] = extra["pending"]
    assert set(pending) == {
        "call_id",
        "tool",
        "arguments",
        "reason",
        "hook",
        "digest",
        "requested_at",
    }
    assert pending["tool"] == "t_refund"
    assert pending["arguments"] == {"order": "A1", "amount": 250}
    assert pending["reason"] == "t_refund needs approval" and pending["hook"] is None
    assert pending["digest"] == arguments_digest("t_refund", pending["arguments"])
    assert choice.message.content == (
        "Let me refund that.\n\nWaiting for approval:\n"
        f"- t_refund (call {pending['call_id']}): t_refund needs approval"
    )
    assert app.ran() == before  # nothing acted
    stored = app.stored(session)
    assert stored is not None and [m.role for m in stored.transcript] == ["user", "assistant"]


def test_a_streamed_suspension_sends_the_text_then_the_pending_calls(app: Approvals) -> None:
    raw = app.client().chat.completions.with_raw_response.create(
        model="approve", stream=True, messages=[{"role": "user", "content": "refund order A1"}]
    )
    session = raw.headers["x-seamkit-session"]  # named before the run ends
    assert "x-seamkit-outcome" not in raw.headers  # the outcome is in the last chunk
    chunks = list(raw.parse())
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.startswith("Let me refund that.\n\nWaiting for approval:\n- t_refund (call ")
    last = [c for c in chunks if c.choices][-1]
    assert last.choices[0].finish_reason == "stop"
    extra = (last.model_extra or {})["seamkit"]
    assert extra["outcome"] == "suspended" and extra["session"] == session
    assert [p["tool"] for p in extra["pending"]] == ["t_refund"]
    assert app.stored(session) is not None

    # on the wire: the text as deltas, then the chunk with seamkit, then [DONE]
    response = httpx.post(
        f"{app.served.root}/v1/chat/completions",
        json={"model": "approve", "stream": True, "messages": [{"role": "user", "content": "x"}]},
        headers={"authorization": f"Bearer {KEY_A}"},
        timeout=30,
    )
    app.bodies.append(response.text)
    events = sse_events(response.text)
    assert events[-1] == "[DONE]"
    assert "seamkit" in events[-2] and events[-2]["choices"][0]["finish_reason"] == "stop"
    assert all("seamkit" not in e for e in events[:-2])
    deltas = [e["choices"][0]["delta"].get("content") for e in events[:-2]]
    assert deltas[1:3] == ["Let me", " refund that."]
    assert deltas[-1].startswith("\n\nWaiting for approval:")


def test_a_named_session_keeps_its_name_and_a_completed_stateless_run_leaves_none(
    tmp_path: Path,
) -> None:
    app = tmp_path / "small.yaml"
    script = tmp_path / "small_script.yaml"
    script.write_text(
        "each_run: true\nturns:\n"
        "  - tool_calls: [{name: t_refund, arguments: {order: B2, amount: 5}}]\n"
        "  - text: Refunded.\n"
    )
    app.write_text(
        "name: approve\n"
        f"model: scripted:{script}\n"
        f"tools:\n  - {{kind: function, ref: approve_tools, toolset: t}}\n"
        f"serve: {{api_keys: ['${{secret:SERVE_KEY_A}}']}}\n"
    )
    (tmp_path / "approve_tools.py").write_text((APPS / "approve_tools.py").read_text())
    small = Approvals(tmp_path, app)
    try:
        raw = small.client().chat.completions.with_raw_response.create(
            model="approve", messages=[{"role": "user", "content": "refund B2"}]
        )
        assert raw.parse().choices[0].message.content == "Refunded."
        assert raw.headers["x-seamkit-outcome"] == "completed"
        assert "x-seamkit-session" not in raw.headers
        streamed = small.client().chat.completions.create(
            model="approve", stream=True, messages=[{"role": "user", "content": "again"}]
        )
        assert "".join(c.choices[0].delta.content or "" for c in streamed if c.choices) == (
            "Refunded."
        )
        assert small.sessions() == []  # the runs' own sessions are gone
        assert len(small.ran()) == 2
        named = small.client(**{"X-Seamkit-Session": "mine"}).chat.completions
        raw = named.with_raw_response.create(
            model="approve", messages=[{"role": "user", "content": "refund B2"}]
        )
        assert raw.headers["x-seamkit-session"] == "mine"
        assert len(small.sessions()) == 1
    finally:
        small.served.stop()


# --- decisions ----------------------------------------------------------------------------


def test_approving_with_the_digest_runs_the_tool_once_and_answers_with_the_next_turn(
    app: Approvals,
) -> None:
    session, pending = app.suspend()
    before = app.ran()
    response = app.decide(session, approve(pending))
    assert response.status_code == 200, response.text
    assert response.headers["x-seamkit-outcome"] == "completed"
    assert response.headers["x-seamkit-session"] == session
    body = response.json()
    assert body["object"] == "chat.completion" and "seamkit" not in body
    assert body["choices"][0]["message"]["content"] == "Done."
    assert body["choices"][0]["finish_reason"] == "stop"
    [ran] = app.ran()[len(before) :]
    assert ran.startswith(f"refund A1 250 {pending['call_id']} ")

    again = app.decide(session, approve(pending))  # decided and run: refused, nothing runs
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "decision_refused"
    assert "no call waiting" in again.json()["error"]["message"]
    assert len(app.ran()) == len(before) + 1

    stored = app.stored(session)
    assert stored is not None
    tools = [m.text for m in stored.transcript if m.role == "tool"]
    assert tools == ["refunded 250 on A1"]
    assert [m.text for m in stored.transcript if m.role == "assistant"][-1] == "Done."
    rows = app.rows()
    assert KEY_A not in rows and KEY_B not in rows
    # the session goes on with a new message
    answer = app.client(**{"X-Seamkit-Session": session}).chat.completions.create(
        model="approve", messages=[{"role": "user", "content": "another"}]
    )
    assert (answer.model_extra or {})["seamkit"]["outcome"] == "suspended"


def test_a_retried_decisions_request_runs_the_call_once(app: Approvals) -> None:
    # A client's automatic retry: the same request twice at once. The session's
    # lock puts them one after the other; the second finds nothing waiting.
    from concurrent.futures import ThreadPoolExecutor

    session, pending = app.suspend()
    before = app.ran()
    with ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(lambda _: app.decide(session, approve(pending)), range(2)))
    assert sorted(a.status_code for a in answers) == [200, 409]
    [refused] = [a for a in answers if a.status_code == 409]
    assert refused.json()["error"]["code"] in ("decision_refused", "session_busy")
    assert len(app.ran()) == len(before) + 1


def test_decisions_streamed(app: Approvals) -> None:
    session, pending = app.suspend()
    before = len(app.ran())
    response = app.decide(
        session, approve(pending), stream=True, stream_options={"include_usage": True}
    )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    events = sse_events(response.text)
    assert events[-1] == "[DONE]"
    assert events[-2]["choices"] == [] and "usage" in events[-2]
    text = "".join(e["choices"][0]["delta"].get("content") or "" for e in events[:-2])
    assert text == "Done."
    assert len(app.ran()) == before + 1


def test_an_approval_without_its_digest_is_a_422_and_runs_nothing(app: Approvals) -> None:
    session, pending = app.suspend()
    before = app.ran()
    for action in ("approve", "edit"):
        decision = {"call_id": pending["call_id"], "action": action}
        if action == "edit":
            decision["arguments"] = {"order": "A1", "amount": 120}
        response = app.decide(session, decision)
        assert response.status_code == 422
        error = response.json()["error"]
        assert error["code"] == "digest_required" and error["param"] == "decisions[0].digest"
        assert "digest" in error["message"]
    assert app.ran() == before
    assert app.decide(session, approve(pending)).status_code == 200  # still waiting: decidable


def test_a_wrong_digest_is_refused_and_nothing_runs(app: Approvals) -> None:
    session, pending = app.suspend()
    before = app.ran()
    response = app.decide(session, approve(pending, digest="0" * 24))
    assert response.status_code == 409
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["code"] == "decision_refused" and error["param"] == "decisions[0]"
    assert "does not match" in error["message"] and "nothing was run" in error["message"]
    unknown = app.decide(session, approve(pending, call_id="call_nope"))
    assert unknown.status_code == 409 and "no pending call 'call_nope'" in unknown.text
    assert app.ran() == before
    stored = app.stored(session)
    assert stored is not None and [m.role for m in stored.transcript] == ["user", "assistant"]


def test_another_key_never_sees_nor_decides_the_pending_calls(app: Approvals) -> None:
    session, pending = app.suspend()
    before = app.ran()
    theirs = app.decide(session, approve(pending), key=KEY_B)
    unknown = app.decide("no-such-session", approve(pending))
    assert theirs.status_code == unknown.status_code == 404
    assert theirs.json()["error"]["code"] == "session_not_found"
    assert pending["digest"] not in theirs.text
    # B's chat on that name is B's own, new session, with nothing of A's
    answer = app.client(KEY_B, **{"X-Seamkit-Session": session}).chat.completions.create(
        model="approve", messages=[{"role": "user", "content": "what waits?"}]
    )
    app.bodies.append(answer.model_dump_json())
    theirs_stored = app.stored(session, KEY_B)
    assert theirs_stored is not None
    assert [m.text for m in theirs_stored.transcript if m.role == "user"] == ["what waits?"]
    assert app.ran() == before
    assert app.decide(session, approve(pending)).status_code == 200  # A's call still waits


def test_a_rejection_gives_the_model_the_reason(app: Approvals) -> None:
    session, pending = app.suspend()
    before = app.ran()
    reject = {"call_id": pending["call_id"], "action": "reject", "reason": "not this one"}
    wrong = app.decide(session, {**reject, "digest": "0" * 24})  # a digest, when sent, must match
    assert wrong.status_code == 409 and "does not match" in wrong.text
    response = app.decide(session, {**reject, "digest": pending["digest"]})
    assert response.status_code == 200
    assert response.json()["choices"][0]["message"]["content"] == "Done."
    assert app.ran() == before
    stored = app.stored(session)
    assert stored is not None
    assert [m.text for m in stored.transcript if m.role == "tool"] == ["not this one"]


def test_an_edit_runs_the_arguments_it_names(app: Approvals) -> None:
    session, pending = app.suspend()
    before = app.ran()
    edit = approve(pending, action="edit", arguments={"order": "A1", "amount": 120})
    response = app.decide(session, edit)
    assert response.status_code == 200, response.text
    [ran] = app.ran()[len(before) :]
    assert ran.startswith("refund A1 120 ")
    bad = approve(pending, action="edit", arguments={"order": "A1", "amount": "lots"})
    session2, pending2 = app.suspend()
    refused = app.decide(session2, {**bad, "digest": pending2["digest"]})
    assert refused.status_code == 409 and "do not fit" in refused.text


def test_a_new_message_while_calls_wait_is_refused(app: Approvals) -> None:
    session, pending = app.suspend()
    client = app.client(**{"X-Seamkit-Session": session})
    with pytest.raises(openai.ConflictError) as caught:
        client.chat.completions.create(
            model="approve", messages=[{"role": "user", "content": "hello?"}]
        )
    error = caught.value.body
    assert isinstance(error, dict) and error["code"] == "calls_pending"
    message = caught.value.message
    assert "decide them before sending a new message" in message
    assert f"POST /v1/sessions/{session}/decisions" in message and pending["call_id"] in message
    assert "key-" not in message  # the session as the client names it
    with pytest.raises(openai.ConflictError, match="decide them"):  # a 409 when streamed too
        client.chat.completions.create(
            model="approve", stream=True, messages=[{"role": "user", "content": "hello?"}]
        )
    stored = app.stored(session)
    assert stored is not None and [m.role for m in stored.transcript] == ["user", "assistant"]


def test_no_decisions_says_again_what_waits(app: Approvals) -> None:
    session, pending = app.suspend()
    response = app.decide(session)
    assert response.status_code == 200
    assert response.headers["x-seamkit-outcome"] == "suspended"
    assert response.json()["seamkit"]["pending"] == [pending]


@pytest.mark.parametrize(
    ("decision", "says"),
    [
        ({"call_id": "c", "action": "maybe", "digest": "d"}, "use one of: approve, reject, edit"),
        ({"call_id": "c", "action": "edit", "digest": "d"}, "needs arguments"),
        ({"action": "approve", "digest": "d"}, "call_id must be"),
        ({"call_id": "c", "action": "approve", "digest": "d", "why": 1}, "'why'"),
    ],
    ids=["action", "edit", "call_id", "field"],
)
def test_a_malformed_decision_is_a_422_naming_what_is_wrong(
    app: Approvals, decision: dict[str, Any], says: str
) -> None:
    session, _ = app.suspend()
    response = app.decide(session, decision)
    assert response.status_code == 422
    assert says in response.json()["error"]["message"]
    not_json = httpx.post(
        f"{app.served.root}/v1/sessions/{session}/decisions",
        content=b"{nope",
        headers={"authorization": f"Bearer {KEY_A}"},
    )
    assert not_json.status_code == 400 and "not JSON" in not_json.text


def test_decisions_one_call_at_a_time_say_who_decided(tmp_path: Path) -> None:
    from seamkit_serve._config import key_id  # who decided, as the server names the key

    script = tmp_path / "two_script.yaml"
    script.write_text(
        "each_run: true\nturns:\n"
        "  - tool_calls:\n"
        "      - {name: t_refund, arguments: {order: A1, amount: 250}}\n"
        "      - {name: t_refund, arguments: {order: B2, amount: 300}}\n"
        "  - text: Both done.\n"
    )
    manifest = (APPS / "approve.yaml").read_text().replace("approve_script.yaml", str(script))
    app = tmp_path / "approve.yaml"
    app.write_text(manifest)
    (tmp_path / "approve_tools.py").write_text((APPS / "approve_tools.py").read_text())
    two = Approvals(tmp_path, app)
    try:
        raw = two.client().chat.completions.with_raw_response.create(
            model="approve", messages=[{"role": "user", "content": "refund both"}]
        )
        session = raw.headers["x-seamkit-session"]
        first, second = (raw.parse().model_extra or {})["seamkit"]["pending"]
        response = two.decide(session, approve(first))
        assert response.status_code == 200
        assert response.headers["x-seamkit-outcome"] == "suspended"
        body = response.json()
        assert body["seamkit"]["pending"] == [second]  # only what still waits
        assert body["choices"][0]["message"]["content"] == (
            f"Waiting for approval:\n- t_refund (call {second['call_id']}): t_refund needs approval"
        )
        assert two.ran() == []  # the batch waits for every decision
        stored = two.stored(session)
        assert stored is not None
        decided = {p.call_id: p.decision for p in stored.pending}
        assert decided[second["call_id"]] is None
        by_a = decided[first["call_id"]]
        assert by_a is not None and by_a.by == key_id(KEY_A)  # the key's id, never the key
        response = two.decide(session, approve(second))
        assert response.json()["choices"][0]["message"]["content"] == "Both done."
        assert sorted(line.split()[1] for line in two.ran()) == ["A1", "B2"]
    finally:
        log = two.served.stop()
    assert KEY_A not in log


# --- secrets --------------------------------------------------------------------------------


def test_a_secret_the_model_repeats_is_masked_in_every_answer(tmp_path: Path) -> None:
    script = tmp_path / "leaky_script.yaml"
    script.write_text(
        "each_run: true\nturns:\n"
        "  - tool_calls: [{name: t_refund, arguments: "
        f"{{order: A1, amount: 250, note: '{CANARY}'}}}}]\n"
        "  - text: Done.\n"
    )
    manifest = (APPS / "approve.yaml").read_text().replace("approve_script.yaml", str(script))
    app = tmp_path / "approve.yaml"
    app.write_text(manifest)
    (tmp_path / "approve_tools.py").write_text((APPS / "approve_tools.py").read_text())
    leaky = Approvals(tmp_path, app)
    try:
        session, pending = leaky.suspend()
        assert pending["arguments"]["note"] == "***"
        streamed = leaky.client().chat.completions.with_raw_response.create(
            model="approve", stream=True, messages=[{"role": "user", "content": "x"}]
        )
        leaky.bodies += [c.model_dump_json() for c in streamed.parse()]
        assert leaky.decide(session, approve(pending)).status_code == 200  # digest of the real
        assert len(leaky.ran()) == 1
    finally:
        log = leaky.served.stop()
    assert CANARY not in log
    assert not [body for body in leaky.bodies if CANARY in body]
