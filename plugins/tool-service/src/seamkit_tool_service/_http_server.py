"""The HTTP transport, service side: a small ASGI app around a
`DynamicToolService`. ``POST /`` takes a request envelope and answers one
JSON envelope, or ``application/x-ndjson`` (one envelope per line) when the
service streams; ``GET /healthz`` and ``GET /descriptor`` tell that it runs
and what it is.

With tokens (``--token-env``) every request but ``/healthz`` needs
``Authorization: Bearer <token>`` (401 otherwise); with client certificates
required (``--ca-certs``) the TLS handshake checks them. The caller (the
token's id, or the certificate's subject) reaches the service as
`ServiceCall.caller`."""

from __future__ import annotations

import importlib
import os
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from ._envelope import encode_reply
from ._http_auth import TOKENS_ENV, check_token, read_tokens, token_specs
from ._service import DynamicToolService, _id_of

__all__ = [
    "MAX_REQUEST_BYTES",
    "PEER_SUBJECT",
    "ServiceApp",
    "app_from_env",
    "load_service",
]

PEER_SUBJECT = "seamkit.peer_subject"
"""The scope key of the verified client certificate's subject."""
CLIENT_CERTS_ENV = "SEAMKIT_TOOL_SERVICE_CLIENT_CERTS"
MAX_REQUEST_BYTES_ENV = "SEAMKIT_TOOL_SERVICE_MAX_REQUEST_BYTES"
MAX_REQUEST_BYTES = 4 * 1024 * 1024
"""The largest request body served by default (``--max-request-bytes``)."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_JSON = [(b"content-type", b"application/json")]
_NDJSON = [(b"content-type", b"application/x-ndjson")]


def load_service(spec: str) -> DynamicToolService:
    """An instance of the `DynamicToolService` subclass ``module:Class``
    names. Raises `ValueError` saying what is wrong."""
    module_name, sep, class_name = spec.partition(":")
    if not sep or not module_name or not class_name:
        raise ValueError(f"'{spec}' is not module:Class (e.g. joke_service:JokeService)")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import {module_name!r}: {exc}") from None
    cls = getattr(module, class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, DynamicToolService)):
        raise ValueError(f"{spec} is not a subclass of seamkit_tool_service.DynamicToolService")
    return cls()


class ServiceApp:
    """The ASGI app serving one service instance."""

    def __init__(
        self,
        service: DynamicToolService,
        *,
        url: str = "",
        tokens: Mapping[str, bytes] | None = None,
        client_certs: bool = False,
        max_request_bytes: int = MAX_REQUEST_BYTES,
    ) -> None:
        self.service = service
        self.max_request_bytes = max_request_bytes
        self.url = url
        self.tokens = dict(tokens or {})
        self.client_certs = client_certs

    def _caller(self, scope: Scope) -> tuple[bool, str | None]:
        """Whether the request may pass, and who sent it: a valid bearer
        token's id, else the verified client certificate's subject."""
        subject = scope.get(PEER_SUBJECT) if self.client_certs else None
        authorization = ""
        for key, value in scope["headers"]:
            if key.lower() == b"authorization":
                authorization = value.decode("latin-1")
        if self.tokens and authorization:
            token_id = check_token(authorization, self.tokens)
            return token_id is not None, token_id
        if subject is not None:
            return True, subject
        return not self.tokens and not self.client_certs, None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await self.service.setup()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.service.teardown()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        method, path = scope["method"], scope["path"]
        if method == "GET" and path == "/healthz":
            await _answer(send, 200, b'{"status":"ok"}')
            return
        allowed, caller = self._caller(scope)
        if not allowed:
            body = await _body(receive, self.max_request_bytes) if method == "POST" else b""
            problem = "this service requires a valid 'Authorization: Bearer' token"
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [*_JSON, (b"www-authenticate", b"Bearer")],
                }
            )
            reply = encode_reply(_id_of(body or b""), error=("Unauthorized", problem))
            await send({"type": "http.response.body", "body": reply})
        elif method == "GET" and path == "/descriptor":
            descriptor = self.service.descriptor("http", url=self.url or "http://127.0.0.1/")
            await _answer(send, 200, descriptor.model_dump_json().encode())
        elif method == "POST":
            body = await _body(receive, self.max_request_bytes)
            if body is None:
                problem = f"the request is larger than {self.max_request_bytes} bytes"
                await _answer(send, 413, encode_reply("", error=("BadRequest", problem)))
                return
            headers = {
                k.decode("latin-1"): v.decode("latin-1")
                for k, v in scope["headers"]
                if k.lower() != b"authorization"
            }
            replies = self.service.replies(body, headers, caller=caller)
            first = await anext(replies)
            if first.endswith(b'"end_of_stream":true}'):  # encode_reply writes it last
                await _answer(send, 200, first)
                await replies.aclose()
                return
            await send({"type": "http.response.start", "status": 200, "headers": _NDJSON})
            await send({"type": "http.response.body", "body": first + b"\n", "more_body": True})
            async for reply in replies:
                await send({"type": "http.response.body", "body": reply + b"\n", "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        else:
            await _answer(send, 405, b'{"error":"POST a request envelope to /"}')


async def _body(receive: Receive, limit: int) -> bytes | None:
    """The request's body; None once it passes ``limit`` bytes (the rest is
    not read)."""
    body = bytearray()
    while True:
        message = await receive()
        body += message.get("body", b"")
        if len(body) > limit:
            return None
        if not message.get("more_body"):
            return bytes(body)


async def _answer(send: Send, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": _JSON})
    await send({"type": "http.response.body", "body": body})


def app_from_env() -> ServiceApp:
    """The app for ``SEAMKIT_TOOL_SERVICE`` (``module:Class``), for uvicorn's
    worker processes; its tokens are named in ``SEAMKIT_TOOL_SERVICE_TOKENS``
    (``ID=VAR,...``: the variables hold them)."""
    specs = [s for s in os.environ.get(TOKENS_ENV, "").split(",") if s]
    return ServiceApp(
        load_service(os.environ["SEAMKIT_TOOL_SERVICE"]),
        url=os.environ.get("SEAMKIT_TOOL_SERVICE_URL", ""),
        tokens=read_tokens(token_specs(specs)),
        client_certs=os.environ.get(CLIENT_CERTS_ENV) == "1",
        max_request_bytes=int(os.environ.get(MAX_REQUEST_BYTES_ENV) or MAX_REQUEST_BYTES),
    )
