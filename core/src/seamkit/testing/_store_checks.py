"""A conformance check any session store can run: :func:`check_session_store`.

The kernel uses a store one way (``lock`` around a run; ``load`` at its
start; ``journal_append`` as it goes when the store keeps a journal;
``save`` at its end), and ``seamkit sessions`` lists, exports, imports and
deletes through it. The check holds a store to what those uses need, law by
law, against the store's real backend; each broken law is an
``AssertionError`` naming it.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import random
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import Any

from .._errors import SessionBusy
from .._persistence._journal import JournalEntry, JournalStore
from .._persistence._sessions import SessionStore, StoredSession
from .._types import Message, MessageToolCall

__all__ = ["JOURNAL_LAWS", "STORE_LAWS", "acheck_session_store", "check_session_store"]

HOLD_SECONDS = 0.2
"""How long the lock laws hold a session while another store object waits."""

BUSY_WAIT = 0.3
"""The ``wait_seconds`` after which the busy law expects `SessionBusy`."""

MODEL_STEPS = 60
"""Operations of the journal-against-a-model law."""

_STORE_CHECKS = (
    ("a store has the SessionStore methods", "has_methods"),
    ("load of a session never saved is None", "missing_is_none"),
    ("save then load gives back the transcript and state", "round_trip"),
    ("save replaces the transcript and state", "save_replaces"),
    ("save is atomic: a load sees one whole save or another", "save_is_atomic"),
    ("another store object on the same location sees what was saved", "seen_by_another_object"),
    ("list is sorted and names every saved session", "list_sorted"),
    ("delete forgets the session, and deleting a missing one does nothing", "delete_forgets"),
    ("lock on one session does not hold another", "lock_is_per_session"),
    ("lock raises SessionBusy after the wait", "lock_busy"),
    ("lock serialises runs on one session, across store objects", "lock_serialises"),
    ("lock is released when its block raises", "lock_released_on_error"),
)
_JOURNAL_CHECKS = (
    ("the journal of a session without one is empty", "journal_empty"),
    ("journal entries come back in append order with their data", "journal_order"),
    ("journals of two sessions are separate", "journal_separate"),
    ("appending no entries changes nothing", "journal_append_none"),
    ("save drops the journal of that session only", "journal_save_drops"),
    ("delete drops the journal", "journal_delete_drops"),
    (
        "appended entries are visible to another store object on the same location",
        "journal_durable",
    ),
    (
        "the journal behaves like a list per session under appends, saves and deletes",
        "journal_model",
    ),
)

STORE_LAWS = tuple(law for law, _ in _STORE_CHECKS)
"""The laws every store is held to, in the order they are checked."""

JOURNAL_LAWS = tuple(law for law, _ in _JOURNAL_CHECKS)
"""The laws a store that keeps a journal (`seamkit.JournalStore`) is also
held to, after the others."""


def check_session_store(make_store: Callable[[], SessionStore]) -> None:
    """Check the laws of a session store (runs its own event loop; in an
    ``async def`` test, ``await acheck_session_store(make_store)``).

    ``make_store()`` must return a *new* store object on one location each
    time it is called (as another process would open it): the laws about
    durability open a second object and read through it. The check works
    on a store that already holds sessions: it uses session names of its own
    (``seamkit-check-<random>-...``) and deletes them when it ends.

    The `SessionStore` laws (`STORE_LAWS`): a save round-trips the transcript
    and state exactly (non-ASCII, emoji, NUL characters, tool calls, nested
    state); a second save replaces the first, and a load running beside
    saves sees one of them whole; ``list`` is sorted (by code point) and
    names every saved session; ``delete`` forgets one; ``lock`` on one
    session does not hold another, raises `seamkit.SessionBusy` once
    ``wait_seconds`` have passed while another run holds the session, lets
    one run at a time hold a session (across store objects: the second
    waits), and is released when its block raises.

    When the store is a `seamkit.JournalStore`, the journal laws too
    (`JOURNAL_LAWS`): entries come back in the order they were appended
    (within one append and across appends) with their data; appending none
    changes nothing; ``save`` drops the journal of that session and no
    other; ``delete`` drops it (a session that has only a journal too);
    sessions' journals are separate; what was appended is read back by a
    second store object; and a seeded sequence of appends, saves and deletes
    over three sessions leaves each journal as a list would.

    A broken law raises ``AssertionError`` naming the law (the store's own
    exception, when it raised one, is its cause).
    """
    asyncio.run(acheck_session_store(make_store))


async def acheck_session_store(make_store: Callable[[], SessionStore]) -> None:
    """:func:`check_session_store` in the running event loop."""
    made: list[SessionStore] = []

    def fresh() -> SessionStore:
        store = make_store()
        if any(store is other for other in made):
            raise AssertionError(
                "make_store() returned a store object it had returned before: it must "
                "open a new store object on the same location each time it is called"
            )
        made.append(store)
        return store

    first = fresh()
    laws = _Laws(first, fresh, f"seamkit-check-{uuid.uuid4().hex[:8]}-")
    try:
        await laws.run()
    finally:
        await laws.clean_up()
        for store in made:
            await _close(store)


class _Laws:
    """The laws, each a method, checked in turn on one store."""

    def __init__(self, store: SessionStore, fresh: Callable[[], SessionStore], prefix: str) -> None:
        self.store = store
        self.fresh = fresh
        self.prefix = prefix
        self.used: set[str] = set()

    def name(self, suffix: str) -> str:
        """A session name of the check's own (deleted when it ends)."""
        name = self.prefix + suffix
        self.used.add(name)
        return name

    async def run(self) -> None:
        checks: list[tuple[str, Callable[[], Awaitable[None]]]] = [
            (law, getattr(self, method)) for law, method in _STORE_CHECKS
        ]
        if isinstance(self.store, JournalStore):
            journal = self.store
            checks += [
                (law, partial(getattr(self, method), journal)) for law, method in _JOURNAL_CHECKS
            ]
        for law, check in checks:
            try:
                await check()
            except AssertionError as exc:
                raise AssertionError(f"{self.store!r}: law broken: {law}: {exc}") from exc
            except Exception as exc:
                raise AssertionError(
                    f"{self.store!r}: law broken: {law}: the store raised "
                    f"{type(exc).__name__}: {exc}"
                ) from exc

    async def clean_up(self) -> None:
        """Delete the sessions the check made (best effort: a store that
        failed a law may fail here too)."""
        for name in sorted(self.used):
            with contextlib.suppress(Exception):
                await self.store.delete(name)

    # --- the SessionStore laws ----------------------------------------------------

    async def has_methods(self) -> None:
        missing = [
            method
            for method in ("load", "save", "lock", "list", "delete")
            if not callable(getattr(self.store, method, None))
        ]
        assert not missing, f"it has no {', '.join(missing)}"

    async def missing_is_none(self) -> None:
        found = await self.store.load(self.name("never-saved"))
        assert found is None, f"load gave {found!r}"

    async def round_trip(self) -> None:
        name = self.name("round-trip")
        await self.store.save(name, TRANSCRIPT, STATE)
        _same(await self.store.load(name), TRANSCRIPT, STATE, "after a save outside a lock")
        async with self.store.lock(name, 5.0):  # as a run saves
            await self.store.save(name, TRANSCRIPT[:2], {"inside": "the lock"})
        _same(await self.store.load(name), TRANSCRIPT[:2], {"inside": "the lock"}, "in a lock")
        await self.store.save(name, (), {})
        _same(await self.store.load(name), (), {}, "after saving an empty transcript")

    async def save_replaces(self) -> None:
        name = self.name("replaced")
        await self.store.save(name, TRANSCRIPT, STATE)
        shorter = (Message.user("only this"),)
        await self.store.save(name, shorter, {"other": 1})
        _same(await self.store.load(name), shorter, {"other": 1}, "after a second save")

    async def save_is_atomic(self) -> None:
        name = self.name("atomic")
        versions = [
            (tuple(Message.user(f"a{i}") for i in range(3)), {"version": "a"}),
            (tuple(Message.user(f"b{i}") for i in range(7)), {"version": "b"}),
        ]
        await self.store.save(name, *versions[0])
        reader = self.fresh()
        seen: list[StoredSession | None] = []
        done = asyncio.Event()

        async def write() -> None:
            try:
                for i in range(20):
                    await self.store.save(name, *versions[i % 2])
            finally:
                done.set()

        async def read() -> None:
            while not done.is_set():
                seen.append(await reader.load(name))
                await asyncio.sleep(0)

        await asyncio.gather(write(), read())
        seen.append(await reader.load(name))
        wholes = [StoredSession(t, s) for t, s in versions]
        for found in seen:
            assert found is not None, "a load beside the saves found no session"
            assert found in wholes, (
                f"a load beside the saves found transcript {_texts(found.transcript)} with "
                f"state {dict(found.state)}: neither save's whole"
            )

    async def seen_by_another_object(self) -> None:
        name = self.name("durable")
        await self.store.save(name, TRANSCRIPT, STATE)
        _same(await self.fresh().load(name), TRANSCRIPT, STATE, "read by a new store object")

    async def list_sorted(self) -> None:
        names = [self.name(s) for s in ("b", "a", "Z", "ä", "a b", "a-", "🎉", "é")]
        for name in names:
            await self.store.save(name, (Message.user(name),), {})
        listed = await self.store.list()
        assert isinstance(listed, list), f"list gave a {type(listed).__name__}, not a list"
        missing = [n for n in names if n not in listed]
        assert not missing, f"list leaves out the saved {missing}"
        assert listed == sorted(listed), f"list is not sorted by code point: {listed}"
        assert len(set(listed)) == len(listed), f"list names a session twice: {listed}"

    async def delete_forgets(self) -> None:
        name, kept = self.name("deleted"), self.name("kept")
        await self.store.save(name, TRANSCRIPT, STATE)
        await self.store.save(kept, TRANSCRIPT[:1], {})
        await self.store.delete(name)
        assert await self.store.load(name) is None, "load still finds it"
        assert name not in await self.store.list(), "list still names it"
        _same(await self.store.load(kept), TRANSCRIPT[:1], {}, "another session after a delete")
        await self.store.delete(name)
        await self.store.delete(self.name("never-there"))

    async def lock_serialises(self) -> None:
        name = self.name("locked")
        other = self.fresh()
        holding = asyncio.Event()
        spans: dict[str, tuple[float, float]] = {}

        async def first() -> None:
            async with self.store.lock(name, 5.0):
                start = time.monotonic()
                holding.set()
                await asyncio.sleep(HOLD_SECONDS)
                spans["first"] = (start, time.monotonic())

        async def second() -> None:
            await holding.wait()
            async with other.lock(name, 10.0):
                start = time.monotonic()
                spans["second"] = (start, time.monotonic())

        await asyncio.gather(first(), second())
        assert spans["second"][0] >= spans["first"][1], (
            "a second store object took the lock while the first still held it"
        )

    async def lock_is_per_session(self) -> None:
        one, two = self.name("lock-one"), self.name("lock-two")
        async with self.store.lock(one, 5.0):
            start = time.monotonic()
            try:
                async with self.fresh().lock(two, 2.0):
                    waited = time.monotonic() - start
            except SessionBusy:
                raise AssertionError("locking another session was refused as busy") from None
            assert waited < 1.0, f"locking another session waited {waited:.2f}s"

    async def lock_busy(self) -> None:
        name = self.name("busy")
        async with self.store.lock(name, 5.0):
            start = time.monotonic()
            try:
                async with self.fresh().lock(name, BUSY_WAIT):
                    raise AssertionError("a second run took a session the first still held")
            except SessionBusy:
                waited = time.monotonic() - start
            assert waited >= BUSY_WAIT * 0.9, (
                f"SessionBusy after {waited:.3f}s, before the wait of {BUSY_WAIT}s"
            )
            assert waited < BUSY_WAIT + 10, f"SessionBusy only after {waited:.1f}s"

    async def lock_released_on_error(self) -> None:
        name = self.name("raised")
        with contextlib.suppress(_Raised):
            async with self.store.lock(name, 5.0):
                raise _Raised
        try:
            async with self.fresh().lock(name, 2.0):
                pass
        except SessionBusy:
            raise AssertionError("the session is still held after its block raised") from None

    # --- the journal laws ---------------------------------------------------------

    async def journal_empty(self, store: JournalStore) -> None:
        for name in (self.name("no-journal"), self.name("round-trip")):
            found = await store.journal_read(name)
            assert found == [], f"journal_read({name!r}) gave {found!r}"

    async def journal_order(self, store: JournalStore) -> None:
        name = self.name("journal")
        appends = [list(ENTRIES[:2]), [ENTRIES[2]], _many("bulk", 40), list(ENTRIES[3:])]
        expected: list[JournalEntry] = []
        for entries in appends:
            await store.journal_append(name, entries)
            expected += entries
            _journal(await store.journal_read(name), expected, f"after {len(expected)} entries")

    async def journal_append_none(self, store: JournalStore) -> None:
        name = self.name("journal-none")
        await store.journal_append(name, [])
        _journal(await store.journal_read(name), [], "after appending no entries")
        await store.journal_append(name, ENTRIES[:1])
        await store.journal_append(name, [])
        _journal(await store.journal_read(name), ENTRIES[:1], "after appending none to one")

    async def journal_save_drops(self, store: JournalStore) -> None:
        saved, other = self.name("journal-saved"), self.name("journal-other")
        await store.journal_append(saved, ENTRIES)
        await store.journal_append(other, ENTRIES[:2])
        await self.store.save(saved, TRANSCRIPT, STATE)
        _journal(await store.journal_read(saved), [], "of the session just saved")
        _journal(await store.journal_read(other), ENTRIES[:2], "of another session")
        _same(await self.store.load(saved), TRANSCRIPT, STATE, "saved beside a journal")
        await store.journal_append(saved, ENTRIES[2:3])
        _journal(await store.journal_read(saved), ENTRIES[2:3], "appended after the save")

    async def journal_delete_drops(self, store: JournalStore) -> None:
        saved, only = self.name("journal-deleted"), self.name("journal-only")
        await self.store.save(saved, TRANSCRIPT, STATE)
        await store.journal_append(saved, ENTRIES)
        await store.journal_append(only, ENTRIES[:2])  # a first run cut short: no row yet
        await self.store.delete(saved)
        await self.store.delete(only)
        _journal(await store.journal_read(saved), [], "of a deleted session")
        _journal(await store.journal_read(only), [], "of a deleted session that had no row")

    async def journal_separate(self, store: JournalStore) -> None:
        one, two = self.name("journal-one"), self.name("journal-two")
        ones, twos = _many("one", 6), _many("two", 6)
        for a, b in zip(ones, twos, strict=True):
            await store.journal_append(one, [a])
            await store.journal_append(two, [b])
        _journal(await store.journal_read(one), ones, "of the first of two sessions")
        _journal(await store.journal_read(two), twos, "of the second of two sessions")

    async def journal_durable(self, store: JournalStore) -> None:
        name = self.name("journal-durable")
        await store.journal_append(name, ENTRIES)
        other = self.fresh()
        assert isinstance(other, JournalStore), "a new store object keeps no journal"
        _journal(await other.journal_read(name), ENTRIES, "read by a new store object")

    async def journal_model(self, store: JournalStore) -> None:
        rng = random.Random(27)
        names = [self.name(f"journal-model-{i}") for i in range(3)]
        model: dict[str, list[JournalEntry]] = {n: [] for n in names}
        for step in range(MODEL_STEPS):
            name = rng.choice(names)
            action = rng.choices(["append", "save", "delete", "read"], [6, 2, 1, 2])[0]
            if action == "append":
                entries = _many(f"s{step}", rng.randint(0, 4))
                await store.journal_append(name, entries)
                model[name] += entries
            elif action == "save":
                await self.store.save(name, (Message.user(f"step {step}"),), {"step": step})
                model[name] = []
            elif action == "delete":
                await self.store.delete(name)
                model[name] = []
            else:
                _journal(await store.journal_read(name), model[name], f"at step {step}")
        for name in names:
            _journal(await store.journal_read(name), model[name], "at the end")


class _Raised(Exception):
    """Raised inside a lock by the law that checks the lock is released."""


async def _close(store: object) -> None:
    """Close a store that can be closed (``aclose``), quietly."""
    close = getattr(store, "aclose", None)
    if callable(close):
        with contextlib.suppress(Exception):
            result = close()
            if inspect.isawaitable(result):
                await result


def _texts(transcript: Sequence[Message]) -> list[str]:
    return [m.text for m in transcript]


def _same(
    found: StoredSession | None,
    transcript: Sequence[Message],
    state: Mapping[str, Any],
    when: str,
) -> None:
    """``found`` holds exactly ``transcript`` and ``state``."""
    assert found is not None, f"{when}: load found no session"
    assert tuple(found.transcript) == tuple(transcript), (
        f"{when}: load gave the transcript {list(found.transcript)!r}, "
        f"not the one saved {list(transcript)!r}"
    )
    assert dict(found.state) == dict(state), (
        f"{when}: load gave the state {dict(found.state)!r}, not the one saved {dict(state)!r}"
    )


def _journal(found: object, expected: Sequence[JournalEntry], when: str) -> None:
    """``found`` (what ``journal_read`` gave) is ``expected``, entry by entry."""
    assert isinstance(found, list), f"{when}: journal_read gave a {type(found).__name__}"
    for i, (got, want) in enumerate(zip(found, expected, strict=False)):
        assert isinstance(got, JournalEntry), f"{when}: entry {i} is a {type(got).__name__}"
        assert got == want, f"{when}: entry {i} is {got!r}, not {want!r}"
    assert len(found) == len(expected), (
        f"{when}: journal_read gave {len(found)} entries, not {len(expected)}"
    )


def _many(tag: str, count: int) -> list[JournalEntry]:
    """``count`` distinct entries (the order law can tell apart)."""
    return [
        JournalEntry(run_id=f"run-{tag}", kind="turn", data={"n": i, "tag": tag})
        for i in range(count)
    ]


_CALL = MessageToolCall.make("call_1", "refund", {"amount": 5, "note": "ünïcödé 🎉"})

TRANSCRIPT: tuple[Message, ...] = (
    Message.system("be brief"),
    Message.user("hello — ünïcödé, emoji 🎉, a NUL \x00 and quotes '\" and a \\ backslash"),
    Message.assistant(None, [_CALL]),
    Message.tool("call_1", "line one\nline two\ttab"),
    Message.assistant("done " + "x" * 5000),
)
"""A transcript with what a store must keep exactly."""

STATE: dict[str, Any] = {
    "tool_call": {"fresh": {"k": 1.5, "big": 12345678901234567890}},
    "ünï": ["a", None, True, False, 0, -1, {"nested": []}],
    "nul": "a\x00b",
    "": "an empty key",
}
"""A state with what a store must keep exactly."""

ENTRIES: tuple[JournalEntry, ...] = (
    JournalEntry(
        run_id="run-1",
        kind="start",
        data={
            "base": 0,
            "messages": [m.model_dump(mode="json", exclude_none=True) for m in TRANSCRIPT[:2]],
        },
    ),
    JournalEntry(
        run_id="run-1",
        kind="turn",
        data={
            "messages": [TRANSCRIPT[2].model_dump(mode="json", exclude_none=True)],
            "usage": {"input_tokens": 3},
        },
    ),
    JournalEntry(
        run_id="run-1",
        kind="started",
        call_id="call_1",
        data={
            "tool": "refund",
            "arguments": {"amount": 5, "note": "ünïcödé 🎉 \x00"},
            "digest": "8d2de473d23998ff9c01cd89",
            "key": uuid.UUID(int=27).hex,
            "attempt": 1,
        },
    ),
    JournalEntry(
        run_id="run-1",
        kind="finished",
        call_id="call_1",
        data={"content": "refunded\n" + "y" * 3000, "is_error": False, "raised": False},
    ),
    JournalEntry(
        run_id="run-2",
        kind="decided",
        call_id="call_2",
        data={"decision": {"action": "reject", "reason": "too much", "by": "cli"}},
    ),
)
"""Journal entries of every kind, with what a store must keep exactly."""
