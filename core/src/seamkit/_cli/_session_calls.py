"""What ``seamkit sessions show`` says about the work a session has left:
its *pending* calls (a suspended run's calls waiting for a decision, kept in
the session's state) and its *in-doubt* calls (journaled as started by a run
that stopped before their result was recorded: they may or may not have
acted), as text lines and as JSON."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._approval import Decision, PendingCall
from .._engine._resume import rebuild, with_decided
from .._persistence._journal import JournalEntry
from .._persistence._sessions import StoredSession
from ._pending import decided

__all__ = ["InDoubtCall", "SessionCalls", "session_calls"]


@dataclass(frozen=True, slots=True)
class InDoubtCall:
    """A call the journal shows started (``attempts`` times, the last by
    ``run_id``) with no result recorded."""

    call_id: str
    tool: str
    arguments: dict[str, Any]
    digest: str
    attempts: int
    run_id: str

    def as_json(self) -> dict[str, object]:
        return {
            "call_id": self.call_id,
            "tool": self.tool,
            "arguments": self.arguments,
            "digest": self.digest,
            "attempts": self.attempts,
            "run_id": self.run_id,
        }


@dataclass(frozen=True, slots=True)
class SessionCalls:
    """A session's pending and in-doubt calls, and how long its journal is
    (``journal`` entries: more than none means a run did not finish)."""

    pending: tuple[PendingCall, ...]
    in_doubt: tuple[InDoubtCall, ...]
    journal: int

    def as_json(self) -> dict[str, object]:
        return {
            "pending": [p.model_dump(mode="json") for p in self.pending],
            "in_doubt": [c.as_json() for c in self.in_doubt],
            "journal_entries": self.journal,
        }

    def lines(self, name: str, running: bool | None) -> list[str]:
        """The calls for a reader (``running``: whether a run holds the
        session now, ``None`` when that could not be found out)."""
        out: list[str] = []
        for call in self.pending:
            out.append(f"pending call {call.call_id}: {_call(call.tool, call.arguments)}")
            out.append(f"  digest: {call.digest}")
            out.append(f"  reason: {call.reason}")
            out.append(f"  asked by: {call.hook or 'the tool (its approval rule)'}")
            out.append(f"  asked at: {call.requested_at.isoformat(timespec='seconds')}")
            out.append(f"  decision: {_decision(call.decision)}")
        for doubt in self.in_doubt:
            times = "once" if doubt.attempts == 1 else f"{doubt.attempts} times"
            out.append(f"in-doubt call {doubt.call_id}: {_call(doubt.tool, doubt.arguments)}")
            out.append(f"  digest: {doubt.digest}")
            out.append(
                f"  started {times}, no result recorded: "
                + (
                    "a run holds the session now, so it may still be running"
                    if running
                    else "it may or may not have acted"
                )
            )
        if self.journal and not running:
            out.append(
                f"unfinished run: {self.journal} journal "
                f"entr{'y' if self.journal == 1 else 'ies'}; `seamkit resume APP --session "
                f"{name}` continues it"
            )
        if any(call.decision is None for call in self.pending):
            out.append(
                f"decide with `seamkit resume APP --session {name} --approve ID[@DIGEST] "
                "--reject ID[=REASON] --edit ID=JSON`"
            )
        return out


def session_calls(state: Mapping[str, Any], journal: Sequence[JournalEntry]) -> SessionCalls:
    """The pending calls of a session's ``state`` (with the decisions its
    ``journal`` stored) and the in-doubt calls of its ``journal``."""
    rebuilt = rebuild((), journal)
    pending = with_decided(StoredSession(state=state).pending, rebuilt.decided)
    in_doubt = [
        InDoubtCall(
            call_id=call_id,
            tool=str(record.started[-1].data.get("tool", "?")),
            arguments=_arguments(record.started[-1].data.get("arguments")),
            digest=str(record.started[-1].data.get("digest", "")),
            attempts=len(record.started),
            run_id=record.started[-1].run_id,
        )
        for call_id, record in rebuilt.records.items()
        if record.started and record.finished is None
    ]
    return SessionCalls(tuple(pending), tuple(in_doubt), len(journal))


def _arguments(raw: object) -> dict[str, Any]:
    return dict(raw) if isinstance(raw, dict) else {}


def _call(tool: str, arguments: Mapping[str, Any]) -> str:
    return f"{tool}({json.dumps(dict(arguments), ensure_ascii=False)})"


def _decision(decision: Decision | None) -> str:
    return "none yet" if decision is None else decided(decision)
