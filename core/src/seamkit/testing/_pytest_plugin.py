"""The pytest plugin of ``seamkit.testing`` (entry point ``pytest11``).

It imports nothing heavy at load time: hypothesis is imported only when the
``seamkit_strategies`` fixture is used, so it costs nothing to a user who never
asks for it.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest


@pytest.fixture
def seamkit_context() -> Any:
    """A fresh `HookContext` (turn 1, empty scratchpad and diagnostics)."""
    from ._harness import make_context  # lazy: keeps pytest start-up cheap

    return make_context()


@pytest.fixture
def seamkit_run_event() -> Any:
    """``run_event(hooks, event, *args, ctx=None)``: drive hooks through one event."""
    from ._harness import run_event  # lazy: keeps pytest start-up cheap

    return run_event


@pytest.fixture
def seamkit_strategies() -> ModuleType:
    """The :mod:`seamkit.testing.strategies` module (imports hypothesis)."""
    from . import strategies  # lazy: imports hypothesis

    return strategies
