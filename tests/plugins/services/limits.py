"""A service for the limits tests: it answers with as many bytes as it is
asked for, in one reply or in chunks, or streams without end."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from seamkit_tool_service import DynamicToolService


class Flood(DynamicToolService):
    """``size`` bytes of ``x`` in one reply, or ``chunks`` streamed chunks of
    ``size`` bytes each; ``forever``: a small chunk every 0.05s, never ending."""

    id = "flood"

    async def invoke(self, user: str, config: dict[str, Any], arguments: dict[str, Any]) -> Any:
        size = int(arguments.get("size", 1))
        chunks = int(arguments.get("chunks", 0))
        if arguments.get("forever"):
            return _forever()
        if not chunks:
            return "x" * size
        return _chunks(size, chunks)


async def _chunks(size: int, count: int) -> AsyncIterator[str]:
    chunk = "x" * size
    for _ in range(count):
        yield chunk


async def _forever() -> AsyncIterator[str]:
    while True:
        yield "tick "
        await asyncio.sleep(0.05)
