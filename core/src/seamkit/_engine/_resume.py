"""Continuing a run: after a suspension (decisions), after a crash (the
journal), or both.

A run that ends ``suspended`` keeps its pending calls beside its transcript:
in the session's state under a key hooks never see (`PENDING_KEY`), or,
without a session, in the signed string of ``RunResult.suspended``
(`seal` / `unseal`). `decide` checks a `Decisions` against the pending calls
and records it; `rebuild` turns a stored transcript and a journal back into
the transcript the run had reached. `Resume` is what the drive loop gets:
the calls the last model turn left open, and for each what is known (a
decision, a journaled start or result).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Annotated, Any

from pydantic import Field, TypeAdapter, ValidationError

from .._approval import Approve, Decision, Decisions, Edit, PendingCall, Reject, arguments_digest
from .._context import ActionContext
from .._errors import InvalidToolCall, ResumeError
from .._persistence._journal import JournalEntry
from .._persistence._sessions import CLIENT_TOOLS_KEY, PENDING_KEY
from .._secret import Secret, secret_json
from .._toolmap import ToolMap
from .._types import Message, MessageToolCall, ToolCall, ToolResult, ToolSpec, Usage

__all__ = [
    "PENDING_KEY",
    "Record",
    "Resume",
    "Sealed",
    "decide",
    "decided_entry",
    "open_calls",
    "rebuild",
    "seal",
    "unanswered",
    "unseal",
]


EXPIRED = "approval expired"
SEALED_DAYS = 7
"""How long a session-less suspended state can be resumed when
``settings.approval_expires_seconds`` does not say."""

_PENDING = TypeAdapter(list[PendingCall])
_SPECS = TypeAdapter(tuple[ToolSpec, ...])
_DECISION: TypeAdapter[Decision] = TypeAdapter(
    Annotated[Approve | Reject | Edit, Field(discriminator="action")]
)


def with_pending(
    state: Mapping[str, Any],
    pending: Sequence[PendingCall],
    client: Sequence[ToolSpec] | None = None,
) -> dict[str, Any]:
    """``state`` keeping ``pending`` and the suspended run's ``client``
    tools (both dropped when nothing is pending; ``None`` keeps the client
    tools ``state`` has)."""
    hidden = (PENDING_KEY, CLIENT_TOOLS_KEY)
    out = {k: v for k, v in state.items() if k not in hidden}
    if pending:
        out[PENDING_KEY] = _PENDING.dump_python(list(pending), mode="json")
        kept = (
            state.get(CLIENT_TOOLS_KEY)
            if client is None
            else _SPECS.dump_python(tuple(client), mode="json")
        )
        if kept:
            out[CLIENT_TOOLS_KEY] = kept
    return out


@dataclass(slots=True)
class Record:
    """What the journal knows of one call: its started entries and its result."""

    started: list[JournalEntry] = field(default_factory=list)
    finished: JournalEntry | None = None

    @property
    def key(self) -> str:
        """The idempotency key made for the call (its first start's)."""
        return str(self.started[0].data.get("key", "")) if self.started else ""


@dataclass(slots=True)
class Rebuilt:
    """A transcript rebuilt from a journal: the messages, the model turns it
    holds (never asked again), their usage, and what each call did."""

    transcript: list[Message]
    turns: int
    usage: Usage
    records: dict[str, Record]
    decided: dict[str, Decision]
    """Decisions stored before the run that acted on them stopped."""


def rebuild(saved: Sequence[Message], entries: Sequence[JournalEntry]) -> Rebuilt:
    """The transcript a run had reached when it stopped: ``saved`` (what the
    store holds) with what its journal says it appended."""
    transcript = list(saved)
    turns = 0
    usage = Usage()
    records: dict[str, Record] = {}
    decided: dict[str, Decision] = {}
    for entry in entries:
        data = entry.data
        if entry.kind == "decided" and entry.call_id is not None:
            decided[entry.call_id] = _DECISION.validate_python(data.get("decision"))
        elif entry.kind == "start":
            base = int(data.get("base", len(saved)))
            transcript = [*saved[:base], *_messages(data.get("messages"))]
        elif entry.kind == "turn":
            transcript.extend(_messages(data.get("messages")))
            turns += 1
            # What the calls of earlier turns did is in the messages now; the
            # records that matter are this turn's (a model may reuse call ids).
            records = {}
            if isinstance(data.get("usage"), dict):
                usage = usage + Usage.model_validate(data["usage"])
        elif entry.call_id is not None:
            record = records.setdefault(entry.call_id, Record())
            if entry.kind == "started":
                record.started.append(entry)
            else:
                record.finished = entry
    return Rebuilt(transcript, turns, usage, records, decided)


def decided_entry(run_id: str, pending: PendingCall) -> JournalEntry:
    """The journal entry that stores ``pending``'s decision."""
    assert pending.decision is not None
    return JournalEntry(
        run_id=run_id,
        kind="decided",
        call_id=pending.call_id,
        data={"decision": _DECISION.dump_python(pending.decision, mode="json")},
    )


def with_decided(
    pending: Sequence[PendingCall], decided: Mapping[str, Decision]
) -> list[PendingCall]:
    """``pending`` with the decisions a journal stored."""
    return [
        p.model_copy(update={"decision": decided[p.call_id]})
        if p.decision is None and p.call_id in decided
        else p
        for p in pending
    ]


def _messages(raw: object) -> list[Message]:
    return [Message.model_validate(m) for m in raw] if isinstance(raw, list) else []


def unanswered(transcript: Sequence[Message]) -> list[MessageToolCall]:
    """The calls of the last model turn that no tool message answers, when
    that turn is the transcript's last assistant message (``[]`` otherwise)."""
    answered: set[str] = set()
    for message in reversed(transcript):
        if message.role == "tool":
            answered.add(message.tool_call_id or "")
            continue
        if message.role == "assistant" and message.tool_calls:
            return [call for call in message.tool_calls if call.id not in answered]
        return []
    return []


def open_calls(transcript: Sequence[Message], max_depth: int) -> list[ToolCall]:
    """`unanswered` calls, parsed, each with its index in its turn."""
    calls = next((m.tool_calls or () for m in reversed(transcript) if m.role == "assistant"), ())
    index = {call.id: i for i, call in enumerate(calls)}
    return [
        ToolCall.from_message(call, index[call.id], max_depth=max_depth)
        for call in unanswered(transcript)
    ]


@dataclass(slots=True)
class Resume:
    """How the drive loop continues a run: the open calls of its last turn
    (run first, as a batch), the decisions about them, and the journal's
    records of them. ``finished`` means the last turn was the run's answer
    (it was recorded, but the run stopped before its save)."""

    transcript: list[Message]
    calls: list[ToolCall]
    pending: dict[str, PendingCall]
    records: dict[str, Record]
    turns: int = 0
    usage: Usage = field(default_factory=Usage)
    replayed: bool = False
    """The transcript came back from a journal."""
    waiting: bool = False
    """Some pending call has no decision yet: the run stays suspended."""
    results: dict[str, ToolResult] = field(default_factory=dict)
    """The client's results for the calls a deferred run handed back."""

    def approved(self, call_id: str) -> str | None:
        """The digest the decision on ``call_id`` approved, if it approved one."""
        pending = self.pending.get(call_id)
        if pending is None:
            return None
        decision = pending.decision
        if isinstance(decision, Approve):
            return pending.digest
        if isinstance(decision, Edit):
            return arguments_digest(pending.tool, decision.arguments)
        return None


def decide(
    pending: Sequence[PendingCall],
    decisions: Decisions,
    tools: ToolMap,
    *,
    session: str | None,
) -> list[PendingCall]:
    """``pending`` with ``decisions`` recorded; `ResumeError` (nothing
    recorded) for a decision about a call that is not pending or already
    decided, a digest that does not match, or edited arguments the tool
    refuses."""
    by_id = {p.call_id: p for p in pending}
    for call_id, decision in decisions.decisions.items():
        known = by_id.get(call_id)
        if known is None:
            waiting = ", ".join(by_id) or "none"
            raise ResumeError(
                f"no pending call {call_id!r} to decide (pending: {waiting})",
                session=session,
                call_id=call_id,
                hint="decide the calls the suspended run lists",
            )
        if known.decision is not None:
            raise ResumeError(
                f"call {call_id!r} is already decided ({known.decision.action})",
                session=session,
                call_id=call_id,
            )
        digest = getattr(decision, "digest", None)
        if digest is not None and digest != known.digest:
            raise ResumeError(
                f"the digest given for call {call_id!r} does not match its arguments "
                f"(pending digest {known.digest}); nothing was run",
                session=session,
                call_id=call_id,
                hint="approve what was shown: look at the pending call again",
            )
        if isinstance(decision, Edit):
            tool = tools.get(known.tool)
            if tool is None:
                raise ResumeError(
                    f"call {call_id!r}: tool {known.tool!r} is gone; it cannot be edited",
                    session=session,
                    call_id=call_id,
                )
            try:
                tool.validate(decision.arguments)
            except InvalidToolCall as exc:
                raise ResumeError(
                    f"the edited arguments of call {call_id!r} do not fit {known.tool!r}: "
                    f"{exc.message}",
                    session=session,
                    call_id=call_id,
                    hint="give arguments that match the tool's schema",
                ) from None
    out: list[PendingCall] = []
    for call in pending:
        chosen = decisions.decisions.get(call.call_id)
        if chosen is None and call.decision is None:
            chosen = decisions.rest
        if chosen is not None and chosen.by is None and decisions.by is not None:
            chosen = dataclasses.replace(chosen, by=decisions.by)
        out.append(call if chosen is None else call.model_copy(update={"decision": chosen}))
    return out


def expire(pending: Sequence[PendingCall], now: datetime, limit: float | None) -> list[PendingCall]:
    """``pending`` with every undecided call older than ``limit`` seconds
    rejected as ``approval expired``."""
    if limit is None:
        return list(pending)
    cutoff = now - timedelta(seconds=limit)
    return [
        p.model_copy(update={"decision": Reject(EXPIRED)})
        if p.decision is None and p.requested_at < cutoff
        else p
        for p in pending
    ]


# --- the session-less suspended state ------------------------------------------


@dataclass(frozen=True, slots=True)
class Sealed:
    """What a session-less suspended state holds."""

    transcript: tuple[Message, ...]
    state: dict[str, Any]
    pending: tuple[PendingCall, ...]


def context_digest(key: bytes, context: ActionContext) -> str:
    """A keyed digest of a run's context (secrets' values included, never
    shown): a suspended state resumes only under the context it was made in."""
    items = {name: context.get(name) for name in sorted(context)}
    text = json.dumps(items, sort_keys=True, separators=(",", ":"), default=lambda v: _reveal(v))
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


def _reveal(value: object) -> object:
    if isinstance(value, Secret):
        return ["secret", _reveal(value.get_secret_value())]
    try:
        return secret_json(value, reveal=True)
    except TypeError:
        return repr(value)


def seal(sealed: Sealed, key: bytes, context: ActionContext, expires: datetime) -> str:
    """The signed, JSON-safe string ``RunResult.suspended`` holds."""
    payload = {
        "v": 1,
        "transcript": [m.model_dump(mode="json", exclude_none=True) for m in sealed.transcript],
        "state": sealed.state,
        "pending": _PENDING.dump_python(list(sealed.pending), mode="json"),
        "context": context_digest(key, context),
        "expires": expires.isoformat(),
    }
    body = base64.urlsafe_b64encode(json.dumps(payload, separators=(",", ":")).encode()).decode()
    mac = hmac.new(key, body.encode(), hashlib.sha256).hexdigest()
    return f"{body}.{mac}"


def unseal(token: str, key: bytes | None, context: ActionContext, now: datetime) -> Sealed:
    """The state ``token`` holds; `ResumeError` when no key is set, the
    signature is wrong, the state expired or was made under another context."""
    if key is None:
        raise ResumeError(
            "a suspended run without a session can be resumed only with settings.state_key set",
            hint="set settings.state_key to a ${secret:...}, or run with a session",
        )
    body, _, mac = str(token).rpartition(".")
    expected = hmac.new(key, body.encode(), hashlib.sha256).hexdigest()
    if not body or not hmac.compare_digest(mac, expected):
        raise ResumeError(
            "the suspended state was not signed with this app's state_key (forged, "
            "damaged, or from another app); nothing was run",
        )
    try:
        payload = json.loads(base64.urlsafe_b64decode(body.encode()))
        expires = datetime.fromisoformat(payload["expires"])
        sealed = Sealed(
            tuple(_messages(payload["transcript"])),
            dict(payload["state"]),
            tuple(_PENDING.validate_python(payload["pending"])),
        )
        bound = str(payload["context"])
    except (ValueError, KeyError, TypeError, ValidationError) as exc:
        raise ResumeError(f"the suspended state cannot be read: {exc}") from None
    if now >= expires:
        raise ResumeError(
            f"the suspended state expired at {expires.isoformat()}; nothing was run",
        )
    if not hmac.compare_digest(bound, context_digest(key, context)):
        raise ResumeError(
            "the suspended state was made under another context; nothing was run",
            hint="resume a run with the context it was suspended with",
        )
    return sealed


def state_key(secret: Secret[str] | None) -> bytes | None:
    """The bytes of ``settings.state_key``, or ``None`` when it is not set."""
    if secret is None:
        return None
    value = secret.get_secret_value()
    return value.encode() if value else None
