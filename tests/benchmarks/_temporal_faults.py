"""What the Temporal fault tests and trials share: worker processes
(`tests.benchmarks._temporal_fault_worker`) started, awaited and killed, and
the logs they leave in a trial's folder read back.
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.benchmarks._harness import ROOT

__all__ = [
    "READY_SECONDS",
    "Worker",
    "asks",
    "effects",
    "turns_asked_twice",
    "wait_for",
]

READY_SECONDS = 60.0
"""How long a worker process may take to poll its task queue."""


def _die_with_parent() -> None:
    """In the child: die when the process that started it dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG


class Worker:
    """One worker process serving the app ``faults`` on ``task_queue``."""

    def __init__(self, address: str, task_queue: str, directory: Path) -> None:
        log = (directory / "workers.log").open("ab")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.benchmarks._temporal_fault_worker",
                address,
                task_queue,
                str(directory),
            ],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            preexec_fn=_die_with_parent,
        )
        log.close()
        self.pid = self.process.pid

    async def started(self) -> Worker:
        """`ready`, without blocking the event loop."""
        return await asyncio.to_thread(self.ready)

    def ready(self, timeout: float = READY_SECONDS) -> Worker:
        """Wait until it prints ``ready``; `RuntimeError` when it exits or
        takes longer than ``timeout``."""
        out = self.process.stdout
        assert out is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            readable, _, _ = select.select([out], [], [], 0.2)
            if readable:
                line = out.readline().decode()
                if line.startswith("ready"):
                    return self
                if not line:
                    break
        self.kill()
        raise RuntimeError(f"worker {self.pid} did not get ready (see workers.log)")

    def kill(self) -> None:
        """SIGKILL it (a crash), and reap it."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()

    @property
    def alive(self) -> bool:
        return self.process.poll() is None


def _lines(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def effects(directory: Path) -> list[dict[str, Any]]:
    """The tools' effects, in order (``tool``, ``call``, ``key``, ``attempt``, ``pid``, ``t``)."""
    return _lines(directory / "effects.jsonl")


def asks(directory: Path) -> list[dict[str, Any]]:
    """The model's requests, in order (``turn``, ``activity``, ``attempt``,
    ``in_doubt``, ``pid``, ``t``)."""
    return _lines(directory / "asks.jsonl")


def turns_asked_twice(directory: Path) -> int:
    """How many model turns were asked again after being asked once: the
    same activity asked twice in one attempt, or one turn asked by two
    activities (a recorded turn asked anew). An attempt after a worker died
    mid-turn (its turn unrecorded) is a retry, not counted."""
    logged = asks(directory)
    per_attempt = Counter((a["activity"], a["attempt"]) for a in logged)
    twice = sum(n - 1 for n in per_attempt.values())
    by_turn: dict[int, set[str]] = {}
    for a in logged:
        by_turn.setdefault(a["turn"], set()).add(a["activity"])
    return twice + sum(len(ids) - 1 for ids in by_turn.values())


async def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll ``predicate()`` until true; `TimeoutError` naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout:.0f} s for {what}")
        await asyncio.sleep(0.05)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
