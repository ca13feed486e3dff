"""uvicorn's h11 protocol that hands the app the subject of the client
certificate the TLS handshake verified (uvicorn gives the app no
certificate of its own accord). Used when ``--ca-certs`` requires one."""

from __future__ import annotations

from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from ._http_auth import peer_subject
from ._http_server import PEER_SUBJECT

__all__ = ["PeerCertH11Protocol"]


class PeerCertH11Protocol(H11Protocol):
    """Puts the client certificate's subject in each request's scope."""

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        subject = peer_subject(transport.get_extra_info("peercert"))
        if subject is not None:
            app = self.app

            async def with_subject(scope: Any, receive: Any, send: Any) -> None:
                scope[PEER_SUBJECT] = subject
                await app(scope, receive, send)

            self.app = with_subject
