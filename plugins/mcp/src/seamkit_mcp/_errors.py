"""The exception of seamkit-mcp.

`MCPServerError` is raised when an MCP server cannot be started or reached,
does not answer in time, or stops; while an agent is built it becomes a
manifest problem naming the entry, and during a run the tool result
``Error: ...`` the model sees.
"""

from __future__ import annotations

from seamkit import SeamkitError

__all__ = ["MCPServerError"]


class MCPServerError(SeamkitError):
    """Raised when the MCP server ``server`` (its toolset, command or URL)
    fails: cannot start, does not answer, stops, or has failed for good."""

    def __init__(self, message: str, *, server: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.server = server
