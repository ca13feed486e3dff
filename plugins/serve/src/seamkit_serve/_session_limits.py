"""How large a client's session may grow: ``serve.max_session_messages`` and
``serve.max_session_bytes``, checked before a run against the stored
transcript and what the request adds to it, so that one session cannot grow
without bound (every request reads and writes its whole transcript)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import seamkit

from ._error import ApiError

__all__ = ["SessionLimits"]

Added = list[seamkit.Message] | seamkit.ClientResults
Take = Callable[[tuple[seamkit.Message, ...]], Added]
"""What a request adds to its session's stored transcript: messages, or the
results of the calls handed to the client (each a tool message)."""


def _size(messages: Sequence[seamkit.Message]) -> int:
    """The bytes ``messages`` take as stored (their JSON)."""
    return sum(len(m.model_dump_json().encode()) for m in messages)


@dataclass(frozen=True, slots=True)
class SessionLimits:
    """The most messages and bytes a session's transcript may hold."""

    messages: int
    bytes: int

    def bounded(self, take: Take) -> Take:
        """``take``, refusing what would make the session hold more than the
        limits allow: a 400 ``session_full`` that says which limit and what
        to do. The run adds its answer after this check, so a session may end
        a turn's answer over a limit; its next request is refused."""

        def within(stored: tuple[seamkit.Message, ...]) -> Added:
            given = take(stored)
            added = (
                given
                if isinstance(given, list)
                else [seamkit.Message.tool(i, r.content) for i, r in _results(given)]
            )
            count = len(stored) + len(added)
            if count > self.messages:
                self._full(f"{count} messages, over serve.max_session_messages={self.messages}")
            size = _size(stored) + _size(added)
            if size > self.bytes:
                self._full(f"{size} bytes, over serve.max_session_bytes={self.bytes}")
            return given

        return within

    @staticmethod
    def _full(why: str) -> None:
        raise ApiError(
            400,
            f"this session is full: with this request it would hold {why}. Start a new "
            "session (another X-Seamkit-Session), or ask the server's operator to raise "
            "the limit; nothing was run or stored",
            param="messages",
            code="session_full",
        )


def _results(given: seamkit.ClientResults) -> list[tuple[str, seamkit.ToolResult]]:
    """The client's results, each as the `seamkit.ToolResult` of its call."""
    return [(call_id, given.result(call_id)) for call_id in given.results]
