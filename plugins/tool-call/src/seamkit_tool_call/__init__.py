"""seamkit plugin: the ``tool_call`` hook kind.

At ``on_request_start`` it calls one of the agent's tools and injects the
call and its result into the messages (a synthetic pair); at
``on_completion`` it only calls the tool. Written against seamkit's public API.

When the agent is built, the entry is checked against its tool: the tool
must exist, and the arguments must fit its JSON Schema (see `_arguments`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import seamkit
from seamkit.plugins import lazy_module

if TYPE_CHECKING:
    from seamkit.plugins import RegisterHookKind

    from ._config import ToolCallHookConfig as ToolCallHookConfig
    from ._hook import ToolCallHook as ToolCallHook

__getattr__, __dir__, __all__ = lazy_module(
    __name__,
    {"ToolCallHook": "._hook", "ToolCallHookConfig": "._config"},
    defined=["register_hook_kinds"],
)
__seamkit_api__ = 1


@seamkit.hookimpl
def register_hook_kinds(register: RegisterHookKind) -> None:
    """Register the ``tool_call`` kind, at on_request_start and on_completion."""
    from ._config import ToolCallHookConfig  # lazy: pydantic loads on registration
    from ._hook import ToolCallHook  # lazy: see above

    register(
        ToolCallHookConfig,
        ToolCallHook,
        events={seamkit.HookEvent.ON_REQUEST_START, seamkit.HookEvent.ON_COMPLETION},
    )
