"""seamkit plugin: the ``guard`` hook kind.

An operator's guard over what passes a run: text matching its ``patterns``
(regular expressions) is masked with its ``replacement``, or the run is
ended (``Terminate``), at the events its entry names: the user's input
(``on_request_start``), the model's streamed and final text and its tool
calls' arguments (``on_text_delta``), and tool results
(``on_post_tool_use``, where a block withholds the result). Written
against seamkit's public API.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import seamkit
from seamkit.plugins import lazy_module

if TYPE_CHECKING:
    from seamkit.plugins import RegisterHookKind

    from ._config import GuardHookConfig as GuardHookConfig
    from ._hook import GuardHook as GuardHook
    from ._patterns import longest_match as longest_match

__getattr__, __dir__, __all__ = lazy_module(
    __name__,
    {
        "GuardHook": "._hook",
        "GuardHookConfig": "._config",
        "longest_match": "._patterns",
    },
    defined=["register_hook_kinds"],
)
__seamkit_api__ = 1


@seamkit.hookimpl
def register_hook_kinds(register: RegisterHookKind) -> None:
    """Register the ``guard`` kind, at on_request_start, on_text_delta and
    on_post_tool_use."""
    from ._config import GuardHookConfig  # lazy: pydantic loads on registration
    from ._hook import GuardHook  # lazy: see above

    register(
        GuardHookConfig,
        GuardHook,
        events={
            seamkit.HookEvent.ON_REQUEST_START,
            seamkit.HookEvent.ON_TEXT_DELTA,
            seamkit.HookEvent.ON_POST_TOOL_USE,
        },
    )
