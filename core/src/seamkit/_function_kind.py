"""The kernel's built-in tool kind ``function``: tools from Python functions."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ._config import ToolConfig

__all__ = ["FunctionToolConfig", "resolve_function_tools"]


class FunctionToolConfig(ToolConfig):
    """``{kind: function, ref: "package.module:function"}`` for one tool, or
    ``ref: "package.module"`` for every ``@seamkit.tool`` function of the module."""

    kind: Literal["function"] = "function"
    ref: str = Field(
        description="'package.module:function' for one tool, 'package.module' for every "
        "@seamkit.tool function in the module.",
        pattern=r"^[A-Za-z_][\w.]*(:[A-Za-z_][\w.]*)?$",
    )
    timeout_seconds: float | None = Field(
        default=None, gt=0, description="Overrides the tools' own time-out."
    )


async def resolve_function_tools(config: FunctionToolConfig, agent: Any) -> list[Any]:
    """Import the referenced function(s) and turn them into tools.

    Modules that are not importable otherwise are looked up next to the
    manifest (``agent.base_dir``). ``timeout_seconds`` overrides the tools' own.
    """
    from ._tool import Tool
    from ._tool_resolve import resolve_ref

    base_dir = getattr(agent, "base_dir", None)
    tools = [
        Tool.from_function(obj)
        for obj in resolve_ref(config, None if base_dir is None else str(base_dir))
    ]
    if config.timeout_seconds is not None:
        tools = [t.replace(timeout_seconds=config.timeout_seconds) for t in tools]
    return tools
