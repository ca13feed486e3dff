"""``Idempotency-Key`` on ``seamkit serve``: a request repeated with the same
key by the same API key gets the first answer again and the app acts once —
for the official SDK's own retries, for concurrent repeats, and for a retry
after a disconnect mid-stream; a different request with the same key is a
409; another API key's same key is its own. A real ``seamkit serve`` on
127.0.0.1 and a free port (the app ``tests/fixtures/serve/idem.yaml``: a tool
that counts, then a 1.5-second tool).
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import seamkit

from tests.plugins.test_serve import KEY_A, KEY_B, Served

GO = [{"role": "user", "content": "go"}]


class App:
    """The served app and the file its counting tool writes."""

    def __init__(self, tmp: Path, app: str = "idem", *args: str) -> None:
        self.count_file = tmp / "count.txt"
        self.count_file.write_text("")
        self.served = Served(app, tmp, *args, env={"SERVE_COUNT_FILE": str(self.count_file)})

    def acted(self) -> int:
        return self.count_file.read_text().count("acted")

    def post(self, key: str, idem: str, body: dict[str, Any], **headers: str) -> httpx.Response:
        return httpx.post(
            f"{self.served.root}/v1/chat/completions",
            json=body,
            headers={"authorization": f"Bearer {key}", "idempotency-key": idem, **headers},
            timeout=30,
        )


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[App]:
    made = App(tmp_path_factory.mktemp("idem"))
    yield made
    log = made.served.stop()
    assert KEY_A not in log and KEY_B not in log
    assert "Traceback" not in log


def fresh() -> str:
    return f"key-{uuid.uuid4().hex}"


def test_the_sdks_retries_with_a_key_run_the_app_once_and_store_the_message_once(
    app: App,
) -> None:
    before = app.acted()
    client = openai.OpenAI(
        base_url=f"{app.served.root}/v1", api_key=KEY_A, max_retries=4, timeout=1.0
    )
    answer = client.chat.completions.create(
        model="idem",
        messages=GO,  # type: ignore[arg-type]
        extra_headers={"Idempotency-Key": fresh(), "X-Seamkit-Session": "s-retry"},
    )
    # the first attempt timed out (the run takes 1.5 s) and the SDK retried:
    # the retry waited for the first run and got its answer
    assert answer.choices[0].message.content == "Working\n\ndone."
    assert app.acted() == before + 1
    assert stored_users(app, "s-retry") == ["go"]


def stored_users(app: App, session: str) -> list[str]:
    from seamkit_serve._config import key_id

    loaded = asyncio.run(
        seamkit.SQLiteSessionStore(app.served.store).load(f"{key_id(KEY_A)}/{session}")
    )
    assert loaded is not None
    return [m.text for m in loaded.transcript if m.role == "user" and m.from_user]


def test_concurrent_repeats_run_the_app_once_and_get_the_same_answer(app: App) -> None:
    before = app.acted()
    key = fresh()
    got: list[httpx.Response] = []

    def call() -> None:
        got.append(
            app.post(
                KEY_A,
                key,
                {"model": "idem", "messages": GO},
                **{"x-seamkit-session": "s-concurrent"},
            )
        )

    threads = [threading.Thread(target=call) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert [r.status_code for r in got] == [200] * 4
    assert len({r.content for r in got}) == 1  # the same completion, id included
    assert sum(r.headers.get("idempotent-replayed") == "true" for r in got) == 3
    assert all(r.headers["x-seamkit-outcome"] == "completed" for r in got)
    assert app.acted() == before + 1
    assert stored_users(app, "s-concurrent") == ["go"]


def test_a_retry_after_a_disconnect_mid_stream_gets_the_whole_stream(app: App) -> None:
    before = app.acted()
    key = fresh()
    body = {"model": "idem", "stream": True, "messages": GO}
    headers = {"authorization": f"Bearer {KEY_A}", "idempotency-key": key}
    with httpx.stream(
        "POST", f"{app.served.root}/v1/chat/completions", json=body, headers=headers, timeout=30
    ) as response:
        for line in response.iter_lines():
            if "Working" in line:
                break  # gone in the middle of the run: it goes on
    again = app.post(KEY_A, key, body)
    assert again.status_code == 200
    assert again.headers["content-type"].startswith("text/event-stream")
    text = again.text
    assert "Working" in text and "done." in text and text.endswith("data: [DONE]\n\n")
    assert app.acted() == before + 1
    # a replay of a replay is the same bytes
    assert app.post(KEY_A, key, body).content == again.content


def test_a_different_request_with_the_same_key_is_a_409_that_is_not_retried(app: App) -> None:
    key = fresh()
    first = app.post(KEY_A, key, {"model": "idem", "messages": GO})
    assert first.status_code == 200
    before = app.acted()
    for body, headers in [
        ({"model": "idem", "messages": [{"role": "user", "content": "other"}]}, {}),
        ({"model": "idem", "messages": GO}, {"x-seamkit-session": "s-other"}),
    ]:
        reused = app.post(KEY_A, key, body, **headers)
        assert reused.status_code == 409
        assert reused.headers["x-should-retry"] == "false"
        assert reused.json()["error"]["code"] == "idempotency_key_reused"
    client = openai.OpenAI(base_url=f"{app.served.root}/v1", api_key=KEY_A, max_retries=2)
    with pytest.raises(openai.ConflictError):
        client.chat.completions.create(
            model="idem",
            messages=[{"role": "user", "content": "third"}],
            extra_headers={"Idempotency-Key": key},
        )
    assert app.acted() == before


def test_another_api_keys_same_key_is_its_own_run(app: App) -> None:
    key = fresh()
    before = app.acted()
    a = app.post(KEY_A, key, {"model": "idem", "messages": GO})
    b = app.post(KEY_B, key, {"model": "idem", "messages": GO})
    assert a.status_code == b.status_code == 200
    assert "idempotent-replayed" not in b.headers
    assert a.json()["id"] != b.json()["id"]
    assert app.acted() == before + 2


def test_a_request_refused_before_its_run_is_not_recorded(app: App) -> None:
    key = fresh()
    before = app.acted()
    wrong = app.post(KEY_A, key, {"model": "other", "messages": GO})
    assert wrong.status_code == 404
    assert (
        "idempotent-replayed"
        not in app.post(KEY_A, key, {"model": "other", "messages": GO}).headers
    )
    # nothing ran, so the key is free for the corrected request
    right = app.post(KEY_A, key, {"model": "idem", "messages": GO})
    assert right.status_code == 200
    assert app.acted() == before + 1


def test_a_client_session_cannot_take_a_records_name(app: App) -> None:
    import hashlib

    key = fresh()
    first = app.post(KEY_A, key, {"model": "idem", "messages": GO})
    # the record's name is not a name a client may give its session
    named = f"idem/{hashlib.sha256(key.encode()).hexdigest()[:32]}"
    forged = app.post(
        KEY_A, fresh(), {"model": "idem", "messages": GO}, **{"x-seamkit-session": named}
    )
    assert forged.status_code == 400
    again = app.post(KEY_A, key, {"model": "idem", "messages": GO})
    assert again.content == first.content


def records(app: App) -> list[str]:
    names = asyncio.run(seamkit.SQLiteSessionStore(app.served.store).list())
    return [n for n in names if "/idem/" in n]


@pytest.mark.slow
def test_an_expired_key_runs_again_and_expired_records_are_swept(tmp_path: Path) -> None:
    short = App(tmp_path, "idem_short")  # idempotency_seconds: 1
    try:
        key = fresh()
        body = {"model": "idem", "messages": GO}
        assert short.post(KEY_A, key, body).status_code == 200
        assert len(records(short)) == 1
        time.sleep(1.2)
        again = short.post(KEY_A, key, body)  # expired: a new run, its record overwrites
        assert "idempotent-replayed" not in again.headers
        assert short.acted() == 2
        time.sleep(1.2)
        assert short.post(KEY_A, fresh(), body).status_code == 200  # records, then sweeps
        deadline = time.monotonic() + 5
        while len(records(short)) != 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(records(short)) == 1  # only the live one is left
    finally:
        short.served.stop()


@pytest.mark.slow
def test_workers_share_the_records(tmp_path: Path) -> None:
    two = App(tmp_path, "idem", "--workers", "2")
    try:
        key = fresh()
        body = {"model": "idem", "stream": True, "messages": GO}
        got: list[httpx.Response] = []

        def call() -> None:
            got.append(two.post(KEY_A, key, body))

        threads = [threading.Thread(target=call) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert [r.status_code for r in got] == [200] * 6
        assert len({r.content for r in got}) == 1  # the first's SSE bytes, replayed
        assert got[0].text.endswith("data: [DONE]\n\n")
        assert two.acted() == 1
    finally:
        two.served.stop()
