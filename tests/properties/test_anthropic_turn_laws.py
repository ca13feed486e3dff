"""Law of the ``anthropic`` provider: a streamed answer and the same answer
sent whole give the same `seamkit.ModelTurn`, for any message (text blocks,
tool calls with any JSON input, thinking and redacted thinking, a refusal,
usage with or without cache counts) split into any event sequence (text and
argument JSON cut anywhere, the JSON written with any spacing, pings and
unknown events anywhere, a call's input whole in its start, usage repeated
or not in ``message_delta``). The text deltas join to the turn's text, and
each call's argument fragments parse to its arguments; a tool call in an
answer that stopped at the token limit is the same error either way. Both go
over a real socket to the replay server."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterator
from typing import Any

import pytest
import seamkit
from hypothesis import given, strategies as st
from seamkit.stream import ToolArgumentsDelta
from seamkit_anthropic import AnthropicConfig, build_model

from tests.plugins.openai_server import ReplayServer, Reply


@pytest.fixture(scope="module")
def server() -> Iterator[ReplayServer]:
    with ReplayServer() as running:
        yield running


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """One event loop for every example, so one model keeps its connections."""
    running = asyncio.new_event_loop()
    yield running
    running.close()


def _split(draw: st.DrawFn, text: str) -> list[str]:
    """``text`` in 1..n non-empty pieces at drawn cut points ([] for "")."""
    if not text:
        return []
    if len(text) == 1:
        return [text]
    cuts = sorted(draw(st.sets(st.integers(1, len(text) - 1), max_size=6)))
    edges = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(edges)]


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**9), 10**9)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)

BLOCKS = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, st.text(max_size=30)),
    st.builds(
        lambda n, i: {"type": "tool_use", "name": n, "input": i},
        st.from_regex(r"[a-z][a-z_0-9]{0,10}", fullmatch=True),
        st.dictionaries(st.text(max_size=5), JSON_VALUES, max_size=4),
    ),
    st.builds(
        lambda t, s: {"type": "thinking", "thinking": t, "signature": s},
        st.text(max_size=30),
        st.from_regex(r"[A-Za-z0-9+/]{4,20}", fullmatch=True),
    ),
    st.builds(
        lambda d: {"type": "redacted_thinking", "data": d},
        st.from_regex(r"[A-Za-z0-9+/]{4,20}", fullmatch=True),
    ),
)


def _event(kind: str, **data: Any) -> str:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"


@st.composite
def answers(draw: st.DrawFn) -> tuple[Reply, Reply]:
    """One answer as a whole message and as an event stream."""
    blocks = draw(st.lists(BLOCKS, max_size=5))
    for k, block in enumerate(blocks):
        if block["type"] == "tool_use":
            block["id"] = f"toolu_{k}_{draw(st.integers(0, 999))}"
    has_calls = any(b["type"] == "tool_use" for b in blocks)
    reasons = ["end_turn", "stop_sequence", "max_tokens", "refusal", None]
    reason = "tool_use" if has_calls and draw(st.booleans()) else draw(st.sampled_from(reasons))
    details = None
    if reason == "refusal" and draw(st.booleans()):
        details = {
            "type": "refusal",
            "category": "cyber",
            "explanation": draw(st.text(max_size=20)),
        }
    counts = draw(st.fixed_dictionaries({"input_tokens": st.integers(0, 10**6)}))
    cached = draw(st.booleans())
    if cached:
        counts["cache_creation_input_tokens"] = draw(st.integers(0, 10**6))
        counts["cache_read_input_tokens"] = draw(st.integers(0, 10**6))
    output = draw(st.integers(0, 10**5))
    whole: dict[str, Any] = {
        "id": "msg_law",
        "type": "message",
        "role": "assistant",
        "model": "law",
        "content": blocks,
        "stop_reason": reason,
        "stop_sequence": None,
        "usage": {**counts, "output_tokens": output},
    }
    if details is not None:
        whole["stop_details"] = details

    events: list[str] = []
    first = {**counts, "output_tokens": draw(st.integers(0, 5))}
    start = {**whole, "content": [], "stop_reason": None, "usage": first}
    start.pop("stop_details", None)
    events.append(_event("message_start", message=start))
    for index, block in enumerate(blocks):
        kind = block["type"]
        pieces: list[dict[str, Any]] = []
        if kind == "text":
            text = block["text"]
            head = draw(st.integers(0, len(text)))  # the start may carry some text
            opening = {"type": "text", "text": text[:head]}
            pieces = [{"type": "text_delta", "text": p} for p in _split(draw, text[head:])]
        elif kind == "tool_use":
            opening = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            spacing = draw(st.sampled_from([None, (",", ":"), (", ", ": ")]))
            indent = draw(st.sampled_from([None, 1]))
            raw = json.dumps(block["input"], separators=spacing, indent=indent)
            if not block["input"] and draw(st.booleans()):
                raw = ""  # an empty input may send no JSON at all
            elif draw(st.integers(0, 4)) == 0:  # a proxy sends the input whole in the start
                opening["input"] = block["input"]
                raw = ""
            pieces = [{"type": "input_json_delta", "partial_json": p} for p in _split(draw, raw)]
            if draw(st.booleans()):
                pieces.insert(0, {"type": "input_json_delta", "partial_json": ""})
        elif kind == "thinking":
            opening = {"type": "thinking", "thinking": "", "signature": ""}
            pieces = [
                {"type": "thinking_delta", "thinking": p} for p in _split(draw, block["thinking"])
            ]
            pieces.append({"type": "signature_delta", "signature": block["signature"]})
        else:
            opening = dict(block)
        events.append(_event("content_block_start", index=index, content_block=opening))
        for piece in pieces:
            if draw(st.integers(0, 9)) == 0:
                events.append(_event("ping"))
            if draw(st.integers(0, 19)) == 0:
                events.append(_event("some_future_event", index=index, payload={"x": 1}))
            events.append(_event("content_block_delta", index=index, delta=piece))
        events.append(_event("content_block_stop", index=index))
    last: dict[str, Any] = {"output_tokens": output}
    repeat = draw(st.sampled_from(["no", "yes", "null"]))
    for key in counts:
        if repeat == "yes":
            last[key] = counts[key]
        elif repeat == "null":
            last[key] = None
    delta: dict[str, Any] = {"stop_reason": reason, "stop_sequence": None}
    if details is not None:
        delta["stop_details"] = details
    events.append(_event("message_delta", delta=delta, usage=last))
    events.append(_event("message_stop"))
    stream = Reply([e.encode() for e in events], headers={"content-type": "text/event-stream"})
    return Reply.json(whole), stream


@pytest.fixture(scope="module")
def model(server: ReplayServer, loop: asyncio.AbstractEventLoop) -> Iterator[seamkit.Model]:
    built = build_model(AnthropicConfig(provider="anthropic", name="law", base_url=server.root_url))
    yield built
    loop.run_until_complete(built.aclose())


@given(answer=answers())
def test_a_streamed_answer_and_the_whole_one_give_the_same_turn(
    server: ReplayServer,
    loop: asyncio.AbstractEventLoop,
    model: seamkit.Model,
    answer: tuple[Reply, Reply],
) -> None:
    whole, stream = answer
    server.script("law", whole, stream)

    async def both() -> tuple[seamkit.ModelTurn | str, list[Any] | str]:
        request = seamkit.ModelRequest()
        try:  # both ask, so the next example finds no answer left over
            turn: seamkit.ModelTurn | str = await model.complete(request)
        except seamkit.ModelError as exc:
            turn = str(exc)
        try:
            items: list[Any] | str = [item async for item in model.stream(request)]
        except seamkit.ModelError as exc:
            items = str(exc)
        return turn, items

    turn, items = loop.run_until_complete(both())
    if isinstance(turn, str) or isinstance(items, str):
        # a call at the token limit may be cut short: both refuse it, alike
        assert turn == items
        assert "token limit in the middle of tool call" in turn
        return
    *pieces, streamed = items
    assert streamed == turn
    deltas = "".join(p for p in pieces if isinstance(p, str))
    if turn.finish_reason != "refusal" or deltas:
        assert deltas == turn.message.text
    fragments = [p for p in pieces if isinstance(p, ToolArgumentsDelta)]
    assert all(f.text for f in fragments)
    calls = turn.message.tool_calls or ()
    assert {f.index for f in fragments} <= set(range(len(calls)))
    for index, call in enumerate(calls):
        mine = [f for f in fragments if f.index == index]
        assert {(f.id, f.name) for f in mine} <= {(call.id, call.function.name)}
        joined = "".join(f.text for f in mine) or "{}"
        assert json.loads(joined) == json.loads(call.function.arguments)
