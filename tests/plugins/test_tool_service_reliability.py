"""Tool services under failure: 1,000 concurrent calls over NATS to two
worker processes, one of them killed (SIGKILL) mid-run and ``nats-server``
restarted on the same port. Every call ends with exactly one result, its own
(never another call's reply) or a clear ``Timeout``/``Unavailable`` error;
most succeed; no task is left behind; and once the server is back, calls
succeed again through the surviving worker.

All on loopback: a real nats-server (`NatsServer`) and real worker processes
(`ServiceProcess`), bounded to a few seconds by the tool's time-out.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import seamkit
from seamkit.testing import ScriptedModel

from tests.plugins.tool_services import ServiceProcess

if TYPE_CHECKING:
    from tests.plugins.nats_server import NatsServer

pytest_plugins = ["tests.plugins.nats_server"]

CALLS = 1000
SPREAD = 1.5
"""Seconds over which the calls start (all in flight together for most of it)."""
KILL_AT = 0.35
RESTART_AT = 0.75
"""Seconds after the first call when the worker dies and when nats-server restarts."""
TIMEOUT = 3.0
"""The tool's deadline: a call whose request or reply was lost ends then."""
SUBJECT = "tools.reliability"
COLLECTION = "reliability"
ECHO = "tests.plugins.services.basic:Echo"


def manifest(servers: str) -> dict[str, Any]:
    """An agent with one NATS tool of the Echo service."""
    return {
        "name": "reliability",
        "model": "scripted:unused.yaml",
        "tool_services": {
            "services": [
                {
                    "id": "echo",
                    "transport": "nats",
                    "servers": [servers],
                    "subject": SUBJECT,
                    "config_params": [{"name": "collection", "required": True}],
                    "timeout_seconds": TIMEOUT,
                }
            ]
        },
        "tools": [
            {
                "kind": "tool-service",
                "name": "echo",
                "description": "Echoes its arguments.",
                "service": "echo",
                "collection": COLLECTION,
                "arguments": [
                    {"name": "text", "type": "string", "description": "What to echo."},
                    {"name": "delay", "type": "number", "required": False},
                ],
            }
        ],
    }


@dataclass(frozen=True)
class Outcome:
    """One call: what it sent and the one result it ended with."""

    user: str
    arguments: dict[str, Any]
    result: seamkit.ToolResult


def check(outcome: Outcome) -> int | None:
    """The pid of the worker that answered a successful call (after checking
    the reply is this call's own), or ``None`` for a clear error."""
    result = outcome.result
    if result.is_error:
        assert result.content.startswith(("Error: Timeout: ", "Error: Unavailable: ")), result
        return None
    echoed = json.loads(result.content)
    assert echoed["arguments"] == outcome.arguments, f"misrouted: {outcome} got {echoed}"
    assert echoed["user"] == outcome.user, f"misrouted: {outcome} got {echoed}"
    assert echoed["config"] == {"collection": COLLECTION}
    pid: int = echoed["pid"]
    return pid


async def call(tool: seamkit.Tool, tag: str, delay: float, *, after: float = 0.0) -> Outcome:
    """One call of ``tool`` by user ``tag`` (after ``after`` seconds)."""
    if after:
        await asyncio.sleep(after)
    arguments: dict[str, Any] = {"text": f"call-{tag}", "delay": delay}
    user = f"user-{tag}"
    result = await tool.call(arguments, seamkit.ActionContext({"user": user}))
    return Outcome(user, arguments, result)


def leftover(before: set[asyncio.Task[Any]]) -> set[asyncio.Task[Any]]:
    """The tasks running now that were not before (this one aside)."""
    return {t for t in asyncio.all_tasks() if t not in before and t is not asyncio.current_task()}


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_calls_survive_a_killed_worker_and_a_restarted_nats_server(
    nats_server: NatsServer, tmp_path: Path
) -> None:
    rng = random.Random(14)
    plan = [(round(rng.uniform(0, 0.2), 3), SPREAD * i / CALLS) for i in range(CALLS)]

    with ServiceProcess.nats(
        ECHO, tmp_path, servers=nats_server.url, subject=SUBJECT, workers=2
    ) as service:
        pids = service.worker_pids()
        assert len(pids) == 2, service.output()
        victim, survivor = pids

        async def main() -> tuple[list[Outcome | BaseException], dict[str, int], list[Outcome]]:
            before = set(asyncio.all_tasks())
            agent = await seamkit.Agent.load(manifest(nats_server.url), model=ScriptedModel([]))
            try:
                tool = agent.tools["echo"]
                warm = await call(tool, "warm-up", 0.0)  # connected before the clock starts
                assert check(warm) in pids
                started = time.monotonic()
                finished = 0

                async def counted(index: int) -> Outcome:
                    nonlocal finished
                    delay, after = plan[index]
                    try:
                        return await call(tool, str(index), delay, after=after)
                    finally:
                        finished += 1

                async def chaos() -> dict[str, int]:
                    await asyncio.sleep(KILL_AT)
                    os.kill(victim, signal.SIGKILL)
                    at_kill = finished
                    await asyncio.sleep(RESTART_AT - KILL_AT)
                    at_restart = finished
                    await asyncio.to_thread(nats_server.restart)
                    return {"at_kill": at_kill, "at_restart": at_restart}

                runs = [asyncio.ensure_future(counted(i)) for i in range(CALLS)]
                marks = await chaos()
                outcomes = await asyncio.gather(*runs, return_exceptions=True)
                took = time.monotonic() - started
                assert took < SPREAD + TIMEOUT + 5, f"the calls took {took:.1f}s"
                # nothing per call is left: only the connection's own tasks
                assert len(leftover(before)) < 20, leftover(before)

                # after the restart, the client and the surviving worker are back
                deadline = time.monotonic() + 15
                while check(probe := await call(tool, "probe", 0.0)) is None:
                    assert time.monotonic() < deadline, f"never answered again: {probe}"
                    await asyncio.sleep(0.1)
                after = await asyncio.gather(*(call(tool, f"after-{i}", 0.0) for i in range(50)))
            finally:
                await agent.aclose()
            for _ in range(50):  # closing lets the connection's tasks end
                if not leftover(before):
                    break
                await asyncio.sleep(0.02)
            assert not leftover(before), f"tasks left running: {leftover(before)}"
            return outcomes, marks, after

        outcomes, marks, after = asyncio.run(main())

    raised = [o for o in outcomes if isinstance(o, BaseException)]
    assert not raised, f"{len(raised)} calls raised instead of ending with a result: {raised[:3]}"
    done = [o for o in outcomes if isinstance(o, Outcome)]
    assert len(done) == CALLS
    # the chaos hit calls in flight, not a finished (or not yet started) run
    assert 0 < marks["at_kill"] < marks["at_restart"] < CALLS, marks
    answered_by = [check(o) for o in done]
    succeeded = [pid for pid in answered_by if pid is not None]
    assert len(succeeded) >= CALLS // 2, (
        f"only {len(succeeded)} of {CALLS} calls succeeded ({marks}); "
        f"errors: {sorted({o.result.content[:40] for o in done if o.result.is_error})}"
    )
    assert set(succeeded) <= {victim, survivor}
    assert {check(o) for o in after} == {survivor}, "after the restart only the survivor answers"
