"""What plugin authors and tools around seamkit need: the registry of loaded
plugins and their kinds, plugin loading, and the `BuildContext` every factory
receives.

- `BuildContext`: what hook factories, tool kinds' ``resolve``, model
  factories receive (app name, resolved tools, base directory, clock, an exit
  stack closed with the agent, the manifest's plugin-owned sections).
- `Registry`, `PluginInfo`, `KindInfo`, `ModelProviderInfo`, `SectionInfo`,
  `StoreSchemeInfo`: what discovery found (and `SkippedPlugin`: an entry
  point SEAMKIT_PLUGINS or SEAMKIT_DISABLE_PLUGINS kept from loading);
  `Registrar` records one plugin's ``register(...)`` calls, all or none.
- `load_plugins`, `get_registry`, `reset_registry`, `add_plugin`: discovery,
  the process-wide registry, and registering a plugin object in-process.
- `ConfiguredHook`: a hook object built from a manifest entry, for
  `seamkit.HookStack`.
- `RegisterHookKind`, `RegisterToolKind`, `RegisterRefreshCondition`,
  `RegisterModel`, `RegisterSection`, `RegisterStore`: the ``register``
  callables the registration hookspecs receive (annotate ``register`` with
  them, and ``mypy --strict`` checks each factory takes its config model);
  `HookFactory`, `ToolResolver`, `ModelFactory`, `SectionTools`,
  `StoreFactory`: the factory types they take, generic over the config model.
- `secret_texts`: the plain text of every `seamkit.Secret` in a config, for
  `seamkit.redact` on what a plugin writes.
- `retry_status`, `retry_wait`, `render_documents`, `shown_url`: what model
  providers that speak HTTP share (the official clients' retry policy; a
  request's documents as text; a base URL without what may carry a key).
- `RawSession`, `RawSessionReader`: a session store's optional ``load_raw``,
  which lets ``seamkit sessions export --raw`` save a row that does not parse.
- `RunExecutor`, `CutOff`, `TextStop`: what a durable runner hands
  `Agent.run(..., executor=...)` so that a run reads its clock and ids from
  it and does its I/O elsewhere; `Remote` (`Agent.remote()`) does that I/O
  on a worker: hook dispatches (`HookCall` → `HookAnswer`), model turns
  (`Asked`) and tool bodies, with the run's `ContextState` crossing both ways.
- `lazy_module`, `LazyModule`: the one table of a plugin's public names
  behind its ``__all__``, each module imported on first use (PEP 562).
- `listening_socket`, `trace_headers`, `continue_trace`,
  `current_trace_headers`, `TRACE_HEADERS`: what plugins that serve share (a
  socket with ``TCP_NODELAY`` on; W3C trace context and baggage in headers).
- `RunPresenter`, `DecideCommand`: what ``seamkit run`` prints for a run
  (its streamed events, its end as a summary line or JSON, its pending calls
  with the command lines that decide them) and its exit status, for a
  command that runs an app elsewhere and must print the same;
  `decision_flags` puts ``seamkit resume``'s decision flags (``--approve``,
  ``--reject``, ``--edit``, ``--all-reject``) on such a command's own
  ``decide``, and `decisions_from_flags` reads them as `seamkit.Decisions`.

Every name but `lazy_module` loads on first use, so that a plugin's entry
module can import this one for nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import LazyModule as LazyModule, lazy_module as lazy_module

if TYPE_CHECKING:  # what the table below loads, spelled out for type checkers
    from ._cli._pending import (
        DecideCommand as DecideCommand,
        decision_flags as decision_flags,
        decisions_from_flags as decisions_from_flags,
    )
    from ._cli._present import RunPresenter as RunPresenter
    from ._engine._dispatch import ConfiguredHook as ConfiguredHook
    from ._engine._executor import (
        CutOff as CutOff,
        RunExecutor as RunExecutor,
        TextStop as TextStop,
    )
    from ._engine._remote import (
        Asked as Asked,
        ContextState as ContextState,
        HookAnswer as HookAnswer,
        HookCall as HookCall,
        Remote as Remote,
    )
    from ._loader import (
        API_VERSION as API_VERSION,
        add_plugin as add_plugin,
        get_registry as get_registry,
        kernel_version as kernel_version,
        load_plugins as load_plugins,
        reset_registry as reset_registry,
    )
    from ._persistence._sessions import (
        RawSession as RawSession,
        RawSessionReader as RawSessionReader,
    )
    from ._providers import (
        render_documents as render_documents,
        retry_status as retry_status,
        retry_wait as retry_wait,
        shown_url as shown_url,
    )
    from ._registry import (
        BuildContext as BuildContext,
        Category as Category,
        HookFactory as HookFactory,
        KindInfo as KindInfo,
        ModelFactory as ModelFactory,
        ModelProviderInfo as ModelProviderInfo,
        PluginInfo as PluginInfo,
        RegisterHookKind as RegisterHookKind,
        RegisterModel as RegisterModel,
        RegisterRefreshCondition as RegisterRefreshCondition,
        RegisterSection as RegisterSection,
        RegisterStore as RegisterStore,
        RegisterToolKind as RegisterToolKind,
        Registrar as Registrar,
        Registry as Registry,
        SectionInfo as SectionInfo,
        SectionTools as SectionTools,
        SkippedPlugin as SkippedPlugin,
        StoreFactory as StoreFactory,
        StoreSchemeInfo as StoreSchemeInfo,
        ToolResolver as ToolResolver,
    )
    from ._secret import secret_texts as secret_texts
    from ._serving import (
        TRACE_HEADERS as TRACE_HEADERS,
        continue_trace as continue_trace,
        current_trace_headers as current_trace_headers,
        listening_socket as listening_socket,
        trace_headers as trace_headers,
    )

__getattr__, __dir__, __all__ = lazy_module(
    __name__,
    {
        # the dispatcher brings asyncio; the session types SQLite and file
        # locks: loading plugins needs none of them
        "ConfiguredHook": "._engine._dispatch",
        "CutOff": "._engine._executor",
        "RunExecutor": "._engine._executor",
        "TextStop": "._engine._executor",
        "Asked": "._engine._remote",
        "ContextState": "._engine._remote",
        "HookAnswer": "._engine._remote",
        "HookCall": "._engine._remote",
        "Remote": "._engine._remote",
        "API_VERSION": "._loader",
        "add_plugin": "._loader",
        "get_registry": "._loader",
        "kernel_version": "._loader",
        "load_plugins": "._loader",
        "reset_registry": "._loader",
        "BuildContext": "._registry",
        "Category": "._registry",
        "HookFactory": "._registry",
        "KindInfo": "._registry",
        "ModelFactory": "._registry",
        "ModelProviderInfo": "._registry",
        "PluginInfo": "._registry",
        "RegisterHookKind": "._registry",
        "RegisterModel": "._registry",
        "RegisterRefreshCondition": "._registry",
        "RegisterSection": "._registry",
        "RegisterStore": "._registry",
        "RegisterToolKind": "._registry",
        "Registrar": "._registry",
        "Registry": "._registry",
        "SectionInfo": "._registry",
        "SectionTools": "._registry",
        "SkippedPlugin": "._registry",
        "StoreFactory": "._registry",
        "StoreSchemeInfo": "._registry",
        "ToolResolver": "._registry",
        "secret_texts": "._secret",
        "render_documents": "._providers",
        "retry_status": "._providers",
        "retry_wait": "._providers",
        "shown_url": "._providers",
        "TRACE_HEADERS": "._serving",
        "continue_trace": "._serving",
        "current_trace_headers": "._serving",
        "listening_socket": "._serving",
        "trace_headers": "._serving",
        "RawSession": "._persistence._sessions",
        "RawSessionReader": "._persistence._sessions",
        # the presenter brings click
        "DecideCommand": "._cli._pending",
        "decision_flags": "._cli._pending",
        "decisions_from_flags": "._cli._pending",
        "RunPresenter": "._cli._present",
    },
    defined=["LazyModule", "lazy_module"],
)
