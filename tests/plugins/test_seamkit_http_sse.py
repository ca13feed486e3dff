"""seamkit-http's transport: the server-sent-event decoder both providers
read streams with (laws: any stream, cut anywhere, gives its events, as
httpx-sse, written by others, reads them), and the connections' proxy,
taken from the environment as an httpx client takes it."""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager

import httpx
import pytest
import seamkit
from httpx_sse import EventSource
from hypothesis import given, settings, strategies as st
from seamkit_http import EventDecoder, ServerEvent, proxy_for, server_events

from tests.plugins.openai_server import ReplayServer, Reply

# --- the decoder ---------------------------------------------------------------------

_LINE = st.text(st.characters(exclude_characters="\r\n", codec="utf-8"), max_size=12)
_NAME = st.text(st.characters(exclude_characters="\r\n", codec="utf-8"), min_size=1, max_size=8)

_EVENT = st.fixed_dictionaries(
    {
        "event": st.none() | _NAME,
        "data": st.lists(_LINE, min_size=1, max_size=3),
        "comment": st.none() | _LINE,
        "id": st.none() | _LINE,
    }
)


def _render(events: list[dict[str, object]], end: str) -> bytes:
    """The stream: each event's lines (a comment, its id, its type, its data
    lines, in that order), then a blank line; every line ended by ``end``."""
    lines: list[str] = []
    for e in events:
        if e["comment"] is not None:
            lines.append(f":{e['comment']}")
        if e["id"] is not None:
            lines.append(f"id: {e['id']}")
        if e["event"] is not None:
            lines.append(f"event: {e['event']}")
        lines += [f"data: {d}" for d in e["data"]]  # type: ignore[attr-defined]
        lines.append("")
    return "".join(line + end for line in lines).encode()


def _expected(events: list[dict[str, object]]) -> list[ServerEvent]:
    return [
        ServerEvent(str(e["event"] or "message"), "\n".join(e["data"]))  # type: ignore[arg-type]
        for e in events
    ]


def _chunks(raw: bytes, cuts: list[int]) -> list[bytes]:
    """``raw`` cut at ``cuts`` (taken modulo its length), an empty chunk
    after each piece (a transport may hand one over)."""
    points = sorted({c % (len(raw) + 1) for c in cuts})
    bounds = [0, *points, len(raw)]
    return [piece for a, b in itertools.pairwise(bounds) for piece in (raw[a:b], b"")]


def _decode(chunks: list[bytes]) -> list[ServerEvent]:
    decoder = EventDecoder()
    return [event for chunk in chunks for event in decoder.feed(chunk)]


class _Body(httpx.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk


def _response(chunks: list[bytes]) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=_Body(chunks))


async def _httpx_sse(chunks: list[bytes]) -> list[ServerEvent]:
    source = EventSource(_response(chunks))
    return [ServerEvent(e.event, e.data) async for e in source.aiter_sse()]


async def _ours(chunks: list[bytes]) -> list[ServerEvent]:
    return [event async for event in server_events(_response(chunks))]


@settings(max_examples=300, deadline=None)
@given(
    events=st.lists(_EVENT, max_size=5),
    end=st.sampled_from(["\n", "\r\n", "\r"]),
    cuts=st.lists(st.integers(min_value=0), max_size=8),
)
def test_any_stream_cut_anywhere_gives_its_events_as_httpx_sse_reads_them(
    events: list[dict[str, object]], end: str, cuts: list[int]
) -> None:
    raw = _render(events, end)
    chunks = _chunks(raw, cuts)
    assert _decode(chunks) == _expected(events)
    assert asyncio.run(_ours(chunks)) == asyncio.run(_httpx_sse(chunks)) == _expected(events)


@settings(max_examples=100, deadline=None)
@given(events=st.lists(_EVENT, min_size=1, max_size=3), cuts=st.lists(st.integers(0), max_size=4))
def test_a_stream_cut_before_a_blank_line_keeps_the_unfinished_event_back(
    events: list[dict[str, object]], cuts: list[int]
) -> None:
    raw = _render(events, "\n")[:-1]  # the last blank line never came
    assert _decode(_chunks(raw, cuts)) == _expected(events)[:-1]


def test_the_standards_corner_cases() -> None:
    stream = (
        b"\xef\xbb\xbf"  # a byte-order mark, dropped
        b"event: only a type\n\n"  # no data: nothing dispatched
        b"data\n\n"  # a field name alone: empty data, dispatched
        b"data:no space\ndata:  two spaces\n\n"  # one space is dropped, not two
        b"retry: 10\nunknown: x\ndata: {}\n\n"
    )
    for size in (1, 2, 3, len(stream)):  # the mark split too
        chunks = [stream[i : i + size] for i in range(0, len(stream), size)]
        assert _decode(chunks) == [
            ServerEvent("message", ""),
            ServerEvent("message", "no space\n two spaces"),
            ServerEvent("message", "{}"),
        ]


def test_a_huge_event_in_small_chunks_costs_linear_time() -> None:
    """A server that sends one 16 MB event in 1 KB chunks: joining the
    pieces at every chunk would copy terabytes; they are joined once."""
    import time  # lazy: this test alone

    data = b"x" * (16 << 20)
    stream = b"data: " + data + b"\n\n"
    decoder = EventDecoder()
    started = time.process_time()
    found = [e for i in range(0, len(stream), 1024) for e in decoder.feed(stream[i : i + 1024])]
    assert time.process_time() - started < 3  # about 0.05 s; quadratic: minutes
    assert found == [ServerEvent("message", data.decode())]


def test_invalid_utf8_is_replaced_not_raised() -> None:
    assert _decode([b"data: \xff\xfe\n\n"]) == [ServerEvent("message", "\ufffd\ufffd")]


def test_a_compressed_stream_is_decoded_first() -> None:
    import gzip  # lazy: this test alone

    body = gzip.compress(b"event: e\ndata: 1\n\n")
    response = httpx.Response(
        200,
        headers={"content-type": "text/event-stream", "content-encoding": "gzip"},
        stream=_Body([body[:5], body[5:]]),
    )

    async def read() -> list[ServerEvent]:
        return [e async for e in server_events(response)]

    assert asyncio.run(read()) == [ServerEvent("e", "1")]


# --- the proxy -----------------------------------------------------------------------

_PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in _PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    return monkeypatch


def test_the_proxy_comes_from_the_environment_by_scheme(clean_env: pytest.MonkeyPatch) -> None:
    assert proxy_for("https://api.anthropic.com") is None
    clean_env.setenv("HTTPS_PROXY", "http://proxy.corp:3128")
    clean_env.setenv("http_proxy", "proxy.corp:8080")  # no scheme: http is meant
    assert proxy_for("https://api.anthropic.com/v1/messages") == "http://proxy.corp:3128"
    assert proxy_for("http://10.0.0.5:4000/v1") == "http://proxy.corp:8080"
    clean_env.delenv("HTTPS_PROXY")
    clean_env.setenv("ALL_PROXY", "socks5://proxy.corp:1080")
    assert proxy_for("https://api.anthropic.com") == "socks5://proxy.corp:1080"


def test_no_proxy_exempts_a_host_and_the_domains_under_it(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("HTTPS_PROXY", "http://proxy.corp:3128")
    clean_env.setenv("NO_PROXY", "localhost, .internal.corp,example.com")
    assert proxy_for("https://localhost:8443") is None
    assert proxy_for("https://llm.internal.corp") is None
    assert proxy_for("https://internal.corp") is None
    assert proxy_for("https://api.example.com") is None
    assert proxy_for("https://notexample.com") == "http://proxy.corp:3128"
    clean_env.setenv("NO_PROXY", "*")
    assert proxy_for("https://api.anthropic.com") is None


def test_a_no_proxy_entry_with_a_port_exempts_that_port_only(
    clean_env: pytest.MonkeyPatch,
) -> None:
    """As an httpx client reads ``NO_PROXY=localhost:11434``: a local Ollama
    is reached directly, the same host on another port through the proxy."""
    clean_env.setenv("HTTP_PROXY", "http://proxy.corp:3128")
    clean_env.setenv("NO_PROXY", "localhost:11434, 10.0.0.5:4000, [::1]:8000, ::2")
    assert proxy_for("http://localhost:11434/v1") is None
    assert proxy_for("http://10.0.0.5:4000") is None
    assert proxy_for("http://[::1]:8000/v1") is None
    assert proxy_for("http://[::2]:9000") is None  # an IPv6 address, not a port
    assert proxy_for("http://localhost:8000/v1") == "http://proxy.corp:3128"
    assert proxy_for("http://[::1]:8001") == "http://proxy.corp:3128"
    clean_env.setenv("NO_PROXY", "llm.corp:80")
    assert proxy_for("http://llm.corp/v1") is None  # the scheme's port


ANSWER = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-6",
    "content": [{"type": "text", "text": "through the proxy"}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 3, "output_tokens": 4},
}


@contextmanager
def _recording_server() -> Iterator[tuple[int, list[str]]]:
    """A server on 127.0.0.1 that answers every request with `ANSWER` and
    records each request line (a proxy is sent the absolute URL)."""
    lines: list[str] = []
    body = json.dumps(ANSWER).encode()
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\nconnection: close\r\n\r\n" % len(body)
    )
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                header, _, rest = data.partition(b"\r\n\r\n")
                length = next(
                    int(h.split(b":")[1])
                    for h in header.split(b"\r\n")
                    if h.lower().startswith(b"content-length:")
                )
                while len(rest) < length:
                    rest += conn.recv(65536)
                lines.append(header.split(b"\r\n")[0].decode())
                conn.sendall(head + body)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], lines
    finally:
        stop.set()
        thread.join(5)
        listener.close()


def _ask(base_url: str) -> str:
    from seamkit_anthropic import AnthropicConfig, build_model  # lazy: a provider to ask with

    config = AnthropicConfig(
        provider="anthropic", name="claude-sonnet-4-6", base_url=base_url, api_key="sk-x"
    )

    async def go() -> str:
        async with build_model(config) as model:
            request = seamkit.ModelRequest(messages=(seamkit.Message.user("hi"),))
            return (await model.complete(request)).message.text or ""

    return asyncio.run(go())


def test_a_provider_goes_through_the_environments_proxy_unless_exempt(
    clean_env: pytest.MonkeyPatch,
) -> None:
    with _recording_server() as (port, lines):
        clean_env.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
        # no server listens at llm.invalid: only the proxy can answer
        assert _ask("http://llm.invalid:4000") == "through the proxy"
        assert lines == ["POST http://llm.invalid:4000/v1/messages HTTP/1.1"]
        clean_env.setenv("NO_PROXY", "127.0.0.1")
        assert _ask(f"http://127.0.0.1:{port}") == "through the proxy"
        assert lines[1] == "POST /v1/messages HTTP/1.1"  # straight to the server


# --- answers that do not decode ----------------------------------------------------------

NOT_GZIP = Reply([b"this is not gzip at all"], headers={"content-encoding": "gzip"})


def _provider_model(provider: str, server: ReplayServer) -> seamkit.Model:
    from seamkit_anthropic import (  # lazy: both providers
        AnthropicConfig,
        build_model as build_anthropic,
    )
    from seamkit_openai import OpenAIConfig, build_model as build_openai  # lazy: both providers

    if provider == "anthropic":
        return build_anthropic(
            AnthropicConfig(
                provider="anthropic",
                name="m",
                base_url=server.root_url,
                api_key="sk-a",
                max_retries=0,
            )
        )
    return build_openai(
        OpenAIConfig(
            provider="openai", name="m", base_url=server.base_url, api_key="sk-o", max_retries=0
        )
    )


def _outcome(model: seamkit.Model, streamed: bool) -> object:
    request = seamkit.ModelRequest(messages=(seamkit.Message.user("hi"),))

    async def go() -> object:
        async with model:  # type: ignore[attr-defined]
            if streamed:
                return [item async for item in model.stream(request)]
            return await model.complete(request)

    return asyncio.run(go())


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("provider", ["anthropic", "openai"])
@pytest.mark.parametrize(
    "reply",
    [
        Reply(NOT_GZIP.body, headers={**NOT_GZIP.headers, "content-type": "application/json"}),
        Reply(NOT_GZIP.body, headers={**NOT_GZIP.headers, "content-type": "text/event-stream"}),
        Reply(NOT_GZIP.body, 500, NOT_GZIP.headers),
        Reply([b"[" * 100_000 + b"]" * 100_000], headers={"content-type": "application/json"}),
    ],
    ids=["corrupt-gzip-json", "corrupt-gzip-stream", "corrupt-gzip-error", "nested-too-deep"],
)
def test_an_answer_that_does_not_decode_is_a_model_error_never_a_crash(
    provider: str, streamed: bool, reply: Reply
) -> None:
    """A body whose gzip is broken (httpx raises ``DecodingError``, not a
    ``TransportError``) or JSON nested past Python's stack
    (``RecursionError``): the run gets a `seamkit.ModelError`."""
    with ReplayServer() as server:
        server.script("m", reply)
        with pytest.raises(seamkit.ModelError):
            _outcome(_provider_model(provider, server), streamed)
