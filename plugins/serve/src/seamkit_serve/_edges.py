"""What every request and answer of the server share at the HTTP layer: a
path with a trailing slash is the same route as without one (no 307 a
client would have to follow), and an answer to a request that names a
session in ``X-Seamkit-Session`` names it back, whatever the answer is.
"""

from __future__ import annotations

import re

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["SESSION_HEADER", "Edges"]

SESSION_HEADER = "x-seamkit-session"
"""The header that names a server-side session, in a request and an answer."""

SESSION_NAME = re.compile(r"[A-Za-z0-9._:@-]{1,128}")
"""What a session's name may be."""


class Edges:
    """ASGI middleware: trailing slashes dropped, the session echoed."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if len(path) > 1 and path.endswith("/"):
            trimmed = path.rstrip("/") or "/"
            raw = scope.get("raw_path")
            scope = {**scope, "path": trimmed}
            if isinstance(raw, bytes):
                scope["raw_path"] = raw.rstrip(b"/") or b"/"
        named = Headers(scope=scope).get(SESSION_HEADER)
        if named is None or not SESSION_NAME.fullmatch(named):
            await self.app(scope, receive, send)
            return

        async def echoing(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                if SESSION_HEADER not in headers:
                    headers[SESSION_HEADER] = named
            await send(message)

        await self.app(scope, receive, echoing)
