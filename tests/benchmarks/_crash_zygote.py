"""The crash harness' process factory: imports the app once, then forks one
real child process per step, so that a thousand trials do not pay the
interpreter's start-up and seamkit's import a few thousand times.

``python -m tests.benchmarks._crash_zygote`` (cwd the repository root)
imports `tests.benchmarks._crash_app`, seamkit's plugin registry and its
engine (by building the app's agent once; no thread, no event loop) and,
with ``--postgres``, the PostgreSQL store's plugin; prints ``ready``, then
reads one JSON step configuration per line on standard input. For each it
forks a child (standard input from ``/dev/null``, standard output and error
appended to the file the configuration's ``stderr`` names) that runs
`tests.benchmarks._crash_app.child_main` and exits with its status; the
zygote waits for it and answers one JSON line: ``{"signal": N}`` when a
signal ended it, else ``{"exit": N}``, with its ``"pid"`` and the
``"seconds"`` from the fork to its end. With ``kill_after`` (seconds) in
the configuration, the zygote kills the child with SIGKILL that long after
the fork, wherever it is (a kill at a random moment: ``"moment": true`` in
the answer), unless it ended first; after ``timeout`` seconds it kills it
too (``"timeout": true``). Nothing runs in the zygote itself (no event
loop, no thread), so every fork starts clean.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
from typing import Any

from seamkit.plugins import get_registry

from tests.benchmarks._crash_app import build_agent, child_main


def _wait(pid: int, forked: float, timeout: float, kill_after: float | None) -> dict[str, Any]:
    """How child ``pid`` (forked at ``forked``, a `time.monotonic`) ended;
    killed with SIGKILL ``kill_after`` seconds after its fork (a moment), or
    after ``timeout`` seconds."""
    why = ""
    fd = os.pidfd_open(pid)
    try:
        for deadline, reason in ((kill_after, "moment"), (timeout, "timeout")):
            if deadline is None:
                continue
            left = max(0.0, forked + deadline - time.monotonic())
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                os.kill(pid, signal.SIGKILL)
                why = reason
                break
    finally:
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    ended = time.monotonic()
    out: dict[str, Any] = (
        {"signal": os.WTERMSIG(status)}
        if os.WIFSIGNALED(status)
        else {"exit": os.WEXITSTATUS(status)}
    )
    out["seconds"] = round(ended - forked, 6)
    out["pid"] = pid
    if why and "signal" in out:
        out[why] = True
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
    build_agent(1)  # and the engine's modules (seamkit imports them lazily) imported
    if "--postgres" in argv:
        import seamkit_sessions_postgres  # lazy: only PostgreSQL trials need it

        # Its entry module is lazy: the store's module (and psycopg) load now.
        seamkit_sessions_postgres.PostgresSessionStore  # noqa: B018
    print("ready", flush=True)
    for line in sys.stdin:
        cfg = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        forked = time.monotonic()
        pid = os.fork()
        if pid == 0:
            _child(cfg)
        after = cfg.get("kill_after")
        status = _wait(pid, forked, float(cfg.get("timeout", 60)), after)
        print(json.dumps(status), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
