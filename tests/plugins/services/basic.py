"""Well-behaved and misbehaving services for the tool-service tests."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from seamkit_tool_service import Argument, ConfigParam, DynamicToolService, ServedTool


class Echo(DynamicToolService):
    """Answers with what it got: user, config, arguments and its pid (JSON)."""

    id = "echo"
    config_params = (ConfigParam(name="collection", required=True),)
    tools = (
        ServedTool(
            name="echo",
            description="Echoes.",
            config={"collection": "announced"},
            arguments=[Argument(name="text", type="string", description="What to echo.")],
        ),
    )

    async def invoke(self, user: str, config: dict[str, Any], arguments: dict[str, Any]) -> Any:
        mark = arguments.get("mark")
        if isinstance(mark, str):  # a file it makes on arrival: the call is with a worker
            Path(mark).touch()
        delay = arguments.get("delay")
        if isinstance(delay, int | float):
            await asyncio.sleep(delay)
        return {"user": user, "config": config, "arguments": arguments, "pid": os.getpid()}


class Streamer(DynamicToolService):
    """Streams ``count`` chunks ``"<i> "``, ``pause`` seconds apart."""

    id = "streamer"

    async def invoke(
        self, user: str, config: dict[str, Any], arguments: dict[str, Any]
    ) -> AsyncIterator[str]:
        count = int(arguments.get("count", 3))
        pause = float(arguments.get("pause", 0.0))

        async def chunks() -> AsyncIterator[str]:
            for index in range(count):
                if pause:
                    await asyncio.sleep(pause)
                yield f"{index} "
            if arguments.get("fail"):
                raise RuntimeError("the stream broke")

        return chunks()


class Raiser(DynamicToolService):
    """Raises a ValueError with the message it is given."""

    id = "raiser"

    async def invoke(self, user: str, config: dict[str, Any], arguments: dict[str, Any]) -> Any:
        raise ValueError(str(arguments.get("message", "no")))
