"""Tools for testing seamkit plugins and apps (extra ``seamkit[testing]``).

- :func:`build_agent`: an agent from a dict manifest, plugins registered
  in-process, a :class:`ScriptedModel` playing given turns; :class:`Recorder`
  records every hook call; :func:`stream_run` collects a streamed run.
- :func:`run_event` / :func:`arun_event`: drive a list of hooks through one
  event without an agent, and get the net flow back.
- :func:`scripted_hook`: a hook that returns (or raises) what you tell it.
- :mod:`seamkit.testing.strategies`: hypothesis strategies for messages, tool
  calls, histories, documents and request patches.
- :func:`check_patch_laws`, :func:`check_hook_composes` and
  :func:`check_refresh_condition`: ready property checks, one line each in a
  plugin author's test.
- The pytest plugin (entry point ``pytest11``) gives ``seamkit_*`` fixtures
  and runs plain ``async def`` tests with asyncio (``seamkit_async = false``
  in the ini turns that off; anyio, pytest-asyncio and pytest-trio keep theirs).

Hypothesis is imported only when strategies or checks are used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._errors import ScriptError
    from .._scripted import ScriptedModel
    from ._agents import Recorder, StreamedRun, build_agent, stream_run
    from ._checks import check_hook_composes, check_patch_laws
    from ._harness import Opaque, arun_event, make_context, run_event, scripted_hook
    from ._refresh_checks import check_refresh_condition

__all__ = [
    "Opaque",
    "Recorder",
    "ScriptError",
    "ScriptedModel",
    "StreamedRun",
    "arun_event",
    "build_agent",
    "check_hook_composes",
    "check_patch_laws",
    "check_refresh_condition",
    "make_context",
    "run_event",
    "scripted_hook",
    "strategies",
    "stream_run",
]

_LAZY = {
    "ScriptedModel": ".._scripted",
    "ScriptError": ".._errors",
    "Recorder": "._agents",
    "StreamedRun": "._agents",
    "build_agent": "._agents",
    "stream_run": "._agents",
    "Opaque": "._harness",
    "arun_event": "._harness",
    "make_context": "._harness",
    "run_event": "._harness",
    "scripted_hook": "._harness",
    "check_hook_composes": "._checks",
    "check_patch_laws": "._checks",
    "check_refresh_condition": "._refresh_checks",
}


def __getattr__(name: str) -> Any:
    if name == "strategies":
        value: Any = importlib.import_module(".strategies", __name__)
    elif name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    else:
        raise AttributeError(f"module 'seamkit.testing' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
