"""Tool resolution: manifest entries and code tools become one `ToolMap`.

Resolution happens once, while an agent is built. Every tool kind's
``resolve(config, agent)`` is awaited; tools of an entry with ``toolset`` are
renamed ``sanitize_toolname(f"{toolset}_{tool}")``; other names are used as
they are and must be valid. Every problem is collected and reported at once,
naming the manifest entry. Afterwards tools are looked up by final name only.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ._errors import ManifestError, Problem, SeamkitError
from ._names import check_toolname, sanitize_toolname
from ._tool import Tool

__all__ = ["ToolMap", "resolve_tools"]


class ToolMap(Mapping[str, Tool]):
    """The agent's tools by final name; immutable.

    ``toolsets`` maps each toolset to its tools (the tool's own name → its
    final name), so a reference such as ``toolset_name``/``tool_name``
    resolves with :meth:`find` through the map, never by parsing a name.
    """

    __slots__ = ("_origins", "_tools", "_toolsets")

    def __init__(
        self,
        tools: Mapping[str, Tool] | None = None,
        *,
        toolsets: Mapping[str, Mapping[str, str]] | None = None,
        origins: Mapping[str, str] | None = None,
    ) -> None:
        self._tools: Mapping[str, Tool] = MappingProxyType(dict(tools or {}))
        self._toolsets: Mapping[str, Mapping[str, str]] = MappingProxyType(
            {k: MappingProxyType(dict(v)) for k, v in (toolsets or {}).items()}
        )
        self._origins: Mapping[str, str] = MappingProxyType(dict(origins or {}))

    @classmethod
    def of(cls, tools: Iterable[Any]) -> ToolMap:
        """The map of tools passed in code (functions are made tools), by name.

        Raises :class:`seamkit.SeamkitError` for two tools with one name.
        """
        if isinstance(tools, ToolMap):
            return tools
        problems: list[Problem] = []
        tool_map = _assemble(_code_tools(tools, problems), problems)
        if problems:
            raise SeamkitError("; ".join(p.message for p in problems), hint=problems[0].hint)
        return tool_map

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def toolsets(self) -> Mapping[str, Mapping[str, str]]:
        """Toolset name → {tool name → final name}."""
        return self._toolsets

    def origin(self, name: str) -> str:
        """Where the tool ``name`` came from: ``tools[2]`` or ``code``."""
        return self._origins.get(name, "code")

    def find(self, tool_name: str, toolset: str | None = None) -> Tool:
        """The tool a reference names: ``tool_name`` in ``toolset``, or the
        tool whose final name is ``tool_name`` when no toolset is given.

        Raises :class:`seamkit.SeamkitError` saying what exists instead.
        """
        if toolset is None:
            found = self._tools.get(tool_name)
            if found is None:
                raise SeamkitError(
                    f"no tool named {tool_name!r}",
                    hint=f"tools: {', '.join(sorted(self._tools)) or 'none'}",
                )
            return found
        members = self._toolsets.get(toolset)
        if members is None:
            raise SeamkitError(
                f"no toolset named {toolset!r}",
                hint=f"toolsets: {', '.join(sorted(self._toolsets)) or 'none'} "
                f"(a tools entry sets 'toolset: NAME')",
            )
        final = members.get(tool_name)
        if final is None:
            raise SeamkitError(
                f"toolset {toolset!r} has no tool {tool_name!r}",
                hint=f"its tools: {', '.join(sorted(members)) or 'none'}",
            )
        return self._tools[final]

    def __repr__(self) -> str:
        return f"ToolMap({', '.join(self._tools)})"


@dataclass(frozen=True, slots=True)
class BuildInfo:
    """What a tool kind's ``resolve`` receives as ``agent`` when tools are
    resolved without an agent (``seamkit validate``, :func:`resolve_tools`)."""

    name: str
    config: Any
    base_dir: Path | None
    exit_stack: AsyncExitStack


async def resolve_tools(
    app: Any = None,
    *,
    tools: Iterable[Tool | Callable[..., Any]] = (),
    agent: Any = None,
    registry: Any = None,
) -> ToolMap:
    """Resolve the manifest's ``tools`` entries and the ``tools`` passed in
    code into one `ToolMap`.

    ``app`` is an :class:`seamkit.AppConfig` (or ``None``). ``agent`` is what
    each tool kind's ``resolve`` receives; without one, an object with
    ``name``, ``config``, ``base_dir`` and an ``exit_stack`` that is closed
    before this returns (use :meth:`seamkit.Agent.load` to keep what tool
    kinds open). Raises :class:`seamkit.ManifestError`
    with one problem per failure: a kind that fails to resolve (a function
    reference that does not exist, say), a tool name that is not valid, two
    tools with one final name.
    """
    from ._loader import get_registry

    registry = registry if registry is not None else get_registry()
    entries = list(getattr(app, "tools", None) or [])
    if agent is None:
        source = getattr(app, "source", None)
        async with AsyncExitStack() as stack:
            info = BuildInfo(
                name=getattr(app, "name", "agent"),
                config=app,
                base_dir=Path(source).resolve().parent if source else None,
                exit_stack=stack,
            )
            return await resolve_tools(app, tools=tools, agent=info, registry=registry)
    problems: list[Problem] = []
    found: Found = []
    for index, entry in enumerate(entries):
        where: tuple[str | int, ...] = ("tools", index)
        for tool_obj in await _resolve_entry(registry, entry, agent, where, problems):
            toolset = getattr(entry, "toolset", None)
            final = sanitize_toolname(f"{toolset}_{tool_obj.name}") if toolset else tool_obj.name
            found.append((final, tool_obj, where, toolset))
    found.extend(_code_tools(tools, problems))
    tool_map = _assemble(found, problems)
    if problems:
        raise ManifestError(locate_problems(problems, app), source=getattr(app, "source", None))
    return tool_map


Found = list[tuple[str, Tool, tuple[str | int, ...], str | None]]
"""(final name, tool, manifest location or () for code, toolset)"""


def _code_tools(tools: Iterable[Any], problems: list[Problem]) -> Found:
    found: Found = []
    for obj in tools:
        try:
            tool_obj = Tool.from_function(obj)
        except (SeamkitError, TypeError) as exc:
            problems.append(Problem((), f"tool passed in code: {exc}"))
            continue
        found.append((tool_obj.name, tool_obj, (), None))
    return found


def _assemble(found: Found, problems: list[Problem]) -> ToolMap:
    """Check names and build the map; problems are appended to ``problems``."""
    by_name: dict[str, Tool] = {}
    origins: dict[str, tuple[str | int, ...]] = {}
    toolsets: dict[str, dict[str, str]] = {}
    for final, tool_obj, where, toolset in found:
        problem = check_toolname(final)
        if problem:
            problems.append(
                Problem(
                    where,
                    problem,
                    hint="set 'toolset: NAME' to have names sanitised, or rename the tool",
                )
            )
            continue
        if final in by_name:
            first = _label(origins[final])
            problems.append(
                Problem(
                    where,
                    f"two tools are named {final!r}: one from {first} and one from {_label(where)}",
                    hint="give one of the entries a 'toolset' (names become "
                    "'<toolset>_<tool>'), or rename one tool",
                )
            )
            continue
        by_name[final] = tool_obj if final == tool_obj.name else tool_obj.replace(name=final)
        origins[final] = where
        if toolset:
            toolsets.setdefault(toolset, {})[tool_obj.name] = final
    return ToolMap(
        by_name,
        toolsets=toolsets,
        origins={k: _label(v) for k, v in origins.items()},
    )


async def _resolve_entry(
    registry: Any,
    entry: Any,
    agent: Any,
    where: tuple[str | int, ...],
    problems: list[Problem],
) -> list[Tool]:
    kind = registry.kind("tool", entry.kind)
    if kind is None or kind.factory is None:
        problems.append(Problem((*where, "kind"), f"no tool kind {entry.kind!r} is installed"))
        return []
    try:
        produced = kind.factory(entry, agent)
        if inspect.isawaitable(produced):
            produced = await produced
    except SeamkitError as exc:
        problems.append(Problem(where, exc.message, exc.hint))
        return []
    except Exception as exc:
        info = registry.plugins.get(kind.plugin)
        owner = (info.distribution if info is not None else None) or f"plugin {kind.plugin!r}"
        problems.append(
            Problem(
                where,
                f"tool kind {entry.kind!r} failed to resolve this entry: "
                f"{type(exc).__name__}: {exc}",
                hint=f"this is a bug in {owner}, or the entry's settings are wrong",
            )
        )
        return []
    out: list[Tool] = []
    for item in produced or ():
        try:
            out.append(Tool.from_function(item))
        except (SeamkitError, TypeError) as exc:
            problems.append(Problem(where, f"tool kind {entry.kind!r} gave a bad tool: {exc}"))
    return out


def _label(where: tuple[str | int, ...]) -> str:
    return f"tools[{where[1]}]" if where else "the tools passed in code"


def locate_problems(problems: list[Problem], app: Any) -> list[Problem]:
    """``problems`` with line and column filled in from the manifest file."""
    source = getattr(app, "source", None)
    if not source:
        return problems
    from ._positions import locate

    try:
        text = Path(source).read_text(encoding="utf-8")
    except OSError:
        return problems
    out = []
    for p in problems:
        if p.location:
            line, column = locate(text, p.location)
            p = Problem(p.location, p.message, p.hint, line, column)
        out.append(p)
    return out
