"""What SIGINT (Ctrl-C) and SIGTERM do to a command that runs an agent.

Each signal is a cancellation of the command's work, as when code cancels a
run (see `seamkit._engine._lifecycle`): the first ends the run as ``cancelled``, lets
``on_completion`` finish and saves the session (or writes a recovery file);
the second cuts ``on_completion`` short, and the session is still saved; a
third, or any signal once the work is done and the process is only winding
down (a tool's thread that cannot be cancelled), quits at once.

The promises hold even when a tool or a hook blocks the event loop (a plain
hook calling ``time.sleep``, an ``async`` one making a blocking call): the
signals are watched from a thread outside the loop, and when the loop has
not acted on one within `UNRESPONSIVE_SECONDS`, the process quits at once,
after leaving the session's transcript in a recovery file. The exit status
after a signal is 128 plus its number, as shells report it: 130 for SIGINT,
143 for SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from types import FrameType
from typing import Any

from .._engine._lifecycle import INTERRUPTS

__all__ = ["UNRESPONSIVE_SECONDS", "Interrupts"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)

_Handler = Callable[[int, FrameType | None], Any] | int | None

UNRESPONSIVE_SECONDS = 1.0
"""How long the event loop has to act on a signal before the process quits
anyway: something (a tool, a hook) is blocking the loop."""

_POLL_SECONDS = 0.02
"""How often the watchdog looks whether the loop acted on a pending signal."""

_STOP = 0
"""The byte that tells the watchdog to stop (no signal has number 0)."""


def _ignore(signum: int, frame: FrameType | None) -> None:
    """The Python-level handler: the watchdog does the work."""


class Interrupts:
    """Runs one coroutine in a new event loop, with SIGINT and SIGTERM turned
    into its cancellation instead of a `KeyboardInterrupt` or a killed
    process.

    ``note`` shows the user a line; ``quit_now(exit_code, finished)`` is
    called just before the process quits at once (``finished`` tells whether
    the work had ended, the session saved), to leave behind what it can.
    """

    def __init__(self, note: Callable[[str], None], quit_now: Callable[[int, bool], None]) -> None:
        self.signal: int | None = None
        """The first signal received, if any."""
        self._note = note
        self._quit_now = quit_now
        self._count = 0
        """Signals received (by the watchdog)."""
        self._acted = 0
        """Signals the event loop has acted on."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._work: asyncio.Future[BaseException | None] | None = None
        self._finished = False
        self._quitting = threading.Lock()

    @property
    def signal_name(self) -> str | None:
        """``"SIGINT"`` or ``"SIGTERM"`` once one was received."""
        return None if self.signal is None else signal.Signals(self.signal).name

    @property
    def exit_code(self) -> int | None:
        """The process's exit status after a signal: 128 plus its number."""
        return None if self.signal is None else 128 + self.signal

    def run(self, work: Coroutine[Any, Any, None]) -> BaseException | None:
        """Run ``work`` to its end; return what it raised (a KeyboardInterrupt
        or SystemExit included: raised in its task, it would stop the event
        loop), or ``None`` when it returned or a signal cancelled it (then
        `signal` says which). The signal handlers in place before are back
        afterwards."""
        with self._watching(), asyncio.Runner() as runner:
            # (the loop winds down when the runner closes, still watched)
            return runner.run(self._main(work))

    async def _main(self, work: Coroutine[Any, Any, None]) -> BaseException | None:
        self._work = asyncio.ensure_future(_carried(work))
        self._loop = asyncio.get_running_loop()
        if self._count:  # a signal came while the loop was starting
            self._act(self._count)
        await asyncio.wait([self._work])
        # From here on the process only winds down (the loop closes, worker
        # threads are joined): a signal now quits at once.
        self._finished = True
        return self._work.result()

    @contextlib.contextmanager
    def _watching(self) -> Iterator[None]:
        """Signals go to a watchdog thread while the block runs (in the main
        thread only; elsewhere signals are left alone)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        reader, writer = socket.socketpair()
        writer.setblocking(False)
        previous: dict[int, _Handler] = {sig: signal.getsignal(sig) for sig in _SIGNALS}
        # The C-level handler writes each signal's number to ``writer`` at
        # once, whichever thread it lands on and whatever the main thread is
        # doing (a hook in time.sleep, a blocking call): the watchdog reads it.
        old_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
        watchdog = threading.Thread(
            target=self._watch, args=(reader,), name="seamkit-signals", daemon=True
        )
        try:
            for sig in _SIGNALS:
                signal.signal(sig, _ignore)
            watchdog.start()
            yield
        finally:
            with contextlib.suppress(OSError):
                writer.send(bytes([_STOP]))
            if watchdog.is_alive():
                watchdog.join(1)
            signal.set_wakeup_fd(old_fd)
            for number, handler in previous.items():
                with contextlib.suppress(ValueError, TypeError):
                    signal.signal(number, handler)
            reader.close()
            writer.close()

    # --- the watchdog thread ----------------------------------------------------

    def _watch(self, reader: socket.socket) -> None:
        """Read the signals' numbers as they come; hand each to the loop, and
        quit at once when the loop does not act on one within the grace."""
        with contextlib.suppress(AttributeError, OSError):  # this thread never takes one
            signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
        pending: float | None = None  # when the oldest signal the loop did not act on came
        while True:
            wait = None if pending is None else _POLL_SECONDS
            ready, _, _ = select.select([reader], [], [], wait)
            if ready:
                try:
                    data = reader.recv(64)
                except OSError:
                    return
                for number in data:
                    if number == _STOP:
                        return
                    self._received(number)
                    if pending is None:
                        pending = time.monotonic()
            if pending is not None and self._acted >= self._count:
                pending = None
            if pending is not None and time.monotonic() - pending >= UNRESPONSIVE_SECONDS:
                name = signal.Signals(self.signal or signal.SIGINT).name
                self._note(
                    f"· the event loop did not act on {name} within {UNRESPONSIVE_SECONDS:g}s: "
                    f"a tool or hook is blocking it"
                )
                self._quit(self._finished)

    def _received(self, number: int) -> None:
        self._count += 1
        if self.signal is None:
            self.signal = number
        loop = self._loop
        if self._finished or self._count >= 3:
            self._quit(self._finished)
            return
        if loop is None:  # the loop is starting: it acts on it first thing
            return
        try:
            loop.call_soon_threadsafe(self._act, self._count)
        except RuntimeError:  # the loop is closed: the process only winds down
            self._quit(True)

    def _quit(self, finished: bool) -> None:
        """Leave what can be left (``quit_now``), then exit at once."""
        with self._quitting:  # once, from whichever thread gets here first
            code = self.exit_code or 130
            self._quit_now(code, finished)
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            os._exit(code)

    # --- on the event loop ------------------------------------------------------

    def _act(self, count: int) -> None:
        """Signal number ``count`` reaches the loop: cancel the work again."""
        if count <= self._acted:
            return  # (acted on already, when the loop started)
        self._acted = count
        work = self._work
        if work is None or work.done():
            return
        if count == 2:
            self._note(
                "· stopping on_completion and saving the session "
                "(interrupt once more to quit at once)"
            )
        work.cancel()


async def _carried(work: Coroutine[Any, Any, None]) -> BaseException | None:
    """Run ``work``; what it raised, returned (``None`` when it returned or
    was cancelled): a KeyboardInterrupt or SystemExit raised in a task stops
    the event loop and leaves "Task exception was never retrieved" behind."""
    try:
        await work
    except asyncio.CancelledError:
        return None
    except (Exception, *INTERRUPTS) as exc:
        return exc
    return None
