"""The test helper tests/plugins/nats_server.py: a real nats-server that a
nats-py client can use, that comes back on the same port after `restart`,
and that is gone after `stop`."""

from __future__ import annotations

import asyncio
import socket
from typing import TYPE_CHECKING

import nats
import pytest

if TYPE_CHECKING:
    from tests.plugins.nats_server import NatsServer

pytest_plugins = ["tests.plugins.nats_server"]


async def _round_trip(url: str, subject: str, payload: bytes) -> bytes:
    """Publish ``payload`` on ``subject`` and return what a subscriber got."""
    client = await nats.connect(url, connect_timeout=2, allow_reconnect=False)
    try:
        sub = await client.subscribe(subject)
        await client.publish(subject, payload)
        await client.flush(timeout=2)
        message = await sub.next_msg(timeout=2)
        return message.data
    finally:
        await client.close()


def test_a_client_round_trips_a_message(nats_server: NatsServer) -> None:
    assert nats_server.running
    assert nats_server.url == f"nats://127.0.0.1:{nats_server.port}"
    assert asyncio.run(_round_trip(nats_server.url, "seamkit.ping", b"hello")) == b"hello"


def test_restart_keeps_the_port_and_stop_closes_it(nats_server: NatsServer) -> None:
    port = nats_server.port
    nats_server.restart()
    assert nats_server.port == port
    assert nats_server.running
    assert asyncio.run(_round_trip(nats_server.url, "after.restart", b"2")) == b"2"
    nats_server.stop()
    assert not nats_server.running
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    nats_server.stop()  # idempotent
