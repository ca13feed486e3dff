"""Shared test set-up: hypothesis profiles and helpers for plugin fixtures."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest
import seamkit
from hypothesis import HealthCheck, settings
from seamkit.plugins import reset_registry

ROOT = Path(__file__).resolve().parent.parent

# The live tests talk to the real OpenAI API: collected only with a key.
collect_ignore_glob = [] if os.environ.get("OPENAI_API_KEY") else ["live/*"]
FIXTURE_DISTS = Path(__file__).resolve().parent / "fixtures" / "dists"

# At least 1,000 examples per property in CI; `HYPOTHESIS_PROFILE=deep` for 100,000 locally.
settings.register_profile(
    "ci", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=200, deadline=None)
settings.register_profile(
    "deep", max_examples=100_000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture
def fixture_plugins(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Make the fixture plugins under tests/fixtures/dists importable in-process."""
    for src in sorted(FIXTURE_DISTS.glob("*/src")):
        monkeypatch.syspath_prepend(str(src))
    yield
    for name in list(sys.modules):
        if name.startswith("seamkit_fixture_"):
            del sys.modules[name]


def entry_point(name: str, module: str) -> metadata.EntryPoint:
    """An entry point of group ``seamkit`` (not installed: for in-process tests)."""
    return metadata.EntryPoint(name=name, value=module, group="seamkit")


def installed_entry_points() -> list[metadata.EntryPoint]:
    """The entry points of group ``seamkit`` installed in this environment."""
    return list(metadata.entry_points(group="seamkit"))


@pytest.fixture(autouse=True)
def _fresh_registry() -> Iterator[None]:
    """Each test starts from the installed plugins, never another test's registry."""
    reset_registry()
    yield
    reset_registry()


__all__ = ["ROOT", "entry_point", "free_port", "installed_entry_points", "seamkit"]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (for a server a test starts)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port
