"""``seamkit temporal worker --workers N``: a parent that keeps ``N``
worker processes (`seamkit_temporal._work`) running; it imports no
``temporalio`` itself.

The parent runs ``N`` children, each the same command
with ``--workers 1`` (as ``python -m seamkit_temporal worker ...``). It
starts one and waits until it serves, so that a broken manifest or a server
that cannot be reached is reported once (that child's error, and its exit
status); then the others. A child that dies later is started again (after
a pause that grows while children keep dying young). SIGTERM or SIGINT to
the parent stops every child gracefully; the parent's death (even by
SIGKILL) sends each child SIGTERM (Linux: ``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

import click

__all__ = ["STOP_SECONDS", "say", "supervise"]

STOP_SECONDS = 15.0
"""How long the parent waits for a child to stop after SIGTERM before it kills it."""
_POLL_SECONDS = 0.2
_YOUNG_SECONDS = 10.0
"""A child that dies sooner than this after it started serving died young:
the pause before the next one doubles (from 1 s, up to 30 s)."""
_MAX_PAUSE = 30.0


def say(text: str) -> None:
    """A line of the worker command's on standard error, flushed at once."""
    click.echo(f"seamkit temporal worker: {text}", err=True)
    sys.stderr.flush()


@dataclass
class _Child:
    """One worker process of the fleet and the pipe it says it serves on."""

    process: subprocess.Popen[bytes]
    ready: int
    """The read end of the child's readiness pipe (closed once read: -1)."""
    serving_since: float | None = None
    pause: float = field(default=1.0)


def supervise(app: str, *, address: str, namespace: str, task_queue: str, workers: int) -> int:
    """Keep ``workers`` worker processes serving ``app`` until SIGTERM or
    SIGINT; the exit status (0, or the status of the first child when it
    could not start)."""
    caught: list[str] = []

    def on_signal(number: int, frame: object) -> None:
        caught.append(signal.Signals(number).name)

    previous = {n: signal.signal(n, on_signal) for n in (signal.SIGTERM, signal.SIGINT)}
    command = [
        sys.executable,
        "-m",
        "seamkit_temporal",
        "worker",
        app,
        "--address",
        address,
        "--namespace",
        namespace,
        "--task-queue",
        task_queue,
        "--workers",
        "1",
    ]
    children: list[_Child] = []
    try:
        first = _start(command)
        children.append(first)
        while not _wait_ready(first):
            if first.process.poll() is not None:  # it said why on standard error
                return first.process.returncode
            if caught:
                return 0
            if first.ready < 0:  # (it closed the pipe: it is ending)
                time.sleep(_POLL_SECONDS)
        children += [_start(command) for _ in range(workers - 1)]
        while not caught:
            time.sleep(_POLL_SECONDS)
            for index, child in enumerate(children):
                _wait_ready(child, 0.0)
                if child.process.poll() is None:
                    continue
                children[index] = _replace(child, command, caught)
        return 0
    finally:
        _stop(children)
        for number, handler in previous.items():
            signal.signal(number, handler)


def _start(command: list[str]) -> _Child:
    """A child worker with a readiness pipe (``--ready-fd``)."""
    read, write = os.pipe()
    process = subprocess.Popen(
        [*command, "--ready-fd", str(write)],
        pass_fds=(write,),
        stdin=subprocess.DEVNULL,
        preexec_fn=_end_with_parent,
    )
    os.close(write)
    return _Child(process, read)


def _wait_ready(child: _Child, timeout: float = _POLL_SECONDS) -> bool:
    """Whether ``child`` serves (it wrote to its pipe, now or before)."""
    if child.serving_since is not None:
        return True
    if child.ready < 0:
        return False
    readable, _, _ = select.select([child.ready], [], [], timeout)
    if not readable:
        return False
    got = os.read(child.ready, 1)
    os.close(child.ready)
    child.ready = -1
    if got:
        child.serving_since = time.monotonic()
        return True
    return False  # (the pipe closed unwritten: the child ended before it served)


def _replace(child: _Child, command: list[str], caught: list[str]) -> _Child:
    """A new child for one that died, after a pause that doubles while
    children die young."""
    if child.ready >= 0:
        os.close(child.ready)
    lived = None if child.serving_since is None else time.monotonic() - child.serving_since
    pause = 1.0 if lived is not None and lived >= _YOUNG_SECONDS else child.pause
    code = child.process.returncode
    how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited ({code})"
    say(f"worker pid {child.process.pid} {how}: starting another in {pause:.0f} s")
    deadline = time.monotonic() + pause
    while time.monotonic() < deadline and not caught:
        time.sleep(_POLL_SECONDS)
    fresh = _start(command)
    fresh.pause = min(pause * 2, _MAX_PAUSE)
    return fresh


def _stop(children: list[_Child]) -> None:
    """SIGTERM to every child still running, then wait (kill the laggards)."""
    for child in children:
        if child.process.poll() is None:
            child.process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + STOP_SECONDS
    for child in children:
        try:
            child.process.wait(max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            child.process.kill()
            child.process.wait()
        if child.ready >= 0:
            os.close(child.ready)
            child.ready = -1


def _end_with_parent() -> None:
    """In a child, before it runs: SIGTERM when the parent dies (Linux only;
    elsewhere a killed parent leaves its children serving)."""
    if sys.platform == "linux":
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
