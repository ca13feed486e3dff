"""Server-sent events, read as the HTML standard's event-stream parser reads
them, from a response's bytes: `EventDecoder` (fed chunk by chunk),
`body_chunks` (the bytes, decoded only when the server compressed them) and
`server_events` (the two together); `is_event_stream` tells a stream from a
whole answer, and `as_streamed` gives a whole answer as a stream's items.

Why not httpx-sse: it reads the body through httpx's byte, text and line
layers, an async generator each, for every chunk; a model's stream comes one
small chunk per event, so those layers cost more than the provider's own
work (``tests/benchmarks/bench_anthropic.py`` measures both). This decoder
is one ``split`` per chunk and a loop over the event's lines.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, NamedTuple

import seamkit
from seamkit.stream import ToolArgumentsDelta

if TYPE_CHECKING:
    import httpx

__all__ = [
    "EventDecoder",
    "ServerEvent",
    "as_streamed",
    "body_chunks",
    "is_event_stream",
    "server_events",
]

_BOM = b"\xef\xbb\xbf"


class ServerEvent(NamedTuple):
    """One dispatched event: its ``event`` type (``"message"`` when the
    stream names none) and its ``data``, its ``data:`` lines joined by
    newlines (an event with no ``data:`` line is not dispatched)."""

    event: str
    data: str


_made = tuple.__new__
"""Makes a `ServerEvent` from its two fields at C speed (the class's own
``__new__`` is a Python function)."""


def _event(block: bytes) -> ServerEvent | None:
    """The event ``block`` (its lines, without the blank line that ends it)
    dispatches, if any. ``id`` and ``retry`` are a reconnecting client's
    business; comments and unknown fields are skipped."""
    # the usual shapes first: "event: T" then one "data: D" line, or that line alone
    if block[:7] == b"event: ":
        end = block.find(b"\n")
        if end > 7 and block[end + 1 : end + 7] == b"data: " and block.find(b"\n", end + 1) < 0:
            named = block[7:end].decode("utf-8", "replace")
            return _made(ServerEvent, (named, block[end + 7 :].decode("utf-8", "replace")))
    elif block[:6] == b"data: " and block.find(b"\n") < 0:
        return _made(ServerEvent, ("message", block[6:].decode("utf-8", "replace")))
    kind = b""
    data: list[bytes] = []
    for line in block.split(b"\n"):
        name, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            data.append(value)
        elif name == b"event":
            kind = value
    if not data:
        return None
    text = data[0] if len(data) == 1 else b"\n".join(data)
    return _made(
        ServerEvent,
        (kind.decode("utf-8", "replace") or "message", text.decode("utf-8", "replace")),
    )


class EventDecoder:
    """Turns a stream's bytes into its events: `feed` each chunk as it
    arrives, in order. Lines may end in CRLF, LF or CR, split anywhere across
    chunks; a byte-order mark at the start is dropped. What no blank line
    has ended yet waits for the next chunk: a stream cut there dispatches
    nothing more (the standard's rule)."""

    __slots__ = ("_after_cr", "_head", "_pending")

    def __init__(self) -> None:
        self._head: bytes | None = b""  # the first bytes, until a byte-order mark is ruled out
        self._pending: list[bytes] = []  # LF-ended pieces of lines no blank line has ended
        self._after_cr = False  # the last chunk ended in CR: a LF next is its pair

    def feed(self, chunk: bytes) -> list[ServerEvent]:
        """The events ``chunk`` completes, in order. Its cost is linear in
        the bytes fed, however an event is cut (the pieces of an unfinished
        one are joined once, when it ends)."""
        if self._head is not None:
            chunk = self._head + chunk
            if _BOM.startswith(chunk):  # too short to tell yet (or empty)
                self._head = chunk
                return []
            self._head = None
            if chunk.startswith(_BOM):
                chunk = chunk[len(_BOM) :]
        if self._after_cr or b"\r" in chunk:  # rare: lines that end in CR
            chunk = self._lf_ended(chunk)
        pending = self._pending
        if pending:
            if b"\n\n" not in chunk and not (pending[-1][-1:] == b"\n" == chunk[:1]):
                if chunk:
                    pending.append(chunk)  # no blank line yet
                return []
            pending.append(chunk)
            chunk = b"".join(pending)
            pending.clear()
        blocks = chunk.split(b"\n\n")
        rest = blocks.pop()
        if rest:
            pending.append(rest)
        if len(blocks) == 1:  # the usual chunk: one event, whole
            event = _event(blocks[0])
            return [] if event is None else [event]
        return [event for event in map(_event, blocks) if event is not None]

    def _lf_ended(self, chunk: bytes) -> bytes:
        """``chunk`` with every line ending made LF; a CR that ends it may
        be half of a CRLF, whose LF the next chunk then begins with."""
        if not chunk:
            return chunk
        if self._after_cr and chunk[:1] == b"\n":
            chunk = chunk[1:]
        self._after_cr = chunk[-1:] == b"\r"
        return chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")


def body_chunks(response: httpx.Response) -> AsyncIterator[bytes]:
    """``response``'s body as it arrives: its raw bytes, or, when the server
    sent it with a ``content-encoding``, those bytes decoded by httpx."""
    encoding = response.headers.get("content-encoding", "").strip().lower()
    return response.aiter_bytes() if encoding not in ("", "identity") else response.aiter_raw()


async def server_events(response: httpx.Response) -> AsyncIterator[ServerEvent]:
    """``response``'s events as they arrive (`body_chunks` through an
    `EventDecoder`)."""
    decoder = EventDecoder()
    async for chunk in body_chunks(response):
        for event in decoder.feed(chunk):
            yield event


def is_event_stream(response: httpx.Response) -> bool:
    """Whether ``response`` is a stream of server-sent events (its
    ``content-type``), not a whole answer."""
    kind: str = response.headers.get("content-type", "")
    return kind.startswith("text/event-stream")


def as_streamed(turn: seamkit.ModelTurn) -> list[str | ToolArgumentsDelta | seamkit.ModelTurn]:
    """What a model's ``stream`` yields for ``turn`` when the server sent it
    whole (ignoring ``stream: true``): its text, each call's arguments as one
    fragment, then the turn."""
    items: list[str | ToolArgumentsDelta | seamkit.ModelTurn] = []
    if turn.message.text:
        items.append(turn.message.text)
    for index, call in enumerate(turn.message.tool_calls or ()):
        function = call.function
        items.append(ToolArgumentsDelta(index, call.id, function.name, function.arguments))
    items.append(turn)
    return items
