"""seamkit: a small kernel that runs LLM-agent requests and fires named events
("seams") through pluggy; hook kinds, refresh conditions, tool kinds and model
providers come from plugins discovered through the ``seamkit`` entry-point group.

Everything public is importable from here; modules whose names start with an
underscore are private.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from . import flow, hookspecs, stream
    from ._agent import Agent
    from ._app import AppConfig, Settings
    from ._config import AnyRefreshCondition, HookConfig, KindConfig, RefreshCondition, ToolConfig
    from ._context import ActionContext, HookContext, Scratchpad
    from ._dispatch import ConfiguredHook, Dispatched, HookStack
    from ._errors import (
        HookError,
        InvalidToolCall,
        ManifestError,
        PluginError,
        Problem,
        SeamkitError,
    )
    from ._events import HookEvent
    from ._function_kind import FunctionToolConfig
    from ._injection import (
        Frequency,
        SyntheticId,
        freshest_expiry,
        inject_tool_result,
        injected_results,
        parse_synthetic_id,
        synthetic_id,
    )
    from ._loader import get_registry, load_plugins
    from ._markers import hookimpl
    from ._messages import Document, FunctionCall, Message, MessageToolCall
    from ._model import Model
    from ._names import sanitize_toolname
    from ._patch import RequestPatch
    from ._registry import KindInfo, PluginInfo, Registry
    from ._results import (
        Cancelled,
        Completed,
        Diagnostic,
        Failed,
        MaxTurns,
        ModelRequest,
        ModelTurn,
        Outcome,
        RunResult,
        Terminated,
        ToolCall,
        ToolResult,
        ToolSpec,
        Usage,
    )
    from ._secret import Secret
    from ._sessions import SessionBusy, SessionStore
    from ._signature import Injected
    from ._tool import Tool, tool
    from ._toolmap import ToolMap, resolve_tools
    from ._version import __version__

__all__ = [
    "ActionContext",
    "Agent",
    "AnyRefreshCondition",
    "AppConfig",
    "Cancelled",
    "Completed",
    "ConfiguredHook",
    "Diagnostic",
    "Dispatched",
    "Document",
    "Failed",
    "Frequency",
    "FunctionCall",
    "FunctionToolConfig",
    "HookConfig",
    "HookContext",
    "HookError",
    "HookEvent",
    "HookStack",
    "Injected",
    "InvalidToolCall",
    "KindConfig",
    "KindInfo",
    "ManifestError",
    "MaxTurns",
    "Message",
    "MessageToolCall",
    "Model",
    "ModelRequest",
    "ModelTurn",
    "Outcome",
    "PluginError",
    "PluginInfo",
    "Problem",
    "RefreshCondition",
    "Registry",
    "RequestPatch",
    "RunResult",
    "Scratchpad",
    "SeamkitError",
    "Secret",
    "SessionBusy",
    "SessionStore",
    "Settings",
    "SyntheticId",
    "Terminated",
    "Tool",
    "ToolCall",
    "ToolConfig",
    "ToolMap",
    "ToolResult",
    "ToolSpec",
    "Usage",
    "__version__",
    "flow",
    "freshest_expiry",
    "get_registry",
    "hookimpl",
    "hookspecs",
    "inject_tool_result",
    "injected_results",
    "load_plugins",
    "parse_synthetic_id",
    "resolve_tools",
    "sanitize_toolname",
    "stream",
    "synthetic_id",
    "tool",
]

# Public names load on first use (PEP 562), so `import seamkit` costs little
# and a process pays only for what it touches.
_LAZY: dict[str, str] = {
    "flow": "",
    "hookspecs": "",
    "stream": "",
    "Agent": "._agent",
    "Model": "._model",
    "SessionBusy": "._sessions",
    "SessionStore": "._sessions",
    "__version__": "._version",
    "AppConfig": "._app",
    "Settings": "._app",
    "AnyRefreshCondition": "._config",
    "HookConfig": "._config",
    "KindConfig": "._config",
    "RefreshCondition": "._config",
    "ToolConfig": "._config",
    "ActionContext": "._context",
    "HookContext": "._context",
    "Scratchpad": "._context",
    "HookError": "._errors",
    "ManifestError": "._errors",
    "PluginError": "._errors",
    "Problem": "._errors",
    "SeamkitError": "._errors",
    "InvalidToolCall": "._errors",
    "HookEvent": "._events",
    "ConfiguredHook": "._dispatch",
    "Dispatched": "._dispatch",
    "HookStack": "._dispatch",
    "FunctionToolConfig": "._function_kind",
    "get_registry": "._loader",
    "Frequency": "._injection",
    "SyntheticId": "._injection",
    "freshest_expiry": "._injection",
    "inject_tool_result": "._injection",
    "injected_results": "._injection",
    "parse_synthetic_id": "._injection",
    "synthetic_id": "._injection",
    "load_plugins": "._loader",
    "hookimpl": "._markers",
    "Document": "._messages",
    "FunctionCall": "._messages",
    "Message": "._messages",
    "MessageToolCall": "._messages",
    "RequestPatch": "._patch",
    "KindInfo": "._registry",
    "PluginInfo": "._registry",
    "Registry": "._registry",
    "Secret": "._secret",
    "sanitize_toolname": "._names",
    "Injected": "._signature",
    "Tool": "._tool",
    "tool": "._tool",
    "ToolMap": "._toolmap",
    "resolve_tools": "._toolmap",
}
_RESULTS = (
    "Cancelled Completed Diagnostic Failed MaxTurns ModelRequest ModelTurn Outcome RunResult "
    "Terminated ToolCall ToolResult ToolSpec Usage"
)
for _name in _RESULTS.split():
    _LAZY[_name] = "._results"


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'seamkit' has no attribute {name!r}")
    value = (
        importlib.import_module(f".{name}", __name__)
        if module == ""
        else getattr(importlib.import_module(module, __name__), name)
    )
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
