"""The tools of one MCP server as a `seamkit.ToolSource`: listed when the
agent is built (names, descriptions and JSON Schemas from the server, made
with `seamkit.Tool.from_schema`), listed again between runs only after the
server said ``tools/list_changed``."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from mcp.types import Tool as MCPTool
from seamkit import (
    ActionContext,
    SeamkitError,
    Secret,
    Tool,
    ToolDefinitionError,
    ToolResult,
    redact,
)

from ._connection import Connection
from ._errors import MCPServerError
from ._results import to_result

__all__ = ["USER_META_KEY", "MCPToolset"]

USER_META_KEY = "seamkit/user"
"""The ``_meta`` key of each ``tools/call`` that carries the run's context
property ``user`` (when the run has one)."""

log = logging.getLogger("seamkit_mcp")


class MCPToolset:
    """The server's tools that pass the entry's ``include``/``exclude``."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._tools: dict[str, tuple[str, Tool]] = {}

    async def load(self) -> None:
        """List the server's tools now (raises `MCPServerError`,
        `SeamkitError` for a tool whose schema is not JSON Schema)."""
        config = self._connection.config
        listed = await self._connection.list_tools()
        tools: dict[str, tuple[str, Tool]] = {}
        for definition in listed:
            if not config.wants(definition.name):
                continue
            text = definition.model_dump_json(include={"name", "description", "input_schema"})
            previous = self._tools.get(definition.name)
            tools[definition.name] = (
                previous
                if previous is not None and previous[0] == text
                else (text, self._make(definition))
            )
        self._tools = tools

    def _make(self, definition: MCPTool) -> Tool:
        connection, name = self._connection, definition.name

        async def call(arguments: dict[str, Any], ctx: ActionContext) -> ToolResult | str:
            user = ctx.get("user")
            if isinstance(user, Secret):
                user = user.get_secret_value()
            meta = {USER_META_KEY: str(user)} if user is not None else None
            try:
                result = await connection.call(name, arguments, meta)
            except MCPServerError as exc:
                # the entry's secrets are masked already; the run's may be in it too
                return ToolResult.error(redact(f"Error: {exc.message}", ctx.secret_texts))
            return to_result(result, secrets=(*connection.secrets, *ctx.secret_texts))

        schema = dict(definition.input_schema or {"type": "object", "properties": {}})
        schema.setdefault("type", "object")
        try:
            return Tool.from_schema(name, definition.description or "", schema, call)
        except ToolDefinitionError as exc:
            raise SeamkitError(
                f"MCP server {connection.config.label!r} offers tool {name!r} with a schema "
                f"seamkit cannot use: {exc.message}",
                hint=f"leave it out with exclude: [{json.dumps(name)}]",
            ) from None

    async def current(self) -> Sequence[Tool]:
        """The tools as listed last (listed again if the server said they
        changed; a failed listing keeps the old ones)."""
        if self._connection.changed:
            self._connection.changed = False
            try:
                await self.load()
            except SeamkitError as exc:
                log.warning("MCP server %r: %s", self._connection.config.label, exc.message)
        return tuple(tool for _, tool in self._tools.values())
