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

from typing import TYPE_CHECKING

from ._lazy import lazy_module

if TYPE_CHECKING:  # what the table below loads, spelled out for type checkers
    from collections.abc import Callable

    from . import (
        flow as flow,
        hookspecs as hookspecs,
        injection as injection,
        plugins as plugins,
        stream as stream,
    )
    from ._approval import (
        ApprovalRule as ApprovalRule,
        Approve as Approve,
        Decisions as Decisions,
        Edit as Edit,
        PendingCall as PendingCall,
        Reject as Reject,
        arguments_digest as arguments_digest,
    )
    from ._client import (
        ClientResults as ClientResults,
    )
    from ._config import (
        AnyRefreshCondition as AnyRefreshCondition,
        HookConfig as HookConfig,
        KindConfig as KindConfig,
        ModelConfig as ModelConfig,
        RefreshCondition as RefreshCondition,
        Settings as Settings,
        ToolConfig as ToolConfig,
    )
    from ._context import (
        ActionContext as ActionContext,
        CallInfo as CallInfo,
        Effects as Effects,
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
        OutputDefinitionError as OutputDefinitionError,
        OutputInvalid as OutputInvalid,
        PluginError as PluginError,
        Problem as Problem,
        ResumeError as ResumeError,
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
    )
    from ._output import (
        Output as Output,
    )
    from ._patch import (
        RequestPatch as RequestPatch,
    )
    from ._persistence._journal import (
        JournalEntry as JournalEntry,
        JournalStore as JournalStore,
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
        secret_json as secret_json,
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
        Deferred as Deferred,
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
        OutputMode as OutputMode,
        OutputSpec as OutputSpec,
        RunResult as RunResult,
        Suspended as Suspended,
        Terminated as Terminated,
        ToolCall as ToolCall,
        ToolResult as ToolResult,
        ToolSpec as ToolSpec,
        Usage as Usage,
    )

    __version__: str


def _version() -> str:
    """The installed version of seamkit: ``seamkit.__version__``."""
    from importlib.metadata import version  # lazy: read on first use only

    return version("seamkit")


_PUBLIC: dict[str, str | Callable[[], object]] = {
    # name: the module that defines it ("" for a public submodule)
    "flow": "",
    "hookspecs": "",
    "injection": "",
    "plugins": "",
    "stream": "",
    "Agent": "._engine._agent",
    "ApprovalRule": "._approval",
    "Approve": "._approval",
    "Decisions": "._approval",
    "Edit": "._approval",
    "PendingCall": "._approval",
    "Reject": "._approval",
    "arguments_digest": "._approval",
    "ClientResults": "._client",
    "AnyRefreshCondition": "._config",
    "HookConfig": "._config",
    "KindConfig": "._config",
    "ModelConfig": "._config",
    "RefreshCondition": "._config",
    "ToolConfig": "._config",
    "ActionContext": "._context",
    "CallInfo": "._context",
    "Effects": "._context",
    "HookContext": "._context",
    "Scratchpad": "._context",
    "HookStack": "._engine._dispatch",
    "HookError": "._errors",
    "InvalidToolCall": "._errors",
    "ManifestError": "._errors",
    "ModelError": "._errors",
    "OutputDefinitionError": "._errors",
    "OutputInvalid": "._errors",
    "ContextLengthExceeded": "._errors",
    "PluginError": "._errors",
    "Problem": "._errors",
    "ResumeError": "._errors",
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
    "Output": "._output",
    "RequestPatch": "._patch",
    "Redactor": "._secret",
    "Secret": "._secret",
    "redact": "._secret",
    "secret_json": "._secret",
    "JournalEntry": "._persistence._journal",
    "JournalStore": "._persistence._journal",
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
    "Deferred": "._types",
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
    "OutputMode": "._types",
    "OutputSpec": "._types",
    "RunResult": "._types",
    "Suspended": "._types",
    "Terminated": "._types",
    "ToolCall": "._types",
    "ToolResult": "._types",
    "ToolSpec": "._types",
    "Usage": "._types",
    "__version__": _version,
}

__getattr__, __dir__, __all__ = lazy_module(__name__, _PUBLIC)
