"""The Temporal servers from the dev dependencies' wheels serve the official
``temporalio`` client and worker: a workflow with one activity runs on the dev
server and, with an hour-long durable timer skipped, on the time-skipping test
server; the dev server survives a SIGKILL on its database file. And
``seamkit-temporal`` is found as an installed distribution whose entry module
leaves ``temporalio`` unloaded.

The workflow's input and output are pydantic models, carried by the SDK's
pydantic data converter (seamkit's own types are pydantic models).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

if TYPE_CHECKING:
    from tests.plugins.temporal_server import TemporalDevServer

pytest_plugins = ["tests.plugins.temporal_server"]

SEAMKIT = Path(sys.executable).parent / "seamkit"


class Greeting(BaseModel):
    """What the workflow is started with."""

    name: str
    wait_seconds: float = 0.0


class Shout(BaseModel):
    """What the activity returns."""

    text: str
    attempt: int


@activity.defn
async def shout(greeting: Greeting) -> Shout:
    """The one activity: I/O would go here."""
    return Shout(text=f"HELLO, {greeting.name.upper()}!", attempt=activity.info().attempt)


@workflow.defn(sandboxed=True)
class GreetWorkflow:
    """Waits on a durable timer (when asked), then runs `shout`."""

    @workflow.run
    async def run(self, greeting: Greeting) -> Shout:
        if greeting.wait_seconds:
            await workflow.sleep(timedelta(seconds=greeting.wait_seconds))
        return await workflow.execute_activity(
            shout, greeting, start_to_close_timeout=timedelta(seconds=30)
        )


async def _greet(client: Client, greeting: Greeting) -> Shout:
    queue = f"smoke-{uuid.uuid4().hex}"
    async with Worker(client, task_queue=queue, workflows=[GreetWorkflow], activities=[shout]):
        result: Shout = await client.execute_workflow(
            GreetWorkflow.run,
            greeting,
            id=f"greet-{uuid.uuid4().hex}",
            task_queue=queue,
            result_type=Shout,
        )
    return result


async def test_a_workflow_with_an_activity_runs_on_the_dev_server(
    temporal_dev_server: TemporalDevServer,
) -> None:
    client = await Client.connect(
        temporal_dev_server.address, data_converter=pydantic_data_converter
    )
    assert await _greet(client, Greeting(name="ada")) == Shout(text="HELLO, ADA!", attempt=1)


async def test_the_dev_server_keeps_workflows_across_a_kill_on_its_database_file(
    temporal_dev_server: TemporalDevServer,
) -> None:
    client = await Client.connect(
        temporal_dev_server.address, data_converter=pydantic_data_converter
    )
    handle = await client.start_workflow(
        GreetWorkflow.run,
        Greeting(name="bob"),
        id=f"greet-{uuid.uuid4().hex}",
        task_queue="no-worker-yet",
        result_type=Shout,
    )
    temporal_dev_server.kill()
    temporal_dev_server.restart()
    client = await Client.connect(
        temporal_dev_server.address, data_converter=pydantic_data_converter
    )
    async with Worker(
        client, task_queue="no-worker-yet", workflows=[GreetWorkflow], activities=[shout]
    ):
        again = client.get_workflow_handle_for(GreetWorkflow.run, handle.id)
        assert await again.result() == Shout(text="HELLO, BOB!", attempt=1)


async def test_an_hour_long_timer_is_skipped_on_the_time_skipping_server(
    temporal_test_server: Path,
) -> None:
    began = time.monotonic()
    async with await WorkflowEnvironment.start_time_skipping(
        data_converter=pydantic_data_converter,
        test_server_existing_path=str(temporal_test_server),
    ) as env:
        started = time.monotonic()
        result = await _greet(env.client, Greeting(name="cy", wait_seconds=3600))
    assert result == Shout(text="HELLO, CY!", attempt=1)
    assert time.monotonic() - started < 30  # an hour of workflow time, skipped
    assert time.monotonic() - began < 60


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("SEAMKIT_")}


def test_seamkit_temporal_is_found_as_an_installed_distribution() -> None:
    out = subprocess.run(
        [str(SEAMKIT), "plugins", "--json"],
        capture_output=True,
        text=True,
        env=_clean_env(),
        timeout=60,
        check=True,
    )
    found = {p["name"]: p for p in json.loads(out.stdout)}["temporal"]
    assert (found["distribution"], found["module"], found["error"]) == (
        "seamkit-temporal",
        "seamkit_temporal",
        None,
    )


def test_the_temporal_commands_load_the_sdk_only_when_they_run() -> None:
    for args in (["--help"], ["worker", "--help"], ["run", "--help"], ["decide", "--help"]):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", str(SEAMKIT), "temporal", *args],
            capture_output=True,
            text=True,
            env=_clean_env(),
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert "Usage: seamkit temporal" in done.stdout
        imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()]
        assert "seamkit_temporal._command" in imported
        assert not [m for m in imported if m.startswith("temporalio")]


def test_importing_the_entry_module_leaves_the_sdk_unloaded() -> None:
    code = "import sys, seamkit_temporal; print(sorted(m for m in sys.modules if 'temporal' in m))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "['seamkit_temporal']"
