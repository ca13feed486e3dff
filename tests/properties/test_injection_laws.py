"""The laws of synthetic tool-call injection, proved with hypothesis.

The subject is ``seamkit.injection.inject_tool_result`` and its helpers
(``synthetic_id``, ``parse_synthetic_id``, ``freshest_expiry``). A *pair* is
an assistant message with exactly one tool call immediately followed by the
tool message answering that call's id; it is *synthetic* when the id follows
the grammar ``synth_{h6(name)}{h6(args)}{h6(content)}[_{expiry:08x}]``. The
laws use the implementation's split of the 18 hex digits: the first 12 are
name and arguments (the *identity*), all 18 name, arguments and content (the
*key*). Every hash a law expects is computed here with ``hashlib``, and which
pairs are well formed is decided here too, independently of the library's
own scan.

The histories are conversations shaped like the kit's ``histories()``
(assembled from prebuilt turns: the kit's own strategy costs ~7 ms an
example, too much for 1,000 examples of five laws), loose messages of every
role, or the kit's ``messages()``. Into them go up to two *malformed
near-pairs* (a tool message with a synthetic id of the pools whose preceding
message does not carry exactly that one call: after a user message, after an
assistant message with two calls, after one with another id of the same or of
another key; or an assistant message carrying the id whose next message is
not its answer), then up to three pairs of earlier injections. An injection
draws its name, arguments and content from small pools, so identities and
keys repeat (the pools include two key orders of one argument dict and two
secrets that both show as ``***``); its frequency from all three; its expiry
from ``None``, a few fixed instants or any integer an id can hold. The
generated histories hold at most 29 messages; a sequence is 1 to 6
injections.

Run with `HYPOTHESIS_PROFILE=deep` for 100,000 examples a law; CI runs 1,000.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import pytest
import seamkit
from hypothesis import given, strategies as st
from seamkit import Message, MessageToolCall, Secret
from seamkit.injection import SyntheticId
from seamkit.testing.strategies import json_values, messages

# --- hashing, as the grammar says ----------------------------------------------------


def h6(text: str) -> str:
    """The first 6 hex digits of SHA-256 of ``text`` (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:6]


def _manifest_text(value: Any) -> Any:
    if isinstance(value, Secret):
        return value.source or "***"
    raise TypeError(type(value).__name__)


def args_text(arguments: Mapping[str, Any]) -> str:
    """The arguments as the identity hashes them: sorted JSON, secrets as their source."""
    return json.dumps(arguments, sort_keys=True, default=_manifest_text)


def identity(name: str, arguments: Mapping[str, Any]) -> str:
    return h6(name) + h6(args_text(arguments))


def key(name: str, arguments: Mapping[str, Any], content: str) -> str:
    return identity(name, arguments) + h6(content)


def shown(arguments: Mapping[str, Any]) -> Any:
    """What the assistant message shows: the arguments with every secret as ``***``."""
    return {k: "***" if isinstance(v, Secret) else v for k, v in arguments.items()}


# --- the pools -------------------------------------------------------------------------

NAMES = ("memory_server_get_memories", "weather", "search")
# Two spellings of one identity differ only in key order; two secrets differ
# only in their source (their messages both show "***").
ARGUMENTS: tuple[dict[str, Any], ...] = (
    {},
    {"user": "ann"},
    {"user": "bob"},
    {"a": 1, "user": "ann"},
    {"user": "ann", "a": 1},
    {"token": Secret("tok-1", source="${secret:T1}")},
    {"token": Secret("tok-2", source="${secret:T2}")},
)
CONTENTS = ("", "A", "B", '["likes tea"]', "ünï\ncödé")
FREQUENCIES: tuple[seamkit.injection.Frequency, ...] = ("always", "append_if_changed", "once")
MAX_EXPIRY = 16**15 - 1  # the largest expiry whose id keeps within 40 characters
SECRET_VALUES = ("tok-1", "tok-2")

# The pools must not collide in 6 hex digits, or "same key" would not mean
# "same name, arguments and content".
assert len({h6(n) for n in NAMES}) == len(NAMES)
assert len({h6(c) for c in CONTENTS}) == len(CONTENTS)
_IDENTITY_TEXTS = {args_text(a) for a in ARGUMENTS}
assert len({h6(t) for t in _IDENTITY_TEXTS}) == len(_IDENTITY_TEXTS)

# key (18 hex) -> (name, sorted arguments text, content), for every pool triple
TRIPLES = {key(n, a, c): (n, args_text(a), c) for n in NAMES for a in ARGUMENTS for c in CONTENTS}

expiries = st.one_of(
    st.none(),
    st.sampled_from([0, 1_700_000_000, 1_800_000_000, 1_900_000_000]),
    st.integers(0, MAX_EXPIRY),
)


@dataclass(frozen=True)
class Injection:
    name: str
    arguments: dict[str, Any]
    content: str
    frequency: seamkit.injection.Frequency
    expiry: int | None

    def apply(
        self, history: Sequence[Message], placement: seamkit.injection.Placement = "history"
    ) -> list[Message]:
        return seamkit.injection.inject_tool_result(
            history,
            name=self.name,
            arguments=self.arguments,
            content=self.content,
            frequency=self.frequency,
            expiry=self.expiry,
            placement=placement,
        )

    @property
    def identity(self) -> str:
        return identity(self.name, self.arguments)

    @property
    def key(self) -> str:
        return key(self.name, self.arguments, self.content)


COMBINATIONS: tuple[tuple[str, dict[str, Any], str], ...] = tuple(
    (n, a, c) for n in NAMES for a in ARGUMENTS for c in CONTENTS
)


def _injection(
    combination: tuple[str, dict[str, Any], str],
    frequency: seamkit.injection.Frequency,
    expiry: int | None,
) -> Injection:
    name, arguments, content = combination
    return Injection(name, arguments, content, frequency, expiry)


def injections(
    frequencies: Sequence[seamkit.injection.Frequency] = FREQUENCIES,
) -> st.SearchStrategy[Any]:
    """One injection of the pools (one draw for name, arguments and content)."""
    return st.builds(
        _injection,
        st.sampled_from(COMBINATIONS),
        st.sampled_from(frequencies),
        expiries,
    )


# --- which pairs are well formed (decided here, not by the library) -------------------

GRAMMAR = re.compile(r"synth_([0-9a-f]{6})([0-9a-f]{6})([0-9a-f]{6})(?:_(.*))?", re.DOTALL)
"""DESIGN.md: an id whose part after ``_`` is not an expiry is still an id,
without an expiry (``_r{n}`` marks a repeat of an older result)."""


def synthetic_pairs(history: Sequence[Message]) -> list[int]:
    """Indices of the assistant message of every well-formed synthetic pair."""
    out = []
    for i in range(len(history) - 1):
        first, second = history[i], history[i + 1]
        calls = first.tool_calls
        if first.role != "assistant" or calls is None or len(calls) != 1:
            continue
        call_id = calls[0].id
        if (
            second.role == "tool"
            and second.tool_call_id == call_id
            and GRAMMAR.fullmatch(call_id) is not None
        ):
            out.append(i)
    return out


def pair_id(history: Sequence[Message], index: int) -> str:
    calls = history[index].tool_calls
    assert calls is not None
    return calls[0].id


def id_expiry(call_id: str) -> int | None:
    match = GRAMMAR.fullmatch(call_id)
    assert match is not None
    raw = match.group(4)
    return int(raw, 16) if raw is not None and re.fullmatch(r"[0-9a-f]{8,}", raw) else None


def same_objects(a: Sequence[Any], b: Sequence[Any]) -> bool:
    """The same objects in the same order (identity, not equality)."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


# --- the histories -------------------------------------------------------------------


# Hypothesis costs ~0.1 ms a draw, and every law runs 1,000 examples in CI, so
# the histories are assembled from prebuilt pieces with few draws: what the
# laws depend on is the shape (roles, where the user messages and the pairs
# are), never the texts.

TEXTS = ("", "hi", "what do you remember about me?", "ok", "ünï\ncödé")


def _turn(number: int, text: str, tools: Sequence[str]) -> tuple[Message, ...]:
    """One user turn as the kit's ``histories()`` makes it: the user's message,
    maybe an assistant message with tool calls and their results, then text."""
    out = [Message.user(text)]
    if tools:
        wire = [
            MessageToolCall.make(f"call_{number}_{i}", name, {"i": i})
            for i, name in enumerate(tools)
        ]
        out.append(Message.assistant("", wire))
        out.extend(Message.tool(w.id, f"result {w.id}") for w in wire)
    out.append(Message.assistant(text and f"answer to {text}"))
    return tuple(out)


TURNS = tuple(
    _turn(number, text, NAMES[:count])
    for number in range(3)
    for text in TEXTS
    for count in range(4)
)
LOOSE = (
    Message.system("You are helpful."),
    *(Message.user(t) for t in TEXTS),
    *(Message.assistant(t) for t in TEXTS),
    Message.assistant("", [MessageToolCall.make("call_x", "weather", "{}")]),
    Message.tool("call_x", "sunny"),
    Message.tool("call_y", "stray"),
)


@st.composite
def conversations(draw: st.DrawFn) -> list[Message]:
    """Well-formed conversations shaped like the kit's ``histories(max_turns=3)``
    (a system message maybe, then user turns answered by text or by tool calls
    whose results follow; at most 19 messages), drawn turn by turn from
    prebuilt turns."""
    out: list[Message] = [LOOSE[0]] if draw(st.booleans()) else []
    for turn in draw(st.lists(st.sampled_from(TURNS), max_size=3)):
        out.extend(turn)
    return out


# Synthetic ids of the pools, so near-pairs share identities and keys with the
# injections; their expiries go up to the largest an id can hold.
NEAR_EXPIRIES = (None, 0, 1_800_000_000, MAX_EXPIRY)
ID_POOL = tuple(
    seamkit.injection.synthetic_id(n, a, c, expiry=e)
    for n in NAMES
    for a in ARGUMENTS
    for c in CONTENTS
    for e in NEAR_EXPIRIES
)


def _near_pairs(index: int) -> list[tuple[Message, Message]]:
    """The near-pairs of ``ID_POOL[index]``: two messages holding a synthetic id
    that never form a pair, wherever they are inserted (the first never answers
    a call, the second never makes one)."""
    carried = ID_POOL[index]
    same_key = ID_POOL[index ^ 1]  # the same name, arguments and content, another expiry
    other_key = ID_POOL[(index + len(NEAR_EXPIRIES)) % len(ID_POOL)]
    name = NAMES[index % len(NAMES)]

    def call(call_id: str) -> MessageToolCall:
        return MessageToolCall.make(call_id, name, "{}")

    answer = Message.tool(carried, CONTENTS[index % len(CONTENTS)])
    return [
        (Message.user("hello"), answer),
        (Message.assistant("", [call(carried), call("call_other")]), answer),
        (Message.assistant("", [call("call_other"), call(carried)]), answer),
        (Message.assistant("", [call(same_key)]), answer),
        (Message.assistant("", [call(other_key)]), answer),
        (Message.assistant("", [call(carried)]), Message.user("never answered")),
    ]


NEAR_PAIRS = tuple(block for i in range(len(ID_POOL)) for block in _near_pairs(i))
NEAR_PAIRS_BY_IDENTITY: dict[str, list[tuple[Message, Message]]] = {}
for _index, _carried in enumerate(ID_POOL):
    NEAR_PAIRS_BY_IDENTITY.setdefault(_carried[6:18], []).extend(_near_pairs(_index))


_BASES = st.one_of(
    conversations(),
    st.lists(st.sampled_from(LOOSE), max_size=8),
    st.lists(messages(), max_size=4),
)
_NEAR_PAIR_LISTS = st.lists(st.sampled_from(NEAR_PAIRS), max_size=2)


@functools.cache
def _earlier(
    frequencies: tuple[seamkit.injection.Frequency, ...],
) -> st.SearchStrategy[list[Injection]]:
    # Built once: a strategy built inside a composite is built (and validated)
    # again on every draw, which doubles the cost of an example.
    return st.lists(injections(frequencies), max_size=3)


@st.composite
def injected_histories(
    draw: st.DrawFn, frequencies: Sequence[seamkit.injection.Frequency] = FREQUENCIES
) -> tuple[Message, ...]:
    """A conversation, or a list of arbitrary messages (the kit's ``messages()``
    or loose ones), then up to two malformed near-pairs inserted anywhere, then
    up to three earlier injections of ``frequencies``: at most 19 + 4 + 6 = 29
    messages."""
    history = list(draw(_BASES))
    for block in draw(_NEAR_PAIR_LISTS):
        at = draw(st.integers(0, len(history)))
        history[at:at] = block
    for earlier in draw(_earlier(tuple(frequencies))):
        history = earlier.apply(history)
    return tuple(history)


def run_sequence(history: Sequence[Message], sequence: Sequence[Injection]) -> list[Any]:
    """``(before, injection, after)`` for each injection applied in turn."""
    steps = []
    current = tuple(history)
    for injection in sequence:
        before = list(current)
        after = injection.apply(current)
        assert list(current) == before and same_objects(current, before)  # input untouched
        steps.append((current, injection, after))
        current = tuple(after)
    return steps


def fresh_positions(before: Sequence[Message], after: Sequence[Message]) -> list[int]:
    """Positions in ``after`` of messages that are not objects of ``before``."""
    old = {id(m) for m in before}
    return [i for i, m in enumerate(after) if id(m) not in old]


sequences = st.lists(injections(), min_size=1, max_size=6)


# --- the id ----------------------------------------------------------------------------

names = st.text(max_size=20)
argument_dicts = st.dictionaries(st.text(max_size=8), json_values, max_size=4)
contents = st.text(max_size=40)


@given(
    names,
    argument_dicts,
    contents,
    st.one_of(
        expiries,
        st.datetimes(min_value=datetime(1970, 1, 2), timezones=st.just(UTC)),
    ),
)
def test_parse_gives_back_the_hashes_and_the_expiry(
    name: str, arguments: dict[str, Any], content: str, expiry: int | datetime | None
) -> None:
    """``parse_synthetic_id(synthetic_id(name, args, content, expiry=e))`` is
    ``SyntheticId(h6(name), h6(json.dumps(args, sort_keys=True)), h6(content), e)``
    (``e`` in Unix seconds, a datetime truncated to the second); its identity
    is the first 12 hex digits, its key all 18, and the arguments' key order
    does not change the id."""
    made = seamkit.injection.synthetic_id(name, arguments, content, expiry=expiry)
    seconds = int(expiry.timestamp()) if isinstance(expiry, datetime) else expiry
    parsed = seamkit.injection.parse_synthetic_id(made)
    sorted_args = json.dumps(arguments, sort_keys=True)
    assert parsed == SyntheticId(h6(name), h6(sorted_args), h6(content), seconds)
    assert parsed.identity == made[6:18] == h6(name) + h6(sorted_args)
    assert parsed.key == made[6:24]
    reversed_args = dict(reversed(list(arguments.items())))
    assert seamkit.injection.synthetic_id(name, reversed_args, content, expiry=expiry) == made


@given(
    names,
    argument_dicts,
    contents,
    st.one_of(
        st.integers(-(2**64), 2**64),
        st.integers(MAX_EXPIRY - 2, MAX_EXPIRY + 2),
        st.integers(-2, 2),
    ),
)
def test_an_id_is_at_most_40_characters_or_refused(
    name: str, arguments: dict[str, Any], content: str, expiry: int
) -> None:
    """Every id is at most 40 characters and fully matches the grammar; an
    expiry before 1970 or too large for 40 characters (16**15 and more) is a
    ValueError, never a longer id."""
    if 0 <= expiry <= MAX_EXPIRY:
        made = seamkit.injection.synthetic_id(name, arguments, content, expiry=expiry)
        assert len(made) <= 40 and GRAMMAR.fullmatch(made) is not None
        assert id_expiry(made) == expiry
    else:
        with pytest.raises(ValueError):
            seamkit.injection.synthetic_id(name, arguments, content, expiry=expiry)


# --- injection -----------------------------------------------------------------------


@given(injected_histories(), sequences)
def test_every_injected_pair_is_well_formed(
    history: tuple[Message, ...], sequence: list[Injection]
) -> None:
    """After each injection that adds a pair, the pair is well formed: an
    assistant message with empty content and exactly one tool call (the tool's
    name, the arguments with secrets as ``***``), immediately followed by the
    tool message whose tool_call_id is the call's id and whose content is the
    result; the id has at most 40 characters and parses to the injection's
    name and arguments hashes and expiry (and content hash, but for
    ``always``), or, when another pair has that id already, to the same hashes
    with the suffix ``_r{n}`` and no expiry. No secret value is ever in the
    messages."""
    for before, injection, after in run_sequence(history, sequence):
        fresh = fresh_positions(before, after)
        if not fresh:
            continue  # `once` with the identity present (law of frequencies)
        assert len(fresh) == 2 and fresh[1] == fresh[0] + 1
        call_message, tool_message = after[fresh[0]], after[fresh[1]]
        assert call_message.role == "assistant" and call_message.content == ""
        assert call_message.tool_calls is not None and len(call_message.tool_calls) == 1
        (call,) = call_message.tool_calls
        assert call.function.name == injection.name
        assert json.loads(call.function.arguments) == shown(injection.arguments)
        assert tool_message.role == "tool" and tool_message.tool_call_id == call.id
        assert tool_message.content == injection.content
        assert len(call.id) <= 40 and fresh[0] in synthetic_pairs(after)
        parsed = seamkit.injection.parse_synthetic_id(call.id)
        assert parsed is not None and parsed.identity == injection.identity
        if injection.frequency == "always":
            assert parsed.expiry == injection.expiry
        else:
            assert parsed.key == injection.key
            made = seamkit.injection.synthetic_id(
                injection.name, injection.arguments, injection.content, expiry=injection.expiry
            )
            if call.id == made:
                assert parsed.expiry == injection.expiry
            else:  # another pair has that id: a repeat of an older result
                others = {pair_id(after, i) for i in synthetic_pairs(after) if i != fresh[0]}
                assert made in others and parsed.expiry is None
                assert re.fullmatch(f"synth_{injection.key}_r[0-9]+", call.id)
        dumped = call_message.model_dump_json() + tool_message.model_dump_json()
        assert not any(secret in dumped for secret in SECRET_VALUES)


@given(injected_histories(), sequences)
def test_messages_outside_the_pair_are_untouched(
    history: tuple[Message, ...], sequence: list[Injection]
) -> None:
    """An injection makes exactly two new message objects, adjacent, or none;
    the other messages are the input's own objects in the input's order: when
    the output is two longer, removing the two new messages gives the input;
    when it is as long, the input with the two replaced messages removed (at
    the same positions) equals the output with the two new ones removed; when
    nothing is new, the output is the input."""
    for before, _injection, after in run_sequence(history, sequence):
        fresh = fresh_positions(before, after)
        if not fresh:
            assert same_objects(after, before)
            continue
        assert len(fresh) == 2 and fresh[1] == fresh[0] + 1
        at = fresh[0]
        rest = [*after[:at], *after[at + 2 :]]
        if len(after) == len(before) + 2:
            assert same_objects(rest, before)
        else:
            assert len(after) == len(before)
            assert same_objects(rest, [*before[:at], *before[at + 2 :]])


@given(injected_histories(), sequences)
def test_frequencies_place_the_pair_as_documented(
    history: tuple[Message, ...], sequence: list[Injection]
) -> None:
    """The placement of the docstring of ``inject_tool_result``:

    - ``always``: the new pair is appended at the end;
    - ``append_if_changed``: when the *latest* well-formed pair with the same
      name and arguments has the same content, it is replaced by the new pair
      at the same two positions; else, when a pair with the same name and
      arguments exists, the new pair is appended at the end; else it is
      inserted right after the first user message (appended when there is no
      user message);
    - ``once``: the output is the input (same objects) when a well-formed pair
      with the same name and arguments exists; else the pair is placed as
      ``append_if_changed`` places a pair of a new identity (after the first
      user message; the docstring does not say where).

    Malformed near-pairs never count as an existing pair.
    """
    for before, injection, after in run_sequence(history, sequence):
        pairs = synthetic_pairs(before)
        same_identity = [i for i in pairs if pair_id(before, i)[6:18] == injection.identity]
        same_key = [i for i in same_identity if pair_id(before, i)[6:24] == injection.key]
        first_user = next((i for i, m in enumerate(before) if m.role == "user"), None)
        after_first_user = len(before) if first_user is None else first_user + 1
        end = len(before)
        if injection.frequency == "always":
            replaced, at = None, end
        elif injection.frequency == "once":
            if same_identity:
                assert same_objects(after, before)
                continue
            replaced, at = None, after_first_user
        elif same_identity and same_identity[-1] in same_key:
            replaced, at = same_identity[-1], None
        elif same_identity:
            replaced, at = None, end
        else:
            replaced, at = None, after_first_user

        fresh = fresh_positions(before, after)
        assert len(fresh) == 2
        if at is None:
            assert fresh[0] == replaced and len(after) == len(before)
        else:
            assert fresh[0] == at and len(after) == len(before) + 2
        if replaced is not None:
            assert same_objects(after[:replaced], before[:replaced])
            assert same_objects(after[replaced + 2 :], before[replaced + 2 :])


@given(
    injected_histories(frequencies=("append_if_changed", "once")),
    st.sampled_from(NAMES),
    st.sampled_from(ARGUMENTS),
    st.lists(st.sampled_from(CONTENTS), min_size=1, max_size=12),
)
def test_the_latest_pair_of_an_identity_carries_the_latest_content(
    history: tuple[Message, ...], name: str, arguments: dict[str, Any], contents: list[str]
) -> None:
    """Injecting a sequence of contents (A, B, A, ...) with ``append_if_changed``
    for one name and arguments: after every injection the last well-formed
    pair of that identity carries the content just injected (so the model never
    sees a stale result after the current one), and no two pairs share an id."""
    current: Sequence[Message] = history
    wanted = identity(name, arguments)
    for content in contents:
        current = seamkit.injection.inject_tool_result(
            current, name=name, arguments=arguments, content=content
        )
        ours = [i for i in synthetic_pairs(current) if pair_id(current, i)[6:18] == wanted]
        assert ours, "the pair was injected"
        assert current[ours[-1] + 1].content == content
        ids = [pair_id(current, i) for i in ours]
        assert len(ids) == len(set(ids)), ids


@given(
    injected_histories(frequencies=("append_if_changed", "once")),
    st.lists(injections(("append_if_changed", "once")), min_size=1, max_size=6),
)
def test_append_if_changed_never_holds_two_pairs_with_one_id(
    history: tuple[Message, ...], sequence: list[Injection]
) -> None:
    """In a history whose synthetic pairs all come from ``append_if_changed``
    and ``once`` injections (malformed near-pairs aside), no two well-formed
    pairs share an id, after every injection of a sequence of
    ``append_if_changed`` and ``once`` injections (a result that returns to an
    earlier content gets the ``_r{n}`` suffix). Every pair's name and content
    are the pool values its key was made from, checked against its messages."""
    for current in [history, *(after for _, _, after in run_sequence(history, sequence))]:
        seen = []
        for index in synthetic_pairs(current):
            call_id = pair_id(current, index)
            triple = TRIPLES[call_id[6:24]]
            calls = current[index].tool_calls
            assert calls is not None and calls[0].function.name == triple[0]
            assert current[index + 1].content == triple[2]
            seen.append(call_id)
        assert len(seen) == len(set(seen)), seen


@given(
    injected_histories(),
    st.sampled_from(NAMES),
    st.sampled_from(ARGUMENTS),
    st.lists(st.tuples(st.booleans(), injections()), max_size=5),
    st.data(),
)
def test_freshest_expiry_is_the_largest_of_the_well_formed_pairs_of_that_identity(
    history: tuple[Message, ...],
    name: str,
    arguments: dict[str, Any],
    more: list[tuple[bool, Injection]],
    data: st.DataObject,
) -> None:
    """``freshest_expiry(messages, name, arguments)`` is the largest expiry
    (not the last by position) among the well-formed synthetic pairs whose
    first 12 hex digits are ``h6(name) + h6(args)``, whatever their content or
    frequency; ``None`` when none of them has an expiry. Malformed near-pairs
    and pairs of other identities never count. (The history gets a malformed
    near-pair of the queried name and arguments maybe, then up to five more
    injections, about half of them of the queried name and arguments.)"""
    current: Sequence[Message] = history
    wanted = identity(name, arguments)
    if data.draw(st.booleans()):
        near = data.draw(st.sampled_from(NEAR_PAIRS_BY_IDENTITY[wanted]))
        at = data.draw(st.integers(0, len(current)))
        current = [*current[:at], *near, *current[at:]]
    for same, injection in more:
        if same:
            injection = replace(injection, name=name, arguments=arguments)
        current = injection.apply(current)
    found = [
        e
        for i in synthetic_pairs(current)
        if pair_id(current, i)[6:18] == wanted and (e := id_expiry(pair_id(current, i))) is not None
    ]
    assert seamkit.injection.freshest_expiry(current, name, arguments) == (
        max(found) if found else None
    )


@given(injected_histories(), st.lists(injections(), min_size=1, max_size=8))
def test_stable_placement_only_ever_appends(
    history: tuple[Message, ...], sequence: list[Injection]
) -> None:
    """Under ``placement="stable"`` every injection's output begins with its
    input, the same objects in the same order (nothing already sent is
    changed, moved or removed); it adds one pair at the end or nothing; after
    an ``append_if_changed`` injection the last pair of its identity carries
    its content; and no two well-formed pairs ever share an id."""
    current: Sequence[Message] = history
    for injection in sequence:
        after = injection.apply(current, placement="stable")
        assert same_objects(after[: len(current)], current)
        assert len(after) in (len(current), len(current) + 2)
        if injection.frequency == "append_if_changed":
            ours = [
                i for i in synthetic_pairs(after) if pair_id(after, i)[6:18] == injection.identity
            ]
            assert after[ours[-1] + 1].content == injection.content
        new_ids = [pair_id(after, i) for i in synthetic_pairs(after)]
        old_ids = [pair_id(current, i) for i in synthetic_pairs(current)]
        assert len(new_ids) - len(set(new_ids)) <= len(old_ids) - len(set(old_ids))
        current = after
