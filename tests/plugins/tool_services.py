"""Test helpers for tool services: ``seamkit tool-service serve`` in a
subprocess (HTTP or NATS, one or more workers), ready when it says so, and
stopped with SIGTERM (then SIGKILL) whatever the test did.

The services the tests serve are in ``tests/plugins/services/`` (importable
as ``tests.plugins.services.<module>``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx
import seamkit

from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]
SEAMKIT = Path(sys.executable).with_name("seamkit")


class ServiceProcess:
    """``seamkit tool-service serve SPEC`` in a subprocess, its log in a file.

    ``ServiceProcess.http(spec, log_dir)`` listens on a free port (``url``);
    ``ServiceProcess.nats(spec, log_dir, servers=..., subject=...)`` joins a
    NATS server. Both return once every worker is ready.
    """

    def __init__(
        self,
        command: list[str],
        log: Path,
        *,
        workers: int,
        url: str = "",
        env: dict[str, str] | None = None,
    ) -> None:
        self.log = log
        self.url = url
        self.workers = workers
        self.leaked: list[int] = []
        """Worker processes still alive after the server stopped (killed then)."""
        env = {
            k: v for k, v in {**os.environ, **(env or {})}.items() if not k.startswith("SEAMKIT_")
        }
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        with log.open("w") as out:
            self.process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT
            )

    @classmethod
    def http(cls, spec: str, log_dir: Path, *, workers: int = 1) -> ServiceProcess:
        """Serve ``spec`` over HTTP on a free port; ready when /healthz answers."""
        port = free_port()
        command = [str(SEAMKIT), "tool-service", "serve", spec, "--transport", "http"]
        command += ["--port", str(port), "--workers", str(workers)]
        served = cls(
            command,
            log_dir / f"service-{port}.log",
            workers=workers,
            url=f"http://127.0.0.1:{port}/",
        )
        served._wait(lambda: served._healthy())
        return served

    @classmethod
    def nats(
        cls,
        spec: str,
        log_dir: Path,
        *,
        servers: str,
        subject: str,
        workers: int = 1,
        flags: Sequence[str] = (),
        env: dict[str, str] | None = None,
    ) -> ServiceProcess:
        """Serve ``spec`` on NATS; ready when every worker said so. ``flags``:
        more options (``--nats-user`` ...), ``env``: more environment."""
        command = [str(SEAMKIT), "tool-service", "serve", spec, "--transport", "nats"]
        command += ["--servers", servers, "--subject", subject, "--workers", str(workers)]
        command += flags
        log = log_dir / f"service-{subject}-{time.monotonic_ns()}.log"
        served = cls(command, log, workers=workers, env=env)
        served._wait(lambda: served.output().count(" ready") >= workers)
        return served

    def _healthy(self) -> bool:
        try:
            return httpx.get(self.url + "healthz", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    def _wait(self, ready: object, seconds: float = 30.0) -> None:
        assert callable(ready)
        deadline = time.monotonic() + seconds
        while not ready():
            if self.process.poll() is not None:
                raise AssertionError(f"the service exited:\n{self.output()}")
            if time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"the service never got ready:\n{self.output()}")
            time.sleep(0.05)

    def output(self) -> str:
        """What the service wrote so far."""
        return self.log.read_text()

    def worker_pids(self) -> list[int]:
        """The NATS worker processes' ids, from their ready lines."""
        return [
            int(line.split("worker ")[1].split()[0])
            for line in self.output().splitlines()
            if " ready" in line and "worker " in line
        ]

    def stop(self, sig: int = signal.SIGTERM, wait: float = 20.0) -> str:
        """Stop it (SIGTERM, then SIGKILL after ``wait``); its output."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(wait)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for pid in self.worker_pids():  # a worker left behind is a bug: never leak it
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                self.leaked.append(pid)
        return self.output()

    def __enter__(self) -> ServiceProcess:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def tool(name: str, service_id: str, *arguments: tuple[str, str, bool], **fields: Any) -> Any:
    """A ``tool-service`` entry; ``arguments`` are (name, type, required)."""
    return {
        "kind": "tool-service",
        "name": name,
        "description": f"The {name} tool.",
        "service": service_id,
        "arguments": [{"name": n, "type": t, "required": r} for n, t, r in arguments],
        **fields,
    }


def app(
    services: list[dict[str, Any]], tools: list[dict[str, Any]], **section: Any
) -> dict[str, Any]:
    """A manifest of ``services`` (more ``tool_services`` fields in
    ``section``) and ``tools``; its model is replaced in the tests."""
    return {
        "name": "service-tools",
        "model": "scripted:inline",
        "tool_services": {"services": services, **section},
        "tools": tools,
    }


def results(result: seamkit.RunResult) -> dict[str, str]:
    """The content of each tool result by call id."""
    return {m.tool_call_id or "": m.text for m in result.transcript if m.role == "tool"}
