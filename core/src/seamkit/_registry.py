"""The kernel's registry: which plugins loaded, and the kinds they registered.

Kinds are registered through the registration hookspecs, one ``register(...)``
call per kind, and recorded with the plugin that registered them. The registry
also builds the manifest model whose unions list exactly the installed kinds.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, get_args, get_origin

import pluggy

from . import hookspecs
from ._config import HookConfig, KindConfig, RefreshCondition, ToolConfig
from ._errors import PluginError
from ._events import HookEvent
from ._markers import PROJECT

__all__ = ["Category", "KindInfo", "ModelProviderInfo", "PluginInfo", "Registry"]

Category = Literal["hook", "tool", "refresh", "model"]

CATEGORY_LABEL: dict[str, str] = {
    "hook": "hook kind",
    "tool": "tool kind",
    "refresh": "refresh condition",
    "model": "model provider",
}

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
    """A registered model provider: ``model: "<prefix>:<name>"`` uses ``factory``."""

    prefix: str
    factory: Callable[..., Any]
    plugin: str
    preview: bool = False


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

    @property
    def loaded(self) -> bool:
        """True when the plugin loaded and registered without error."""
        return self.error is None

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
        }


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
        self.kinds: dict[tuple[str, str], KindInfo] = {}
        self.models: dict[str, ModelProviderInfo] = {}
        self._app_models: dict[bool, type[Any]] = {}

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

    # --- registration ----------------------------------------------------

    def registrar(self, plugin: str) -> Registrar:
        """The ``register`` callables one plugin receives, recording into a batch."""
        return Registrar(self, plugin)

    def app_model(self, *, preview: bool | None = None) -> type[Any]:
        """The manifest model (an ``AppConfig`` subclass) for the installed kinds."""
        show = preview_enabled() if preview is None else preview
        model = self._app_models.get(show)
        if model is None:
            from ._manifest_model import build_app_model

            model = build_app_model(self, preview=show)
            self._app_models[show] = model
        return model

    def _commit(self, batch: Registrar) -> None:
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
        for provider in batch.models:
            if provider.prefix in self.models:
                owner = self.models[provider.prefix].plugin
                raise PluginError(
                    f"model provider {provider.prefix!r} is already registered by plugin {owner!r}",
                    plugin=batch.plugin,
                )
        for info in batch.kinds:
            self.kinds[(info.category, info.name)] = info
        for provider in batch.models:
            self.models[provider.prefix] = provider
        self._app_models.clear()


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
        factory: Callable[..., Any],
        *,
        events: Iterable[HookEvent | str],
        preview: bool = False,
        preview_events: Iterable[HookEvent | str] = (),
    ) -> None:
        """Register a hook kind: ``factory(config, agent)`` builds the hook object.

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
        resolve: Callable[..., Any],
        *,
        preview: bool = False,
    ) -> None:
        """Register a tool kind: ``await resolve(config, agent)`` gives its tools."""
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

    def model(self, prefix: str, factory: Callable[..., Any], *, preview: bool = False) -> None:
        """Register a model provider: ``model: "<prefix>:<name>"`` calls ``factory(name)``."""
        if not isinstance(prefix, str) or not prefix or ":" in prefix:
            raise PluginError(
                f"model prefix must be a non-empty string without ':', got {prefix!r}",
                plugin=self.plugin,
            )
        if not callable(factory):
            raise PluginError(f"model {prefix!r}: factory is not callable", plugin=self.plugin)
        self.models.append(ModelProviderInfo(prefix, factory, self.plugin, preview))

    def for_hookspec(self, hookspec_name: str) -> Callable[..., None]:
        """The ``register`` callable passed to one registration hookspec."""
        table: dict[str, Callable[..., None]] = {
            "register_hook_kinds": self.hook_kind,
            "register_tool_kinds": self.tool_kind,
            "register_refresh_conditions": self.refresh_condition,
            "register_models": self.model,
        }
        return table[hookspec_name]

    def describe(self) -> list[str]:
        """``category:name`` for everything in the batch, for ``seamkit plugins``."""
        return [f"{k.category}:{k.name}" for k in self.kinds] + [
            f"model:{m.prefix}" for m in self.models
        ]
