"""seamkit plugin: the ``approval`` hook kind.

At ``on_pre_tool_use`` it asks for a person's approval
(`seamkit.flow.RequireApproval`) before a call of one of its ``tools`` runs,
when the call's arguments fit its ``when`` JSON Schema (or always, without
one), with a reason rendered from the arguments. Written against seamkit's
public API.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import seamkit
from seamkit.plugins import lazy_module

if TYPE_CHECKING:
    from seamkit.plugins import RegisterHookKind

    from ._config import ApprovalHookConfig as ApprovalHookConfig
    from ._hook import ApprovalHook as ApprovalHook
    from ._template import ReasonTemplate as ReasonTemplate

__getattr__, __dir__, __all__ = lazy_module(
    __name__,
    {
        "ApprovalHook": "._hook",
        "ApprovalHookConfig": "._config",
        "ReasonTemplate": "._template",
    },
    defined=["register_hook_kinds"],
)
__seamkit_api__ = 1


@seamkit.hookimpl
def register_hook_kinds(register: RegisterHookKind) -> None:
    """Register the ``approval`` kind, at on_pre_tool_use."""
    from ._config import ApprovalHookConfig  # lazy: pydantic loads on registration
    from ._hook import ApprovalHook  # lazy: see above

    register(ApprovalHookConfig, ApprovalHook, events={seamkit.HookEvent.ON_PRE_TOOL_USE})
