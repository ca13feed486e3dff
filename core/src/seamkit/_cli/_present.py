"""How ``seamkit run`` shows a run on a terminal, for it and for other front
ends that run an app elsewhere (``seamkit temporal run``): `RunPresenter`
takes the run's events and its `RunResult` from wherever they come and
prints what ``seamkit run`` prints, byte for byte, with the same exit status.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

import click

from .. import stream as S
from .._approval import PendingCall
from .._output import Output
from .._types import Cancelled, Failed, RunResult, Suspended, Terminated
from ._pending import DecideCommand, pending_json, print_pending, waiting

__all__ = ["RunPresenter"]

_EXIT = {
    "completed": 0,
    "terminated": 0,
    "max_turns": 1,
    "failed": 1,
    "cancelled": 130,
    "suspended": 3,
    "deferred": 3,  # (a run of the CLI has no client tools; an API run waits for its client)
}
"""The exit status of ``seamkit run`` and ``seamkit resume`` by the run's outcome."""


class RunPresenter:
    """What ``seamkit run`` prints for one run: the answer's text on standard
    output as it streams; hooks that fired, tool calls and notes, compactly,
    on standard error; then the summary line (or, with ``as_json``, the
    `RunResult` as JSON on standard output instead of all of it).

    A front end feeds it the run's events (`show`), then its result
    (`finish`), lists the calls of a suspended run (`print_pending`) and
    exits with `exit_code`::

        presenter = RunPresenter(as_json=False, output=declared, decide=command)
        async for event in events:
            presenter.show(event)
        presenter.finish(result)
        if isinstance(result.outcome, Suspended) and not as_json:
            presenter.print_pending(result.outcome.pending)
        sys.exit(presenter.exit_code(result))

    ``output`` is the run's declared output (`seamkit.Output`): its text is
    then not streamed, and the validated value is printed as JSON when the
    run completes. ``decide`` is the command line that decides a suspended
    run's calls (``None``: the run has no session). ``clock`` (seconds,
    monotonic; `time.monotonic` by default) times each tool call from its
    start to its result.
    """

    def __init__(
        self,
        *,
        as_json: bool = False,
        output: Output[Any] | None = None,
        decide: DecideCommand | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.as_json = as_json
        """Whether the run ends as one JSON document (``--json``): no streaming."""
        self.output = output
        """The run's declared output, if it has one."""
        self.decide = decide
        """The command line that decides a suspended run's calls."""
        self.finished = False
        """Whether the run's end (its summary line, or its JSON) is out."""
        self._clock = clock if clock is not None else time.monotonic
        self._open_line = False
        self._turn = 0
        self._turn_text = ""
        self._started: dict[str, float] = {}

    def note(self, text: str) -> None:
        """A line to standard error, after the text streamed so far (e.g. "live
        events unavailable: showing the result when it ends")."""
        if self._open_line:
            click.echo()
            self._open_line = False
        click.secho(text, err=True, dim=True)

    def show(self, event: S.ObservedEvent) -> None:
        """Show one of the run's events as it happens: `seamkit.stream.TextDelta`
        to standard output; hooks that fired, an answer not accepted, a tool
        call's start and its result (with the time it took), a decision
        applied, a call in doubt and a journal replayed as lines on standard
        error; `seamkit.stream.RunFinished` as `finish`. Other events show
        nothing, and with ``as_json`` only `seamkit.stream.RunFinished` does."""
        if isinstance(event, S.RunFinished):
            self.finish(event.result)
        elif not self.as_json and not self.finished:
            self._show(event)

    def _show(self, event: S.ObservedEvent) -> None:
        if isinstance(event, S.TextDelta):
            if self.output is not None:
                return  # the answer's JSON as it streams (rejected ones too): the value ends it
            if event.turn != self._turn:
                self._turn, self._turn_text = event.turn, ""
            self._turn_text += event.text
            click.echo(event.text, nl=False)
            self._open_line = True
        elif isinstance(event, S.HookFired):
            if event.event == "on_text_delta" and event.flow != "Terminate":
                return  # fired for each piece of text: only a stop is worth a line
            by = f" by {event.hook}" if event.hook else ""
            self.note(f"· {event.event}: {', '.join(event.hooks)} → {event.flow}{by}")
        elif isinstance(event, S.OutputRetry):
            if event.errors:  # (none: the turn called tools instead of answering)
                self.note(f"↻ answer not accepted: {_short('; '.join(event.errors))}")
        elif isinstance(event, S.ToolExecutionStart):
            self._started[event.call.id] = self._clock()
            self.note(f"→ {event.call.name}({_short(event.call.raw_arguments)})")
        elif isinstance(event, S.ToolCompleted):
            mark = "✗" if event.result.is_error else "←"
            began = self._started.pop(event.call.id, None)
            took = f" ({self._clock() - began:.2f}s)" if began is not None else ""
            self.note(f"{mark} {event.call.name}{took}: {_short(event.result.content)}")
        elif isinstance(event, S.JournalReplayed):
            turns, results = event.turns, event.results
            self.note(
                f"· continued from the journal: {turns} model turn{'' if turns == 1 else 's'} "
                f"reused, {results} tool result{'' if results == 1 else 's'} recovered"
            )
        elif isinstance(event, S.CallDecided) and event.pending.decision is not None:
            pending, decision = event.pending, event.pending.decision
            by = f" by {decision.by}" if decision.by else ""
            what = {"approve": "approved", "reject": "rejected", "edit": "edited"}
            self.note(f"· {pending.tool} [{pending.call_id}]: {what[decision.action]}{by}")
        elif isinstance(event, S.CallInDoubt):
            self.note(
                f"? {event.call.name} [{event.call.id}]: in doubt: the process stopped while "
                "it ran; not run again"
            )

    def finish(self, result: RunResult, *, cause: str | None = None) -> None:
        """The run's end, once (a second call does nothing): with ``as_json``
        the result as ``seamkit run --json`` prints it; else a completed run's
        declared output as JSON (or a terminal tool's result, which never
        streams; or the answer, when its text did not stream) and the summary
        line ``[outcome: detail · model calls · tokens]``. ``cause`` names
        the signal that cancelled the run (with ``as_json``, the summary
        line then follows the JSON on standard error)."""
        if self.finished:
            return
        self.finished = True
        if self.as_json:
            click.echo(self._json(result))
            if cause is not None:
                self.note(_summary(result, cause))
            return
        if self._open_line:
            click.echo()
            self._open_line = False
        if self.output is not None and result.outcome.kind == "completed":
            value = self.output.dump(result.output)
            click.echo(json.dumps(value, indent=2, ensure_ascii=False))
        elif result.outcome.kind == "completed" and result.output not in (None, self._turn_text):
            click.echo(result.output)  # a terminal tool's result: never streamed
        self.note(_summary(result, cause))

    def _json(self, result: RunResult) -> str:
        """``--json``'s output: the `RunResult` (with a declared output, its
        validated value as JSON under ``output`` and the model's final text
        under ``text``), and for a suspended run its calls under ``pending``
        with the commands that decide them."""
        output = self.output
        if not isinstance(result.outcome, Suspended) and output is None:
            return result.model_dump_json(indent=2, exclude_none=True)
        data = json.loads(result.model_dump_json(exclude_none=True))
        if output is not None:
            data["output"] = None if result.output is None else output.dump(result.output)
            data["text"] = result.text
        if isinstance(result.outcome, Suspended):
            data["pending"] = pending_json(result.outcome.pending, self.decide)
        return json.dumps(data, indent=2, ensure_ascii=False)

    def print_pending(self, pending: Sequence[PendingCall]) -> None:
        """The calls of a suspended run on standard output, each with the
        ``decide`` command lines that approve or reject it (without a
        ``decide``, why the command line cannot continue the run)."""
        print_pending(pending, self.decide)

    @staticmethod
    def exit_code(result: RunResult) -> int:
        """The exit status of ``seamkit run`` for ``result``: 0 completed or
        terminated by a hook, 1 failed or max_turns, 3 suspended or deferred,
        130 cancelled."""
        return _EXIT.get(result.outcome.kind, 1)


def _summary(result: RunResult, cause: str | None = None) -> str:
    """The run's last line: ``[outcome: detail · model calls · tokens]``;
    ``cause`` names the signal that cancelled it."""
    outcome = result.outcome
    detail = ""
    if isinstance(outcome, Terminated):
        by = f"hook {outcome.hook}" if outcome.hook else ""
        at = f"at {outcome.event}" if outcome.event else ""
        detail = f": {outcome.reason}" + (
            f" ({' '.join(w for w in (by, at) if w)})" if by or at else ""
        )
    elif isinstance(outcome, Failed):
        detail = f": {outcome.error}"
    elif isinstance(outcome, Cancelled) and cause:
        detail = f": {cause}"
    elif isinstance(outcome, Suspended):
        count = len(waiting(outcome.pending))
        detail = f": {count} call{' waits' if count == 1 else 's wait'} for a decision"
    usage = result.usage
    cached = f" ({usage.cache_note})" if usage.cache_note else ""
    return (
        f"[{outcome.kind}{detail} · {usage.requests} model call"
        f"{'' if usage.requests == 1 else 's'} · {usage.input_tokens} in{cached} / "
        f"{usage.output_tokens} out tokens]"
    )


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
