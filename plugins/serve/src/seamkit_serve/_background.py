"""Work a server starts and does not wait for: tasks kept until they are
done (a task nobody holds may be collected mid-run), and sweeps of expired
records started now and then, from the requests that make records."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from typing import Any

__all__ = ["Background"]


class Background:
    """The tasks of one part of the server, and when it last swept; a sweep
    starts at most once per ``every`` seconds (the first one ``every``
    seconds after the start, unless ``at_once``)."""

    def __init__(self, every: float, *, at_once: bool = False) -> None:
        self.every = every
        self._tasks: set[asyncio.Task[Any]] = set()
        self._swept_at = float("-inf") if at_once else time.monotonic()

    def start(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """``work`` in a task of its own, held until it is done."""
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def now_and_then(self, sweep: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Start ``sweep()`` unless one started less than ``every`` seconds ago."""
        now = time.monotonic()
        if now - self._swept_at < self.every:
            return
        self._swept_at = now
        self.start(sweep())
