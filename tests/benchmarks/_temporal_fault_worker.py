"""A seamkit worker on Temporal for the fault trials, in a process of its own:
``python -m tests.benchmarks._temporal_fault_worker ADDRESS TASK_QUEUE DIR``.

It serves the app ``faults`` (`build_agent`): the crash harness's script
(`tests.benchmarks._crash_app.SCRIPT`: four turns, three of them tool calls)
played by a scripted model that logs each request it answers, and the crash
harness's three tools, which log their effect and then hold:

- ``refund`` (``effects="once"``, needs approval), ``reserve``
  (``effects="idempotent"``) and ``lookup`` (``effects="none"``) each append a
  line to ``DIR/effects.jsonl`` (fsynced: a SIGKILL right after it loses
  nothing) naming the call, its idempotency key and attempt, and this pid;
- then the body holds while ``DIR/hold-TOOL`` exists (so that a test kills
  the worker while it runs), and sleeps ``DIR/config.json``'s
  ``tool_seconds`` (0 when there is none).

The model's log is ``DIR/asks.jsonl``: one line per request it answers, with
the script's turn index (counted from the request, as ``each_run`` plays it),
the Temporal activity id and attempt that asked it, whether the request
holds an in-doubt result, the wall-clock time and this pid. The session store
is ``DIR/sessions.db`` (SQLite), shared by every worker of the trial; a
save logs a line to ``DIR/saves.jsonl`` once written, then holds while
``DIR/hold-save`` exists.

Once its worker polls the task queue it prints ``ready PID`` on standard
output; it serves until it is killed (SIGTERM, SIGINT, or SIGKILL in a trial).
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import seamkit
from seamkit import CallInfo, ModelRequest, ModelTurn
from seamkit.testing import ScriptedModel

from tests.benchmarks._crash_app import SCRIPT

__all__ = ["APP", "build_agent", "main"]

APP = "faults"
IN_DOUBT_MARK = "Error: InDoubt:"

_DIR: list[Path] = []


def _dir() -> Path:
    return _DIR[0]


def _append(name: str, **data: Any) -> None:
    """One JSON line to ``DIR/name``, on disk before it returns."""
    line = json.dumps({"pid": os.getpid(), "t": time.time(), **data}, separators=(",", ":"))
    fd = os.open(_dir() / name, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, line.encode() + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)


def _tool_seconds() -> float:
    try:
        config = json.loads((_dir() / "config.json").read_text())
    except FileNotFoundError:
        return 0.0
    return float(config.get("tool_seconds", 0.0))


async def _hold(tool: str, then: float | None = None) -> None:
    """Wait while ``DIR/hold-TOOL`` exists, then ``then`` seconds (by
    default the configured time)."""
    flag = _dir() / f"hold-{tool}"
    while flag.exists():
        await asyncio.sleep(0.05)
    await asyncio.sleep(_tool_seconds() if then is None else then)


@seamkit.tool(approval=True, effects="once")
async def refund(order: str, amount: int, info: CallInfo) -> str:
    """Refund ``amount`` on ``order`` (acts once; needs approval)."""
    _append(
        "effects.jsonl",
        tool="refund",
        call=info.call_id,
        key=info.idempotency_key,
        attempt=info.attempt,
        order=order,
    )
    await _hold("refund")
    return f"refunded {order} {amount}"


@seamkit.tool(effects="idempotent")
async def reserve(item: str, info: CallInfo) -> str:
    """Reserve ``item`` (idempotent under its key)."""
    _append(
        "effects.jsonl",
        tool="reserve",
        call=info.call_id,
        key=info.idempotency_key,
        attempt=info.attempt,
        item=item,
    )
    await _hold("reserve")
    return f"reserved {item}"


@seamkit.tool(effects="none")
async def lookup(order: str) -> str:
    """Look ``order`` up (no effect on the world)."""
    _append("effects.jsonl", tool="lookup", order=order)
    await _hold("lookup")
    return f"order {order}: late"


class LoggedModel(ScriptedModel):
    """The scripted model, logging each request it answers."""

    def _asked(self, request: ModelRequest) -> None:
        turn = 1
        for m in reversed(request.messages):
            if m.role == "user":
                break
            turn += m.role == "assistant"
        doubt = any(m.role == "tool" and IN_DOUBT_MARK in (m.text or "") for m in request.messages)
        activity_id, attempt = "", 0
        try:
            from temporalio import activity  # lazy: only inside an activity

            info = activity.info()
            activity_id, attempt = f"{info.workflow_id}/{info.activity_id}", info.attempt
        except RuntimeError:  # not in an activity
            pass
        _append("asks.jsonl", turn=turn, activity=activity_id, attempt=attempt, in_doubt=doubt)

    async def complete(self, request: ModelRequest) -> ModelTurn:
        self._asked(request)
        return await super().complete(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
        self._asked(request)
        async for item in super().stream(request):
            yield item


class HeldStore:
    """The trial's SQLite store; a save, once written, holds while
    ``DIR/hold-save`` exists (so that a test kills the worker mid-save)."""

    def __init__(self, path: Path) -> None:
        self.inner = seamkit.SQLiteSessionStore(str(path))

    async def load(self, name: str) -> seamkit.StoredSession | None:
        return await self.inner.load(name)

    async def save(
        self, name: str, transcript: Sequence[seamkit.Message], state: Mapping[str, Any]
    ) -> None:
        await self.inner.save(name, transcript, state)
        _append("saves.jsonl", messages=len(transcript))
        await _hold("save", then=0.0)

    def lock(self, name: str, wait_seconds: float) -> contextlib.AbstractAsyncContextManager[None]:
        return self.inner.lock(name, wait_seconds)

    async def list(self) -> builtins.list[str]:
        return await self.inner.list()

    async def delete(self, name: str) -> None:
        await self.inner.delete(name)


def build_agent(directory: Path) -> seamkit.Agent:
    """The app ``faults``: the logged scripted model and the three tools,
    its sessions in ``directory/sessions.db``."""
    _DIR[:] = [directory]
    return seamkit.Agent(
        name=APP,
        model=LoggedModel(SCRIPT, each_run=True),
        tools=[refund, reserve, lookup],
        store=HeldStore(directory / "sessions.db"),
        plugin_hooks=False,
    )


async def _serve(address: str, task_queue: str, directory: Path) -> None:
    import seamkit_temporal  # lazy: the worker's only

    agent = build_agent(directory)
    client = await seamkit_temporal.connect(address)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    def ready() -> None:
        print(f"ready {os.getpid()}", flush=True)

    served = asyncio.ensure_future(seamkit_temporal.serve(agent, client, task_queue, ready=ready))
    await asyncio.wait((served, asyncio.ensure_future(stop.wait())), return_when="FIRST_COMPLETED")
    served.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await served


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: _temporal_fault_worker ADDRESS TASK_QUEUE DIR", file=sys.stderr)
        return 2
    asyncio.run(_serve(argv[0], argv[1], Path(argv[2])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
