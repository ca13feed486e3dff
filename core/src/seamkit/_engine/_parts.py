"""Building an agent's parts, once: the model from its spec, the tools from the
manifest's entries and from code, the hooks from the manifest's entries, and the
session store a path or URL names.

Every factory receives the same typed `BuildContext`. Every problem is
collected and reported at once, naming its manifest entry (with line and
column when the manifest came from a file); nothing is half-built.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._config import HookConfig, ModelConfig, split_model_spec
from .._errors import ManifestError, ModelError, Problem, SeamkitError, SessionError
from .._persistence._sessions import SessionStore, SQLiteSessionStore
from .._registry import BuildContext, KindInfo, Registry
from .._secret import redact, secret_texts
from .._tool import Tool
from .._tool_settings import apply_settings
from .._toolmap import Found, ToolMap, ToolSource, assemble, code_tools, final_name
from .._types import Diagnostic, Model
from ._dispatch import ConfiguredHook

if TYPE_CHECKING:
    from .._manifest import AppConfig

__all__ = [
    "Parts",
    "ToolEntry",
    "build_model",
    "build_parts",
    "current_tools",
    "model_spec",
    "open_store",
    "source_notes",
]


@dataclass(frozen=True, slots=True)
class ToolEntry:
    """One manifest tool entry, resolved: its tools, or the source that gives
    them run by run, and its config (whose ``approval`` and ``effects`` the
    tools got, again each time the source gives them)."""

    where: tuple[str | int, ...]
    toolset: str | None
    tools: tuple[Tool, ...]
    source: ToolSource | None = None
    config: object = None

    def found(self) -> Found:
        """``(final name, tool, location, toolset)`` of each tool."""
        return [(final_name(t, self.toolset), t, self.where, self.toolset) for t in self.tools]


@dataclass(frozen=True, slots=True)
class Parts:
    """What :func:`build_parts` made from a manifest and the code's additions."""

    model: Model
    tools: ToolMap
    entries: tuple[ToolEntry, ...]
    code_tools: tuple[Tool, ...]
    hooks: tuple[object, ...]


def build_model(spec: Model | str | ModelConfig, build: BuildContext) -> Model:
    """A `Model` as it is, or the one ``"<provider>:<name>"`` (or a provider's
    config) names, made by the provider's factory. Raises `ModelError`."""
    if isinstance(spec, Model):
        return spec
    registry = build.registry
    providers = ", ".join(sorted(registry.models)) or "none"
    config = spec
    if isinstance(spec, str):
        split = split_model_spec(spec)
        if not isinstance(split, dict):
            raise ModelError(
                f"model {spec!r} names no provider",
                hint=f"write '<provider>:<name>'; installed providers: {providers}",
            )
        info = registry.model_provider(split["provider"])
        if info is None:
            raise ModelError(
                f"no model provider {split['provider']!r} is installed (model {spec!r})",
                provider=split["provider"],
                hint=f"installed providers: {providers}",
            )
        config = info.config.model_validate(split)
    if not isinstance(config, ModelConfig):
        raise ModelError(
            f"{type(spec).__name__} is not a model",
            hint="a model has async complete(request) and stream(request)",
        )
    info = registry.model_provider(config.provider)
    if info is None:
        raise ModelError(
            f"no model provider {config.provider!r} is installed",
            provider=config.provider,
            hint=f"installed providers: {providers}",
        )
    model = info.factory(config, build)
    if not isinstance(model, Model):
        raise ModelError(
            f"model provider {config.provider!r} (plugin {info.plugin!r}) returned "
            f"{type(model).__name__}, which is not a model",
            provider=config.provider,
        )
    return model


def model_spec(given: Model | str | ModelConfig, built: Model) -> str:
    """How observers name a model: ``"<provider>:<name>"`` when it was given
    as a spec or a provider config, else its ``spec`` attribute or class."""
    if isinstance(given, ModelConfig):
        return given.spec
    if isinstance(given, str):
        split = split_model_spec(given)
        if isinstance(split, dict):
            return f"{split['provider']}:{split['name']}"
    spec = getattr(built, "spec", None)
    return spec if isinstance(spec, str) else type(built).__name__


async def _resolve_entry(
    registry: Registry, entry: object, build: BuildContext, where: tuple[str | int, ...]
) -> ToolEntry | list[Problem]:
    kind_name = str(getattr(entry, "kind", "?"))
    kind = registry.kind("tool", kind_name)
    if kind is None or kind.factory is None:
        return [Problem((*where, "kind"), f"no tool kind {kind_name!r} is installed")]
    return await _resolve(
        kind.factory,
        entry,
        build,
        where,
        getattr(entry, "toolset", None),
        owner=kind.plugin,
        label=f"tool kind {kind_name!r}",
    )


async def _resolve(
    resolve: Callable[..., object],
    config: object,
    build: BuildContext,
    where: tuple[str | int, ...],
    toolset: str | None,
    *,
    owner: str,
    label: str,
) -> ToolEntry | list[Problem]:
    """``resolve(config, build)`` as a `ToolEntry`, the entry's tool settings
    applied to its tools (see `apply_settings`), or the problems it met."""
    try:
        produced: Any = resolve(config, build)
        if inspect.isawaitable(produced):
            produced = await produced
        source = produced if isinstance(produced, ToolSource) else None
        if source is not None:
            produced = await source.current()
        tools = tuple(Tool.from_function(item) for item in produced or ())
    except SeamkitError as exc:
        return [Problem(where, exc.message, exc.hint)]
    except (Exception, SystemExit) as exc:  # sys.exit() in a tool kind is a bug too
        info = build.registry.plugins.get(owner)
        by = (info.distribution if info is not None else None) or f"plugin {owner!r}"
        what = (
            f"SystemExit({exc.code!r})"
            if isinstance(exc, SystemExit)
            else f"{type(exc).__name__}: {exc}"
        )
        return [
            Problem(
                where,
                f"{label} failed to resolve this entry: {redact(what, secret_texts(config))}",
                hint=f"this is a bug in {by}, or the entry's settings are wrong",
            )
        ]
    tools, problems = apply_settings(config, tools)
    if problems:
        return [Problem((*where, *p.location), p.message, p.hint) for p in problems]
    return ToolEntry(where, toolset, tools, source, config)


async def _section_tools(build: BuildContext, problems: list[Problem]) -> list[ToolEntry]:
    """The tools plugin-owned sections add (``register(key, model, tools=...)``)."""
    entries: list[ToolEntry] = []
    for key, section in build.sections.items():
        info = build.registry.sections.get(key)
        if info is None or info.tools is None:
            continue
        resolved = await _resolve(
            info.tools,
            section,
            build,
            (key,),
            None,
            owner=info.plugin,
            label=f"manifest section {key!r}",
        )
        if isinstance(resolved, list):
            problems.extend(resolved)
        else:
            entries.append(resolved)
    return entries


async def _configured_hooks(
    app: AppConfig, build: BuildContext, problems: list[Problem]
) -> list[ConfiguredHook]:
    """One hook per item of ``app.hooks`` (one per event of an entry that
    names ``events:``), in order. Each is built by its own factory call,
    unless its kind registered ``shared=True``: then the items of one entry
    share the instance built for the first. A problem is reported once per
    entry, at the entry."""
    built: list[ConfiguredHook] = []
    instances: dict[int, tuple[object, list[Problem]]] = {}  # by entry, for shared kinds
    reported: set[tuple[tuple[str | int, ...], str]] = set()
    for index, config in zip(app.hook_entries, app.hooks, strict=True):
        kind = build.registry.kind("hook", config.kind)
        shared = kind is not None and kind.shared
        if shared and index in instances:
            hook, failed = instances[index]
        else:
            hook, failed = await _build_hook(kind, config, build, index)
            if shared:
                instances[index] = hook, failed
        if failed:
            for problem in failed:
                key = (problem.location, problem.message)
                if key not in reported:
                    reported.add(key)
                    problems.append(problem)
            continue
        name = config.name or f"{config.kind}@hooks[{index}]"
        built.append(ConfiguredHook(config, hook, name))
    return built


async def _build_hook(
    kind: KindInfo | None, config: HookConfig, build: BuildContext, index: int
) -> tuple[object, list[Problem]]:
    """The hook the kind's factory builds for ``config`` and no problem, or
    ``None`` and its problems, located at the manifest entry ``hooks[index]``."""
    try:
        if kind is None or kind.factory is None:
            raise SeamkitError(f"no hook kind {config.kind!r} is installed")
        hook: object = kind.factory(config, build)
        if inspect.isawaitable(hook):
            hook = await hook
    except ManifestError as exc:  # its problems are located inside the entry
        return None, [
            Problem(("hooks", index, *p.location), p.message, p.hint) for p in exc.problems
        ]
    except SeamkitError as exc:
        return None, [Problem(("hooks", index), exc.message, exc.hint)]
    except (Exception, SystemExit) as exc:  # a factory calling sys.exit() is a bug too
        what = (
            f"SystemExit({exc.code!r}) (the factory called sys.exit())"
            if isinstance(exc, SystemExit)
            else f"{type(exc).__name__}: {exc}"
        )
        return None, [
            Problem(
                ("hooks", index),
                f"hook kind {config.kind!r} could not build this hook: "
                f"{redact(what, secret_texts(config))}",
            )
        ]
    return hook, []


async def build_parts(
    app: AppConfig,
    build: BuildContext,
    *,
    model: Model | str | ModelConfig | None = None,
    tools: Iterable[Tool | object] = (),
    hooks: Sequence[object] = (),
) -> Parts:
    """The model, tools and hooks of ``app`` plus what the code adds
    (``model`` replaces the manifest's). Raises `ManifestError` with every
    problem, each naming its entry; hooks are built only on a whole tool map
    (they look their tools up)."""
    problems: list[Problem] = []
    built_model: Model | None = None
    try:
        built_model = build_model(model if model is not None else app.model, build)
    except SeamkitError as exc:
        problems.append(Problem(("model",), exc.message, exc.hint))
    entries: list[ToolEntry] = []
    for index, entry in enumerate(app.tools):
        resolved = await _resolve_entry(build.registry, entry, build, ("tools", index))
        if isinstance(resolved, list):
            problems.extend(resolved)
        else:
            entries.append(resolved)
    extra = code_tools(tools, problems)
    found: Found = [item for entry in entries for item in entry.found()]
    # sections see the tools of the entries and the code (to leave theirs out)
    so_far = assemble([*found, *extra], [])
    entries.extend(await _section_tools(build.with_tools(so_far), problems))
    found = [item for entry in entries for item in entry.found()]
    tool_map = assemble([*found, *extra], problems)
    configured: list[ConfiguredHook] = []
    if not problems:
        configured = await _configured_hooks(app, build.with_tools(tool_map), problems)
    if problems or built_model is None:
        from .._manifest import locate_problems  # lazy: the manifest path only, not a run

        raise ManifestError(locate_problems(problems, None, source=app.source), source=app.source)
    return Parts(
        built_model,
        tool_map,
        tuple(entries),
        tuple(tool for _, tool, _, _ in extra),
        (*configured, *hooks),
    )


async def current_tools(
    entries: Sequence[ToolEntry], code: Sequence[Tool]
) -> tuple[tuple[ToolEntry, ...], ToolMap] | list[Problem]:
    """Ask every `ToolSource` for its tools now: the new entries and map, or
    the problems (a clash, a source that failed) when the set does not hold."""
    problems: list[Problem] = []
    refreshed: list[ToolEntry] = []
    for entry in entries:
        if entry.source is None:
            refreshed.append(entry)
            continue
        try:
            tools = tuple(Tool.from_function(t) for t in await entry.source.current())
            # a name of a map the source no longer lists may come back: not a problem now
            tools, _ = apply_settings(entry.config, tools, check=False)
        except Exception as exc:
            problems.append(
                Problem(entry.where, f"its tool source failed: {type(exc).__name__}: {exc}")
            )
            continue
        refreshed.append(ToolEntry(entry.where, entry.toolset, tools, entry.source, entry.config))
    found: Found = [item for entry in refreshed for item in entry.found()]
    found.extend((t.name, t, (), None) for t in code)
    tool_map = assemble(found, problems)
    return problems if problems else (tuple(refreshed), tool_map)


def source_notes(entries: Sequence[ToolEntry]) -> tuple[Diagnostic, ...]:
    """What the tool sources of ``entries`` have to say since they were
    last asked (a source may have ``diagnostics() -> Sequence[Diagnostic]``)."""
    notes: list[Diagnostic] = []
    for entry in entries:
        said = getattr(entry.source, "diagnostics", None)
        if callable(said):
            notes.extend(d for d in said() if isinstance(d, Diagnostic))
    return tuple(notes)


def _unknown_scheme(scheme: str, registry: Registry) -> SessionError:
    """The error for a store URL of a scheme no loaded plugin registered:
    the installed plugin it presumably belongs to when that one is not loaded
    (``SEAMKIT_DISABLE_PLUGINS=postgresql``), else the installed schemes."""
    location = f"{scheme}://..."
    off = next((p for p in registry.skipped.values() if p.owns(scheme)), None)
    if off is not None:
        return SessionError(
            f"no session store is loaded for URLs of scheme {scheme!r}; plugin "
            f"'{off.name}' ({off.label}) is installed but {off.reason}",
            location=location,
            hint=f"to load it, {off.how_to_enable}",
        )
    known = ", ".join(["sqlite", *sorted(registry.stores)])
    hint = (
        f"installed schemes: {known}; a plugin adds one (e.g. seamkit-sessions-postgres "
        "for postgresql://)"
    )
    if registry.skipped:
        hint += f"; {registry.not_loaded()}"
    return SessionError(
        f"no session store is installed for URLs of scheme {scheme!r}", location=location, hint=hint
    )


def open_store(
    spec: str | os.PathLike[str] | SessionStore | None,
    *,
    registry: Registry,
    base_dir: Path | None = None,
) -> SessionStore:
    """The store ``spec`` names: a store as it is; ``None`` for the default
    SQLite file; ``sqlite:///PATH`` or a plain path for a SQLite file
    (relative to ``base_dir`` when given); ``SCHEME://...`` for a store a
    plugin registered. Raises `SessionError` for an unknown scheme."""
    if spec is None:
        return SQLiteSessionStore()
    if not isinstance(spec, str | os.PathLike):
        return spec
    text = os.fspath(spec)
    scheme, sep, rest = text.partition("://")
    if not sep or len(scheme) < 2:  # a plain path (a Windows drive letter too)
        path = Path(text)
    elif scheme == "sqlite":
        path = Path(rest.removeprefix("/"))
    else:
        info = registry.stores.get(scheme)
        if info is None:
            raise _unknown_scheme(scheme, registry)
        store = info.factory(text)
        if not isinstance(store, SessionStore):
            raise SessionError(
                f"the {scheme!r} store of plugin {info.plugin!r} is not a SessionStore",
                location=f"{scheme}://...",
            )
        return store
    if base_dir is not None and not path.is_absolute():
        path = base_dir / path
    return SQLiteSessionStore(path)
