"""The kernel's registry: which plugins loaded, what they registered, and the
typed `BuildContext` every factory receives.

Everything is registered through the registration hookspecs, one
``register(...)`` call per kind, provider, section or store scheme, and
recorded with the plugin that registered it.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args, get_origin

import pluggy
from pydantic import BaseModel

from . import hookspecs
from ._config import HookConfig, KindConfig, ModelConfig, RefreshCondition, Settings, ToolConfig
from ._errors import PluginError
from ._events import PROJECT, HookEvent
from ._tool import Tool
from ._toolmap import ToolMap, ToolSource
from ._types import Model

if TYPE_CHECKING:  # at run time only the store URL schemes need it, not loading
    from ._persistence._sessions import SessionStore

__all__ = [
    "BuildContext",
    "Category",
    "HookFactory",
    "KindInfo",
    "ModelFactory",
    "ModelProviderInfo",
    "PluginInfo",
    "Registrar",
    "Registry",
    "SectionInfo",
    "SkippedPlugin",
    "StoreFactory",
    "StoreSchemeInfo",
    "ToolResolver",
]


@dataclass(frozen=True, slots=True)
class BuildContext:
    """What every factory receives while an agent is built: hook kinds,
    tool kinds, model providers and session-store schemes alike.

    ``tools`` is the agent's resolved tool map (empty while tool kinds
    themselves run); ``exit_stack`` closes with the agent (``async with
    agent``), so register connections and subprocesses there; ``sections``
    holds the manifest's plugin-owned sections by key; ``settings`` are the
    app's run settings (a hook kind reads its defaults there, such as
    ``settings.placement``).
    """

    app_name: str
    registry: Registry
    tools: ToolMap = field(default_factory=ToolMap)
    base_dir: Path | None = None
    clock: Callable[[], datetime] | None = None
    exit_stack: AsyncExitStack = field(default_factory=AsyncExitStack)
    sections: Mapping[str, BaseModel] = field(default_factory=dict)
    settings: Settings = field(default_factory=Settings)

    def section(self, key: str) -> BaseModel | None:
        """The manifest section ``key`` (validated by its registered model), or ``None``."""
        return self.sections.get(key)

    def with_tools(self, tools: ToolMap) -> BuildContext:
        """The same context with the resolved ``tools``."""
        return BuildContext(
            self.app_name,
            self.registry,
            tools,
            self.base_dir,
            self.clock,
            self.exit_stack,
            self.sections,
            self.settings,
        )


HookFactory = Callable[[Any, BuildContext], object | Awaitable[object]]
"""``factory(config, build)`` → the hook object (or an awaitable of it)."""
ToolResolver = Callable[[Any, BuildContext], Awaitable[Sequence[Tool] | ToolSource]]
"""``await resolve(config, build)`` → the entry's tools, or a `ToolSource`."""
ModelFactory = Callable[[Any, BuildContext], Model]
"""``factory(config, build)`` → the `Model`, ``config`` being the provider's config model."""
StoreFactory = Callable[[str], "SessionStore"]
"""``factory(url)`` → a session store for a URL of the scheme."""

Category = Literal["hook", "tool", "refresh", "model"]
"""What a registered kind is: a hook kind, a tool kind, a refresh condition or a model provider."""

CATEGORY_LABEL: dict[str, str] = {
    "hook": "hook kind",
    "tool": "tool kind",
    "refresh": "refresh condition",
    "model": "model provider",
}

_KERNEL_KEYS = frozenset({"name", "model", "preamble", "tools", "hooks", "settings", "sessions"})
"""Top-level manifest keys the kernel owns; no plugin section may take one."""

_BASES: dict[str, type[KindConfig]] = {
    "hook": HookConfig,
    "tool": ToolConfig,
    "refresh": RefreshCondition,
}


def preview_enabled() -> bool:
    """Whether ``SEAMKIT_ENABLE_PREVIEW=1`` is set."""
    return os.environ.get("SEAMKIT_ENABLE_PREVIEW", "").strip() in {"1", "true", "yes"}


@dataclass(frozen=True, slots=True)
class KindInfo:
    """One registered kind: its config model, factory and the plugin that gave it."""

    category: Category
    name: str
    model: type[KindConfig]
    factory: Callable[..., Any] | None
    plugin: str
    events: frozenset[HookEvent] = frozenset()
    preview_events: frozenset[HookEvent] = frozenset()
    preview: bool = False

    def supports(self, event: HookEvent, *, preview: bool) -> bool:
        """Whether a hook of this kind may be configured on ``event``."""
        return event in self.events or (preview and event in self.preview_events)


@dataclass(frozen=True, slots=True)
class ModelProviderInfo:
    """A registered model provider: ``model: "<prefix>:<name>"`` (or a mapping
    validated by ``config``) is built by ``factory``."""

    prefix: str
    factory: ModelFactory
    plugin: str
    config: type[ModelConfig] = ModelConfig
    preview: bool = False


@dataclass(frozen=True, slots=True)
class SectionInfo:
    """A manifest section a plugin owns: top-level ``key``, validated by
    ``model``; ``tools``, when set, resolves the section into tools (or a
    `ToolSource`) the way a tool kind resolves an entry."""

    key: str
    model: type[BaseModel]
    plugin: str
    tools: ToolResolver | None = None


@dataclass(frozen=True, slots=True)
class StoreSchemeInfo:
    """A session-store URL scheme (``postgresql``): ``factory(url)`` opens a store."""

    scheme: str
    factory: StoreFactory
    plugin: str


@dataclass(slots=True)
class PluginInfo:
    """What discovery knows about one plugin (an entry point of group ``seamkit``)."""

    name: str
    distribution: str | None = None
    version: str | None = None
    module: str | None = None
    builtin: bool = False
    kinds: list[str] = field(default_factory=list)
    hookimpls: list[str] = field(default_factory=list)
    error: str | None = None
    traceback: str | None = None
    """The formatted traceback of what the plugin raised while it loaded (the
    one-line ``error`` is what to show; ``seamkit --debug plugins`` shows this,
    and only with ``--debug`` does ``seamkit plugins --json`` include it)."""

    @property
    def loaded(self) -> bool:
        """True when the plugin loaded and registered without error."""
        return self.error is None

    def owns(self, name: str) -> bool:
        """Whether ``name`` (an unknown kind, store scheme or command) is
        presumably this plugin's; see `_plugin_owns`."""
        return _plugin_owns(self.name, self.distribution, name)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view, as ``seamkit plugins --json`` prints it."""
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "module": self.module,
            "builtin": self.builtin,
            "kinds": list(self.kinds),
            "hookimpls": list(self.hookimpls),
            "error": self.error,
            "traceback": self.traceback,
            "disabled_by": [],
        }


PLUGINS_VARIABLE = "SEAMKIT_PLUGINS"
"""The variable naming the only plugins to load (comma-separated entry-point names)."""
DISABLE_VARIABLE = "SEAMKIT_DISABLE_PLUGINS"
"""The variable naming plugins not to load (comma-separated entry-point names)."""


@dataclass(frozen=True, slots=True)
class SkippedPlugin:
    """An installed plugin that was neither loaded nor imported because
    ``SEAMKIT_DISABLE_PLUGINS`` names it or ``SEAMKIT_PLUGINS`` does not: what
    the messages that say how to load it need.

    ``variables`` are the variables that keep it out (one or both).
    """

    name: str
    distribution: str | None
    version: str | None
    module: str | None
    variables: tuple[str, ...]

    @property
    def label(self) -> str:
        """``distribution version`` (``?`` for an unknown distribution)."""
        return f"{self.distribution or '?'} {self.version or ''}".rstrip()

    @property
    def reason(self) -> str:
        """Why it did not load: ``disabled by SEAMKIT_DISABLE_PLUGINS``,
        ``not named in SEAMKIT_PLUGINS``, or both."""
        parts = []
        if DISABLE_VARIABLE in self.variables:
            parts.append(f"disabled by {DISABLE_VARIABLE}")
        if PLUGINS_VARIABLE in self.variables:
            parts.append(f"not named in {PLUGINS_VARIABLE}")
        return " and ".join(parts)

    @property
    def how_to_enable(self) -> str:
        """What to change so that it loads, e.g. ``remove 'ttl' from SEAMKIT_DISABLE_PLUGINS``."""
        steps = []
        if DISABLE_VARIABLE in self.variables:
            steps.append(f"remove '{self.name}' from {DISABLE_VARIABLE}")
        if PLUGINS_VARIABLE in self.variables:
            steps.append(
                f"add '{self.name}' to {PLUGINS_VARIABLE} (or unset {PLUGINS_VARIABLE} "
                "to load every plugin)"
            )
        return ", and ".join(steps)

    def owns(self, name: str) -> bool:
        """Whether ``name`` (an unknown kind, store scheme or command) is
        presumably this plugin's; see `_plugin_owns`."""
        return _plugin_owns(self.name, self.distribution, name)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view with the keys of `PluginInfo.as_dict`, as
        ``seamkit plugins --json --all`` prints it; ``disabled_by`` lists the variables."""
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "module": self.module,
            "builtin": False,
            "kinds": [],
            "hookimpls": [],
            "error": None,
            "traceback": None,
            "disabled_by": list(self.variables),
        }


def normalized_name(text: str) -> str:
    """``text`` with case, ``-``, ``_`` and ``.`` alike, as plugin and
    distribution names are compared."""
    return text.lower().replace("-", "_").replace(".", "_")


def _plugin_owns(plugin: str, distribution: str | None, name: str) -> bool:
    """Whether ``name`` (an unknown kind, store scheme or command) is
    presumably the plugin's: it is the plugin's entry-point name, or its
    distribution's name with or without ``seamkit-`` (case, ``-``, ``_`` and
    ``.`` alike)."""
    names = {normalized_name(plugin)}
    if distribution:
        dist = normalized_name(distribution)
        names |= {dist, dist.removeprefix("seamkit_")}
    return normalized_name(name) in names


def _literal_kind(model: type[KindConfig]) -> str:
    info = model.model_fields.get("kind")
    annotation = info.annotation if info is not None else None
    args = get_args(annotation) if get_origin(annotation) is Literal else ()
    if len(args) != 1 or not isinstance(args[0], str):
        raise PluginError(
            f"{model.__qualname__}.kind must be a Literal of one string, "
            f"like kind: Literal['note'] = 'note'",
        )
    return args[0]


class Registry:
    """Every plugin discovered and every kind registered, for one process.

    Holds the global pluggy ``PluginManager`` (plugin-wide hookimpls only).
    Build one with :func:`seamkit.load_plugins`; the kernel keeps one per
    process, from :func:`seamkit.get_registry`.
    """

    def __init__(self) -> None:
        self.plugin_manager = pluggy.PluginManager(PROJECT)
        self.plugin_manager.add_hookspecs(hookspecs)
        self.plugins: dict[str, PluginInfo] = {}
        self.skipped: dict[str, SkippedPlugin] = {}
        """Installed plugins that ``SEAMKIT_PLUGINS`` / ``SEAMKIT_DISABLE_PLUGINS``
        kept from loading (and from being imported), by entry-point name."""
        self.kinds: dict[tuple[str, str], KindInfo] = {}
        self.models: dict[str, ModelProviderInfo] = {}
        self.sections: dict[str, SectionInfo] = {}
        self.stores: dict[str, StoreSchemeInfo] = {}
        self.derived: dict[object, object] = {}
        """Values derived from the registrations (the manifest model), kept
        here by their builders; cleared whenever a plugin registers."""

    # --- queries ---------------------------------------------------------

    def kinds_of(self, category: Category, *, preview: bool | None = None) -> dict[str, KindInfo]:
        """The registered kinds of one category, by name (preview ones only if enabled)."""
        show = preview_enabled() if preview is None else preview
        return {
            name: info
            for (cat, name), info in self.kinds.items()
            if cat == category and (show or not info.preview)
        }

    def kind(self, category: Category, name: str) -> KindInfo | None:
        """One registered kind, preview or not, or ``None``."""
        return self.kinds.get((category, name))

    def failed_plugins(self) -> list[PluginInfo]:
        """The plugins that failed to load, with their errors."""
        return [p for p in self.plugins.values() if p.error is not None]

    def model_provider(self, prefix: str) -> ModelProviderInfo | None:
        """The provider registered for ``prefix``, or ``None``."""
        return self.models.get(prefix)

    def not_loaded(self) -> str:
        """The skipped plugins for a hint, grouped by why: ``installed plugins
        not loaded: otel (disabled by SEAMKIT_DISABLE_PLUGINS); mcp, openai
        (not named in SEAMKIT_PLUGINS)`` (empty when every plugin loaded)."""
        by_reason: dict[str, list[str]] = {}
        for plugin in self.skipped.values():
            by_reason.setdefault(plugin.reason, []).append(plugin.name)
        if not by_reason:
            return ""
        return "installed plugins not loaded: " + "; ".join(
            f"{', '.join(names)} ({reason})" for reason, names in by_reason.items()
        )

    # --- registration ----------------------------------------------------

    def registrar(self, plugin: str) -> Registrar:
        """The ``register`` callables one plugin receives, recording into a batch."""
        return Registrar(self, plugin)

    def commit(self, batch: Registrar) -> None:
        """Record a plugin's registrations, all or none (a clash raises `PluginError`)."""
        for info in batch.kinds:
            key = (info.category, info.name)
            if key in self.kinds:
                owner = self.kinds[key].plugin
                raise PluginError(
                    f"{CATEGORY_LABEL[info.category]} {info.name!r} is already registered "
                    f"by plugin {owner!r}",
                    plugin=batch.plugin,
                    hint="rename the kind, or disable one of the plugins with "
                    "SEAMKIT_DISABLE_PLUGINS",
                )
        taken: list[tuple[str, Mapping[str, Any], Sequence[Any], str]] = [
            ("model provider", self.models, batch.models, "prefix"),
            ("manifest section", self.sections, batch.sections, "key"),
            ("session-store scheme", self.stores, batch.stores, "scheme"),
        ]
        for label, existing, added, attr in taken:
            for item in added:
                key = getattr(item, attr)
                if key in existing or (label == "manifest section" and key in _KERNEL_KEYS):
                    owner = existing[key].plugin if key in existing else "seamkit"
                    raise PluginError(
                        f"{label} {key!r} is already registered by plugin {owner!r}",
                        plugin=batch.plugin,
                    )
        for info in batch.kinds:
            self.kinds[(info.category, info.name)] = info
        for provider in batch.models:
            self.models[provider.prefix] = provider
        for section in batch.sections:
            self.sections[section.key] = section
        for scheme in batch.stores:
            self.stores[scheme.scheme] = scheme
        self.derived.clear()


class Registrar:
    """The ``register`` callables handed to one plugin's registration hookimpls.

    Registrations are collected and committed together, so a plugin that fails
    half-way registers nothing.
    """

    def __init__(self, registry: Registry, plugin: str) -> None:
        self.registry = registry
        self.plugin = plugin
        self.kinds: list[KindInfo] = []
        self.models: list[ModelProviderInfo] = []
        self.sections: list[SectionInfo] = []
        self.stores: list[StoreSchemeInfo] = []

    def _config_kind(self, category: Category, model: Any) -> str:
        base = _BASES[category]
        if not (isinstance(model, type) and issubclass(model, base)):
            raise PluginError(
                f"a {CATEGORY_LABEL[category]} config model must derive from "
                f"seamkit.{base.__name__}, got {model!r}",
                plugin=self.plugin,
            )
        name = _literal_kind(model)
        if any(k.category == category and k.name == name for k in self.kinds):
            raise PluginError(
                f"{CATEGORY_LABEL[category]} {name!r} registered twice by one plugin",
                plugin=self.plugin,
            )
        return name

    def hook_kind(
        self,
        config_model: type[HookConfig],
        factory: HookFactory,
        *,
        events: Iterable[HookEvent | str],
        preview: bool = False,
        preview_events: Iterable[HookEvent | str] = (),
    ) -> None:
        """Register a hook kind: ``factory(config, build)`` builds the hook object
        (``build`` is the `BuildContext`).

        ``events`` are the events the kind supports; ``preview_events`` more
        that only ``SEAMKIT_ENABLE_PREVIEW=1`` allows.
        """
        name = self._config_kind("hook", config_model)
        if not callable(factory):
            raise PluginError(f"hook kind {name!r}: factory is not callable", plugin=self.plugin)
        try:
            supported = frozenset(HookEvent(e) for e in events)
            preview_only = frozenset(HookEvent(e) for e in preview_events) - supported
        except ValueError as exc:
            raise PluginError(f"hook kind {name!r}: {exc}", plugin=self.plugin) from None
        if not supported and not preview_only:
            raise PluginError(
                f"hook kind {name!r} supports no event; pass events={{...}}",
                plugin=self.plugin,
            )
        self.kinds.append(
            KindInfo(
                "hook", name, config_model, factory, self.plugin, supported, preview_only, preview
            )
        )

    def tool_kind(
        self,
        config_model: type[ToolConfig],
        resolve: ToolResolver,
        *,
        preview: bool = False,
    ) -> None:
        """Register a tool kind: ``await resolve(config, build)`` gives its tools
        (a list, or a `ToolSource` whose tools may change between runs)."""
        name = self._config_kind("tool", config_model)
        if not callable(resolve):
            raise PluginError(f"tool kind {name!r}: resolve is not callable", plugin=self.plugin)
        self.kinds.append(
            KindInfo("tool", name, config_model, resolve, self.plugin, preview=preview)
        )

    def refresh_condition(
        self,
        config_model: type[RefreshCondition],
        factory: Callable[..., Any] | None = None,
        *,
        preview: bool = False,
    ) -> None:
        """Register a refresh-condition kind (the config model implements ``expiry``)."""
        name = self._config_kind("refresh", config_model)
        if config_model.expiry is RefreshCondition.expiry and factory is None:
            raise PluginError(
                f"refresh condition {name!r}: {config_model.__qualname__} must implement "
                f"expiry(now)",
                plugin=self.plugin,
            )
        self.kinds.append(
            KindInfo("refresh", name, config_model, factory, self.plugin, preview=preview)
        )

    def model(
        self,
        prefix: str,
        factory: ModelFactory,
        *,
        config: type[ModelConfig] | None = None,
        preview: bool = False,
    ) -> None:
        """Register a model provider: ``model: "<prefix>:<name>"`` (or a mapping
        validated by ``config``, a `seamkit.ModelConfig` subclass) calls
        ``factory(config, build)``."""
        if not isinstance(prefix, str) or not prefix or ":" in prefix:
            raise PluginError(
                f"model prefix must be a non-empty string without ':', got {prefix!r}",
                plugin=self.plugin,
            )
        if not callable(factory):
            raise PluginError(f"model {prefix!r}: factory is not callable", plugin=self.plugin)
        model = config if config is not None else ModelConfig
        if not (isinstance(model, type) and issubclass(model, ModelConfig)):
            raise PluginError(
                f"model {prefix!r}: config must derive from seamkit.ModelConfig, got {model!r}",
                plugin=self.plugin,
            )
        self.models.append(ModelProviderInfo(prefix, factory, self.plugin, model, preview))

    def section(
        self, key: str, config_model: type[BaseModel], *, tools: ToolResolver | None = None
    ) -> None:
        """Register a top-level manifest section ``key`` validated by
        ``config_model``. With ``tools``, ``await tools(section, build)``
        gives the tools the section adds (a list, or a `ToolSource`), named
        as they come and checked like a tool entry's."""
        if not isinstance(key, str) or not key.isidentifier():
            raise PluginError(
                f"a manifest section key must be an identifier, got {key!r}", plugin=self.plugin
            )
        if not (isinstance(config_model, type) and issubclass(config_model, BaseModel)):
            raise PluginError(
                f"manifest section {key!r}: the config model must be a pydantic model",
                plugin=self.plugin,
            )
        if tools is not None and not callable(tools):
            raise PluginError(
                f"manifest section {key!r}: tools is not callable", plugin=self.plugin
            )
        self.sections.append(SectionInfo(key, config_model, self.plugin, tools))

    def store(self, scheme: str, factory: StoreFactory) -> None:
        """Register a session-store URL scheme: ``factory(url)`` opens the store."""
        if not isinstance(scheme, str) or not scheme.isidentifier():
            raise PluginError(f"a store scheme must be a word, got {scheme!r}", plugin=self.plugin)
        if not callable(factory):
            raise PluginError(f"store {scheme!r}: factory is not callable", plugin=self.plugin)
        self.stores.append(StoreSchemeInfo(scheme, factory, self.plugin))

    def for_hookspec(self, hookspec_name: str) -> Callable[..., None]:
        """The ``register`` callable passed to one registration hookspec."""
        table: dict[str, Callable[..., None]] = {
            "register_hook_kinds": self.hook_kind,
            "register_tool_kinds": self.tool_kind,
            "register_refresh_conditions": self.refresh_condition,
            "register_models": self.model,
            "register_manifest_sections": self.section,
            "register_session_stores": self.store,
        }
        return table[hookspec_name]

    def describe(self) -> list[str]:
        """``category:name`` for everything in the batch, for ``seamkit plugins``."""
        return (
            [f"{k.category}:{k.name}" for k in self.kinds]
            + [f"model:{m.prefix}" for m in self.models]
            + [f"section:{s.key}" for s in self.sections]
            + [f"store:{s.scheme}" for s in self.stores]
        )
