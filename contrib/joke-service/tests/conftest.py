"""The fixtures of the joke service's tests (helpers: `joke_service_helpers`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from joke_service_helpers import NatsServer


@pytest.fixture
def nats_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    """A running nats-server on 127.0.0.1 and a free port, stopped after the
    test (whether it passed or not); its log in a temporary directory."""
    log_dir: Path = tmp_path_factory.mktemp("nats")
    with NatsServer.start(log_dir) as server:
        yield server
