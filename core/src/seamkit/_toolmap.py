"""`ToolMap`: the agent's tools by final name, immutable; `ToolSource`: what a
tool kind returns when its tools may change between runs; and the assembly
that turns found tools into a map, naming every clash.

Tools of an entry with ``toolset`` are named
``sanitize_toolname(f"{toolset}_{tool}")``; other names are used as they are
and must be valid. Afterwards tools are looked up by final name only.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from ._errors import Problem, SeamkitError
from ._tool import Tool, check_toolname, sanitize_toolname

__all__ = ["Found", "ToolMap", "ToolSource", "assemble", "code_tools", "final_name"]


@runtime_checkable
class ToolSource(Protocol):
    """What a tool kind returns when its tools may change between runs (a
    discovered service, an MCP server that sends ``tools/list_changed``).

    The agent asks every source for its current tools at the start of each
    run; a changed set is swapped in before that run starts, never during
    one. A set whose names clash keeps the old map and records a diagnostic.

    A source may also have ``diagnostics() -> Sequence[Diagnostic]``: what it
    has to say since it was last asked (a tool it left out, and why), added
    to the diagnostics of the run that asked. A manifest section's source is
    built seeing the tools of the manifest's entries and the code
    (``build.tools``), so it can leave out a tool that would clash.
    """

    async def current(self) -> Sequence[Tool]:
        """The tools as they are now."""
        ...


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
        tool_map = assemble(code_tools(tools, problems), problems)
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
        """Where the tool ``name`` came from: ``tools[2]``, a manifest
        section, or ``code``."""
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


Found = list[tuple[str, Tool, tuple[str | int, ...], str | None]]
"""(final name, tool, manifest location or () for code, toolset)"""


def final_name(tool: Tool, toolset: str | None) -> str:
    """The name the model sees: ``sanitize_toolname(f"{toolset}_{name}")``
    in a toolset, else the tool's own name."""
    return sanitize_toolname(f"{toolset}_{tool.name}") if toolset else tool.name


def code_tools(tools: Iterable[Any], problems: list[Problem]) -> Found:
    """Tools passed in code (functions are made tools); problems appended."""
    found: Found = []
    for obj in tools:
        try:
            tool_obj = Tool.from_function(obj)
        except (SeamkitError, TypeError) as exc:
            problems.append(Problem((), f"tool passed in code: {exc}"))
            continue
        found.append((tool_obj.name, tool_obj, (), None))
    return found


def assemble(found: Found, problems: list[Problem]) -> ToolMap:
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


def _label(where: tuple[str | int, ...]) -> str:
    if not where:
        return "the tools passed in code"
    if len(where) > 1:
        return f"{where[0]}[{where[1]}]"
    return f"the manifest section {where[0]!r}"
