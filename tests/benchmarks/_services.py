"""The service the tool-service benchmark (``bench_tool_service``) serves.

`Nop` answers every call with ``"ok"``, so what is measured is the wire and
the clients, not the service's work. Served over NATS, the same worker
process also answers a raw echo subject (no envelope) when the environment
variable `RAW_ECHO` says ``<servers>|<subject>``: in `Nop.setup` it opens a
second nats-py connection and subscribes with a callback that responds with
the request's bytes, the least a NATS responder can do. (This module is not
named ``bench_*``: the harness would take it for a benchmark.)
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from seamkit_tool_service import Argument, DynamicToolService, ServedTool

if TYPE_CHECKING:
    from nats.aio.client import Client
    from nats.aio.msg import Msg

RAW_ECHO = "BENCH_TOOL_SERVICE_RAW_ECHO"
"""``<servers>|<subject>``: where `Nop` answers raw echo requests (unset: nowhere)."""

REPLY = "ok"


class Nop(DynamicToolService):
    """Answers every call with ``"ok"``."""

    id = "nop"
    description = "A service that does nothing, for the benchmarks."
    tools = (
        ServedTool(
            name="nop",
            description="Does nothing.",
            arguments=[Argument(name="text", type="string", description="Ignored.")],
        ),
    )

    _raw: Client | None = None

    async def invoke(self, user: str, config: dict[str, Any], arguments: dict[str, Any]) -> Any:
        return REPLY

    async def setup(self) -> None:
        spec = os.environ.get(RAW_ECHO)
        if not spec:
            return
        import nats

        servers, _, subject = spec.partition("|")
        client = await nats.connect(servers=servers.split(","), name="bench raw echo")

        async def echo(msg: Msg) -> None:
            await msg.respond(msg.data)

        await client.subscribe(subject, cb=echo)
        await client.flush()
        self._raw = client

    async def teardown(self) -> None:
        client, self._raw = self._raw, None
        if client is not None:
            await client.close()
