"""The pytest plugin of ``seamkit.testing`` (entry point ``pytest11``).

It gives the ``seamkit_*`` fixtures, and runs plain ``async def`` tests with
asyncio so that a plugin author's coroutine tests work with no configuration.

Which async tests it runs (see :func:`pytest_pyfunc_call`): a coroutine test
function that no other runner was asked to run. It runs nothing when

- the ini option ``seamkit_async = false`` is set (pytest's own behaviour
  comes back: ``async def functions are not natively supported``);
- pytest-asyncio or pytest-trio is active (a plugin named ``asyncio`` or
  ``trio`` is registered): the project chose its runner for every async test;
- the test is marked ``anyio``, ``asyncio`` or ``trio``, or uses the
  ``anyio_backend`` fixture: that marker's runner owns it.

It imports nothing heavy at load time: hypothesis is imported only when the
``seamkit_strategies`` fixture is used, so it costs nothing to a user who never
asks for it.
"""

from __future__ import annotations

import asyncio
import inspect
from types import ModuleType
from typing import Any

import pytest

ASYNC_INI = "seamkit_async"
"""The ini option that turns the kit's async runner on (the default) or off."""

RUNNER_PLUGINS = ("asyncio", "trio")
"""Plugin names of async runners (pytest-asyncio, pytest-trio) that own every
async test once active: with one of them registered the kit runs none."""

RUNNER_MARKERS = frozenset({"anyio", "asyncio", "trio"})
"""Markers that hand a test to another runner."""


def pytest_addoption(parser: pytest.Parser) -> None:
    """Declare ``seamkit_async`` (default true)."""
    parser.addini(
        ASYNC_INI,
        "run plain `async def` tests with asyncio, a fresh event loop per test "
        "(seamkit.testing); false leaves them to pytest or another plugin",
        type="bool",
        default=True,
    )


def runs_async(item: pytest.Function) -> bool:
    """Whether the kit runs ``item``: a coroutine test function, the runner on,
    no async runner plugin active and no runner's marker or fixture on the test."""
    if not inspect.iscoroutinefunction(item.obj):
        return False
    config = item.config
    if not config.getini(ASYNC_INI):
        return False
    if any(config.pluginmanager.has_plugin(name) for name in RUNNER_PLUGINS):
        return False
    if any(marker.name in RUNNER_MARKERS for marker in item.iter_markers()):
        return False
    return "anyio_backend" not in item.fixturenames


def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run a plain ``async def`` test in a fresh event loop (``asyncio.run``).

    Ordinary priority: anyio's ``tryfirst`` implementation has already run the
    tests it owns, and pytest's own ``trylast`` one, which fails coroutine
    tests, never sees the ones run here. The test receives only the arguments
    it declares, as pytest passes them to a plain test.

    Out of scope: async fixtures and async generator fixtures (they need a
    runner that owns the loop across set-up and tear-down, such as anyio or
    pytest-asyncio), async generator test functions, and async tests wrapped
    by hypothesis's ``@given``.
    """
    if not runs_async(pyfuncitem):
        return None
    funcargs = pyfuncitem.funcargs
    # pytest's own pyfunc_call (and anyio's) pass exactly these names; there
    # is no public spelling of the declared-argument list.
    testargs = {name: funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    asyncio.run(pyfuncitem.obj(**testargs))
    return True


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
