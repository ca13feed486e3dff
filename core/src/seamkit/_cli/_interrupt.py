"""What SIGINT (Ctrl-C) and SIGTERM do to a command that runs an agent.

The first signal cancels the command's work: the run ends as ``cancelled``,
``on_completion`` fires and the session is saved (or goes to a recovery
file), exactly as when code cancels a run. A second signal only says what is
still finishing; a third, or any signal once the work is done and the
process is only winding down (a tool's thread that cannot be cancelled),
quits at once. The exit status after a signal is 128 plus its number, as
shells report it: 130 for SIGINT, 143 for SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Coroutine
from types import FrameType
from typing import Any

__all__ = ["Interrupts"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)

_Handler = Callable[[int, FrameType | None], Any] | int | None


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
        self._work: asyncio.Future[None] | None = None
        self._finished = False

    @property
    def signal_name(self) -> str | None:
        """``"SIGINT"`` or ``"SIGTERM"`` once one was received."""
        return None if self.signal is None else signal.Signals(self.signal).name

    @property
    def exit_code(self) -> int | None:
        """The process's exit status after a signal: 128 plus its number."""
        return None if self.signal is None else 128 + self.signal

    def run(self, work: Coroutine[Any, Any, None]) -> BaseException | None:
        """Run ``work`` to its end; return what it raised, or ``None`` when it
        returned or a signal cancelled it (then `signal` says which). The
        signal handlers in place before are back afterwards."""
        previous: dict[int, _Handler] = {sig: signal.getsignal(sig) for sig in _SIGNALS}
        try:
            with asyncio.Runner() as runner:
                return runner.run(self._main(work))
        finally:
            for sig, handler in previous.items():
                with contextlib.suppress(ValueError, TypeError):  # not the main thread
                    signal.signal(sig, handler)

    async def _main(self, work: Coroutine[Any, Any, None]) -> BaseException | None:
        loop = asyncio.get_running_loop()
        task = loop.create_task(work)
        self._work = task
        self._install(loop)
        await asyncio.wait([task])
        # From here on the process only winds down (the loop closes, worker
        # threads are joined): a signal now quits at once.
        self._finished = True
        return None if task.cancelled() else task.exception()

    def _install(self, loop: asyncio.AbstractEventLoop) -> None:
        for sig in _SIGNALS:
            try:
                loop.add_signal_handler(sig, self._on_signal, sig)
            except NotImplementedError:  # no loop signal handlers (Windows)
                try:
                    signal.signal(
                        sig, lambda got, _: loop.call_soon_threadsafe(self._on_signal, got)
                    )
                except ValueError:  # not the main thread
                    return
            except (ValueError, RuntimeError):  # not the main thread: leave signals alone
                return

    def _on_signal(self, sig: int) -> None:
        self._count += 1
        if self.signal is None:
            self.signal = sig
        if self._finished or self._count >= 3:
            code = self.exit_code or 128 + sig
            self._quit_now(code, self._finished)
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            os._exit(code)
        if self._count == 1:
            if self._work is not None:
                self._work.cancel()
            return
        self._note(
            "· still finishing: on_completion and saving the session "
            "(interrupt once more to quit at once)"
        )
