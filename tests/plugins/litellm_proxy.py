"""LiteLLM's proxy for the tests: a server nobody here wrote, speaking OpenAI's
``/v1/chat/completions`` and Anthropic's ``/v1/messages``.

``tests/plugins/conftest.py`` makes the session-scoped ``litellm_bin`` fixture
every plugin test's: it pip-installs ``litellm[proxy]`` from
PyPI into a throwaway virtual environment once per test session (not a
dependency of this repository), however many modules use it. Each module then
starts the proxies it needs (`start_proxy`, `wait_ready`, `stop_proxy`; one
`running` call does all three), on 127.0.0.1 and a free port, with its own
``model_list``. `seamkit_run` runs ``seamkit run`` on an app whose model is
behind a proxy.

Installing is the slow part (two minutes or more with pip and nothing cached;
seconds with uv's cache); a proxy boots in about 15 seconds. A proxy that
cannot be installed or started fails every test that needs it, loudly, with its
log: nothing is skipped.
"""

from __future__ import annotations

import base64
import os
import re
import socket
import subprocess
import sys
import time
import traceback
import venv
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import httpx
import pytest
import yaml

LITELLM = "litellm[proxy]==1.106.2"
"""The release whose behaviour the test modules' docstrings describe."""

MASTER_KEY = "sk-test"
"""Every proxy's ``general_settings.master_key``: the one key it takes."""

CANARY = "sk-canary-LEAK-123"
"""A wrong key whose every trace in an error, a log or an output is a leak."""

BOOT_SECONDS = 120.0
"""The longest wait for the proxies a `running` call starts to be ready."""

KEY_SOURCE = "${secret:LITELLM_KEY}"
"""Where the tests' apps and models read the proxy key: the variable LITELLM_KEY."""

SEAMKIT = Path(sys.executable).with_name("seamkit")
"""This environment's ``seamkit`` command."""

AUTH_MODULE = "seamkit_test_auth"
CUSTOM_AUTH = f'''\
"""LiteLLM custom auth: the master key passes; any other key gets a 401
that echoes it back, as some servers do (OpenAI echoes part of it)."""

from fastapi import HTTPException, Request
from litellm.proxy._types import UserAPIKeyAuth


async def user_api_key_auth(request: Request, api_key: str) -> UserAPIKeyAuth:
    if api_key == {MASTER_KEY!r}:
        return UserAPIKeyAuth(api_key=api_key)
    raise HTTPException(
        status_code=401,
        detail=f"Invalid proxy server token passed. Received API Key = {{api_key}}",
    )
'''
"""LiteLLM's documented ``general_settings.custom_auth`` hook, so that a wrong
key gets a real 401: with a master key and no database, LiteLLM answers any
other key with a 400 "No connected db." instead."""


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without what would tie a child to this
    repository's virtual environment or seamkit's settings, plus ``extra``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SEAMKIT_", "VIRTUAL_ENV", "PYTHON", "LITELLM_", "ANTHROPIC_"))
    }
    env.update(extra)
    return env


def seamkit_run(
    tmp_path: Path, name: str, model: Mapping[str, object], key: str
) -> subprocess.CompletedProcess[str]:
    """``seamkit run app.yaml hi`` in ``tmp_path``, in a `clean_env` whose
    LITELLM_KEY is ``key``: the app ``name`` has ``model`` for its model,
    with the key from `KEY_SOURCE` and no retries."""
    manifest = {"name": name, "model": {**model, "api_key": KEY_SOURCE, "max_retries": 0}}
    app = tmp_path / "app.yaml"
    app.write_text(yaml.safe_dump(manifest), encoding="utf-8")
    return subprocess.run(
        [str(SEAMKIT), "run", str(app), "hi"],
        capture_output=True,
        text=True,
        env=clean_env(LITELLM_KEY=key),
        cwd=tmp_path,
        timeout=120,
    )


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on (now)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Proxy:
    """One running LiteLLM proxy: its process, port and log."""

    name: str
    port: int
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def url(self) -> str:
        """The server's root (Anthropic clients add ``/v1/messages``)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI base URL (clients add ``/chat/completions``)."""
        return f"{self.url}/v1"

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def tail(self, chars: int = 4000) -> str:
        return self.log_text()[-chars:]

    def answered(self, status: int, path: str = "/v1/chat/completions") -> int:
        """How many ``POST path`` requests the proxy's access log shows answered
        with ``status``."""
        pattern = rf'"POST {re.escape(path)} HTTP/1\.1" {status} '
        return len(re.findall(pattern, self.log_text()))

    def wait_answered(self, status: int, count: int, path: str = "/v1/chat/completions") -> int:
        """``answered(status, path)`` once it reaches ``count`` (or after 5 s)."""
        deadline = time.monotonic() + 5
        while (seen := self.answered(status, path)) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        return seen


@pytest.fixture(scope="session")
def litellm_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``litellm`` from a fresh virtual environment with ``litellm[proxy]``
    installed from PyPI, once per test session: by uv when the suite runs under
    ``uv run`` (it sets ``UV``; a minute faster), else by pip, nothing cached."""
    path = tmp_path_factory.mktemp("litellm-venv")
    uv = os.environ.get("UV")
    venv.EnvBuilder(with_pip=uv is None, clear=True).create(path)
    python = path / "bin" / "python"
    if uv is not None:
        command = [uv, "pip", "install", "--quiet", "--python", str(python), LITELLM]
    else:
        command = [str(python), "-m", "pip", "install", "--quiet", "--no-cache-dir", LITELLM]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        env=clean_env(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1"),
        timeout=900,
    )
    if done.returncode != 0:
        pytest.fail(
            f"installing {LITELLM} failed (exit {done.returncode}):\n"
            f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}",
            pytrace=False,
        )
    litellm = path / "bin" / "litellm"
    assert litellm.exists(), f"{LITELLM} was installed but there is no {litellm}"
    return litellm


@dataclass
class ProxySpec:
    """What one proxy serves: its ``model_list`` and more ``general_settings``
    (next to the master key); ``custom_auth`` puts `CUSTOM_AUTH` in front."""

    name: str
    model_list: list[dict[str, Any]]
    general: dict[str, Any] = field(default_factory=dict)
    custom_auth: bool = False


def start_proxy(litellm: Path, directory: Path, spec: ProxySpec) -> Proxy:
    """Start one proxy in ``directory`` (its config and log go there); the
    router never retries (``num_retries: 0``), so every error reaches the client
    at once. Not yet ready: see `wait_ready`."""
    directory.mkdir(parents=True, exist_ok=True)
    general = {"master_key": MASTER_KEY, **spec.general}
    if spec.custom_auth:
        (directory / f"{AUTH_MODULE}.py").write_text(CUSTOM_AUTH, encoding="utf-8")
        general["custom_auth"] = f"{AUTH_MODULE}.user_api_key_auth"
    config = {
        "model_list": spec.model_list,
        "general_settings": general,
        "router_settings": {"num_retries": 0},
    }
    (directory / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    port = free_port()
    log = directory / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                str(litellm),
                "--config",
                str(directory / "config.yaml"),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            cwd=directory,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=clean_env(LITELLM_LOCAL_MODEL_COST_MAP="True", PYTHONUNBUFFERED="1"),
        )
    return Proxy(spec.name, port, process, log)


def wait_ready(proxies: Sequence[Proxy], seconds: float = BOOT_SECONDS) -> None:
    """Wait until every proxy answers its liveness check; fail with its log if
    one exits first or is not ready in ``seconds`` (all together)."""
    deadline = time.monotonic() + seconds
    for proxy in proxies:
        url = f"{proxy.url}/health/liveliness"
        while True:
            code = proxy.process.poll()
            if code is not None:
                pytest.fail(
                    f"LiteLLM proxy {proxy.name!r} exited with {code} before it was ready:\n"
                    f"{proxy.tail()}",
                    pytrace=False,
                )
            try:
                if httpx.get(url, timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(
                    f"LiteLLM proxy {proxy.name!r} not ready on port {proxy.port} after "
                    f"{seconds:g}s:\n{proxy.tail()}",
                    pytrace=False,
                )
            time.sleep(0.25)


def stop_proxy(proxy: Proxy) -> None:
    """Stop the proxy (terminate, then kill after 15 s)."""
    if proxy.process.poll() is None:
        proxy.process.terminate()
        try:
            proxy.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proxy.process.kill()
            proxy.process.wait(timeout=15)


@contextmanager
def running(litellm: Path, root: Path, *specs: ProxySpec) -> Iterator[list[Proxy]]:
    """The proxies ``specs`` describe, started side by side under ``root``
    (one directory each), ready, and stopped on the way out."""
    started: list[Proxy] = []
    try:
        for spec in specs:
            started.append(start_proxy(litellm, root / spec.name, spec))
        wait_ready(started)
        yield started
    finally:
        for proxy in started:
            stop_proxy(proxy)


# --- keeping the key out ------------------------------------------------------


def leak_forms(secret: str) -> list[str]:
    """The key and the encodings it could hide in: URL-quoted, hex, base64
    (standard and URL-safe, padded or not), and its distinctive middle."""
    raw = secret.encode()
    forms = {secret, "canary-LEAK", quote(secret, safe=""), quote_plus(secret), raw.hex()}
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        text = encode(raw).decode("ascii")
        forms |= {text, text.rstrip("=")}
    return sorted(forms)


def assert_no_canary(text: str, where: str) -> None:
    """Fail when ``text`` holds `CANARY` in any of its `leak_forms`."""
    found = [form for form in leak_forms(CANARY) if form in text]
    assert not found, f"{where} holds the API key (as {found}):\n{text}"


def exception_text(exc: BaseException) -> str:
    """Every text an exception carries: str, repr, args, attributes and the
    formatted traceback, of it and of every exception chained to it
    (suppressed contexts included)."""
    parts: list[str] = []
    seen: set[int] = set()
    stack: list[BaseException | None] = [exc]
    while stack:
        current = stack.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        parts += [str(current), repr(current), *map(repr, current.args)]
        parts += [repr(vars(current)), "".join(traceback.format_exception(current))]
        stack += [current.__cause__, current.__context__]
    return "\n".join(parts)


def log_text(caplog: pytest.LogCaptureFixture) -> str:
    """Everything the captured log records say, arguments included."""
    return "\n".join(
        [caplog.text, *(f"{r.name} {r.getMessage()} {r.args!r}" for r in caplog.records)]
    )
