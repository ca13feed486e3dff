"""The ids of handed-out calls, as laws: an id checks for exactly the call,
API key and conversation it was made for, fits OpenAI's 40 characters, and
reading any text as an id never raises."""

from __future__ import annotations

from typing import Any

import seamkit
from hypothesis import given, settings, strategies as st
from seamkit_serve._handed import CallIds, made_session

IDS = CallIds(b"k" * 32)
names = st.from_regex(r"[A-Za-z0-9_-]{1,64}", fullmatch=True)
arguments = st.dictionaries(
    st.text(max_size=8), st.one_of(st.integers(), st.text(max_size=8), st.booleans()), max_size=4
)
sessions = st.one_of(
    st.from_regex(r"[A-Za-z0-9._:@-]{1,40}", fullmatch=True),
    st.binary(min_size=12, max_size=12).map(made_session),
)
callers = st.from_regex(r"key-[0-9a-f]{16}", fullmatch=True)


def call(name: str, args: dict[str, Any], index: int) -> seamkit.ToolCall:
    return seamkit.ToolCall(id="model-id", name=name, arguments=args, index=index)


@settings(max_examples=200, deadline=None)
@given(names, arguments, st.integers(0, 70_000), callers, sessions, st.integers(0, 2**32 - 1))
def test_an_id_checks_for_its_own_call_and_fits_openais_limit(
    name: str, args: dict[str, Any], index: int, caller: str, session: str, expires: int
) -> None:
    made = call(name, args, index)
    issued = IDS.issue(made, caller=caller, session=session, expires=expires)
    assert len(issued) <= 40 and issued.startswith("call_")
    assert IDS.matches(issued, made, caller=caller, session=session)
    decoded = IDS.decode(issued)
    assert decoded is not None and decoded.expires == expires


@settings(max_examples=200, deadline=None)
@given(names, arguments, callers, sessions, st.data())
def test_an_id_checks_for_no_other_call_key_or_conversation(
    name: str, args: dict[str, Any], caller: str, session: str, data: st.DataObject
) -> None:
    made = call(name, args, 0)
    issued = IDS.issue(made, caller=caller, session=session, expires=2_000_000_000)
    other_name = data.draw(names.filter(lambda n: n != name))
    other_args = data.draw(arguments.filter(lambda a: a != args))
    other_caller = data.draw(callers.filter(lambda c: c != caller))
    other_session = data.draw(sessions.filter(lambda s: s != session))
    assert not IDS.matches(issued, call(other_name, args, 0), caller=caller, session=session)
    assert not IDS.matches(issued, call(name, other_args, 0), caller=caller, session=session)
    assert not IDS.matches(issued, call(name, args, 1), caller=caller, session=session)
    assert not IDS.matches(issued, made, caller=other_caller, session=session)
    assert not IDS.matches(issued, made, caller=caller, session=other_session)
    assert not CallIds(b"x" * 32).matches(issued, made, caller=caller, session=session)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), st.text().map(lambda t: "call_" + t)))
def test_reading_any_text_as_an_id_never_raises(text: str) -> None:
    decoded = CallIds.decode(text)
    assert decoded is None or len(decoded.nonce) == 12
