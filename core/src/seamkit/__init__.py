"""seamkit: a small kernel that runs LLM-agent requests and fires named events
("seams") through pluggy; hook kinds, refresh conditions, tool kinds and model
providers come from plugins discovered through the ``seamkit`` entry-point group.

Everything an app or a hook needs is importable from here; what only plugin
authors need lives in the public submodules `seamkit.plugins` (the registry,
loading, the build context), `seamkit.injection` (synthetic tool-call pairs),
`seamkit.flow`, `seamkit.stream`, `seamkit.hookspecs` and `seamkit.testing`.
Modules whose names start with an underscore are private.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the table below loads, spelled out for type checkers
    from . import (
        flow as flow,
    )
    from . import (
        hookspecs as hookspecs,
    )
    from . import (
        injection as injection,
    )
    from . import (
        plugins as plugins,
    )
    from . import (
        stream as stream,
    )
    from ._agent import (
        Agent as Agent,
    )
    from ._config import (
        AnyRefreshCondition as AnyRefreshCondition,
    )
    from ._config import (
        HookConfig as HookConfig,
    )
    from ._config import (
        KindConfig as KindConfig,
    )
    from ._config import (
        ModelConfig as ModelConfig,
    )
    from ._config import (
        RefreshCondition as RefreshCondition,
    )
    from ._config import (
        ToolConfig as ToolConfig,
    )
    from ._context import (
        ActionContext as ActionContext,
    )
    from ._context import (
        HookContext as HookContext,
    )
    from ._context import (
        Scratchpad as Scratchpad,
    )
    from ._dispatch import (
        HookStack as HookStack,
    )
    from ._errors import (
        HookError as HookError,
    )
    from ._errors import (
        InvalidToolCall as InvalidToolCall,
    )
    from ._errors import (
        ManifestError as ManifestError,
    )
    from ._errors import (
        ModelError as ModelError,
    )
    from ._errors import (
        PluginError as PluginError,
    )
    from ._errors import (
        Problem as Problem,
    )
    from ._errors import (
        ScriptError as ScriptError,
    )
    from ._errors import (
        SeamkitError as SeamkitError,
    )
    from ._errors import (
        SessionBusy as SessionBusy,
    )
    from ._errors import (
        SessionError as SessionError,
    )
    from ._errors import (
        ToolDefinitionError as ToolDefinitionError,
    )
    from ._events import (
        HookEvent as HookEvent,
    )
    from ._events import (
        hookimpl as hookimpl,
    )
    from ._function_kind import (
        FunctionToolConfig as FunctionToolConfig,
    )
    from ._manifest import (
        AppConfig as AppConfig,
    )
    from ._manifest import (
        SessionsConfig as SessionsConfig,
    )
    from ._manifest import (
        Settings as Settings,
    )
    from ._patch import (
        RequestPatch as RequestPatch,
    )
    from ._secret import (
        Secret as Secret,
    )
    from ._secret import (
        redact as redact,
    )
    from ._sessions import (
        SessionStore as SessionStore,
    )
    from ._sessions import (
        SQLiteSessionStore as SQLiteSessionStore,
    )
    from ._sessions import (
        StoredSession as StoredSession,
    )
    from ._signature import (
        Injected as Injected,
    )
    from ._tool import (
        Tool as Tool,
    )
    from ._tool import (
        sanitize_toolname as sanitize_toolname,
    )
    from ._tool import (
        tool as tool,
    )
    from ._toolmap import (
        ToolMap as ToolMap,
    )
    from ._toolmap import (
        ToolSource as ToolSource,
    )
    from ._types import (
        Cancelled as Cancelled,
    )
    from ._types import (
        Completed as Completed,
    )
    from ._types import (
        Diagnostic as Diagnostic,
    )
    from ._types import (
        Document as Document,
    )
    from ._types import (
        Failed as Failed,
    )
    from ._types import (
        FunctionCall as FunctionCall,
    )
    from ._types import (
        MaxTurns as MaxTurns,
    )
    from ._types import (
        Message as Message,
    )
    from ._types import (
        MessageToolCall as MessageToolCall,
    )
    from ._types import (
        Model as Model,
    )
    from ._types import (
        ModelRequest as ModelRequest,
    )
    from ._types import (
        ModelTurn as ModelTurn,
    )
    from ._types import (
        Outcome as Outcome,
    )
    from ._types import (
        RunResult as RunResult,
    )
    from ._types import (
        Terminated as Terminated,
    )
    from ._types import (
        ToolCall as ToolCall,
    )
    from ._types import (
        ToolResult as ToolResult,
    )
    from ._types import (
        ToolSpec as ToolSpec,
    )
    from ._types import (
        Usage as Usage,
    )

    __version__: str

_PUBLIC: dict[str, str] = {
    # name: the module that defines it ("" for a public submodule)
    "flow": "",
    "hookspecs": "",
    "injection": "",
    "plugins": "",
    "stream": "",
    "Agent": "._agent",
    "AnyRefreshCondition": "._config",
    "HookConfig": "._config",
    "KindConfig": "._config",
    "ModelConfig": "._config",
    "RefreshCondition": "._config",
    "ToolConfig": "._config",
    "ActionContext": "._context",
    "HookContext": "._context",
    "Scratchpad": "._context",
    "HookStack": "._dispatch",
    "HookError": "._errors",
    "InvalidToolCall": "._errors",
    "ManifestError": "._errors",
    "ModelError": "._errors",
    "PluginError": "._errors",
    "Problem": "._errors",
    "ScriptError": "._errors",
    "SeamkitError": "._errors",
    "SessionBusy": "._errors",
    "SessionError": "._errors",
    "ToolDefinitionError": "._errors",
    "HookEvent": "._events",
    "hookimpl": "._events",
    "FunctionToolConfig": "._function_kind",
    "AppConfig": "._manifest",
    "SessionsConfig": "._manifest",
    "Settings": "._manifest",
    "RequestPatch": "._patch",
    "Secret": "._secret",
    "redact": "._secret",
    "SQLiteSessionStore": "._sessions",
    "SessionStore": "._sessions",
    "StoredSession": "._sessions",
    "Injected": "._signature",
    "Tool": "._tool",
    "sanitize_toolname": "._tool",
    "tool": "._tool",
    "ToolMap": "._toolmap",
    "ToolSource": "._toolmap",
    "Cancelled": "._types",
    "Completed": "._types",
    "Diagnostic": "._types",
    "Document": "._types",
    "Failed": "._types",
    "FunctionCall": "._types",
    "MaxTurns": "._types",
    "Message": "._types",
    "MessageToolCall": "._types",
    "Model": "._types",
    "ModelRequest": "._types",
    "ModelTurn": "._types",
    "Outcome": "._types",
    "RunResult": "._types",
    "Terminated": "._types",
    "ToolCall": "._types",
    "ToolResult": "._types",
    "ToolSpec": "._types",
    "Usage": "._types",
    "__version__": "",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    # Public names load on first use (PEP 562), so `import seamkit` costs
    # little and a process pays only for what it touches.
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'seamkit' has no attribute {name!r}")
    if name == "__version__":
        from importlib.metadata import version

        value: Any = version("seamkit")
    elif module == "":
        value = importlib.import_module(f".{name}", __name__)
    else:
        value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return list(__all__)
