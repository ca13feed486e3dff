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
- `HookFactory`, `ToolResolver`, `ModelFactory`, `StoreFactory`: the types of
  the factories each ``register`` takes.
- `secret_texts`: the plain text of every `seamkit.Secret` in a config, for
  `seamkit.redact` on what a plugin writes.
- `RawSession`, `RawSessionReader`: a session store's optional ``load_raw``,
  which lets ``seamkit sessions export --raw`` save a row that does not parse.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._loader import (
    API_VERSION,
    add_plugin,
    get_registry,
    kernel_version,
    load_plugins,
    reset_registry,
)
from ._registry import (
    BuildContext,
    Category,
    HookFactory,
    KindInfo,
    ModelFactory,
    ModelProviderInfo,
    PluginInfo,
    Registrar,
    Registry,
    SectionInfo,
    SkippedPlugin,
    StoreFactory,
    StoreSchemeInfo,
    ToolResolver,
)
from ._secret import secret_texts

if TYPE_CHECKING:
    from ._engine._dispatch import ConfiguredHook as ConfiguredHook
    from ._persistence._sessions import (
        RawSession as RawSession,
        RawSessionReader as RawSessionReader,
    )

__all__ = [
    "API_VERSION",
    "BuildContext",
    "Category",
    "ConfiguredHook",
    "HookFactory",
    "KindInfo",
    "ModelFactory",
    "ModelProviderInfo",
    "PluginInfo",
    "RawSession",
    "RawSessionReader",
    "Registrar",
    "Registry",
    "SectionInfo",
    "SkippedPlugin",
    "StoreFactory",
    "StoreSchemeInfo",
    "ToolResolver",
    "add_plugin",
    "get_registry",
    "kernel_version",
    "load_plugins",
    "reset_registry",
    "secret_texts",
]


def __getattr__(name: str) -> object:
    # `ConfiguredHook` brings the dispatcher and asyncio with it: a plugin that
    # imports this module for `BuildContext` must not pay for them at load time.
    if name == "ConfiguredHook":
        from ._engine._dispatch import ConfiguredHook  # lazy: see above

        return ConfiguredHook
    # The session types bring SQLite and file locks: loading plugins needs neither.
    if name == "RawSession":
        from ._persistence._sessions import RawSession  # lazy: see above

        return RawSession
    if name == "RawSessionReader":
        from ._persistence._sessions import RawSessionReader  # lazy: see above

        return RawSessionReader
    raise AttributeError(f"module 'seamkit.plugins' has no attribute {name!r}")


def __dir__() -> list[str]:
    return list(__all__)
