"""The crash harness' process factory: imports the app once, then forks one
real child process per step, so that a thousand trials do not pay the
interpreter's start-up and seamkit's import a few thousand times.

``python -m tests.benchmarks._crash_zygote`` (cwd the repository root)
imports `tests.benchmarks._crash_app` and seamkit's plugin registry (and,
with ``--postgres``, the PostgreSQL store's plugin), prints ``ready``, then
reads one JSON step configuration per line on standard input. For each it
forks a child (standard input from ``/dev/null``, standard output and error
appended to the file the configuration's ``stderr`` names) that runs
`tests.benchmarks._crash_app.child_main` and exits with its status; the
zygote waits for it (killing it after ``timeout`` seconds) and answers one
JSON line: ``{"signal": N}`` when a signal ended it, else ``{"exit": N}``,
plus ``"timeout": true`` when it had to be killed. Nothing runs in the
zygote itself (no event loop, no thread), so every fork starts clean.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
from typing import Any

from seamkit.plugins import get_registry

from tests.benchmarks._crash_app import child_main


def _wait(pid: int, timeout: float) -> dict[str, Any]:
    """How child ``pid`` ended; killed with SIGKILL after ``timeout`` seconds."""
    timed_out = False
    fd = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            os.kill(pid, signal.SIGKILL)
            timed_out = True
    finally:
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    out: dict[str, Any] = (
        {"signal": os.WTERMSIG(status)}
        if os.WIFSIGNALED(status)
        else {"exit": os.WEXITSTATUS(status)}
    )
    if timed_out:
        out["timeout"] = True
    return out


def _child(cfg: dict[str, Any]) -> None:
    """In the forked child: run the step and exit, never returning."""
    code = 1
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        err = os.open(cfg["stderr"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(err, 1)
        os.dup2(err, 2)
        code = child_main(cfg)
    finally:
        os._exit(code)


def main(argv: list[str]) -> None:
    get_registry()  # the plugins are found once, here
    if "--postgres" in argv:
        import seamkit_sessions_postgres  # lazy: only PostgreSQL trials need it

        # Its entry module is lazy: the store's module (and psycopg) load now.
        seamkit_sessions_postgres.PostgresSessionStore  # noqa: B018
    print("ready", flush=True)
    for line in sys.stdin:
        cfg = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(cfg)
        print(json.dumps(_wait(pid, float(cfg.get("timeout", 60)))), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
