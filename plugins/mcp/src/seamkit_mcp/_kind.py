"""The tool kind ``mcp``: one manifest entry, one MCP server, its tools as
a toolset that may change between runs. The server is started when the
agent is built and stopped with it (``async with agent``)."""

from __future__ import annotations

from seamkit.plugins import BuildContext

from ._config import MCPToolConfig
from ._connection import Connection
from ._toolset import MCPToolset

__all__ = ["resolve"]


async def resolve(config: MCPToolConfig, build: BuildContext) -> MCPToolset:
    """Start the server, list its tools, and give them as a tool source.
    Raises `MCPServerError` (a problem naming the entry) when it fails."""
    connection = Connection(config, build.base_dir)
    build.exit_stack.push_async_callback(connection.aclose)
    toolset = MCPToolset(connection)
    await toolset.load()
    return toolset
