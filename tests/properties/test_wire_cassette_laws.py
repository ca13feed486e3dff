"""The wire-cassette format's law: whatever events a stream holds, and
however many responses a file holds, the server writes back exactly what
was written down, one write per event."""

from __future__ import annotations

import http.client

from hypothesis import given, settings, strategies as st
from seamkit.testing import WireServer, parse_wire_cassette

_LINE = st.text(
    st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp"), blacklist_characters="\r\n"),
    min_size=1,
).filter(lambda line: line.strip() and line.strip() != "---" and not line.startswith("#"))
_EVENT = st.lists(_LINE.map(lambda line: f"data: {line}"), min_size=1, max_size=3).map("\n".join)
_STREAM = st.lists(_EVENT, min_size=1, max_size=6)


def _stream(events: list[str], status: int) -> str:
    return f"HTTP/1.1 {status} OK\ncontent-type: text/event-stream\n\n" + "\n\n".join(events) + "\n"


@given(st.lists(st.tuples(st.sampled_from([200, 429, 500]), _STREAM), min_size=1, max_size=3))
@settings(deadline=None, max_examples=60)
def test_a_cassette_is_played_back_as_written(responses: list[tuple[int, list[str]]]) -> None:
    text = "# a source line\n" + "---\n".join(
        _stream(events, status) for status, events in responses
    )
    cassette = parse_wire_cassette(text)
    assert [r.status for r in cassette.responses] == [status for status, _ in responses]
    for response, (_, events) in zip(cassette.responses, responses, strict=True):
        assert response.writes == tuple(f"{event}\n\n".encode() for event in events)
    with WireServer() as server:
        server.play(cassette)
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
        for status, events in responses:
            connection.request("POST", "/", b"{}")
            answer = connection.getresponse()
            assert answer.status == status
            assert answer.read().decode() == "".join(f"{event}\n\n" for event in events)
        connection.close()
