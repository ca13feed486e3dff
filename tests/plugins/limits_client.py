"""Run one call of a tool service in a process of its own and print, as
JSON, its result and the growth of the process's peak RSS (``VmHWM``) over
the call: ``python -m tests.plugins.limits_client DESCRIPTOR_JSON ARGS_JSON``.
A small call first warms everything up (imports, the connection)."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import seamkit
from seamkit_tool_service import Argument, ServiceDescriptor
from seamkit_tool_service._tools import Connections, service_tool


def peak_kib() -> int:
    """The process's peak resident set so far, in KiB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise RuntimeError("no VmHWM")  # pragma: no cover


async def main(descriptor: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    connections = Connections()
    made = service_tool(
        ServiceDescriptor.model_validate(descriptor),
        connections,
        name="flood",
        description="",
        arguments=[
            Argument(name=n, type=t, required=False)  # type: ignore[arg-type]
            for n, t in (("size", "integer"), ("chunks", "integer"), ("forever", "boolean"))
        ],
        config={},
    )
    ctx = seamkit.ActionContext(user="ann")
    try:
        warm = await made.call({"size": 1000}, ctx)
        assert not warm.is_error, warm.content
        before = peak_kib()
        result = await made.call(arguments, ctx)
        after = peak_kib()
        await asyncio.sleep(0.5)  # what still comes is dropped meanwhile
        dropped = connections.dropped()
        return {
            "content": result.content[:500],
            "is_error": result.is_error,
            "growth_kib": after - before,
            "dropped": dropped,
        }
    finally:
        await connections.aclose()


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(json.loads(sys.argv[1]), json.loads(sys.argv[2])))))
