"""The header read time-out: uvicorn's HTTP/1.1 protocol (h11) with a
deadline for a request's head, so that a client sending its headers a byte
at a time (slowloris) cannot hold a connection open.

uvicorn times out only an idle keep-alive connection (and a byte of data
stops even that), and has no header time-out. `HeaderDeadline` starts a
timer when a connection opens, and when a new request's first bytes arrive
on it; the timer is stopped once the request's headers are complete; when
it fires first, the connection is closed (nothing can be answered to a
request whose head never came). ``seamkit serve`` runs it as uvicorn's
``http`` protocol in each worker, with the deadline in
``SEAMKIT_SERVE_HEADER_TIMEOUT`` (seconds; ``serve.header_timeout_seconds``).
The body's deadline is the app's (``serve.body_timeout_seconds``): a 408.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["HEADER_TIMEOUT_ENV", "HeaderDeadline"]

HEADER_TIMEOUT_ENV = "SEAMKIT_SERVE_HEADER_TIMEOUT"
"""The environment variable that gives each worker the header deadline."""

_DEFAULT_SECONDS = 10.0


class HeaderDeadline(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request head does
    not arrive within the header deadline."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_seconds = float(os.environ.get(HEADER_TIMEOUT_ENV) or _DEFAULT_SECONDS)
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE:  # a request's head is (still) coming
            self._arm()
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:  # its headers are complete
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(self._head_seconds, self._expired)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _expired(self) -> None:
        self._head_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()
