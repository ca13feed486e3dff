"""What a manifest says about an MCP server: how to start or reach it
(stdio ``command`` or streamable-HTTP ``url``, with ``tls`` for https),
which of its tools to use, and its time-outs. The model never imports the
MCP SDK."""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Literal

import seamkit
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

__all__ = ["MCPTls", "MCPToolConfig"]


class MCPTls(BaseModel):
    """TLS for a streamable-HTTP server at an https URL: whether to verify
    its certificate, the CA that signed it, and a client certificate (files
    relative to the manifest). The same settings as an http tool service's
    ``tls``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    verify: bool = Field(default=True, description="Verify the server's certificate.")
    ca_file: str | None = Field(
        default=None, description="The CA bundle (PEM) to verify it with (default: the system's)."
    )
    cert_file: str | None = Field(
        default=None, description="A client certificate (PEM), for a server that requires one."
    )
    key_file: str | None = Field(
        default=None, description="The client certificate's key (PEM), if not in cert_file."
    )

    @model_validator(mode="after")
    def _check(self) -> MCPTls:
        if self.key_file and not self.cert_file:
            hint = {"hint": "set cert_file to the client certificate"}
            error = PydanticCustomError("key_without_cert", "key_file needs cert_file", hint)
            raise ValidationError.from_exception_data(
                "MCPTls", [InitErrorDetails(type=error, loc=("key_file",), input=self.key_file)]
            )
        return self


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
    tls: MCPTls | None = Field(
        default=None,
        description="streamable HTTP: certificate verification and a client certificate.",
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
        if self.tls is not None and self.url is None:
            raise PydanticCustomError(
                "stdio_tls",
                "'tls' is for a streamable-HTTP server ('url'), not a stdio one ('command')",
                {"hint": "remove 'tls', or reach the server by 'url'"},
            )
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
