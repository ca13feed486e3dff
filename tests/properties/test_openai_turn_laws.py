"""Law of the ``openai`` provider: a streamed answer and the same answer sent
whole give the same `seamkit.ModelTurn`, whatever way the server splits the
stream, in every shape the quirk transcripts show (empty ``choices`` first,
fragments with and without ``index``, every call on index 0, id and name
repeated, whole calls in one chunk, usage anywhere or nowhere, a finish chunk
with an empty, ``null`` or missing ``delta``, SSE comments), and the text
deltas join to the turn's text. Both go over a real socket to the replay
server."""

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
from seamkit_openai import OpenAIConfig, build_model

from tests.plugins.openai_server import ReplayServer, Reply

Call = tuple[str, str, str]  # id, name, arguments text


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
    """``text`` in 1..n non-empty pieces at drawn cut points."""
    if len(text) <= 1:
        return [text]
    cuts = sorted(draw(st.sets(st.integers(1, len(text) - 1), max_size=6)))
    edges = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(edges)]


def _interleave(draw: st.DrawFn, queues: list[list[Any]]) -> list[Any]:
    """Every queue's items, each queue in its order, the queues interleaved."""
    out: list[Any] = []
    queues = [list(q) for q in queues if q]
    while queues:
        i = draw(st.integers(0, len(queues) - 1))
        out.append(queues[i].pop(0))
        if not queues[i]:
            queues.pop(i)
    return out


def _fragments(draw: st.DrawFn, calls: list[Call], style: str) -> list[list[dict[str, Any]]]:
    """The tool-call fragments in ``style``, grouped as the chunks carry them."""
    if style == "gemini":  # whole, no index, all in one chunk
        return [
            [
                {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                for i, n, a in calls
            ]
        ]
    if style == "whole_index0":  # whole, one chunk each, every one on index 0
        return [
            [{"index": 0, "id": i, "type": "function", "function": {"name": n, "arguments": a}}]
            for i, n, a in calls
        ]
    per_call: list[list[dict[str, Any]]] = []
    for k, (call_id, name, arguments) in enumerate(calls):
        first: dict[str, Any] = {
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        rest: list[dict[str, Any]] = []
        for piece in _split(draw, arguments):
            if style == "repeat":
                rest.append(
                    {"index": k, "id": call_id, "function": {"name": name, "arguments": piece}}
                )
            elif style == "no_index":
                rest.append({"function": {"arguments": piece}})
            else:
                rest.append({"index": k, "function": {"arguments": piece}})
        if style != "no_index":
            first["index"] = k
        per_call.append([first, *rest])
    if style == "no_index":  # without an index, pieces belong to the call begun last
        return [[f] for group in per_call for f in group]
    return [[f] for f in _interleave(draw, per_call)]


@st.composite
def answers(draw: st.DrawFn) -> tuple[Reply, Reply]:
    """One answer as a whole completion and as a stream."""
    refusal = draw(st.booleans()) and draw(st.booleans())
    text = draw(st.text(max_size=40))
    calls: list[Call] = []
    if not refusal:
        count = draw(st.integers(0, 3))
        names = st.from_regex(r"[a-z][a-z_0-9]{0,10}", fullmatch=True)
        arguments = st.dictionaries(
            st.text(max_size=5), st.integers() | st.text(max_size=8), max_size=3
        )
        calls = [
            (f"call_{k}_{draw(st.integers(0, 999))}", draw(names), json.dumps(draw(arguments)))
            for k in range(count)
        ]
    usage = draw(st.none() | st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)))
    reason = draw(st.sampled_from(["stop", "tool_calls", "eos", "", None]))
    message: dict[str, Any] = {"role": "assistant", "content": None if refusal else (text or None)}
    if refusal:
        message["refusal"] = text
    if calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
            for i, n, a in calls
        ]
    whole: dict[str, Any] = {
        "id": "chatcmpl-x",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": reason}],
    }
    usage_block = None
    if usage is not None:
        usage_block = {"prompt_tokens": usage[0], "completion_tokens": usage[1]}
        whole["usage"] = usage_block

    def chunk(delta: Any, finish: Any = None, **extra: Any) -> dict[str, Any]:
        choice: dict[str, Any] = {"index": 0, "finish_reason": finish}
        if delta is not Ellipsis:
            choice["delta"] = delta
        return {"object": "chat.completion.chunk", "choices": [choice], **extra}

    events: list[Any] = []
    if draw(st.booleans()):  # Azure: a first chunk with no choices
        events.append({"choices": [], "prompt_filter_results": []})
    events.append(chunk({"role": "assistant", "content": ""}))
    field = "refusal" if refusal else "content"
    if text:
        events.extend(chunk({field: piece}) for piece in _split(draw, text))
    if calls:
        style = draw(st.sampled_from(["indexed", "no_index", "repeat", "whole_index0", "gemini"]))
        events.extend(chunk({"tool_calls": group}) for group in _fragments(draw, calls, style))
    finish_delta = draw(st.sampled_from([{}, None, Ellipsis]))
    placement = draw(st.sampled_from(["own_chunk", "litellm", "on_finish"]))
    if usage_block is not None and placement == "on_finish":
        events.append(chunk(finish_delta, reason, usage=usage_block))
    else:
        events.append(chunk(finish_delta, reason))
        if usage_block is not None and placement == "own_chunk":
            events.append({"object": "chat.completion.chunk", "choices": [], "usage": usage_block})
        elif usage_block is not None:
            events.append({"choices": [{"index": 0, "delta": {}}], "usage": usage_block})
    stream = Reply.sse(events)
    if draw(st.booleans()):  # OpenRouter's keep-alive comments between events
        stream.body = [piece for e in stream.body for piece in (b": OPENROUTER PROCESSING\n\n", e)]
    return Reply.json(whole), stream


@pytest.fixture(scope="module")
def model(server: ReplayServer, loop: asyncio.AbstractEventLoop) -> Iterator[seamkit.Model]:
    built = build_model(OpenAIConfig(provider="openai", name="law", base_url=server.base_url))
    yield built
    loop.run_until_complete(built.aclose())  # type: ignore[attr-defined]


@given(answer=answers())
def test_a_streamed_answer_and_the_whole_one_give_the_same_turn(
    server: ReplayServer,
    loop: asyncio.AbstractEventLoop,
    model: seamkit.Model,
    answer: tuple[Reply, Reply],
) -> None:
    whole, stream = answer
    server.script("law", whole, stream)

    async def both() -> tuple[seamkit.ModelTurn, list[Any]]:
        request = seamkit.ModelRequest()
        return await model.complete(request), [item async for item in model.stream(request)]

    turn, items = loop.run_until_complete(both())
    *pieces, streamed = items
    assert streamed == turn
    deltas = [p for p in pieces if isinstance(p, str)]
    assert "".join(deltas) == turn.message.text
    fragments = [p for p in pieces if isinstance(p, ToolArgumentsDelta)]
    calls = turn.message.tool_calls or ()
    joined = ["".join(f.text for f in fragments if f.index == i) for i in range(len(calls))]
    assert sorted(joined) == sorted(c.function.arguments for c in calls)  # each call's own
    assert {f.index for f in fragments} <= set(range(len(calls)))
