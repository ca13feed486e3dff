"""How a run ends: its cancellation and interruption rules, as one state machine.

A run is always in one `Phase` (running, completing, completing_cancelled,
cut, reported, saving, ended) and moves only by the transitions of
`TRANSITIONS`, each a method of `Lifecycle` named after its `Move`. The
guide's "When a run will not stop" shows the same table with what each move
means (a test checks that they agree), and ``tests/core/test_run_lifecycle.py``
has one test per transition. In short:

- a first cancellation lets ``on_completion`` finish; a second one, or its
  deadline (``completion_timeout_seconds``), cuts it, and the cut hooks get
  `CANCEL_GRACE_SECONDS` to clean up;
- a KeyboardInterrupt or SystemExit from a hook, a tool or the model ends the
  run as ``cancelled``, like a first cancellation; ``on_completion`` fires;
- a session's save ends before its lock is released, and is never cut short;
- cancellations, interrupts and a failed save are kept, never lost: once the
  run has ended it raises, in this order of precedence, the `SessionNotSaved`
  of a failed save, the interrupt, the cancellation.

``save`` is allowed from every phase before ``saving``: when an exception
leaves the drive loop early (a KeyboardInterrupt that a signal handler raised
between two lines, a bug), the session is saved all the same.

`stops_the_run` says which exceptions out of a hook, a tool or the model are
such moves (a cancellation, an interrupt) rather than a failure.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Awaitable
from typing import Any, TypeVar

from .._errors import SessionNotSaved

__all__ = [
    "CANCEL_GRACE_SECONDS",
    "INTERRUPTS",
    "TRANSITIONS",
    "Interrupt",
    "Lifecycle",
    "Move",
    "Phase",
    "stops_the_run",
    "to_its_end",
]

log = logging.getLogger("seamkit.run")

T = TypeVar("T")

Interrupt = KeyboardInterrupt | SystemExit
"""What stops a run and is re-raised after it: the process is asked to stop."""

INTERRUPTS = (KeyboardInterrupt, SystemExit)
"""`Interrupt`, for ``except`` clauses."""

CANCEL_GRACE_SECONDS = 1.0
"""How long on_completion hooks that were cut short (by the deadline or a
second cancellation) get to finish their clean-up before the run stops
waiting for them."""


class Phase(enum.StrEnum):
    """Where a run is, as far as stopping it goes."""

    RUNNING = "running"
    """The turns: model calls, tool batches and their hooks."""
    COMPLETING = "completing"
    """The on_completion hooks run; no cancellation yet: the next one lets them finish."""
    COMPLETING_CANCELLED = "completing_cancelled"
    """The on_completion hooks run for a run that was cancelled or
    interrupted, or after a first cancellation: the next one cuts them."""
    CUT = "cut"
    """The on_completion hooks were cancelled (the deadline, a second
    cancellation) and get `CANCEL_GRACE_SECONDS` to clean up."""
    REPORTED = "reported"
    """The result is final and `RunFinished` emitted."""
    SAVING = "saving"
    """The session is being saved, under its lock."""
    ENDED = "ended"
    """Over: the lock is released and what the run must raise is raised."""


class Move(enum.StrEnum):
    """What happens to a run: the transitions' names."""

    FINISH = "finish"
    TIME_OUT = "time_out"
    CANCEL = "cancel"
    INTERRUPT = "interrupt"
    DEADLINE = "deadline"
    COMPLETE = "complete"
    ABANDON = "abandon"
    SAVE = "save"
    SAVED = "saved"
    END = "end"


_RUNNING, _COMPLETING, _STOPPING = Phase.RUNNING, Phase.COMPLETING, Phase.COMPLETING_CANCELLED
_EARLY = (_RUNNING, _COMPLETING, _STOPPING, Phase.CUT, Phase.REPORTED)

TRANSITIONS: dict[tuple[Phase, Move], Phase] = {
    (_RUNNING, Move.FINISH): _COMPLETING,
    (_RUNNING, Move.TIME_OUT): _COMPLETING,
    (_RUNNING, Move.CANCEL): _STOPPING,
    (_RUNNING, Move.INTERRUPT): _STOPPING,
    (_COMPLETING, Move.CANCEL): _STOPPING,
    (_STOPPING, Move.CANCEL): Phase.CUT,
    (_COMPLETING, Move.DEADLINE): Phase.CUT,
    (_STOPPING, Move.DEADLINE): Phase.CUT,
    (_COMPLETING, Move.INTERRUPT): _COMPLETING,
    (_STOPPING, Move.INTERRUPT): _STOPPING,
    (Phase.CUT, Move.INTERRUPT): Phase.CUT,
    (_COMPLETING, Move.COMPLETE): Phase.REPORTED,
    (_STOPPING, Move.COMPLETE): Phase.REPORTED,
    (Phase.CUT, Move.COMPLETE): Phase.REPORTED,
    (Phase.CUT, Move.CANCEL): Phase.CUT,
    (Phase.CUT, Move.ABANDON): Phase.REPORTED,
    **{(phase, Move.SAVE): Phase.SAVING for phase in _EARLY},
    (Phase.SAVING, Move.CANCEL): Phase.SAVING,
    (Phase.SAVING, Move.SAVED): Phase.ENDED,
    (Phase.REPORTED, Move.END): Phase.ENDED,
}
"""Every transition a run can make: ``(phase, move) -> next phase``."""


class Lifecycle:
    """One run's phase, and the cancellation, interrupt and failed save it
    keeps to raise once it has ended. Each method is a transition of
    `TRANSITIONS`; one that the table does not have is a kernel bug
    (`RuntimeError`)."""

    __slots__ = ("_debug", "cancellation", "interruption", "not_saved", "phase", "run_id")

    def __init__(self, run_id: str = "") -> None:
        self.run_id = run_id
        self.phase = Phase.RUNNING
        self.cancellation: asyncio.CancelledError | None = None
        """The first cancellation of the run, re-raised at the end."""
        self.interruption: Interrupt | None = None
        """The first KeyboardInterrupt or SystemExit, re-raised at the end."""
        self.not_saved: SessionNotSaved | None = None
        self._debug = log.isEnabledFor(logging.DEBUG)  # (asked once per run: moves are hot)

    def _go(self, move: Move) -> Phase:
        to = TRANSITIONS.get((self.phase, move))
        if to is None:
            raise RuntimeError(f"run lifecycle: no move {move.value!r} from {self.phase.value!r}")
        if self._debug:
            log.debug("run %s: %s --%s--> %s", self.run_id, self.phase.value, move.value, to.value)
        self.phase = to
        return to

    def finish(self) -> Phase:
        """The turns ended with an outcome (completed, terminated, failed, max_turns)."""
        return self._go(Move.FINISH)

    def time_out(self) -> Phase:
        """``run_timeout_seconds`` passed: the run is cancelled, but nothing
        is re-raised and the next cancellation is the first."""
        return self._go(Move.TIME_OUT)

    def cancel(self, exc: asyncio.CancelledError) -> Phase:
        """A cancellation of the run's task arrived; it is kept to re-raise.
        The phase it leads to says what to do: `Phase.CUT` means cut the
        on_completion hooks (or stop waiting for them)."""
        self.cancellation = self.cancellation or exc
        return self._go(Move.CANCEL)

    def interrupt(self, exc: Interrupt) -> Phase:
        """A hook, a tool or the model raised KeyboardInterrupt or SystemExit;
        kept to re-raise."""
        self.interruption = self.interruption or exc
        return self._go(Move.INTERRUPT)

    def deadline(self) -> Phase:
        """``completion_timeout_seconds`` passed: cut the on_completion hooks."""
        return self._go(Move.DEADLINE)

    def complete(self) -> Phase:
        """The on_completion hooks ended (or there were none)."""
        return self._go(Move.COMPLETE)

    def abandon(self) -> Phase:
        """A cut on_completion hook did not end within the grace: the run
        goes on without it."""
        return self._go(Move.ABANDON)

    def save(self) -> Phase:
        """The session's save starts (before its lock is released)."""
        return self._go(Move.SAVE)

    def saved(self, not_saved: SessionNotSaved | None) -> None:
        """The save ended (``not_saved``: the transcript went to a recovery
        file instead); raises what the run must raise."""
        self.not_saved = not_saved
        self._go(Move.SAVED)
        self._raise()

    def end(self) -> None:
        """A run without a session is over; raises what it must raise."""
        self._go(Move.END)
        self._raise()

    def _raise(self) -> None:
        if self.not_saved is not None:
            raise self.not_saved  # the caller must learn where its transcript went
        if self.interruption is not None:
            raise self.interruption
        if self.cancellation is not None:
            raise self.cancellation

    async def grace(self, task: asyncio.Future[Any]) -> None:
        """Wait up to `CANCEL_GRACE_SECONDS` for a cut (cancelled) task to
        end; a further cancellation ends the wait at once."""
        try:
            await asyncio.wait((task,), timeout=CANCEL_GRACE_SECONDS)
        except asyncio.CancelledError as exc:
            self.cancel(exc)

    async def shielded(self, work: Awaitable[T]) -> T:
        """Await ``work`` to its end even when the run's task is cancelled
        meanwhile: each cancellation is a ``cancel`` move, never an
        interruption of ``work``."""
        task = asyncio.ensure_future(work)
        while not task.done():
            try:
                await asyncio.shield(task)
            except asyncio.CancelledError as exc:
                self.cancel(exc)
        return task.result()


async def to_its_end(work: Awaitable[T]) -> T:
    """Await ``work`` to its end even when the caller is cancelled meanwhile,
    then raise the first cancellation (its result, or its failure, is then
    dropped).

    For a write that cannot be taken back once begun (a store that writes in
    a worker thread goes on after the task awaiting it is cancelled), which
    must land before what the cancellation leads to: a journal entry landing
    after the run's save (which drops the journal) would make the session
    look like a run a crash cut short."""
    task = asyncio.ensure_future(work)
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait((task,))
        except asyncio.CancelledError as exc:
            cancelled = cancelled or exc
    if cancelled is not None:
        if not task.cancelled():
            task.exception()  # (retrieved: the cancellation is the news)
        raise cancelled
    return task.result()


def stops_the_run(exc: BaseException, task: asyncio.Task[Any] | None) -> bool:
    """Whether a BaseException out of a hook (or a tool, the model) is a move
    of the run (an interrupt, a cancellation) rather than its own failure.

    ``task`` is the task the hook was called in. KeyboardInterrupt and
    SystemExit always are; CancelledError is when the current task was asked
    to cancel (the run was cancelled, or a time-out expired), and otherwise is
    a hook's bug (it awaited something another task cancelled); anything else
    (GeneratorExit...) is the hook's, unless its coroutine is being closed
    from outside the task it ran in (at shutdown, say).
    """
    if isinstance(exc, INTERRUPTS):
        return True
    current = asyncio.current_task()
    if isinstance(exc, asyncio.CancelledError):
        return current is not None and current.cancelling() > 0
    return current is None or current is not task
