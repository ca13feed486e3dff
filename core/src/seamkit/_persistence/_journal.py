"""The journal: what a run with a session records before it moves on, so that
a run a crash cut short continues without asking a model turn again or
running an effect twice.

A run appends entries as it goes (`JournalStore.journal_append`, durable
before it returns); the save at its end (the store's ``save``) replaces the
transcript and state and drops the journal in one transaction. A journal
that is not empty when a run starts is therefore the trace of a run that
never reached its save. Entries, in the order they were appended:

- ``start``: the run's first messages: ``{"base": n, "messages": [...]}``,
  the stored transcript's first ``n`` messages followed by ``messages``;
- ``turn``: ``{"messages": [...], "usage": {...}}``, the messages the run
  appended since the previous entry (the tool results of a batch, then the
  model's turn), written when the model's turn is received;
- ``started``: a call with effects is about to run: ``{"tool", "arguments",
  "digest", "key", "attempt"}``;
- ``finished``: it returned: ``{"content", "is_error", "raised"}``;
- ``decided``: a person's decision about a pending call, stored before the
  run acts on it: ``{"decision": {...}}``.

A `SessionStore` that keeps a journal implements these two methods beside
the protocol's, and its ``save`` drops the session's journal in the same
transaction; ``seamkit.testing.check_session_store`` is the conformance
test any store can run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["JournalEntry", "JournalKind", "JournalStore"]

JournalKind = Literal["start", "turn", "started", "finished", "decided"]


class JournalEntry(BaseModel):
    """One record of a run in progress (see the module's docs for ``data``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    kind: JournalKind
    call_id: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)


@runtime_checkable
class JournalStore(Protocol):
    """The journal methods of a `SessionStore` (whose ``save`` then drops
    the session's journal in the same transaction). A store without them
    still works: its runs are not journaled, so a crash mid-tool may run a
    call again (seamkit warns once)."""

    async def journal_append(self, name: str, entries: Sequence[JournalEntry]) -> None:
        """Append ``entries`` to the journal of ``name``, in order; written
        durably (fsynced, committed) before this returns. The kernel never
        cancels it: a cancellation of the run waits for it to end."""
        ...

    async def journal_read(self, name: str) -> list[JournalEntry]:
        """The journal of ``name`` in the order it was appended (``[]``: none)."""
        ...
