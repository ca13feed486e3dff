"""``seamkit temporal worker`` in one process: `serve_one`.

A worker loads the app, reaches the server, serves the task queue and says
so on standard error in one line (``serving APP on task queue Q at ADDRESS
(namespace NS, worker pid N)``: what scripts and tests wait for). SIGTERM or
SIGINT stops it gracefully: the worker stops polling, lets the activities in
flight end (up to its graceful time-out) and exits 0; a run it leaves goes on
on another worker, as after a crash.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

import seamkit

from ._fleet import say
from ._reach import reach
from ._worker import serve

__all__ = ["serve_one"]


async def serve_one(
    app: str, *, address: str, namespace: str, task_queue: str, ready_fd: int | None
) -> int:
    """Serve ``app``'s runs until SIGTERM or SIGINT; the exit status (0).

    ``ready_fd``: a pipe to the parent, written to (and closed) once the
    worker serves."""
    async with await seamkit.Agent.load(app) as agent:
        client = await reach(address, namespace)
        stop = asyncio.Event()
        caught: list[str] = []
        loop = asyncio.get_running_loop()

        def on_signal(number: signal.Signals) -> None:
            caught.append(number.name)
            stop.set()

        for number in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(number, on_signal, number)

        def ready() -> None:
            say(
                f"serving {agent.name} on task queue {task_queue!r} at {address} "
                f"(namespace {namespace}, worker pid {os.getpid()})"
            )
            if ready_fd is not None:
                with contextlib.suppress(OSError):
                    os.write(ready_fd, b"1")
                    os.close(ready_fd)

        serving = asyncio.create_task(serve(agent, client, task_queue, ready=ready))
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait((serving, stopping), return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if serving.done():  # the worker failed (serve runs until cancelled)
            serving.result()
            raise seamkit.SeamkitError("the worker stopped on its own")
        serving.cancel()  # the worker's graceful shutdown
        with contextlib.suppress(asyncio.CancelledError):
            await serving
        say(f"stopped serving {agent.name} on {caught[0]} (worker pid {os.getpid()})")
    return 0
