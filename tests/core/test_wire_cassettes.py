"""Wire cassettes (`seamkit.testing.load_wire_cassette`) and the `WireServer`
that plays them, used from plain sync code over real sockets."""

from __future__ import annotations

import http.client
import json
import re
import socket
import time
from pathlib import Path

import pytest
from seamkit.testing import WireCassetteError, WireServer, load_wire_cassette, parse_wire_cassette

STREAM = """\
# Source: a made-up stream for this test
# expect-usage: {"input_tokens": 3}
HTTP/1.1 200 OK
content-type: text/event-stream

data: one

data: two
data: two, second line

data: [DONE]
"""

RETRY = """\
# a 429, then a JSON answer
HTTP/1.1 429 Too Many Requests
content-type: application/json
retry-after: 0

{"error": "slow down"}
---
# the answer
HTTP/1.1 200
Content-Type: application/json

{"ok": true}
"""


def test_a_stream_is_one_write_per_event_after_its_comments() -> None:
    cassette = parse_wire_cassette(STREAM)
    (response,) = cassette.responses
    assert response.status == 200 and response.reason == "OK" and response.is_stream
    assert response.writes == (
        b"data: one\n\n",
        b"data: two\ndata: two, second line\n\n",
        b"data: [DONE]\n\n",
    )
    assert cassette.comments[0] == "Source: a made-up stream for this test"
    assert cassette.expect == {"usage": {"input_tokens": 3}}


def test_responses_are_separated_by_a_dashes_line() -> None:
    cassette = parse_wire_cassette(RETRY)
    assert [r.status for r in cassette.responses] == [429, 200]
    assert cassette.responses[0].header("Retry-After") == "0"
    assert cassette.responses[1].header("content-type") == "application/json"
    assert cassette.responses[1].writes == (b'{"ok": true}',)
    assert cassette.comments == ("a 429, then a JSON answer", "the answer")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("# only a comment\n", "no status line"),
        ("HTTP/1.1 OK\n", ":1: 'HTTP/1.1 OK' is not a status line"),
        ("HTTP/1.1 200\nno colon here\n\n{}", ":2: 'no colon here' is not a header"),
        ("# expect-usage: {nope\nHTTP/1.1 200\n", ":1: expect-usage is not JSON"),
    ],
)
def test_a_bad_cassette_names_its_line(text: str, words: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.http"
    path.write_text(text)
    with pytest.raises(WireCassetteError, match=f"bad.http{words}" if words[0] == ":" else words):
        load_wire_cassette(path)


def test_the_server_plays_in_order_repeats_the_last_and_records_requests() -> None:
    with WireServer() as server:
        server.play(parse_wire_cassette(RETRY))
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
        answers = []
        for n in range(3):
            connection.request(
                "POST", f"/v1/any?n={n}", json.dumps({"n": n}), {"Authorization": "Bearer k"}
            )
            response = connection.getresponse()
            answers.append((response.status, response.read()))
        connection.close()
        assert answers == [
            (429, b'{"error": "slow down"}'),
            (200, b'{"ok": true}'),
            (200, b'{"ok": true}'),
        ]
        seen = server.requests
        assert [r.path for r in seen] == ["/v1/any?n=0", "/v1/any?n=1", "/v1/any?n=2"]
        assert [r.body for r in seen] == [{"n": 0}, {"n": 1}, {"n": 2}]
        assert seen[0].headers["authorization"] == "Bearer k"
        assert server.wait_until(lambda s: s.open_connections == 0, 2)


def test_a_stream_comes_in_chunks_and_pauses_between_writes() -> None:
    with WireServer() as server:
        server.play(parse_wire_cassette(STREAM), pause=0.2)
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
        started = time.monotonic()
        connection.request("POST", "/", b"{}")
        response = connection.getresponse()
        assert response.getheader("transfer-encoding") == "chunked"
        body = response.read()
        assert time.monotonic() - started >= 0.35
        assert body == b"data: one\n\ndata: two\ndata: two, second line\n\ndata: [DONE]\n\n"
        connection.close()


def test_a_held_stream_notices_the_client_going() -> None:
    with WireServer() as server:
        server.play(parse_wire_cassette(STREAM), hold=True)
        client = socket.create_connection(("127.0.0.1", server.port))
        client.sendall(b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}")
        received = b""
        while b"two, second line" not in received:
            received += client.recv(4096)
        assert b"[DONE]" not in received
        assert server.disconnects == []
        client.close()
        assert server.wait_until(lambda s: len(s.disconnects) == 1, 2)
        assert server.wait_until(lambda s: s.open_connections == 0, 2)


def test_a_cut_stream_drops_the_connection_without_the_last_chunk() -> None:
    with WireServer() as server:
        server.play(parse_wire_cassette(STREAM), cut=True)
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
        connection.request("POST", "/", b"{}")
        with pytest.raises(http.client.IncompleteRead):
            connection.getresponse().read()
        connection.close()


FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.mark.parametrize(
    "path", sorted(FIXTURES.glob("*/*.http")), ids=lambda p: f"{p.parent.name}/{p.name}"
)
def test_every_wire_fixture_loads_and_names_its_source(path: Path) -> None:
    cassette = load_wire_cassette(path)
    assert cassette.responses
    assert any(
        re.search(r"source|https?://|sdk-python", comment, re.IGNORECASE)
        for comment in cassette.comments
    ), f"{path.name} names no source in its # lines"
