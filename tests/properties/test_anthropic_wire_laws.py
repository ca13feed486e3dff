"""Laws of the anthropic provider's request body (no network).

For any transcript: the roles alternate, starting with the user; every
``tool_use`` has its ``tool_result`` in the next message; at most 4
breakpoints, never on a block that may not carry one; the same request gives
the same bytes. And the cache law: in a session growing turn by turn under
``placement: stable``, what request k-1 sent up to its end breakpoint (E) is a
byte prefix of request k (of its messages, when request k is the first to
declare stand-in tools), and request k's P breakpoint is that very block."""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import given, strategies as st
from seamkit import Document, Message, MessageToolCall, ModelRequest, ToolSpec
from seamkit.injection import inject_tool_result
from seamkit.testing.strategies import documents, histories, json_values
from seamkit_anthropic import AnthropicConfig
from seamkit_anthropic._wire import request_body

_text = st.text(max_size=20)
_some_text = st.text(min_size=1, max_size=20)
_THINKING = st.builds(
    lambda t, s: {"type": "thinking", "thinking": t, "signature": s}, _some_text, _some_text
)
_REDACTED = st.builds(lambda d: {"type": "redacted_thinking", "data": d}, _some_text)
_TOOLS = (ToolSpec(name="add"), ToolSpec(name="clock"))
_FORBIDDEN_TYPES = frozenset({"thinking", "redacted_thinking"})


def _config(cache: Any = "auto") -> AnthropicConfig:
    return AnthropicConfig(provider="anthropic", name="claude-test", cache=cache)


def _thoughtful(draw: st.DrawFn, message: Message, parts: list[dict[str, Any]]) -> Message:
    """``message`` with opaque parts, its text and its calls' stand-ins in any
    order, as a recorded answer with interleaved thinking has them."""
    if not parts or message.role != "assistant":
        return message
    blocks = [*parts, *([{"type": "text", "text": message.text}] if message.text else [])]
    blocks += [{"type": "tool_use", "id": c.id} for c in message.tool_calls or ()]
    content = draw(st.permutations(blocks))
    ids = iter(c.id for c in message.tool_calls or ())  # calls keep their order, as answered
    content = [{**b, "id": next(ids)} if b["type"] == "tool_use" else b for b in content]
    return message.model_copy(update={"content": content})


@st.composite
def transcripts(draw: st.DrawFn) -> tuple[Message, ...]:
    """Well-formed conversations that end with the user's turn: the kernel's
    histories, with answers given thinking parts, results flagged as errors,
    odd ids, and system notes dropped in anywhere."""
    out: list[Message] = []
    for message in draw(histories()):
        if message.role == "user" and not message.text:
            message = Message.user("u")
        if message.role == "assistant" and draw(st.booleans()):
            message = _thoughtful(draw, message, draw(st.lists(_THINKING | _REDACTED, max_size=2)))
        if message.role == "tool" and draw(st.booleans()):
            message = Message.tool(message.tool_call_id or "", message.text, is_error=True)
        out.append(message)
        if draw(st.integers(0, 9)) == 0:
            out.append(Message.system(draw(_text)))
    out.append(Message.user(draw(_some_text)))
    return tuple(out)


@st.composite
def requests(draw: st.DrawFn) -> ModelRequest:
    return ModelRequest(
        messages=draw(transcripts()),
        preamble=draw(st.none() | _text),
        extra_context=tuple(draw(st.lists(documents(), max_size=2))),
        tools=_TOOLS[: draw(st.integers(0, 2))],
        additional_params=draw(
            st.dictionaries(st.sampled_from(["top_k", "metadata"]), json_values)
        ),
    )


_caches = st.sampled_from(["auto", "off", {"breakpoints": 1}, {"breakpoints": 3, "ttl": "1h"}])


@given(requests(), _caches)
def test_roles_alternate_from_the_user_and_every_tool_use_is_answered_next(
    request: ModelRequest, cache: Any
) -> None:
    body = request_body(request, _config(cache), stream=False)
    roles = [m["role"] for m in body["messages"]]
    assert roles[0] == "user"
    assert all(a != b for a, b in itertools.pairwise(roles))
    for i, message in enumerate(body["messages"]):
        assert message["content"], "no turn is empty"
        uses = [b["id"] for b in message["content"] if b["type"] == "tool_use"]
        if uses:
            following = body["messages"][i + 1]["content"]
            results = [b["tool_use_id"] for b in following if b["type"] == "tool_result"]
            assert results == uses
            kinds = [b["type"] for b in following]
            assert kinds[: len(results)] == ["tool_result"] * len(results)


@given(requests(), _caches)
def test_at_most_four_breakpoints_and_never_on_a_forbidden_block(
    request: ModelRequest, cache: Any
) -> None:
    body = request_body(request, _config(cache), stream=False)
    marked = [b for b in body.get("tools", ()) if "cache_control" in b]
    system = body.get("system", [])
    documents_block = system[-1] if request.extra_context else None
    for block in system:
        if "cache_control" in block:
            assert block is not documents_block
            marked.append(block)
    for message in body["messages"]:
        for block in message["content"]:
            if "cache_control" not in block:
                continue
            marked.append(block)
            assert block["type"] not in _FORBIDDEN_TYPES
            if block["type"] == "text":
                assert block["text"]
                assert not block["text"].startswith("<system>")
    assert len(marked) <= 4
    limit = {"auto": 4, "off": 0}.get(cache) if isinstance(cache, str) else cache["breakpoints"]
    assert len(marked) <= (limit if limit is not None else 4)
    if cache != "off" and any(
        b["type"] not in _FORBIDDEN_TYPES for m in body["messages"] for b in m["content"]
    ):
        assert marked, "a request with a cacheable block gets a breakpoint"


@given(requests(), st.booleans())
def test_the_same_request_gives_the_same_bytes(request: ModelRequest, stream: bool) -> None:
    first = json.dumps(request_body(request, _config(), stream=stream))
    again = ModelRequest.model_validate_json(request.model_dump_json())
    assert json.dumps(request_body(again, _config(), stream=stream)) == first


# --- the cache law ----------------------------------------------------------------------


def _unmarked(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_unmarked(v) for v in value]
    return value


def _message_marks(body: dict[str, Any]) -> list[tuple[int, int]]:
    return [
        (i, j)
        for i, m in enumerate(body["messages"])
        for j, b in enumerate(m["content"])
        if "cache_control" in b
    ]


def _prefix_through(body: dict[str, Any], at: tuple[int, int]) -> str:
    """The body's JSON (markers removed) up to and including block ``at``."""
    plain = _unmarked(body)
    block = plain["messages"][at[0]]["content"][at[1]]
    plain["messages"][at[0]]["content"][at[1]] = "\x00here"
    text = json.dumps(plain)
    return text[: text.index(json.dumps("\x00here"))] + json.dumps(block)


@st.composite
def answers(draw: st.DrawFn, turn: int, tools: bool) -> Message:
    """A model's answer: text, thinking, tool calls (when it has tools),
    never nothing."""
    calls = [
        MessageToolCall.make(
            draw(st.sampled_from([f"toolu_{turn}_{i}", f"call.{turn}/{i}"])),
            "add",
            draw(st.sampled_from(['{"a": 1}', "[1]", "", '{"a":'])),
        )
        for i in range(draw(st.integers(0, 3)) if tools else 0)
    ]
    text = draw(_text if calls else _some_text)
    message = Message.assistant(text, calls or None)
    return _thoughtful(draw, message, draw(st.lists(_THINKING | _REDACTED, max_size=2)))


@st.composite
def stable_sessions(draw: st.DrawFn) -> list[ModelRequest]:
    """Requests of one session under ``placement: stable``: each is the one
    before plus the model's answer, then its tool results or a new user
    message, maybe a system note, maybe injected pairs appended."""
    messages: list[Message] = [Message.user(draw(_some_text))]
    fixed: dict[str, Any] = {
        "preamble": draw(st.none() | _some_text),
        "extra_context": (Document(id="d", text="doc"),) if draw(st.booleans()) else (),
        "tools": _TOOLS[: draw(st.integers(0, 2))],
    }
    sessions = [ModelRequest(messages=tuple(messages), **fixed)]
    for turn in range(draw(st.integers(1, 6))):
        answer = draw(answers(turn, bool(fixed["tools"])))
        messages.append(answer)
        for call in answer.tool_calls or ():
            messages.append(Message.tool(call.id, draw(_text), is_error=draw(st.booleans())))
        if not answer.tool_calls:
            if draw(st.integers(0, 4)) == 0:
                messages.append(Message.system(draw(_text)))
            messages.append(Message.user(draw(_some_text)))
        for _ in range(draw(st.integers(0, 2))):
            messages = inject_tool_result(
                messages,
                name="clock",
                arguments={"tz": draw(st.sampled_from(["UTC", "CET"]))},
                content=draw(st.sampled_from(["12:00", "12:01"])),
                frequency=draw(st.sampled_from(["append_if_changed", "always", "once"])),
                expiry=1_800_000_000,
                placement="stable",
            )
        sessions.append(ModelRequest(messages=tuple(messages), **fixed))
    return sessions


@given(stable_sessions())
def test_the_cache_law_each_request_reads_what_the_one_before_wrote(
    session: list[ModelRequest],
) -> None:
    bodies = [request_body(r, _config(), stream=True) for r in session]
    for before, now in itertools.pairwise(bodies):
        marks_before, marks_now = _message_marks(before), _message_marks(now)
        end_before = marks_before[-1]  # E: the last breakpoint in the messages
        tools_before, tools_now = _unmarked(before.get("tools")), _unmarked(now.get("tools"))
        if tools_before == tools_now:
            prefix = _prefix_through(before, end_before)
            assert json.dumps(_unmarked(now)).startswith(prefix)
        else:
            # An app without tools: a first injected pair brings stand-in tools
            # (a miss, once); the messages still extend the ones before.
            assert now["tool_choice"] == {"type": "none"}
            assert tools_now[: len(tools_before or [])] == (tools_before or [])
            messages = {"messages": before["messages"]}
            prefix = _prefix_through(messages, end_before)
            assert json.dumps(_unmarked({"messages": now["messages"]})).startswith(prefix)
        assert len(marks_now) == 2, "E and, before the model's answer, P"
        previous_now = marks_now[0]  # P
        assert previous_now == end_before
        i, j = end_before
        assert now["messages"][i]["content"][j] == before["messages"][i]["content"][j]
