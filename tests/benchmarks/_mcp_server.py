"""The MCP server of ``bench_mcp``: an `MCPServer` over stdio with one tool,
``echo(text) -> text``, async so that no worker thread is involved.

Run as ``python -m tests.benchmarks._mcp_server`` from the repository root
(with the repository on ``PYTHONPATH``: the MCP SDK passes a stdio server
only a minimal environment). Not named ``bench_*``: it is no benchmark.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("bench-echo", version="1.0", log_level="WARNING")


@server.tool()
async def echo(text: str) -> str:
    """Return ``text`` as it is."""
    return text


if __name__ == "__main__":
    server.run()
