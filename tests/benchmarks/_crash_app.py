"""The app the crash harness (``bench_crash``) runs in its child processes,
and the probes that kill a child at a chosen point.

The app: a scripted model playing four turns (three of tool calls, some in
one batch, then the answer), streamed, and three tools that count their
effects in a file (one line each, fsynced):

- ``refund`` (``effects="once"``, needs approval): its line names the call
  and the idempotency key it got;
- ``reserve`` (``effects="idempotent"``): the same, plus its attempt;
- ``lookup`` (``effects="none"``): the order it looked up.

A child process runs one *step* of a trial (`step`): it opens the trial's
session store (a SQLite path or a ``postgresql://`` URL) behind `Probed`,
starts the run (when the store holds nothing of it yet, as the parent
read it after the last step), or continues it (``agent.run(None, session=S)``, streamed), and
decides every call a suspension waits for, all at once or one call per run,
until the run completes. What it decides about each call was drawn by the
harness (`decision`, from the step's ``decisions``): approve (with the
digest shown), reject (with a reason) or edit (a smaller amount, with the
digest shown); an edit may first be tried with arguments the tool's schema
refuses (`bad_edit`), which the kernel must refuse with nothing recorded.
Everything it does goes to the trial's event log as JSON lines (``{"pid",
"ev", ...}``), written before the step moves on: the model's requests
(``ask``), what the store recorded (``j<kind>`` after ``journal_append``
returned, ``saved`` after ``save``), the decisions it sends (``decide``,
``refused``), the calls each outcome shows, and where it was killed. Marks
(`EventLog.mark`, written but not fsynced: a killed process's writes
survive it) say where it is in between: each point reached (``at``), a
journal write or a save under way (``jwrite``, ``saving``); from them the
harness tells where a kill at a random moment landed.

A kill point is a name and an occurrence (`Killer`): the child kills itself
with SIGKILL the ``n``-th time it reaches that point. The points (`POINTS`):

- ``stream``: mid model stream, after a text delta;
- ``turn_recorded``: after the journal holds a model turn;
- ``decision_before`` / ``decision_after``: before / after the journal
  holds a decision;
- ``tool_before:<tool>`` / ``tool_after:<tool>``: inside each tool, before
  and after its effect;
- ``finished_recorded``: after the journal holds a call's result, before
  the transcript is saved;
- ``save_before`` / ``save_after``: around the save of the transcript.

A step may also be killed by the zygote at a random moment instead
(`tests.benchmarks._crash_zygote`): then no point is named.

Only ``seamkit`` (and, for a PostgreSQL store, its plugin) is imported: the
zygote (`tests.benchmarks._crash_zygote`) imports this module once and forks
a child per step.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import os
import re
import signal
import sys
import time
import traceback
from collections import Counter
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import seamkit
from seamkit import (
    Approve,
    CallInfo,
    Decisions,
    Edit,
    JournalEntry,
    Message,
    ModelRequest,
    ModelTurn,
    PendingCall,
    Reject,
    ResumeError,
    RunResult,
    SessionStore,
    StoredSession,
    Suspended,
)
from seamkit.stream import RunFinished
from seamkit.testing import ScriptedModel

__all__ = [
    "FINAL",
    "MESSAGE",
    "POINTS",
    "SCRIPT",
    "TOOLS",
    "EventLog",
    "Killer",
    "Probed",
    "bad_edit",
    "child_main",
    "decision",
    "open_store",
    "steps_of",
]

MESSAGE = "Refund the late orders A, B and C."
FINAL = "step 4: all done"

SCRIPT: list[dict[str, Any]] = [
    {
        "text": "step 1",
        "deltas": ["step", " 1"],
        "tool_calls": [
            {"name": "lookup", "arguments": {"order": "A"}},
            {"name": "reserve", "arguments": {"item": "X"}},
        ],
    },
    {
        "text": "step 2",
        "deltas": ["step", " 2"],
        "tool_calls": [
            {"name": "refund", "arguments": {"order": "A", "amount": 30}},
            {"name": "reserve", "arguments": {"item": "Y"}},
            {"name": "lookup", "arguments": {"order": "B"}},
        ],
    },
    {
        "text": "step 3",
        "deltas": ["step", " 3"],
        "tool_calls": [
            {"name": "refund", "arguments": {"order": "B", "amount": 70}},
            {"name": "refund", "arguments": {"order": "C", "amount": 5}},
        ],
    },
    {"text": FINAL, "deltas": ["step", " 4", ": all", " done"]},
]
"""The model's turns; a turn's text names its index (``step K``)."""

TOOLS = ("refund", "reserve", "lookup")
POINTS = (
    "stream",
    "turn_recorded",
    "decision_before",
    "decision_after",
    *(f"tool_{when}:{tool}" for tool in TOOLS for when in ("before", "after")),
    "finished_recorded",
    "save_before",
    "save_after",
)

_STEP = re.compile(r"\bstep (\d+)\b")


def steps_of(messages: Sequence[Message | Mapping[str, Any]]) -> list[int]:
    """The script's turn indices (``step K``) of the assistant messages of
    ``messages`` (models, or their JSON), in order."""
    out = []
    for m in messages:
        role = m.role if isinstance(m, Message) else m.get("role")
        text = m.text if isinstance(m, Message) else str(m.get("content") or "")
        if role == "assistant" and (found := _STEP.search(text or "")):
            out.append(int(found.group(1)))
    return out


# --- the probes -------------------------------------------------------------------


class EventLog:
    """An append-only file of JSON lines, each on disk before ``write`` returns."""

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.t0 = time.monotonic()

    def write(self, ev: str, **data: Any) -> None:
        self.mark(ev, **data)
        os.fsync(self.fd)

    def mark(self, ev: str, **data: Any) -> None:
        """A line written, not fsynced: it survives the process (a SIGKILL
        loses nothing the kernel holds), not the machine."""
        t = round((time.monotonic() - self.t0) * 1000, 2)  # ms since the log was opened
        line = json.dumps({"pid": os.getpid(), "ev": ev, "ms": t, **data}, separators=(",", ":"))
        os.write(self.fd, line.encode() + b"\n")


class Killer:
    """Kills this process with SIGKILL the ``n``-th time it reaches ``point``
    (never when ``point`` is ``None``); counts every point reached."""

    def __init__(self, log: EventLog, point: str | None, n: int) -> None:
        self.log = log
        self.point = point
        self.n = n
        self.reached: Counter[str] = Counter()

    def reach(self, point: str, **where: Any) -> None:
        """``point`` is reached (marked in the log, with ``where``: the call
        or the order a tool works on)."""
        self.reached[point] += 1
        self.log.mark("at", point=point, **where)
        if point == self.point and self.reached[point] == self.n:
            self.log.write("killed", point=point, n=self.n)
            os.kill(os.getpid(), signal.SIGKILL)


class _Probe:
    """What the tools and the model of this process report to."""

    log: EventLog
    effects: EventLog
    killer: Killer


PROBE = _Probe()


# --- the app ----------------------------------------------------------------------


@seamkit.tool(approval=True, effects="once")
def refund(order: str, amount: int, info: CallInfo) -> str:
    """Refund ``amount`` on ``order`` (acts once; needs approval)."""
    PROBE.killer.reach("tool_before:refund", call=info.call_id)
    PROBE.effects.write(
        "refund", call=info.call_id, key=info.idempotency_key, order=order, amount=amount
    )
    PROBE.killer.reach("tool_after:refund", call=info.call_id)
    return f"refunded {order} {amount}"


@seamkit.tool(effects="idempotent")
def reserve(item: str, info: CallInfo) -> str:
    """Reserve ``item`` (idempotent under its key)."""
    PROBE.killer.reach("tool_before:reserve", call=info.call_id)
    PROBE.effects.write(
        "reserve", call=info.call_id, key=info.idempotency_key, attempt=info.attempt, item=item
    )
    PROBE.killer.reach("tool_after:reserve", call=info.call_id)
    return f"reserved {item}"


@seamkit.tool(effects="none")
def lookup(order: str) -> str:
    """Look ``order`` up (no effect on the world)."""
    PROBE.killer.reach("tool_before:lookup", order=order)
    PROBE.effects.write("lookup", order=order)
    PROBE.killer.reach("tool_after:lookup", order=order)
    return f"order {order}: late"


class CountingModel(ScriptedModel):
    """The scripted model, logging each request it answers (``ask`` with the
    turn's index) and a kill point after each streamed text delta."""

    def _asked(self, request: ModelRequest) -> None:
        turn = 1
        for m in reversed(request.messages):
            if m.role == "user":
                break
            turn += m.role == "assistant"
        PROBE.log.write("ask", turn=turn)

    async def complete(self, request: ModelRequest) -> ModelTurn:
        self._asked(request)
        return await super().complete(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ModelTurn]:
        self._asked(request)
        async for item in super().stream(request):
            yield item
            if isinstance(item, str):
                PROBE.killer.reach("stream")


class Probed:
    """A session store with its journal, passing every call through and
    logging what was recorded once the store returned (with the kill
    points around decisions, recorded turns and results, and the save)."""

    def __init__(self, inner: Any, log: EventLog, killer: Killer) -> None:
        self.inner = inner
        self.log = log
        self.killer = killer

    @property
    def location(self) -> str:
        return str(getattr(self.inner, "location", repr(self.inner)))

    async def load(self, name: str) -> StoredSession | None:
        loaded: StoredSession | None = await self.inner.load(name)
        return loaded

    async def save(
        self, name: str, transcript: Sequence[Message], state: Mapping[str, Any]
    ) -> None:
        self.killer.reach("save_before")
        pending = [p["call_id"] for p in state.get("seamkit.pending", ())]
        self.log.mark("saving", messages=len(transcript), pending=pending)
        await self.inner.save(name, transcript, state)
        self.log.write("saved", steps=steps_of(transcript), pending=pending)
        self.killer.reach("save_after")

    def lock(self, name: str, wait_seconds: float) -> Any:
        return self.inner.lock(name, wait_seconds)

    async def list(self) -> list[str]:
        names: list[str] = await self.inner.list()
        return names

    async def delete(self, name: str) -> None:
        await self.inner.delete(name)

    async def journal_read(self, name: str) -> builtins.list[JournalEntry]:
        entries: builtins.list[JournalEntry] = await self.inner.journal_read(name)
        return entries

    async def journal_append(self, name: str, entries: Sequence[JournalEntry]) -> None:
        kinds = {e.kind for e in entries}
        if "decided" in kinds:
            self.killer.reach("decision_before")
        self.log.mark("jwrite", entries=[[e.kind, e.call_id] for e in entries])
        await self.inner.journal_append(name, entries)
        for e in entries:
            data: dict[str, Any] = {"call": e.call_id}
            if e.kind in ("start", "turn"):
                data["steps"] = steps_of(e.data.get("messages", ()))
            elif e.kind == "started":
                data.update(tool=e.data.get("tool"), key=e.data.get("key"))
            elif e.kind == "finished":
                data["content"] = e.data.get("content")
            elif e.kind == "decided":
                data["decision"] = e.data.get("decision")
            self.log.write(f"j{e.kind}", **data)
        if "turn" in kinds:
            self.killer.reach("turn_recorded")
        if "finished" in kinds:
            self.killer.reach("finished_recorded")
        if "decided" in kinds:
            self.killer.reach("decision_after")


def open_store(spec: str) -> Any:
    """The session store ``spec`` names: a ``postgresql://`` URL (the
    ``seamkit-sessions-postgres`` plugin) or a SQLite path."""
    if spec.startswith(("postgresql://", "postgres://")):
        from seamkit_sessions_postgres import (  # lazy: only PostgreSQL trials need it
            PostgresSessionStore,
        )

        return PostgresSessionStore(spec)
    return seamkit.SQLiteSessionStore(spec)


def build_agent(concurrency: int) -> seamkit.Agent:
    """The app: the scripted model and the three tools."""
    return seamkit.Agent(
        model=CountingModel(SCRIPT, each_run=True),
        tools=[refund, reserve, lookup],
        settings={"tool_concurrency": concurrency},
        plugin_hooks=False,
    )


# --- one step ---------------------------------------------------------------------


async def _streamed(
    agent: seamkit.Agent, input: Any, session: str, store: SessionStore
) -> RunResult:
    """Run ``input`` on ``session``, streamed; its `RunResult`."""
    result: RunResult | None = None
    async for event in agent.stream(input, session=session, store=store):
        if isinstance(event, RunFinished):
            result = event.result
    assert result is not None
    return result


def _report(log: EventLog, result: RunResult) -> None:
    for d in result.diagnostics:
        if d.code == "in_doubt":
            log.write("diagnostic", code=d.code, message=d.message)
    pending = []
    if isinstance(result.outcome, Suspended):
        pending = [
            {
                "call": p.call_id,
                "tool": p.tool,
                "arguments": p.arguments,
                "digest": p.digest,
                "decided": p.decision is not None,
            }
            for p in result.outcome.pending
        ]
    log.write("outcome", kind=result.outcome.kind, pending=pending)


def decision(spec: Mapping[str, Any], pending: PendingCall) -> Approve | Reject | Edit:
    """The decision ``spec`` draws for ``pending``: ``{"action": "approve"}``,
    ``{"action": "reject", "reason": ...}`` or ``{"action": "edit",
    "arguments": {...}}`` (an approval and an edit carry the digest shown)."""
    action = spec.get("action", "approve")
    if action == "reject":
        return Reject(str(spec["reason"]))
    if action == "edit":
        return Edit(dict(spec["arguments"]), digest=pending.digest)
    return Approve(digest=pending.digest)


def bad_edit(spec: Mapping[str, Any], pending: PendingCall) -> Edit | None:
    """The edit the tool's schema must refuse that ``spec`` tries first, if any."""
    bad = spec.get("bad")
    return Edit(dict(bad), digest=pending.digest) if spec.get("action") == "edit" and bad else None


async def _refuse(
    agent: seamkit.Agent, log: EventLog, session: str, store: SessionStore, edit: Edit, call: str
) -> None:
    """Send ``edit`` (arguments the tool refuses) for ``call``: it must be
    refused with nothing recorded; a `RuntimeError` (the step fails) if not."""
    try:
        await _streamed(agent, Decisions({call: edit}), session, store)
    except ResumeError as exc:
        log.write("refused", call=call, arguments=edit.arguments, message=exc.message)
        return
    log.write("accepted", call=call, arguments=edit.arguments)
    raise RuntimeError(f"the edit {edit.arguments!r} of {call} was not refused")


async def step(cfg: Mapping[str, Any]) -> None:
    """One step of a trial (see the module's docs); ``cfg`` holds ``store``,
    ``session``, ``dir`` (the trial's directory), ``kill`` (``[point, n]`` or
    ``None``), ``fresh`` (the store holds nothing of the session: the step
    starts the run; otherwise it continues it), ``concurrency``, ``decide``
    (``"all"`` or ``"one"``) and ``decisions`` (per call id, what `decision`
    and `bad_edit` read; a call it leaves out is approved)."""
    directory = Path(cfg["dir"])
    log = EventLog(directory / "events.jsonl")
    point, n = cfg["kill"] or (None, 0)
    killer = Killer(log, point, n)
    PROBE.log, PROBE.effects, PROBE.killer = log, EventLog(directory / "effects.jsonl"), killer
    log.write("begin", step=cfg["step"], kill=cfg["kill"])
    inner = open_store(cfg["store"])
    store = Probed(inner, log, killer)
    session = cfg["session"]
    drawn: Mapping[str, Mapping[str, Any]] = cfg.get("decisions") or {}
    agent = build_agent(cfg["concurrency"])
    try:
        fresh = bool(cfg["fresh"])
        log.write("input", fresh=fresh)
        try:
            result = await _streamed(agent, MESSAGE if fresh else None, session, store)
        except ResumeError as exc:  # the run ended; this step was not needed
            log.write("nothing", message=exc.message)
            return
        _report(log, result)
        while isinstance(result.outcome, Suspended):
            waiting = [p for p in result.outcome.pending if p.decision is None]
            chosen = waiting if cfg["decide"] == "all" else waiting[:1]
            if not chosen:
                raise RuntimeError(f"suspended with every call decided: {result.outcome!r}")
            specs = {p.call_id: drawn.get(p.call_id, {}) for p in chosen}
            for p in chosen:
                if (edit := bad_edit(specs[p.call_id], p)) is not None:
                    await _refuse(agent, log, session, store, edit, p.call_id)
            made = {p.call_id: decision(specs[p.call_id], p) for p in chosen}
            log.write(
                "decide",
                calls=list(made),
                decisions={c: {"action": d.action, **_fields(d)} for c, d in made.items()},
            )
            result = await _streamed(agent, Decisions(made), session, store)
            _report(log, result)
        log.write("reached", counts=dict(killer.reached))
    finally:
        close = getattr(inner, "aclose", None)
        if close is not None:
            await close()


def _fields(d: Approve | Reject | Edit) -> dict[str, Any]:
    """What a decision says beyond its action."""
    if isinstance(d, Reject):
        return {"reason": d.reason}
    if isinstance(d, Edit):
        return {"arguments": d.arguments, "digest": d.digest}
    return {"digest": d.digest}


def child_main(cfg: Mapping[str, Any]) -> int:
    """Run one step; the exit status (1 with a traceback on standard error
    when it failed: a step never fails unless the kernel did)."""
    try:
        asyncio.run(step(cfg))
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        return 1
    return 0
