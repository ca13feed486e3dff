"""Plugin discovery: every entry point of group ``seamkit``, each isolated.

A plugin that fails to import or register is recorded with its distribution,
version and error, a warning is logged once, and the rest goes on loading.
Isolated means from anything it raises: ``sys.exit()`` or a KeyboardInterrupt
at import (or in a registration hook) is that plugin's load error too, so one
broken plugin never takes ``seamkit plugins`` (the command that shows it) or
any other command down with it. The load error is one line; the traceback is
kept beside it, for ``seamkit --debug plugins``.

``SEAMKIT_PLUGINS`` and ``SEAMKIT_DISABLE_PLUGINS`` choose which entry points
load; the ones they keep out are not imported, and are remembered (with the
variable) so that messages can say how to load them. A name in either
variable that no installed plugin has is warned about once per load, when
the installed plugins are discovered (not when the entry points are given:
the testing kit gives none, and the variables are about what is installed).
"""

from __future__ import annotations

import difflib
import logging
import os
import threading
from collections.abc import Iterable
from importlib import metadata
from traceback import format_exception
from typing import Any

from . import _function_kind
from ._errors import PluginError
from ._events import OBSERVER, PROJECT, HookEvent, hookimpls_of
from ._registry import (
    DISABLE_VARIABLE,
    PLUGINS_VARIABLE,
    PluginInfo,
    Registry,
    SkippedPlugin,
    normalized_name,
)

__all__ = [
    "API_VERSION",
    "add_plugin",
    "get_registry",
    "kernel_version",
    "load_plugins",
    "reset_registry",
]

log = logging.getLogger("seamkit")

API_VERSION = 1
"""The plugin API this kernel speaks; a plugin may declare it as ``__seamkit_api__``."""

_REGISTRATION_HOOKS = (
    "register_hook_kinds",
    "register_refresh_conditions",
    "register_tool_kinds",
    "register_models",
    "register_manifest_sections",
    "register_session_stores",
)
_SEAMS = frozenset(e.value for e in HookEvent)
_OBSERVED = _SEAMS | {OBSERVER}

_BUILTIN = "seamkit"
"""The name of the kernel's built-in plugin, which always loads."""

_lock = threading.Lock()
_registry: Registry | None = None


def _names(value: str | None) -> set[str] | None:
    if value is None or not value.strip():
        return None
    return {part.strip() for part in value.split(",") if part.strip()}


def load_plugins(
    *,
    entry_points: Iterable[metadata.EntryPoint] | None = None,
) -> Registry:
    """Build a fresh :class:`Registry` from the installed plugins.

    ``SEAMKIT_PLUGINS=a,b`` loads only the entry points named ``a`` and ``b``;
    ``SEAMKIT_DISABLE_PLUGINS=x`` skips ``x``. The kernel's built-ins always
    load. The skipped entry points are not imported; they are recorded in
    ``registry.skipped`` with the variable that skipped them.

    A name in either variable that no installed plugin has is warned about
    only when ``entry_points`` is ``None`` (the installed ones are discovered):
    given entry points are not what the variables describe.
    """
    registry = Registry()
    add_plugin(
        registry,
        _function_kind,
        PluginInfo(
            name=_BUILTIN,
            module=_function_kind.__name__,
            builtin=True,
            distribution="seamkit",
            version=kernel_version(),
        ),
    )
    only = _names(os.environ.get(PLUGINS_VARIABLE))
    disabled = _names(os.environ.get(DISABLE_VARIABLE)) or set()
    eps = metadata.entry_points(group=PROJECT) if entry_points is None else entry_points
    ordered = sorted(eps, key=lambda e: e.name)
    if entry_points is None:
        _warn_unknown_names(only, disabled, ordered)
    for ep in ordered:
        dist = getattr(ep, "dist", None)
        distribution = dist.name if dist is not None else None
        version = dist.version if dist is not None else None
        variables = _skipped_by(ep.name, only, disabled)
        if variables:
            skipped = SkippedPlugin(ep.name, distribution, version, ep.value, variables)
            registry.skipped.setdefault(ep.name, skipped)
            continue
        info = PluginInfo(name=ep.name, distribution=distribution, version=version, module=ep.value)
        if ep.name in registry.plugins:
            _fail(registry, info, f"another plugin is already named {ep.name!r}")
            continue
        try:
            module = ep.load()
        except BaseException as exc:  # isolated: SystemExit and KeyboardInterrupt too
            _fail(registry, info, f"import failed: {_describe(exc)}", exc)
            continue
        add_plugin(registry, module, info)
    return registry


def _skipped_by(name: str, only: set[str] | None, disabled: set[str]) -> tuple[str, ...]:
    """The variables that keep the entry point ``name`` from loading (none: it loads)."""
    variables = []
    if name in disabled:
        variables.append(DISABLE_VARIABLE)
    if only is not None and name not in only:
        variables.append(PLUGINS_VARIABLE)
    return tuple(variables)


def _warn_unknown_names(
    only: set[str] | None, disabled: set[str], eps: list[metadata.EntryPoint]
) -> None:
    """Warn (once per variable) about names in ``SEAMKIT_PLUGINS`` or
    ``SEAMKIT_DISABLE_PLUGINS`` that no installed plugin has, listing the
    installed plugins: a distribution's name is answered with its plugins'
    names, and a close name with a did-you-mean."""
    installed = sorted({ep.name for ep in eps})
    by_distribution: dict[str, set[str]] = {}
    for ep in eps:
        dist = getattr(ep, "dist", None)
        if dist is not None and dist.name:
            by_distribution.setdefault(normalized_name(dist.name), set()).add(ep.name)
    listing = "installed plugins: " + (", ".join(installed) if installed else "none")
    for variable, named in ((PLUGINS_VARIABLE, only or set()), (DISABLE_VARIABLE, disabled)):
        unknown = sorted(named - {*installed, _BUILTIN})
        if unknown:
            described = [_described(name, installed, by_distribution) for name in unknown]
            plural = "s" if len(unknown) > 1 else ""
            log.warning(
                "%s names unknown plugin%s %s; %s",
                variable,
                plural,
                ", ".join(described),
                listing,
            )
    if _BUILTIN in disabled and _BUILTIN not in installed:
        log.warning(
            "%s names '%s', the kernel's built-in plugin, which always loads",
            DISABLE_VARIABLE,
            _BUILTIN,
        )


def _described(name: str, installed: list[str], by_distribution: dict[str, set[str]]) -> str:
    """An unknown name in a variable, quoted, with what it presumably meant:
    ``'seamkit-refresh-ttl' (a distribution; its plugin is named 'ttl')`` or
    ``'tll' (did you mean 'ttl'?)``."""
    plugins = sorted(by_distribution.get(normalized_name(name), ()))
    if len(plugins) == 1:
        return f"'{name}' (a distribution; its plugin is named '{plugins[0]}')"
    if plugins:
        named = ", ".join(f"'{p}'" for p in plugins)
        return f"'{name}' (a distribution; its plugins are named {named})"
    close = _close_name(name, installed)
    return f"'{name}'" + (f" (did you mean '{close}'?)" if close else "")


def _close_name(name: str, installed: list[str]) -> str | None:
    """The installed plugin ``name`` presumably meant: one close by difflib's
    measure (cutoff 0.75, so that ``nope`` suggests nothing) or, for a name of
    three letters or more, one typo away (``tll`` for ``ttl``)."""
    close = difflib.get_close_matches(name, installed, n=1, cutoff=0.75)
    if close:
        return close[0]
    if len(name) >= 3:
        return next((p for p in installed if _one_typo(name, p)), None)
    return None


def _one_typo(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` differ by one letter changed, added or removed,
    or by two neighbouring letters swapped."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) != len(b):
        short, long = (a, b) if len(a) < len(b) else (b, a)
        return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))
    diff = [i for i in range(len(a)) if a[i] != b[i]]
    i, j = diff[0], diff[-1]
    return len(diff) == 1 or (len(diff) == 2 and j == i + 1 and a[i] + a[j] == b[j] + b[i])


def add_plugin(registry: Registry, obj: Any, info: PluginInfo) -> PluginInfo:
    """Register one plugin object; on any problem record it as a load error."""
    registry.plugins[info.name] = info
    api = getattr(obj, "__seamkit_api__", API_VERSION)
    if api != API_VERSION:
        return _fail(
            registry,
            info,
            f"declares __seamkit_api__ = {api!r}, but this seamkit speaks API {API_VERSION}",
        )
    pm = registry.plugin_manager
    try:
        pm.register(obj, name=info.name)
    except BaseException as exc:  # isolated, as at import
        why = str(exc) if isinstance(exc, Exception) else _describe(exc)
        return _fail(registry, info, f"invalid hookimpl: {why}", exc)
    try:
        info.hookimpls = _check_hookimpls(registry, obj)
        batch = registry.registrar(info.name)
        for hook_name in _REGISTRATION_HOOKS:
            caller = getattr(pm.hook, hook_name)
            for impl in caller.get_hookimpls():
                if impl.plugin is obj:
                    kwargs = {"register": batch.for_hookspec(hook_name)}
                    impl.function(**{k: kwargs[k] for k in impl.argnames})
        registry.commit(batch)
        info.kinds = batch.describe()
    except BaseException as exc:  # isolated, as at import
        pm.unregister(obj)
        where = str(exc) if isinstance(exc, PluginError) else _describe(exc)
        return _fail(registry, info, f"registration failed: {where}", exc)
    return info


def _describe(exc: BaseException) -> str:
    """What a plugin raised, for its load error: ``Type: message``, with
    what an exit or an interrupt means spelled out."""
    if isinstance(exc, SystemExit):
        return f"SystemExit({exc.code!r}): the plugin called sys.exit()"
    if isinstance(exc, KeyboardInterrupt):
        return "KeyboardInterrupt: the plugin raised it (or Ctrl-C was pressed) while it loaded"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _check_hookimpls(registry: Registry, obj: Any) -> list[str]:
    """The seams (and ``on_run_event``) ``obj`` implements; unknown hook names
    and wrappers are errors."""
    pm = registry.plugin_manager
    seams: list[str] = []
    for spec_name, (_, opts) in hookimpls_of(obj).items():
        if not hasattr(pm.hook, spec_name) or getattr(pm.hook, spec_name).spec is None:
            raise PluginError(
                f"{spec_name!r} is marked @seamkit.hookimpl but there is no hookspec of that name",
                hint="the seams are: " + ", ".join(sorted(_SEAMS)),
            )
        if spec_name in _OBSERVED:
            if opts.get("wrapper") or opts.get("hookwrapper"):
                raise PluginError(
                    f"{spec_name!r}: seam hookimpls cannot be wrappers; return a flow instead"
                )
            seams.append(spec_name)
    return sorted(seams)


def _fail(
    registry: Registry, info: PluginInfo, error: str, exc: BaseException | None = None
) -> PluginInfo:
    """Record ``error`` (one line) as the plugin's load error, with the
    traceback of ``exc`` when there is one, and warn once."""
    info.error = error
    info.traceback = "".join(format_exception(exc)) if exc is not None else None
    registry.plugins[info.name] = info
    label = info.distribution or info.name
    version = f" {info.version}" if info.version else ""
    log.warning("seamkit plugin %r (%s%s) failed to load: %s", info.name, label, version, error)
    return info


def kernel_version() -> str:
    """The installed ``seamkit`` distribution's version, from its metadata."""
    try:
        return metadata.version("seamkit")
    except metadata.PackageNotFoundError:  # running from a source tree
        return "0+unknown"


def get_registry() -> Registry:
    """The process-wide registry, loading the plugins on first use."""
    global _registry
    if _registry is None:
        with _lock:
            if _registry is None:
                _registry = load_plugins()
    return _registry


def reset_registry(registry: Registry | None = None) -> None:
    """Forget the process-wide registry (the next use loads again), or set it."""
    global _registry
    with _lock:
        _registry = registry
