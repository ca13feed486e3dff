"""``seamkit serve`` against clients that go away, never finish or grow a
session without bound: a disconnect mid-stream is one cancellation of the run
(its ``on_completion`` finishes within its own deadline); a full session is a
400 ``session_full``; headers or a body sent a byte at a time are cut at
their time-outs. A real ``seamkit serve`` on 127.0.0.1 and a free port.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
import seamkit

from tests.plugins.test_serve import Served, ask


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


def trickle(served: Served, head: bytes, rest: bytes, seconds: float = 0.5) -> tuple[float, bytes]:
    """Send ``head`` at once, then ``rest`` a byte every ``seconds``, until the
    server closes the connection: how long that took and what it answered."""
    started = time.monotonic()
    answered = b""
    with socket.create_connection(("127.0.0.1", served.port), timeout=30) as sock:
        sock.sendall(head)
        sock.setblocking(False)
        for byte in rest:
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                break
            end = time.monotonic() + seconds
            closed = False
            while time.monotonic() < end:
                try:
                    got = sock.recv(65536)
                except BlockingIOError:
                    time.sleep(0.05)
                    continue
                except OSError:
                    closed = True
                    break
                if not got:
                    closed = True
                    break
                answered += got
            if closed:
                break
            if time.monotonic() - started > 20:
                raise AssertionError("the server kept the slow connection open")
    return time.monotonic() - started, answered


REQUEST = (
    b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
)


def test_headers_sent_a_byte_at_a_time_are_cut_at_the_header_timeout(full: Served) -> None:
    took, answered = trickle(full, b"", REQUEST + b"X-Padding: " + b"a" * 200)
    assert 1.5 < took < 5  # header_timeout_seconds: 2
    assert answered == b""  # no request came, so nothing is answered
    # a connection that sends nothing at all is cut too
    with socket.create_connection(("127.0.0.1", full.port), timeout=10) as sock:
        started = time.monotonic()
        assert sock.recv(10) == b""
        assert time.monotonic() - started < 5


def test_a_body_sent_a_byte_at_a_time_is_a_408_and_the_connection_closes(full: Served) -> None:
    head = REQUEST + b"Content-Length: 500\r\n\r\n"
    took, answered = trickle(full, head, b'{"model": "full", "messages": []' + b" " * 400)
    assert 1.5 < took < 5  # body_timeout_seconds: 2
    status, _, rest = answered.partition(b"\r\n")
    assert status == b"HTTP/1.1 408 Request Timeout"
    body = json.loads(rest.partition(b"\r\n\r\n")[2])
    assert body["error"]["code"] == "request_timeout"
    assert "body_timeout_seconds" in body["error"]["message"]
    # a quick client on the same server is unaffected
    assert ask(full.client(None), "hi", model="full").choices[0].message.content


def test_a_quick_keep_alive_client_is_never_cut(full: Served) -> None:
    with httpx.Client(base_url=full.root, timeout=10) as client:
        for _ in range(3):  # one connection, requests a second apart
            assert client.get("/healthz").status_code == 200
            time.sleep(1.0)
        assert client.get("/healthz").status_code == 200
