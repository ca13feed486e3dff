"""`RunJournal`: what one run writes to its session's journal, as it goes.

Each write is durable before the run moves on (the store's
``journal_append``), and ends before a cancellation goes on to the run's
save (`to_its_end`): the model's turn once it is received, before any of its
calls runs; a call with effects before its body runs (with the idempotency
key made for it) and its result as soon as its ``on_post_tool_use`` hooks
passed it (withheld, with the stop, when one of them stopped the run).
The run's first messages go with the first write.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic_core import to_json

from .._persistence._journal import JournalEntry, JournalStore
from .._secret import secret_json
from .._types import Failed, Message, Outcome, Terminated, ToolCall, ToolResult, Usage
from ._lifecycle import to_its_end

__all__ = ["RunJournal", "plain_arguments", "stopped_outcome"]


class RunJournal:
    """The journal writer of one run on one session."""

    __slots__ = ("_start", "_stored", "run_id", "session", "store", "upto")

    def __init__(
        self, store: JournalStore, session: str, run_id: str, stored: Sequence[Message]
    ) -> None:
        self.store = store
        self.session = session
        self.run_id = run_id
        self._stored = stored
        self.upto = len(stored)
        """How much of the run's transcript the journal (with the stored
        transcript) already holds."""
        self._start: JournalEntry | None = None

    def begin(self, transcript: Sequence[Message]) -> None:
        """The run's first messages, written with the first entry: the
        stored transcript's messages it begins with, and the rest."""
        stored = self._stored
        base = 0
        for mine, theirs in zip(transcript, stored, strict=False):
            if mine is not theirs and mine != theirs:
                break
            base += 1
        self._start = JournalEntry(
            run_id=self.run_id,
            kind="start",
            data={"base": base, "messages": _dump(transcript[base:])},
        )
        self.upto = len(transcript)

    async def _write(self, *entries: JournalEntry) -> None:
        if self._start is not None:
            entries = (self._start, *entries)
            self._start = None
        await to_its_end(self.store.journal_append(self.session, entries))

    async def turn(self, transcript: Sequence[Message], usage: Usage | None) -> None:
        """The model's turn was received (the transcript's last message),
        after the results the run committed since the last write."""
        data: dict[str, Any] = {"messages": _dump(transcript[self.upto :])}
        if usage is not None:
            data["usage"] = usage.model_dump(mode="json")
        self.upto = len(transcript)
        await self._write(JournalEntry(run_id=self.run_id, kind="turn", data=data))

    async def started(self, call: ToolCall, digest: str, key: str, attempt: int) -> None:
        """A call with effects is about to run, with idempotency key ``key``."""
        data = {
            "tool": call.name,
            "arguments": plain_arguments(call.arguments),
            "digest": digest,
            "key": key,
            "attempt": attempt,
        }
        entry = JournalEntry(run_id=self.run_id, kind="started", call_id=call.id, data=data)
        await self._write(entry)

    async def finished(
        self, call_id: str, result: ToolResult, stopped: Outcome | None = None
    ) -> None:
        """A call with effects returned, and its ``on_post_tool_use`` hooks
        made ``result`` of it (withheld, and ``stopped`` the outcome, when
        one of them stopped the run)."""
        data: dict[str, Any] = {
            "content": result.content,
            "is_error": result.is_error,
            "raised": result.raised,
        }
        if isinstance(stopped, Terminated):
            data["stopped"] = {
                "reason": stopped.reason,
                "hook": stopped.hook,
                "event": stopped.event,
            }
        elif isinstance(stopped, Failed):
            data["stopped"] = {"error": stopped.error}
        entry = JournalEntry(run_id=self.run_id, kind="finished", call_id=call_id, data=data)
        await self._write(entry)


def stopped_outcome(data: dict[str, Any]) -> Terminated | Failed:
    """The outcome a ``finished`` entry's ``stopped`` records."""
    if "error" in data:
        return Failed(error=str(data["error"]))
    hook, event = data.get("hook"), data.get("event")
    return Terminated(
        reason=str(data.get("reason", "")),
        hook=hook if isinstance(hook, str) else None,
        event=event if isinstance(event, str) else None,
    )


def _dump(messages: Sequence[Message]) -> list[dict[str, Any]]:
    return [m.model_dump(mode="json", exclude_none=True) for m in messages]


def plain_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """Arguments as the JSON they would be sent as, a `Secret` a hook wrote
    as ``***`` (what a journal entry and a pending call hold)."""
    try:
        value = json.loads(to_json(arguments, fallback=secret_json))
    except Exception:
        return {}
    return value if isinstance(value, dict) else {}
