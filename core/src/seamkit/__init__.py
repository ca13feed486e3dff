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
        hookspecs as hookspecs,
        injection as injection,
        plugins as plugins,
        stream as stream,
    )
    from ._config import (
        AnyRefreshCondition as AnyRefreshCondition,
        HookConfig as HookConfig,
        KindConfig as KindConfig,
        ModelConfig as ModelConfig,
        RefreshCondition as RefreshCondition,
        ToolConfig as ToolConfig,
    )
    from ._context import (
        ActionContext as ActionContext,
        HookContext as HookContext,
        Scratchpad as Scratchpad,
    )
    from ._engine._agent import (
        Agent as Agent,
    )
    from ._engine._dispatch import (
        HookStack as HookStack,
    )
    from ._errors import (
        ContextLengthExceeded as ContextLengthExceeded,
        HookError as HookError,
        InvalidToolCall as InvalidToolCall,
        ManifestError as ManifestError,
        ModelError as ModelError,
        PluginError as PluginError,
        Problem as Problem,
        ScriptError as ScriptError,
        SeamkitError as SeamkitError,
        SessionBusy as SessionBusy,
        SessionError as SessionError,
        SessionNotSaved as SessionNotSaved,
        ToolDefinitionError as ToolDefinitionError,
    )
    from ._events import (
        HookEvent as HookEvent,
        hookimpl as hookimpl,
    )
    from ._function_kind import (
        FunctionToolConfig as FunctionToolConfig,
    )
    from ._manifest import (
        AppConfig as AppConfig,
        SessionsConfig as SessionsConfig,
        Settings as Settings,
    )
    from ._patch import (
        RequestPatch as RequestPatch,
    )
    from ._persistence._sessions import (
        SessionStore as SessionStore,
        SQLiteSessionStore as SQLiteSessionStore,
        StoredSession as StoredSession,
    )
    from ._secret import (
        Redactor as Redactor,
        Secret as Secret,
        redact as redact,
    )
    from ._signature import (
        Injected as Injected,
    )
    from ._timeline import (
        Timeline as Timeline,
    )
    from ._tool import (
        Tool as Tool,
        sanitize_toolname as sanitize_toolname,
        tool as tool,
    )
    from ._toolmap import (
        ToolMap as ToolMap,
        ToolSource as ToolSource,
    )
    from ._types import (
        Cancelled as Cancelled,
        Completed as Completed,
        Diagnostic as Diagnostic,
        Document as Document,
        Failed as Failed,
        FunctionCall as FunctionCall,
        MaxTurns as MaxTurns,
        Message as Message,
        MessageToolCall as MessageToolCall,
        Model as Model,
        ModelRequest as ModelRequest,
        ModelTurn as ModelTurn,
        Outcome as Outcome,
        RunResult as RunResult,
        Terminated as Terminated,
        ToolCall as ToolCall,
        ToolResult as ToolResult,
        ToolSpec as ToolSpec,
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
    "Agent": "._engine._agent",
    "AnyRefreshCondition": "._config",
    "HookConfig": "._config",
    "KindConfig": "._config",
    "ModelConfig": "._config",
    "RefreshCondition": "._config",
    "ToolConfig": "._config",
    "ActionContext": "._context",
    "HookContext": "._context",
    "Scratchpad": "._context",
    "HookStack": "._engine._dispatch",
    "HookError": "._errors",
    "InvalidToolCall": "._errors",
    "ManifestError": "._errors",
    "ModelError": "._errors",
    "ContextLengthExceeded": "._errors",
    "PluginError": "._errors",
    "Problem": "._errors",
    "ScriptError": "._errors",
    "SeamkitError": "._errors",
    "SessionBusy": "._errors",
    "SessionError": "._errors",
    "SessionNotSaved": "._errors",
    "ToolDefinitionError": "._errors",
    "HookEvent": "._events",
    "hookimpl": "._events",
    "FunctionToolConfig": "._function_kind",
    "AppConfig": "._manifest",
    "SessionsConfig": "._manifest",
    "Settings": "._config",
    "RequestPatch": "._patch",
    "Redactor": "._secret",
    "Secret": "._secret",
    "redact": "._secret",
    "SQLiteSessionStore": "._persistence._sessions",
    "SessionStore": "._persistence._sessions",
    "StoredSession": "._persistence._sessions",
    "Injected": "._signature",
    "Timeline": "._timeline",
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
        from importlib.metadata import version  # lazy: read on first use only

        value: Any = version("seamkit")
    elif module == "":
        value = importlib.import_module(f".{name}", __name__)
    else:
        value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return list(__all__)
