"""The MCP side: an `MCPServer` with the two tools, ``get_memories`` and
``save_memory``, over a `MemoryStore`.

The user a call is about comes from the tool's ``user`` argument when given,
else from the request's ``_meta`` key ``"seamkit/user"`` (`USER_META_KEY`),
where seamkit's mcp plugin sends the run's context ``user``. With neither, the
call fails with an error result (``isError``) saying a user is needed.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

from memory_server._store import DEFAULT_MAX_MEMORIES, MemoryStore

__all__ = [
    "ALREADY_SAVED",
    "NOTHING_TO_SAVE",
    "NO_MEMORIES",
    "SAVED",
    "SERVER_NAME",
    "USER_META_KEY",
    "USER_NEEDED",
    "build_server",
    "format_memories",
    "resolve_user",
]

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]

SERVER_NAME = "memory_server"
"""The name the server reports in its ``initialize`` answer."""

USER_META_KEY = "seamkit/user"
"""The request ``_meta`` key read for the user when a call has no ``user``
argument; seamkit's mcp plugin puts the run's context ``user`` there."""

NO_MEMORIES = "No memories yet."
SAVED = "Saved."
ALREADY_SAVED = "Already saved."
NOTHING_TO_SAVE = "Nothing to save."
USER_NEEDED = (
    f"A user is needed: pass the `user` argument or send it in the request's "
    f"_meta as {USER_META_KEY!r}."
)

_INSTRUCTIONS = (
    "Long-term memory, per user. get_memories returns what was saved for a user, "
    "oldest first; save_memory stores one more thing to remember."
)

log = logging.getLogger(__name__)


def _version() -> str:
    try:
        return version("seamkit-memory-server")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "0"


def resolve_user(argument: str, meta: Mapping[str, Any] | None) -> str:
    """The user a call is about: the ``user`` argument when not blank, else the
    string under `USER_META_KEY` in the request's ``_meta``.

    Raises `ToolError` (which the client receives as an ``isError`` result)
    when neither names one.
    """
    user = argument.strip()
    if not user and meta is not None:
        value = meta.get(USER_META_KEY)
        if isinstance(value, str):
            user = value.strip()
    if not user:
        raise ToolError(USER_NEEDED)
    return user


def _request_meta(ctx: Context) -> Mapping[str, Any] | None:
    meta: Mapping[str, Any] | None = ctx.request_context.meta
    return meta


def format_memories(memories: list[str]) -> str:
    """The text ``get_memories`` answers: one memory per line, oldest first
    (a memory's own line breaks are folded into spaces), or `NO_MEMORIES`."""
    if not memories:
        return NO_MEMORIES
    return "\n".join(" ".join(memory.split()) for memory in memories)


def build_server(
    store: MemoryStore,
    *,
    max_memories: int = DEFAULT_MAX_MEMORIES,
    log_level: LogLevel = "INFO",
) -> MCPServer:
    """An `MCPServer` serving ``get_memories`` and ``save_memory`` over
    ``store``; ``get_memories`` returns at most ``max_memories`` (the newest).

    Note that constructing an `MCPServer` calls ``logging.basicConfig``; set up
    logging (to stderr) before calling this, as `memory_server.main` does.
    """
    server: MCPServer = MCPServer(
        SERVER_NAME,
        version=_version(),
        instructions=_INSTRUCTIONS,
        log_level=log_level,
        subscriptions=False,
    )

    @server.tool(
        structured_output=False,
        annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True),
    )
    def get_memories(ctx: Context, user: str = "") -> str:
        """Return what was remembered about a user: one memory per line, oldest
        first, or "No memories yet.". `user` may be omitted when the request's
        _meta carries "seamkit/user"."""
        who = resolve_user(user, _request_meta(ctx))
        return format_memories(store.recent(who, max_memories))

    @server.tool(
        structured_output=False,
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False),
    )
    def save_memory(ctx: Context, text: str, user: str = "") -> str:
        """Remember `text` for a user. Answers "Saved.", or "Already saved." when
        it equals the user's last memory. `user` may be omitted when the
        request's _meta carries "seamkit/user"."""
        who = resolve_user(user, _request_meta(ctx))
        outcome = store.save(who, text)
        log.debug("save_memory for %r: %s", who, outcome)
        return {"saved": SAVED, "duplicate": ALREADY_SAVED, "empty": NOTHING_TO_SAVE}[outcome]

    return server
