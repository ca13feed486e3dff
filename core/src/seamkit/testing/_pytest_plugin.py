"""The pytest plugin of ``seamkit.testing`` (entry point ``pytest11``).

It gives the ``seamkit_*`` fixtures, and runs plain ``async def`` tests with
asyncio so that a plugin author's coroutine tests work with no configuration.

Which async tests it runs (see :func:`pytest_pyfunc_call`): a coroutine test
function that no other runner was asked to run. It runs nothing when

- the ini option ``seamkit_async = false`` is set (pytest's own behaviour
  comes back: ``async def functions are not natively supported``);
- pytest-asyncio runs in auto mode (``asyncio_mode = auto``), or pytest-trio
  in trio mode (``trio_mode = true``): that runner owns every async test.

and it never runs a test marked ``anyio``, ``asyncio`` or ``trio``, or one
that uses the ``anyio_backend`` fixture: that marker's runner owns it. In
pytest-asyncio's strict mode (its default) and pytest-trio's default, those
runners take only the tests marked for them, and the kit runs the unmarked
ones, as it does with no other runner installed.

It imports nothing heavy at load time: hypothesis is imported only when the
``seamkit_strategies`` fixture is used, so it costs nothing to a user who never
asks for it.
"""

from __future__ import annotations

import asyncio
import inspect
import warnings
from types import ModuleType
from typing import Any

import pytest

ASYNC_INI = "seamkit_async"
"""The ini option that turns the kit's async runner on (the default) or off."""

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
    """Whether the kit runs ``item``: a coroutine test function, the runner
    on, no runner that owns every async test, and no runner's marker or
    fixture on the test."""
    if not inspect.iscoroutinefunction(item.obj):
        return False
    config = item.config
    if not config.getini(ASYNC_INI):
        return False
    if _owns_every_async_test(config):
        return False
    if any(marker.name in RUNNER_MARKERS for marker in item.iter_markers()):
        return False
    return "anyio_backend" not in item.fixturenames


def _owns_every_async_test(config: pytest.Config) -> bool:
    """pytest-asyncio in auto mode, or pytest-trio in trio mode; a runner
    registered under those names whose mode cannot be read counts as one."""
    manager = config.pluginmanager
    if manager.has_plugin("asyncio"):
        mode = _setting(config, "asyncio_mode")
        if mode is None or str(mode).lower() != "strict":
            return True
    if manager.has_plugin("trio"):
        mode = _setting(config, "trio_mode")
        if mode is None or mode is True or str(mode).lower() in {"true", "1", "yes"}:
            return True
    return False


def _setting(config: pytest.Config, name: str) -> object:
    """A runner's mode: its command-line option, else its ini value; None when
    that runner declares no such setting."""
    option = config.getoption(name, default=None)
    if option is not None:
        return option
    try:
        return config.getini(name)
    except ValueError:  # not declared: an unknown runner, or another version
        return None


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
    declared = inspect.signature(pyfuncitem.obj).parameters
    testargs = {name: funcargs[name] for name in declared if name in funcargs}
    returned = asyncio.run(pyfuncitem.obj(**testargs))
    if returned is not None:
        warnings.warn(
            pytest.PytestReturnNotNoneWarning(
                f"Test functions should return None, but {pyfuncitem.nodeid} returned "
                f"{type(returned)!r}; did you mean to use `assert` instead of `return`?"
            ),
            stacklevel=1,
        )
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
