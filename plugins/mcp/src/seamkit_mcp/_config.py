"""What a manifest says about an MCP server: how to start or reach it
(stdio ``command`` or streamable-HTTP ``url``), which of its tools to use,
and its time-outs. The model never imports the MCP SDK."""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Literal

import seamkit
from pydantic import Field, model_validator

__all__ = ["MCPToolConfig"]


class MCPToolConfig(seamkit.ToolConfig):
    """The tools of an MCP server: started as a subprocess speaking stdio
    (``command``), or reached over streamable HTTP (``url``). With
    ``toolset`` the model sees ``<toolset>_<tool>``."""

    kind: Literal["mcp"] = "mcp"
    command: str | None = Field(default=None, description="stdio: the server's executable.")
    args: list[str] = Field(default_factory=list, description="stdio: its arguments.")
    env: dict[str, str | seamkit.Secret[str]] = Field(
        default_factory=dict,
        description="stdio: environment variables for it (values may be ${secret:...}); "
        "PATH, HOME and a few more are passed on, nothing else.",
    )
    cwd: str | None = Field(
        default=None, description="stdio: its working directory (relative: to the manifest's)."
    )
    url: str | None = Field(
        default=None, description="streamable HTTP: the endpoint, e.g. .../mcp."
    )
    headers: dict[str, str | seamkit.Secret[str]] = Field(
        default_factory=dict,
        description="streamable HTTP: request headers (values may be secrets).",
    )
    include: list[str] | None = Field(
        default=None, description="Glob patterns on the server's tool names: only these are used."
    )
    exclude: list[str] = Field(
        default_factory=list, description="Glob patterns on the server's tool names to leave out."
    )
    timeout_seconds: float = Field(default=60.0, gt=0, description="Time-out of one tool call.")
    startup_timeout_seconds: float = Field(
        default=30.0, gt=0, description="How long the server may take to start and list its tools."
    )

    @model_validator(mode="after")
    def _one_transport(self) -> MCPToolConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError(
                "an mcp entry needs exactly one of 'command' (stdio) and 'url' (streamable HTTP)"
            )
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"url '{self.url}' is not an http(s) URL")
        return self

    def wants(self, tool_name: str) -> bool:
        """Whether the server's tool ``tool_name`` passes ``include`` and ``exclude``."""
        if self.include is not None and not any(fnmatchcase(tool_name, p) for p in self.include):
            return False
        return not any(fnmatchcase(tool_name, p) for p in self.exclude)

    @property
    def label(self) -> str:
        """How errors name the server: its toolset, else its command or URL."""
        return self.toolset or self.command or self.url or "mcp"
