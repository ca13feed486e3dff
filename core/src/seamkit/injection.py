"""Synthetic tool-call injection (public for hook-kind authors): put a tool
call and its result into the messages as if the model had asked for it, so
any hook kind can add context.

A pair is an assistant message with empty content and one tool call, followed
by the tool message answering it. Its id follows one grammar, at most 40
characters (OpenAI's limit)::

    synth_{h6(name)}{h6(args)}{h6(content)}[_{expiry:08x}]

``h6(s)`` is the first 6 hex digits of SHA-256 of ``s``; ``args`` is
``json.dumps(arguments, sort_keys=True)`` of the arguments as written (secrets
as their ``${secret:...}`` text); ``expiry`` is Unix seconds in hex. The first
12 hex digits identify name and arguments, all 18 name, arguments and content.
A new pair whose id an older pair already has (a result that returns to an
earlier content) gets ``_r{n}`` instead of an expiry (its freshness is in the
state), so no two pairs share an id.

Freshness lives in the session's state (`HookContext.session_state`), not
only in the history: :func:`remember` records, per name and arguments and per
keyed digest of the *rendered* argument values (HMAC-SHA256 under a random
key kept in the same state), which pair was injected and its expiry, and
:func:`is_fresh` holds a result fresh only for the same rendered values while
that pair is still the latest. So a
result fetched for one user is never served to another, and no rendered value
or secret is stored in clear.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import math
import re
import secrets as _random
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from operator import attrgetter
from typing import Any, Literal

from ._config import Placement
from ._secret import secret_json
from ._types import Message, MessageToolCall

__all__ = [
    "MAX_ID",
    "MAX_RECORDS",
    "PREFIX",
    "STATE_KEY",
    "Frequency",
    "Placement",
    "SyntheticId",
    "argument_digest",
    "freshest_expiry",
    "inject_tool_result",
    "injected_results",
    "is_fresh",
    "parse_synthetic_id",
    "remember",
    "synthetic_id",
]

Frequency = Literal["always", "append_if_changed", "once"]
"""How often a hook injects: a new pair every time; replace an unchanged pair
in place or add a changed one (the default); only when none exists."""

PREFIX = "synth_"
"""What every synthetic pair id starts with."""
_ID = re.compile(r"synth_([0-9a-f]{6})([0-9a-f]{6})([0-9a-f]{6})(?:_(.*))?", re.DOTALL)
_EXPIRY = re.compile(r"[0-9a-f]{8,}")
_GET_ID = attrgetter("tool_call_id")
MAX_ID = 40
"""The longest id a synthetic pair may have (the OpenAI limit on tool-call ids)."""


_AS_WRITTEN = functools.partial(secret_json, source=True)
"""Secrets as their manifest text: what identities hash."""
_REVEALED = functools.partial(secret_json, reveal=True)
"""Secrets as their values: what the digest of rendered arguments hashes."""


def _h6(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:6]


def arguments_text(arguments: Mapping[str, Any]) -> str:
    """``json.dumps(arguments, sort_keys=True)``, secrets as their manifest text."""
    return json.dumps(arguments, sort_keys=True, default=_AS_WRITTEN)


def _identity(name: str, arguments: Mapping[str, Any]) -> str:
    """The first 12 hex digits of a pair id: its name and arguments."""
    return _h6(name) + _h6(arguments_text(arguments))


def _expiry_seconds(expiry: datetime | int | None) -> int | None:
    if expiry is None:
        return None
    if isinstance(expiry, datetime):
        if expiry.tzinfo is None:
            raise ValueError("an expiry must be an aware datetime")
        return math.floor(expiry.timestamp())
    return int(expiry)


def synthetic_id(
    name: str,
    arguments: Mapping[str, Any],
    content: str,
    *,
    expiry: datetime | int | None = None,
) -> str:
    """The id of a pair: ``synth_{h6(name)}{h6(args)}{h6(content)}[_{expiry:08x}]``."""
    text = f"{PREFIX}{_h6(name)}{_h6(arguments_text(arguments))}{_h6(content)}"
    seconds = _expiry_seconds(expiry)
    if seconds is not None:
        if seconds < 0:
            raise ValueError("an expiry cannot be before 1970")
        text += f"_{seconds:08x}"
    if len(text) > MAX_ID:
        raise ValueError(f"expiry {seconds} makes the id longer than {MAX_ID} characters")
    return text


@dataclass(frozen=True, slots=True)
class SyntheticId:
    """A parsed pair id: the three hashes and the expiry (Unix seconds, or
    ``None`` when the id has none or it does not parse)."""

    name_hash: str
    args_hash: str
    content_hash: str
    expiry: int | None

    @property
    def identity(self) -> str:
        """Name and arguments: the first 12 hex digits."""
        return self.name_hash + self.args_hash

    @property
    def key(self) -> str:
        """Name, arguments and content: all 18 hex digits."""
        return self.name_hash + self.args_hash + self.content_hash


def parse_synthetic_id(text: str) -> SyntheticId | None:
    """The parts of a synthetic id, or ``None`` when ``text`` is not one.

    An id whose part after the ``_`` is not an expiry (8 or more lowercase
    hex digits) is still an id, without an expiry.
    """
    match = _ID.fullmatch(text)
    if match is None:
        return None
    raw = match.group(4)
    expiry = int(raw, 16) if raw is not None and _EXPIRY.fullmatch(raw) else None
    return SyntheticId(match.group(1), match.group(2), match.group(3), expiry)


def _pairs(messages: Sequence[Message], identity: str) -> list[tuple[int, SyntheticId]]:
    """``(index of the assistant message, parsed id)`` of every well-formed pair
    with this identity (name and arguments).

    Histories run to thousands of messages, so the scan is left to C code:
    the tool-call ids are read with one ``map``, the present ones joined and
    searched with ``str.find``, and a hit is placed with ``list.index``. The
    last scan of a tuple is remembered, so a freshness check followed by an
    injection on the same messages scans once.
    """
    key = (id(messages), len(messages), identity)
    cached = _last_scan[0]  # one read: another thread may replace it meanwhile
    if cached is not None and cached[0] == key and cached[1] is messages:
        return list(cached[2])
    prefix = PREFIX + identity
    ids = list(map(_GET_ID, messages))
    joined = "\x00".join(filter(None, ids))
    found: list[tuple[int, SyntheticId]] = []
    pos = joined.find(prefix)
    start = 0
    while pos != -1:
        end = joined.find("\x00", pos)
        if pos == 0 or joined[pos - 1] == "\x00":
            call_id = joined[pos:] if end == -1 else joined[pos:end]
            try:
                index = ids.index(call_id, start)
            except ValueError:  # an id held a NUL: look the slow way
                found = _pairs_slowly(messages, prefix)
                break
            start = index + 1
            pair = _pair_at(messages, index, call_id)
            if pair is not None:
                found.append(pair)
        if end == -1:
            break
        pos = joined.find(prefix, end)
    if isinstance(messages, tuple):
        _last_scan[0] = (key, messages, tuple(found))
    return found


_last_scan: list[Any] = [None]
"""The last scan of a tuple: (key, the tuple, its pairs). Holding the tuple
keeps its id from being reused while the entry lives."""


def _pair_at(messages: Sequence[Message], i: int, call_id: str) -> tuple[int, SyntheticId] | None:
    if i == 0:
        return None
    calls = messages[i - 1].tool_calls
    if not calls or len(calls) != 1 or calls[0].id != call_id:
        return None
    parsed = parse_synthetic_id(call_id)
    return None if parsed is None else (i - 1, parsed)


def _pairs_slowly(messages: Sequence[Message], prefix: str) -> list[tuple[int, SyntheticId]]:
    found = []
    for i, message in enumerate(messages):
        call_id = message.tool_call_id
        if call_id is not None and call_id.startswith(prefix):
            pair = _pair_at(messages, i, call_id)
            if pair is not None:
                found.append(pair)
    return found


def injected_results(
    messages: Sequence[Message], name: str, arguments: Mapping[str, Any]
) -> list[SyntheticId]:
    """The ids of the well-formed pairs with this name and these arguments,
    in the order they stand in ``messages``."""
    identity = _identity(name, arguments)
    return [parsed for _, parsed in _pairs(messages, identity)]


def freshest_expiry(
    messages: Sequence[Message], name: str, arguments: Mapping[str, Any]
) -> int | None:
    """The largest expiry (Unix seconds) among the pairs with this name and
    these arguments, or ``None`` when none has one."""
    expiries = [
        p.expiry for p in injected_results(messages, name, arguments) if p.expiry is not None
    ]
    return max(expiries) if expiries else None


def inject_tool_result(
    messages: Sequence[Message],
    *,
    name: str,
    arguments: Mapping[str, Any],
    content: str,
    frequency: Frequency = "append_if_changed",
    expiry: datetime | int | None = None,
    shown_arguments: Mapping[str, Any] | None = None,
    placement: Placement = "history",
) -> list[Message]:
    """``messages`` with a pair for a call of tool ``name`` with ``arguments``
    that returned ``content``.

    ``arguments`` give the pair its identity (as written: templates
    unrendered, secrets as `Secret`); ``shown_arguments`` (default: the same)
    are what the assistant message shows, with every `Secret` as ``***``.

    - ``always``: a new pair at the end (its content hash is of a random
      value, so ids practically never repeat: 24 random bits);
    - ``append_if_changed``: compared with the *latest* pair of the same name
      and arguments: the same content refreshes that pair in place (fresh id
      and expiry); other content goes in a new pair at the end, so the last
      pair always carries the current result (after A, B, A the history ends
      with A); with no such pair yet, right after the first user message (at
      the end when there is none);
    - ``once``: only when no pair with the same name and arguments exists.

    Messages outside the replaced pair are never changed or reordered, and no
    two pairs share an id (a new pair whose id an older one has gets the
    suffix ``_r{n}`` instead of its expiry; its freshness is in the state).
    With ``placement="stable"`` no message already in ``messages``
    is ever changed, moved or removed: a first pair goes at the end too, an
    unchanged latest result is left as it is (not re-stamped), and a changed
    one is appended.
    """
    stable = placement == "stable"
    key_content = _random.token_hex(16) if frequency == "always" else content
    new_id = synthetic_id(name, arguments, key_content, expiry=expiry)
    shown = json.dumps(
        shown_arguments if shown_arguments is not None else arguments, default=secret_json
    )
    out = list(messages)
    identity = new_id[len(PREFIX) : len(PREFIX) + 12]
    existing = _pairs(messages, identity)
    if frequency == "always":
        new_id = _own_id(new_id, new_id[len(PREFIX) : len(PREFIX) + 18], messages, existing)
        return [*out, *_pair(new_id, name, shown, content)]
    if frequency == "once" and existing:
        return out
    if not existing:
        pair = _pair(new_id, name, shown, content)
        return [*out, *pair] if stable else _after_first_user(out, pair)
    key = new_id[len(PREFIX) : len(PREFIX) + 18]
    index, latest = existing[-1]
    if latest.key == key:
        if not stable:
            new_id = _own_id(new_id, key, messages, existing[:-1])
            out[index : index + 2] = _pair(new_id, name, shown, content)
        return out
    new_id = _own_id(new_id, key, messages, existing)
    return [*out, *_pair(new_id, name, shown, content)]


def _own_id(
    new_id: str, key: str, messages: Sequence[Message], others: list[tuple[int, SyntheticId]]
) -> str:
    """``new_id``, or, when one of the ``others`` pairs has it already (a result
    returning to an earlier content), ``synth_{key}_r{n}`` with the first
    ``n`` no other pair has."""
    taken = {_call_id(messages, i) for i, _ in others}
    if new_id not in taken:
        return new_id
    n = sum(1 for _, parsed in others if parsed.key == key)
    while f"{PREFIX}{key}_r{n}" in taken:
        n += 1
    return f"{PREFIX}{key}_r{n}"


def _call_id(messages: Sequence[Message], index: int) -> str:
    calls = messages[index].tool_calls
    return calls[0].id if calls else ""


def _pair(call_id: str, name: str, shown: str, content: str) -> list[Message]:
    return [
        Message.assistant("", [MessageToolCall.make(call_id, name, shown)]),
        Message.tool(call_id, content),
    ]


# --- freshness, kept in the session's state ---------------------------------------

STATE_KEY = "seamkit.injection"
"""The key of `HookContext.session_state` under which injection keeps its
digest key and its freshness records."""


def _records(state: MutableMapping[str, Any]) -> dict[str, Any]:
    held = state.get(STATE_KEY)
    if not isinstance(held, dict):
        held = state[STATE_KEY] = {}
    return held


def argument_digest(state: MutableMapping[str, Any], arguments: Mapping[str, Any]) -> str:
    """A keyed digest of the *rendered* ``arguments`` (secrets by their value):
    HMAC-SHA256 under a random key kept in ``state`` (made on first use), so
    equal values give equal digests in one session and nothing can be read
    back from it."""
    held = _records(state)
    key = held.get("key")
    if not isinstance(key, str):
        key = held["key"] = _random.token_hex(32)
    text = json.dumps(arguments, sort_keys=True, default=_REVEALED)
    return hmac.digest(bytes.fromhex(key), text.encode("utf-8"), "sha256").hex()[:32]


MAX_RECORDS = 64
"""Freshness records kept per tool and arguments (one per distinct rendered
values, the oldest dropped first), so users taking turns do not evict each
other's results."""


def remember(
    state: MutableMapping[str, Any],
    messages: Sequence[Message],
    *,
    name: str,
    arguments: Mapping[str, Any],
    digest: str,
    expiry: datetime | int | None,
) -> None:
    """Record that the latest pair of this name and arguments in ``messages``
    (the messages after the injection) was fetched for the rendered values
    behind ``digest`` and stays fresh until ``expiry``."""
    identity = _identity(name, arguments)
    existing = _pairs(messages, identity)
    if not existing:
        return
    fresh = _records(state).setdefault("fresh", {})
    records = fresh.setdefault(identity, {})
    records.pop(digest, None)  # re-inserted last: the newest is kept longest
    records[digest] = {
        "pair": _call_id(messages, existing[-1][0]),
        "expiry": _expiry_seconds(expiry),
    }
    while len(records) > MAX_RECORDS:
        del records[next(iter(records))]


def is_fresh(
    state: Mapping[str, Any],
    messages: Sequence[Message],
    *,
    name: str,
    arguments: Mapping[str, Any],
    digest: str,
    now: datetime,
) -> bool:
    """Whether the latest pair of this name and arguments in ``messages`` is
    the one :func:`remember` recorded for the same rendered values (the same
    ``digest``), and its expiry is still ahead of ``now``."""
    identity = _identity(name, arguments)
    held = state.get(STATE_KEY)
    fresh = held.get("fresh", {}) if isinstance(held, dict) else {}
    record = fresh.get(identity, {}).get(digest) if isinstance(fresh, dict) else None
    if not isinstance(record, dict):
        return False
    expiry = record.get("expiry")
    if not isinstance(expiry, int) or expiry <= now.timestamp():
        return False
    existing = _pairs(messages, identity)
    return bool(existing) and _call_id(messages, existing[-1][0]) == record.get("pair")


def _after_first_user(messages: list[Message], pair: list[Message]) -> list[Message]:
    for i, message in enumerate(messages):
        if message.role == "user":
            return [*messages[: i + 1], *pair, *messages[i + 1 :]]
    return [*messages, *pair]
