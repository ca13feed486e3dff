"""The live-event side channel of seamkit-temporal and its event codec.

The codec: every `seamkit.stream` event type round-trips through its JSON
envelope exactly (hypothesis); what is not an event is refused with a clear
error. The channel: an `Inbox` (the caller's ingest endpoint, a real HTTP
server on 127.0.0.1) and a `Publisher` (a worker's) deliver a run's events
in order, from the loop's thread, another thread, or another process;
forged tokens, another run's route, huge bodies and garbage are refused and
the inbox keeps serving; a publisher whose caller is gone neither raises nor
blocks the run.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC
from typing import Any

import httpx
import pytest
from hypothesis import given, settings, strategies as st
from pydantic import BaseModel
from seamkit import Approve, Edit, Message, ModelTurn, Output, Reject, RunResult
from seamkit.stream import (
    STREAMED,
    CallDecided,
    CallInDoubt,
    CallSuspended,
    HookFired,
    JournalReplayed,
    ModelCallEnded,
    ModelCallStarted,
    ObservedEvent,
    OutputDelta,
    OutputRetry,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolCallEmitted,
    ToolCompleted,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolOutputDelta,
    TurnFinished,
)
from seamkit.testing.strategies import (
    histories,
    json_values,
    messages,
    model_requests,
    tool_calls,
    tool_results,
)
from seamkit_temporal._channel import Inbox, Publisher, Route
from seamkit_temporal._codec import EVENT_TYPES, EventDecodeError, decode_event, encode_event

# --- the codec ---------------------------------------------------------------------------

_text = st.text(max_size=30)
_turns = st.integers(0, 50)
_durations = st.floats(0, 1e6, allow_nan=False, allow_infinity=False)
_names = st.none() | _text


def _usages() -> st.SearchStrategy[Any]:
    from seamkit import Usage

    n = st.integers(0, 10**9)
    return st.builds(Usage, input_tokens=n, output_tokens=n, requests=n)


def _model_turns() -> st.SearchStrategy[ModelTurn]:
    return st.builds(
        ModelTurn, message=messages(), usage=_usages(), finish_reason=st.none() | _text
    )


def _decisions() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.none(),
        st.builds(Approve, digest=_names, by=_names),
        st.builds(Reject, reason=_text, by=_names),
        st.builds(
            Edit,
            arguments=st.dictionaries(st.text(max_size=5), json_values, max_size=3),
            digest=_names,
            by=_names,
        ),
    )


def _pending() -> st.SearchStrategy[Any]:
    from seamkit import PendingCall

    return st.builds(
        PendingCall,
        call_id=_text,
        tool=_text,
        arguments=st.dictionaries(st.text(max_size=5), json_values, max_size=3),
        reason=_text,
        hook=_names,
        digest=st.from_regex(r"[0-9a-f]{24}", fullmatch=True),
        requested_at=st.datetimes(timezones=st.none() | st.just(UTC)),
        decision=_decisions(),
    )


def _outcomes() -> st.SearchStrategy[Any]:
    from seamkit import Cancelled, Completed, Deferred, Failed, MaxTurns, Suspended, Terminated

    return st.one_of(
        st.just(Completed()),
        st.builds(Terminated, reason=_text, hook=_names, event=_names),
        st.builds(Failed, error=_text),
        st.just(MaxTurns()),
        st.just(Cancelled()),
        st.builds(Suspended, pending=st.lists(_pending(), max_size=2).map(tuple)),
        st.builds(Deferred, calls=st.lists(tool_calls(), max_size=2).map(tuple)),
    )


def _run_results() -> st.SearchStrategy[RunResult]:
    from seamkit import Diagnostic

    diagnostics = st.builds(
        Diagnostic,
        code=_text,
        message=_text,
        event=_names,
        hooks=st.lists(_text, max_size=2).map(tuple),
        turn=st.none() | _turns,
    )
    return st.builds(
        RunResult,
        output=json_values,
        text=_names,
        transcript=histories(),
        usage=_usages(),
        diagnostics=st.lists(diagnostics, max_size=2).map(tuple),
        outcome=_outcomes(),
        suspended=_names,
    )


def _output_deltas() -> st.SearchStrategy[OutputDelta]:
    def make(value: Any, turn: int, lazy: bool) -> OutputDelta:
        return OutputDelta((lambda: value) if lazy else value, turn)

    return st.builds(make, json_values, _turns, st.booleans())


EVENTS: dict[type, st.SearchStrategy[Any]] = {
    TextDelta: st.builds(TextDelta, _text, _turns),
    ToolCallEmitted: st.builds(ToolCallEmitted, tool_calls(), _turns),
    TurnFinished: st.builds(TurnFinished, _model_turns(), _turns),
    HookFired: st.builds(
        HookFired, _text, st.lists(_text, max_size=3).map(tuple), _text, _names, _turns, _durations
    ),
    ToolExecutionStart: st.builds(ToolExecutionStart, tool_calls(), _turns),
    ToolOutputDelta: st.builds(ToolOutputDelta, _text, _text, _turns),
    ToolCompleted: st.builds(ToolCompleted, tool_calls(), tool_results(), _turns),
    OutputDelta: _output_deltas(),
    OutputRetry: st.builds(OutputRetry, st.lists(_text, max_size=3).map(tuple), _turns),
    RunFinished: st.builds(RunFinished, _run_results()),
    RunStarted: st.builds(
        RunStarted, _text, _text, _names, st.booleans(), _text, _names, st.none() | _text
    ),
    ModelCallStarted: st.builds(ModelCallStarted, model_requests(), _turns),
    ModelCallEnded: st.builds(
        ModelCallEnded, _turns, st.none() | _model_turns(), _names, _durations
    ),
    ToolExecutionEnd: st.builds(
        ToolExecutionEnd, tool_calls(), st.none() | tool_results(), _turns, _durations
    ),
    CallSuspended: st.builds(CallSuspended, _pending(), _turns),
    CallDecided: st.builds(CallDecided, _pending(), _turns),
    CallInDoubt: st.builds(CallInDoubt, tool_calls(), _turns),
    JournalReplayed: st.builds(JournalReplayed, st.integers(0, 99), st.integers(0, 99)),
}


def test_the_codec_knows_every_event_a_stream_yields_or_an_observer_receives() -> None:
    observed = set(ObservedEvent.__args__)  # type: ignore[attr-defined]
    assert set(EVENT_TYPES) == observed == set(EVENTS)
    assert observed >= STREAMED


@pytest.mark.parametrize("cls", EVENT_TYPES, ids=lambda c: c.__name__)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_every_event_round_trips_exactly(cls: type, data: st.DataObject) -> None:
    event = data.draw(EVENTS[cls])
    encoded = encode_event(event)
    decoded = decode_event(encoded)
    assert type(decoded) is cls
    assert decoded == event
    assert json.loads(encoded)["type"] == cls.__name__
    assert encode_event(decoded) == encoded  # and its JSON is stable


class Answer(BaseModel):
    city: str
    days: int


def test_a_declared_output_comes_back_as_its_type_when_the_decoder_is_told_it() -> None:
    event = RunFinished(RunResult(output=Answer(city="Oslo", days=3), text="..."))
    encoded = encode_event(event)
    assert decode_event(encoded).result.output == {"city": "Oslo", "days": 3}  # type: ignore[union-attr]
    assert decode_event(encoded, output=Output(Answer)) == event
    with pytest.raises(EventDecodeError, match="does not fit"):
        bad = encode_event(RunFinished(RunResult(output={"city": 1})))
        decode_event(bad, output=Output(Answer))


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b'{"type":"Shout","event":{}}', "unknown event type 'Shout'; known: TextDelta"),
        (b"garbage", "not valid JSON"),
        (b"[1, 2]", "not an event envelope"),
        (b'{"event": {"text": "x", "turn": 1}}', "not an event envelope"),
        (b'{"type":"TextDelta","event":{"text":1,"turn":1}}', "TextDelta.event.text"),
        (b'{"type":"TextDelta","event":{"text":"x","turn":1,"more":1}}', "not a valid event"),
    ],
)
def test_what_is_not_an_event_is_refused_with_a_clear_error(data: bytes, says: str) -> None:
    with pytest.raises(EventDecodeError, match=re.escape(says)):
        decode_event(data)


def test_encoding_anything_else_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"not a seamkit\.stream event"):
        encode_event(Message.user("hi"))  # type: ignore[arg-type]


# --- the channel -------------------------------------------------------------------------


def _run(main: Callable[[], Any]) -> Any:
    return asyncio.run(asyncio.wait_for(main(), 30))


def _story(n: int) -> list[ObservedEvent]:
    """A run's events: text deltas, a tool's output deltas, the result."""
    out: list[ObservedEvent] = [TextDelta(f"piece {i} ", 1) for i in range(n)]
    out += [ToolOutputDelta("call_1", f"line {i}\n", 1) for i in range(n)]
    out.append(RunFinished(RunResult(text="done", transcript=(Message.user("go"),))))
    return out


def test_a_run_s_events_arrive_in_order_from_the_loop_thread() -> None:
    async def main() -> None:
        story = _story(100)
        async with Inbox() as inbox, Publisher() as publisher:
            route = inbox.route("seamkit/app/session-1")
            for event in story:
                publisher.publish(route, event)
            assert [e async for e in inbox.events(route)] == story
            await publisher.flush()
            assert publisher.sent == len(story) and publisher.dropped == 0
            assert inbox.refused == 0

    _run(main)


def test_events_published_from_other_threads_arrive_in_each_thread_s_order() -> None:
    async def main() -> None:
        async with Inbox() as inbox, Publisher() as publisher:
            route = inbox.route("seamkit/app/-/threads")

            def workflow_thread(name: str) -> None:
                for i in range(200):
                    publisher.publish(route, ToolOutputDelta(name, str(i), 1))

            threads = [threading.Thread(target=workflow_thread, args=(n,)) for n in "ab"]
            for t in threads:
                t.start()
            seen: dict[str, list[int]] = {"a": [], "b": []}
            async for event in inbox.events(route):
                assert isinstance(event, ToolOutputDelta)
                seen[event.call_id].append(int(event.text))
                if sum(map(len, seen.values())) == 400:
                    break
            for t in threads:
                t.join()
            assert seen == {"a": list(range(200)), "b": list(range(200))}

    _run(main)


PUBLISHER_PROCESS = """
import asyncio, sys
from seamkit import RunResult
from seamkit.stream import RunFinished, TextDelta
from seamkit_temporal._channel import Publisher, Route

async def main():
    route = Route.model_validate_json(sys.argv[1])
    async with Publisher() as publisher:
        for i in range(50):
            publisher.publish(route, TextDelta(str(i), 1), source="activity-7#1", seq=i + 1)
        publisher.publish(route, RunFinished(RunResult(text="bye")), source="workflow", seq=1)
    print(publisher.sent, publisher.dropped)

asyncio.run(main())
"""


def test_a_publisher_in_another_process_delivers_through_the_route_it_was_given() -> None:
    async def main() -> None:
        async with Inbox() as inbox:
            route = inbox.route("seamkit/app/other-process")
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                PUBLISHER_PROCESS,
                route.model_dump_json(),
                stdout=subprocess.PIPE,
            )
            got = [e async for e in inbox.events(route)]
            out, _ = await proc.communicate()
            assert proc.returncode == 0
            assert out.split() == [b"51", b"0"]
            assert got == [TextDelta(str(i), 1) for i in range(50)] + [
                RunFinished(RunResult(text="bye"))
            ]

    _run(main)


def _batch(*events: ObservedEvent, source: str = "s", first: int = 1) -> bytes:
    items = [
        {"source": source, "seq": first + i, "event": json.loads(encode_event(e))}
        for i, e in enumerate(events)
    ]
    return json.dumps({"events": items}).encode()


def _auth(route: Route) -> dict[str, str]:
    return {"authorization": f"Bearer {route.token}"}


def test_forged_tokens_other_runs_routes_huge_bodies_and_garbage_are_refused(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="seamkit_temporal")

    async def main() -> None:
        async with (
            Inbox(max_body=10_000) as inbox,
            httpx.AsyncClient(trust_env=False) as client,
            Publisher() as publisher,
        ):
            mine = inbox.route("seamkit/app/mine")
            theirs = inbox.route("seamkit/app/theirs")
            body = _batch(TextDelta("forged", 1))
            forged = "0" * 64
            refusals = [
                (mine.url, {"authorization": f"Bearer {forged}"}, body, 403),
                (mine.url, {}, body, 401),
                (mine.url, {"authorization": mine.token}, body, 401),  # not a bearer
                (theirs.url, _auth(mine), body, 403),  # my token, another run's route
                (inbox.base_url + "/seamkit/runs/nobody", _auth(mine), body, 404),
                (inbox.base_url + "/elsewhere", _auth(mine), body, 404),
                (mine.url, _auth(mine), b"x" * 20_000, 413),
                (mine.url, _auth(mine), b"{not json", 400),
                (mine.url, _auth(mine), b'{"events": [{"seq": 1}]}', 400),
                (mine.url, _auth(mine), b'{"events": [], "extra": 1}', 400),
                (mine.url, _auth(mine), _batch(TextDelta("x", 1), first=0), 400),
                (
                    mine.url,
                    _auth(mine),
                    b'{"events":[{"source":"s","seq":1,"event":{"type":"Shout","event":{}}}]}',
                    400,
                ),
            ]
            for url, headers, content, status in refusals:
                response = await client.post(url, headers=headers, content=content)
                assert response.status_code == status, (url, headers, content[:40])
                assert mine.token not in response.text
            # a body streamed without a length, over the limit
            response = await client.post(
                mine.url, headers=_auth(mine), content=_chunks(b"y" * 4000, 5)
            )
            assert response.status_code == 413
            # a GET, and bytes that are not HTTP at all
            assert (await client.get(mine.url, headers=_auth(mine))).status_code == 405
            garbage = b"\x16\x03\x01 hello?\r\n\r\n"
            assert (await asyncio.to_thread(_raw, inbox.port, garbage)).startswith(b"HTTP/1.1 400")
            assert inbox.refused == len(refusals) + 3
            # the inbox still serves its runs
            publisher.publish(mine, TextDelta("real", 1))
            publisher.publish(mine, RunFinished(RunResult(text="ok")))
            assert [e async for e in inbox.events(mine)] == [
                TextDelta("real", 1),
                RunFinished(RunResult(text="ok")),
            ]
            assert mine.token not in caplog.text and forged not in caplog.text

    _run(main)


async def _chunks(data: bytes, times: int) -> Any:
    for _ in range(times):
        yield data


def _raw(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(data)
        out = b""
        while chunk := sock.recv(4096):
            out += chunk
        return out


def test_a_batch_sent_twice_and_numbers_seen_before_are_shown_once() -> None:
    async def main() -> None:
        async with Inbox() as inbox, httpx.AsyncClient(trust_env=False) as client:
            route = inbox.route("seamkit/app/retry")
            first = _batch(TextDelta("a", 1), TextDelta("b", 1), source="workflow")
            again = _batch(
                TextDelta("a", 1), TextDelta("b", 1), TextDelta("c", 1), source="workflow"
            )  # a retried workflow task emits the same numbers, and one more
            other = _batch(TextDelta("z", 1), source="activity-3#2")
            done = _batch(RunFinished(RunResult(text="x")), source="workflow", first=4)
            for body in (first, first, again, other, done):
                response = await client.post(route.url, headers=_auth(route), content=body)
                assert response.status_code == 204
            texts = [getattr(e, "text", None) async for e in inbox.events(route)]
            assert texts == ["a", "b", "c", "z", None]
            assert inbox.duplicates == 4

    _run(main)


def test_a_route_hides_its_token_and_travels_as_json() -> None:
    async def main() -> None:
        async with Inbox() as inbox:
            route = inbox.route("seamkit/app/s")
            assert len(route.token) == 64 and int(route.token, 16) >= 0
            assert route.token not in repr(route) and route.token not in str(route)
            assert Route.model_validate_json(route.model_dump_json()) == route
            assert route.url.startswith(f"http://127.0.0.1:{inbox.port}/")
            assert inbox.route("seamkit/app/t").token != route.token
            with pytest.raises(ValueError, match="open route already"):
                inbox.route("seamkit/app/s")
            inbox.discard(route)
            assert inbox.route("seamkit/app/s") != route  # the session's next run

    _run(main)


def _dead_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/seamkit/runs/gone"


def test_a_publisher_whose_caller_is_gone_neither_raises_nor_blocks(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="seamkit_temporal")

    async def main() -> None:
        route = Route(url=_dead_url(), token="a" * 64, workflow_id="gone")
        async with Publisher(max_queued=1000) as publisher:
            slow = 0
            for i in range(500):
                started = time.perf_counter()
                publisher.publish(route, TextDelta(str(i), 1))
                slow += time.perf_counter() - started >= 0.01
                if i % 50 == 0:
                    await asyncio.sleep(0.001)
            # each returns at once (microseconds): the same 10 ms limit as
            # ever, but 5 of 500 may meet a busy machine's scheduler pause
            assert slow <= 5
            await publisher.flush(5)
            assert publisher.dropped == 500 and publisher.sent == 0
            # beyond the queue's bound, publishing drops at once
            for i in range(3000):
                publisher.publish(route, TextDelta(str(i), 1))
            assert publisher.dropped >= 500 + 2000
        publisher.publish(route, TextDelta("after close", 1))  # closed: dropped, no error
        assert publisher.dropped == 3501
        assert "gone" in caplog.text and "a" * 64 not in caplog.text

    _run(main)


def test_a_publisher_s_events_for_a_live_caller_pass_while_another_caller_is_dead() -> None:
    async def main() -> None:
        dead = Route(url=_dead_url(), token="b" * 64, workflow_id="gone")
        async with Inbox() as inbox, Publisher() as publisher:
            live = inbox.route("seamkit/app/live")
            for i in range(20):
                publisher.publish(dead, TextDelta(str(i), 1))
                publisher.publish(live, TextDelta(str(i), 1))
            publisher.publish(live, RunFinished(RunResult(text="ok")))
            got = [e async for e in inbox.events(live)]
            assert len(got) == 21
            await publisher.flush()
            assert publisher.dropped == 20

    _run(main)


def test_publishing_from_a_thread_after_the_loop_closed_does_not_raise() -> None:
    holder: dict[str, Publisher] = {}

    async def main() -> None:
        publisher = Publisher()
        await publisher.__aenter__()
        holder["p"] = publisher  # never closed: its loop ends under it

    asyncio.run(main())
    publisher = holder["p"]
    route = Route(url=_dead_url(), token="c" * 64, workflow_id="x")
    thread = threading.Thread(target=publisher.publish, args=(route, TextDelta("x", 1)))
    thread.start()
    thread.join()
    assert publisher.dropped == 1
