"""`Timeline`: a run observer that records when each part of a run happened
and how long it took, and draws it as text (``seamkit run --trace``).

It needs nothing but the run-observer events (`seamkit.stream`): the run,
its turns, each model call, each tool call (concurrent ones overlap) and each
event whose hooks ran, as spans with offsets from the run's start; and, as
instants, each call that began to wait for approval, each decision applied
(and who made it), each call a crash left in doubt, each answer a declared
output did not accept (`seamkit.stream.OutputRetry`), and a run continued
from its journal.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Literal

from ._approval import Reject
from ._context import HookContext
from ._events import hookimpl
from ._types import Failed, Usage
from .stream import (
    CallDecided,
    CallInDoubt,
    CallSuspended,
    HookFired,
    JournalReplayed,
    ModelCallEnded,
    ModelCallStarted,
    ObservedEvent,
    OutputRetry,
    RunFinished,
    RunStarted,
    ToolExecutionEnd,
    ToolExecutionStart,
)

__all__ = ["RunTrace", "Span", "SpanKind", "Timeline"]

SpanKind = Literal[
    "run",
    "turn",
    "model",
    "tool",
    "hook",
    "approval",
    "decision",
    "in_doubt",
    "output_retry",
    "journal",
]
"""What a span times: the run, one turn, a model call, a tool call, or the
hooks of one event; or marks (an instant): a call that began to wait for
approval, a decision applied to one, a call a crash left in doubt, an answer
the declared output did not accept, the run continuing from its journal."""

_DECIDED = {"approve": "approved", "reject": "rejected", "edit": "edited"}

_RUN_LEVEL_EVENTS = frozenset({"on_request_start", "on_completion"})
_MIN_WIDTH = 40
_DURATION_WIDTH = 10  # " 999.99 ms"


@dataclass(frozen=True, slots=True)
class Span:
    """One timed part of a run; ``start`` and ``end`` are seconds from the
    run's start, ``duration`` the seconds the kernel measured (the event's own
    ``duration`` where it has one, else ``end - start``).

    ``name`` is the agent's name (run), ``"turn N"`` (turn), the model's name
    (model, ``"model"`` when unknown), the tool's name (tool, approval,
    decision, in_doubt), the event's name (hook) or ``"journal"``. ``error``
    says what went wrong, if anything: the run's or the model call's error
    text, or ``"raised"``, ``"error"`` or ``"cancelled"`` for a tool call,
    ``"in doubt"`` for a call a crash cut short. ``usage`` is a model call's
    token counts, ``call_id`` a tool call's id, ``hooks`` and ``flow`` the
    hooks that ran at an event and what they decided (``decided_by`` the
    hook that decided it). For an approval, ``detail`` is the reason shown
    and ``decided_by`` the hook that asked (``None``: the tool's own rule);
    for a decision, ``flow`` is its action (``approve``, ``reject``,
    ``edit``), ``decided_by`` who decided (an API key's id, ``cli``) and
    ``detail`` a rejection's reason; for an output retry, ``detail`` is what
    was wrong with the answer (its errors, through the run's redactor); for
    the journal, ``detail`` says how
    many model turns it reused (not asked again) and tool results it gave
    back. Marks take no time.
    """

    kind: SpanKind
    name: str
    start: float
    end: float
    duration: float
    depth: int
    turn: int = 0
    error: str | None = None
    usage: Usage | None = None
    call_id: str | None = None
    hooks: tuple[str, ...] = ()
    flow: str | None = None
    decided_by: str | None = None
    detail: str | None = None

    def label(self, *, ascii: bool = False) -> str:
        """The span's one-line description, as `Timeline.render` shows it (a
        hook's flow only when it changed something)."""
        dot, arrow, cross = (" - ", "->", "x") if ascii else (" · ", "→", "✗")
        if self.kind == "run":
            text = "run"
        elif self.kind == "turn":
            text = self.name
        elif self.kind == "model":
            text = "model call" if self.name == "model" else f"model {self.name}"
            usage = self.usage
            if usage is not None and usage.total_tokens and self.error is None:
                text += f"{dot}{usage.input_tokens}/{usage.output_tokens} tok"
                if usage.cache_read_tokens:
                    text += f" ({usage.cache_read_tokens} cached)"
        elif self.kind == "tool":
            text = f"tool {self.name}"
        elif self.kind == "approval":
            text = f"approval asked: {self.name}"
            if self.detail:
                text += f"{dot}{self.detail}"
        elif self.kind == "decision":
            text = f"{_DECIDED.get(self.flow or '', self.flow)} {self.name}"
            if self.decided_by:
                text += f" (by {self.decided_by})"
            if self.detail:
                text += f": {self.detail}"
        elif self.kind == "in_doubt":
            text = f"call {self.name}"  # its error says: in doubt
        elif self.kind == "output_retry":
            text = "answer not accepted"
            if self.detail:
                text += f": {self.detail}"
        elif self.kind == "journal":
            text = "journal replayed"
            if self.detail:
                text += f"{dot}{self.detail}"
        else:
            text = f"hook {self.name}: {', '.join(self.hooks)}"
            if self.flow not in (None, "Continue"):  # Continue: nothing changed
                several = self.decided_by and len(self.hooks) > 1
                by = f" ({self.decided_by})" if several else ""
                text += f" {arrow} {self.flow}{by}"
        if self.error is not None:
            text += f" {cross} {' '.join(self.error.split())}"
        return text


@dataclass(frozen=True, slots=True)
class RunTrace:
    """The spans of one run, in tree order: the run first, then each turn
    followed by its model call, tool calls and hooks, with the hooks of
    ``on_request_start`` and ``on_completion`` beside the turns.

    ``outcome`` is the run's outcome kind (``None`` while it runs).
    """

    run_id: str
    agent_name: str
    session: str | None
    outcome: str | None
    spans: tuple[Span, ...]

    @property
    def duration(self) -> float:
        """The run's seconds (up to now, while it runs)."""
        return self.spans[0].duration if self.spans else 0.0

    def render(self, width: int = 80, *, ascii: bool = False) -> str:
        """This run as text lines of at most ``width`` (at least 40) columns:
        a header, then one line per span with its bar and duration."""
        width = max(width, _MIN_WIDTH)
        counts = [
            _plural(sum(s.kind == kind for s in self.spans), what)
            for kind, what in (("model", "model call"), ("tool", "tool call"))
        ]
        dot = " - " if ascii else " · "
        session = f"{dot}session {self.session}" if self.session else ""
        head = (
            f"{self.agent_name}{dot}run {self.run_id[:8]}{session}{dot}"
            f"{self.outcome or 'running'}{dot}{dot.join(counts)}"
        )
        lines = [_fit(head, width, ascii)]
        bar_width = max(8, width * 3 // 8)
        label_width = width - _DURATION_WIDTH - bar_width - 1
        total = self.duration if self.duration > 0 else 1e-9
        for span in self.spans:
            label = _fit("  " * span.depth + span.label(ascii=ascii), label_width, ascii)
            bar = _bar(span.start / total, span.end / total, bar_width, ascii)
            took = _format_duration(span.duration, ascii)
            lines.append(f"{label:<{label_width}} {bar}{took:>{_DURATION_WIDTH}}")
        return "\n".join(lines)


@dataclass(slots=True)
class _Open:
    """A span still being recorded (its start and what is known so far)."""

    kind: SpanKind
    name: str
    start: float
    turn: int
    call_id: str | None = None
    usage: Usage | None = None
    error: str | None = None


class _Recording:
    """What a `Timeline` keeps about one run while it happens."""

    def __init__(self, started: RunStarted | None, now: float, run_id: str) -> None:
        self.t0 = now
        self.run_id = started.run_id if started else run_id
        self.agent_name = started.agent_name if started else "agent"
        self.session = started.session if started else None
        self.end: float | None = None
        self.outcome: str | None = None
        self.error: str | None = None
        self.closed: list[Span] = []
        self.models: list[_Open] = []
        self.tools: dict[str, _Open] = {}
        self.turns: dict[int, list[float]] = {}  # turn -> [first, last] offsets
        self.trace: RunTrace | None = None

    def touch(self, turn: int, first: float, last: float) -> None:
        if turn < 1:
            return
        seen = self.turns.get(turn)
        if seen is None:
            self.turns[turn] = [first, last]
        else:
            seen[0], seen[1] = min(seen[0], first), max(seen[1], last)

    def snapshot(self, now: float) -> RunTrace:
        """The run's spans so far; spans still open end at ``now``."""
        if self.trace is not None:
            return self.trace
        end = self.end if self.end is not None else now - self.t0
        children = list(self.closed)
        for item in [*self.models, *self.tools.values()]:
            children.append(_close(item, end, end - item.start, depth=2))
        # What happens before a continued run's first turn (a decision, the
        # call it let run) stands beside the turns.
        children = [
            c if c.depth != 2 or c.turn in self.turns else replace(c, depth=1) for c in children
        ]
        turns = [
            Span("turn", f"turn {n}", first, last, last - first, depth=1, turn=n)
            for n, (first, last) in sorted(self.turns.items())
        ]
        top: list[tuple[float, int, list[Span]]] = []
        for order, turn in enumerate(turns):
            inner = sorted(
                (c for c in children if c.depth == 2 and c.turn == turn.turn), key=_start
            )
            top.append((turn.start, order, [turn, *inner]))
        for order, span in enumerate(c for c in children if c.depth == 1):
            top.append((span.start, len(turns) + order, [span]))
        top.sort(key=lambda item: (item[0], item[1]))
        run = Span("run", self.agent_name, 0.0, end, end, depth=0, error=self.error)
        spans = (run, *(s for _, _, group in top for s in group))
        trace = RunTrace(self.run_id, self.agent_name, self.session, self.outcome, spans)
        if self.end is not None:
            self.trace = trace
        return trace


def _start(span: Span) -> float:
    return span.start


def _close(item: _Open, end: float, duration: float, *, depth: int) -> Span:
    return Span(
        item.kind,
        item.name,
        item.start,
        end,
        duration,
        depth=depth,
        turn=item.turn,
        error=item.error,
        usage=item.usage,
        call_id=item.call_id,
    )


class Timeline:
    """A run observer that records each run's timeline: pass it as a hook
    (``Agent(..., hooks=[timeline])`` or ``Agent.load(app, hooks=[timeline])``),
    then read ``timeline.runs`` or print ``timeline.render(width=80)``.

    ``model_name`` labels model calls whose request does not name a model
    (``additional_params["model"]``). One timeline may watch any number of
    runs, concurrent ones too; ``clear()`` forgets them.
    """

    def __init__(self, *, model_name: str | None = None) -> None:
        self.model_name = model_name
        self._runs: dict[str, _Recording] = {}

    @property
    def runs(self) -> list[RunTrace]:
        """Every recorded run, in the order they started (one still running
        shows its open spans ending now)."""
        now = time.perf_counter()
        return [recording.snapshot(now) for recording in self._runs.values()]

    def clear(self) -> None:
        """Forget every recorded run."""
        self._runs.clear()

    def render(self, width: int = 80, *, ascii: bool = False) -> str:
        """Every recorded run as text no wider than ``width`` columns (at
        least 40): per run a header line, then one line per span, indented by
        nesting, with a bar placed on the run's duration and the span's
        duration right-aligned; ``ascii`` draws ``[==  ]`` bars."""
        return "\n\n".join(run.render(width, ascii=ascii) for run in self.runs)

    def __str__(self) -> str:
        return self.render()

    def __repr__(self) -> str:
        return f"Timeline({_plural(len(self._runs), 'run')})"

    @hookimpl
    def on_run_event(self, ctx: HookContext, event: ObservedEvent) -> None:
        """Record ``event`` of the run ``ctx.run_id``."""
        now = time.perf_counter()
        if isinstance(event, RunStarted):
            self._runs[ctx.run_id] = _Recording(event, now, ctx.run_id)
            return
        run = self._runs.get(ctx.run_id)
        if run is None:  # attached mid-run: time from the first event seen
            run = self._runs[ctx.run_id] = _Recording(None, now, ctx.run_id)
        at = now - run.t0
        if isinstance(event, ModelCallStarted):
            named = event.request.additional_params.get("model")
            name = named if isinstance(named, str) else self.model_name or "model"
            run.models.append(_Open("model", name, at, event.turn))
            run.touch(event.turn, at, at)
        elif isinstance(event, ModelCallEnded):
            item = next((m for m in run.models if m.turn == event.turn), None)
            if item is None:
                item = _Open("model", self.model_name or "model", at - event.duration, event.turn)
            else:
                run.models.remove(item)
            if event.model_turn is not None:
                item.usage = event.model_turn.usage
            item.error = event.error
            run.closed.append(_close(item, at, event.duration, depth=2))
            run.touch(event.turn, item.start, at)
        elif isinstance(event, ToolExecutionStart):
            run.tools[event.call.id] = _Open("tool", event.call.name, at, event.turn, event.call.id)
            run.touch(event.turn, at, at)
        elif isinstance(event, ToolExecutionEnd):
            item = run.tools.pop(event.call.id, None) or _Open(
                "tool", event.call.name, at - event.duration, event.turn, event.call.id
            )
            result = event.result
            item.error = (
                "cancelled"
                if result is None
                else "raised"
                if result.raised
                else "error"
                if result.is_error
                else None
            )
            run.closed.append(_close(item, at, event.duration, depth=2))
            run.touch(event.turn, item.start, at)
        elif isinstance(event, HookFired):
            start = max(0.0, at - event.duration)
            outside = event.event in _RUN_LEVEL_EVENTS or event.turn < 1
            hook = Span(
                "hook",
                event.event,
                start,
                at,
                event.duration,
                depth=1 if outside else 2,
                turn=event.turn,
                hooks=event.hooks,
                flow=event.flow,
                decided_by=event.hook,
            )
            run.closed.append(hook)
            if not outside:
                run.touch(event.turn, start, at)
        elif isinstance(event, CallSuspended | CallDecided):
            run.closed.append(_mark(event, at, ctx))
            run.touch(event.turn, at, at)
        elif isinstance(event, CallInDoubt):
            call = event.call
            run.closed.append(
                Span(
                    "in_doubt",
                    call.name,
                    at,
                    at,
                    0.0,
                    depth=2,
                    turn=event.turn,
                    error="in doubt",
                    call_id=call.id,
                )
            )
            run.touch(event.turn, at, at)
        elif isinstance(event, OutputRetry):
            if event.errors:  # none: the turn called tools instead of answering
                detail = ctx.redactor("; ".join(event.errors))
                run.closed.append(
                    Span(
                        "output_retry",
                        "output",
                        at,
                        at,
                        0.0,
                        depth=2,
                        turn=event.turn,
                        detail=detail,
                    )
                )
                run.touch(event.turn, at, at)
        elif isinstance(event, JournalReplayed):
            done = f"{_plural(event.turns, 'turn')}, {_plural(event.results, 'result')}"
            run.closed.append(Span("journal", "journal", at, at, 0.0, depth=1, detail=done))
        elif isinstance(event, RunFinished):
            outcome = event.result.outcome
            run.outcome = outcome.kind
            run.error = outcome.error if isinstance(outcome, Failed) else None
            run.end = at
        else:
            turn = getattr(event, "turn", 0)
            if isinstance(turn, int):
                run.touch(turn, at, at)


def _mark(event: CallSuspended | CallDecided, at: float, ctx: HookContext) -> Span:
    """The mark of a call that began to wait, or of a decision about one;
    what people wrote (a reason, a name) through the run's redactor."""
    pending = event.pending
    redact = ctx.redactor
    kind: SpanKind = "approval"
    flow: str | None = None
    by: str | None = pending.hook
    detail: str | None = pending.reason
    if isinstance(event, CallDecided):
        decision = pending.decision
        kind, by, detail = "decision", None, None
        if decision is not None:
            flow, by = decision.action, decision.by
            detail = decision.reason if isinstance(decision, Reject) else None
    return Span(
        kind,
        pending.tool,
        at,
        at,
        0.0,
        depth=2,
        turn=event.turn,
        call_id=pending.call_id,
        flow=flow,
        decided_by=None if by is None else redact(by),
        detail=None if detail is None else redact(detail),
    )


def _plural(count: int, what: str) -> str:
    return f"{count} {what}{'' if count == 1 else 's'}"


def _fit(text: str, width: int, ascii: bool) -> str:
    """``text`` cut to ``width`` characters, the cut marked."""
    if len(text) <= width:
        return text
    mark = "~" if ascii else "…"
    return text[: max(0, width - len(mark))] + mark


def _bar(start: float, end: float, width: int, ascii: bool) -> str:
    """A bar of ``width`` characters, filled from ``start`` to ``end``
    (fractions of the run); at least one cell, so an instant shows."""
    cells = width - 2
    first = min(cells - 1, max(0, math.floor(start * cells)))
    last = max(first + 1, min(cells, math.ceil(end * cells - 1e-9)))
    fill, left, right = ("=", "[", "]") if ascii else ("█", "▕", "▏")
    return left + " " * first + fill * (last - first) + " " * (cells - last) + right


def _format_duration(seconds: float, ascii: bool) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} {'us' if ascii else 'µs'}"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    if seconds < 100:
        return f"{seconds:.2f} s"
    return f"{seconds:.0f} s"
