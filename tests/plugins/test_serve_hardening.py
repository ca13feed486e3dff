"""``seamkit serve`` against clients that go away or never finish: a
disconnect mid-stream is one cancellation of the run (its ``on_completion``
finishes within its own deadline). A real ``seamkit serve`` on 127.0.0.1 and
a free port.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
import seamkit

from tests.plugins.test_serve import Served, ask

pytestmark = pytest.mark.slow


def test_a_disconnect_mid_stream_lets_on_completion_finish(tmp_path: Path) -> None:
    noted = tmp_path / "noted.txt"
    noted.write_text("")
    served = Served("finish", tmp_path, env={"SERVE_COUNT_FILE": str(noted)})
    try:
        with httpx.stream(
            "POST",
            f"{served.root}/v1/chat/completions",
            json={
                "model": "finish",
                "stream": True,
                "messages": [{"role": "user", "content": "go"}],
            },
            timeout=10,
        ) as response:
            for line in response.iter_lines():
                if "Working" in line:
                    break  # gone in the middle of the run: one cancellation
        deadline = time.monotonic() + 10
        while "finished" not in noted.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert noted.read_text() == "finished\n"  # the hook ran to its end
    finally:
        log = served.stop()
    assert "cancelled a second time" not in log
    assert "Traceback" not in log


def stored(served: Served, name: str) -> list[seamkit.Message]:
    from seamkit_serve._config import ANONYMOUS  # the store's name of a keyless server's session

    session = asyncio.run(seamkit.SQLiteSessionStore(served.store).load(f"{ANONYMOUS}/{name}"))
    return list(session.transcript) if session else []


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    served = Served("full", tmp_path_factory.mktemp("full"))
    yield served
    served.stop()


def test_a_full_session_is_a_400_that_says_what_to_do_and_stores_nothing(full: Served) -> None:
    client = full.client(None, **{"X-Seamkit-Session": "s-count"})
    for _ in range(2):  # 2 x (question, answer)
        ask(client, "hi", model="full")
    with pytest.raises(openai.BadRequestError) as refused:
        ask(client, "one more", "and another", model="full")  # 4 + 2 > 5
    error = refused.value.body
    assert isinstance(error, dict)
    assert error["code"] == "session_full"
    assert "max_session_messages=5" in error["message"]
    assert "new session" in error["message"]
    assert [m.text for m in stored(full, "s-count")].count("hi") == 2
    assert len(stored(full, "s-count")) == 4
    # a new session is a fresh start
    fresh = full.client(None, **{"X-Seamkit-Session": "s-count-2"})
    assert ask(fresh, "hi", model="full").choices[0].message.content == "Hello there."


def test_a_session_over_its_bytes_is_refused_too(full: Served) -> None:
    client = full.client(None, **{"X-Seamkit-Session": "s-bytes"})
    with pytest.raises(openai.BadRequestError) as refused:
        ask(client, "x" * 2500, model="full")
    assert refused.value.code == "session_full"
    assert "max_session_bytes=2000" in str(refused.value)
    assert stored(full, "s-bytes") == []
    # a stateless request is bounded by max_body_bytes, not by a session's limits
    assert ask(full.client(None), "x" * 2500, model="full").choices[0].message.content
