"""seamkit-memory-server: an MCP memory server, the one seamkit's
config-driven tool-call injection reference injects.

Two tools, per user, on one SQLite file:

- ``get_memories(user="")``: the user's memories as text, one per line, oldest
  first (the last ``--max-memories``), or ``"No memories yet."``;
- ``save_memory(text, user="")``: stores ``text`` and answers ``"Saved."``
  (``"Already saved."`` when it equals the user's last memory; blank text is
  not stored).

The user comes from the ``user`` argument when given, else from the request's
``_meta`` key ``"seamkit/user"`` (seamkit's mcp plugin sends the run's context
``user`` there), else the call fails with an error result saying a user is
needed.

Run it with ``seamkit-memory-server`` or ``python -m memory_server``::

    seamkit-memory-server --db memories.sqlite                     # stdio
    seamkit-memory-server --transport streamable-http --port 8000  # http://127.0.0.1:8000/mcp

It uses only the public ``mcp`` SDK. Logs go to stderr; on stdio, stdout
carries nothing but protocol messages.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from collections.abc import Sequence

from memory_server._server import (
    ALREADY_SAVED,
    NO_MEMORIES,
    SAVED,
    USER_META_KEY,
    USER_NEEDED,
    build_server,
    format_memories,
    resolve_user,
)
from memory_server._store import DEFAULT_DB, DEFAULT_MAX_MEMORIES, MemoryStore, SaveOutcome

__all__ = [
    "ALREADY_SAVED",
    "DEFAULT_DB",
    "DEFAULT_MAX_MEMORIES",
    "NO_MEMORIES",
    "SAVED",
    "USER_META_KEY",
    "USER_NEEDED",
    "MemoryStore",
    "SaveOutcome",
    "build_parser",
    "build_server",
    "format_memories",
    "main",
    "resolve_user",
]

DB_ENV = "MEMORY_DB"
"""The environment variable naming the database file when ``--db`` is not given."""


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {number}")
    return number


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``seamkit-memory-server``."""
    parser = argparse.ArgumentParser(
        prog="seamkit-memory-server",
        description="An MCP memory server: get_memories and save_memory, per user, on SQLite.",
    )
    parser.add_argument(
        "--db",
        metavar="PATH",
        default=None,
        help=f"the SQLite file (default: ${DB_ENV}, else {DEFAULT_DB} in the current directory)",
    )
    parser.add_argument(
        "--max-memories",
        metavar="N",
        type=_positive_int,
        default=DEFAULT_MAX_MEMORIES,
        help="how many of the newest memories get_memories returns "
        f"(default: {DEFAULT_MAX_MEMORIES})",
    )
    parser.add_argument(
        "--transport",
        choices=["stdio", "streamable-http"],
        default="stdio",
        help="stdio (default) or streamable-http (served at http://HOST:PORT/mcp)",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="HTTP bind address (default: 127.0.0.1)"
    )
    parser.add_argument("--port", type=int, default=8000, help="HTTP port (default: 8000)")
    parser.add_argument(
        "--log-level",
        choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"],
        default="INFO",
        help="log level; logs always go to stderr (default: INFO)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    """Parse the command line, open the store and serve until stopped."""
    args = build_parser().parse_args(argv)
    # Configure the root logger on stderr first: MCPServer's own basicConfig
    # call is then a no-op, and nothing but protocol messages reaches stdout.
    logging.basicConfig(
        level=args.log_level,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    db = args.db or os.environ.get(DB_ENV) or DEFAULT_DB
    store = MemoryStore(db)
    server = build_server(store, max_memories=args.max_memories, log_level=args.log_level)
    logging.getLogger(__name__).info("memories in %s, transport %s", store.path, args.transport)
    if args.transport == "stdio":
        server.run("stdio")
    else:
        # uvicorn's access log is configured onto sys.stdout; send it to stderr too.
        with contextlib.redirect_stdout(sys.stderr):
            server.run("streamable-http", host=args.host, port=args.port)
