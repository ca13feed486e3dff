"""The HTTP transport, client side: the request envelope is POSTed to the
service's URL; the reply is one JSON envelope, or (a stream) one envelope
per line of ``application/x-ndjson``."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncGenerator, Generator

import httpx

from ._config import HttpTls, ServiceDescriptor
from ._envelope import decode_reply
from ._errors import EnvelopeError, ToolServiceError
from ._http_auth import mask_urls
from ._transport import Call, Dropped, Replies, too_much

__all__ = ["HttpTransport"]

_NDJSON = "application/x-ndjson"


class HttpTransport:
    """Calls services over HTTP with one pooled httpx client."""

    def __init__(self, *, max_connections: int = 100) -> None:
        self._max_connections = max_connections
        self._client = self._make_client(True)
        self._clients: dict[HttpTls, httpx.AsyncClient] = {}
        """A pool per TLS setting other than the default (a client certificate)."""
        self.dropped = Dropped()

    def _make_client(self, verify: ssl.SSLContext | bool) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            limits=httpx.Limits(
                max_connections=self._max_connections,
                max_keepalive_connections=self._max_connections,
            ),
            headers={"content-type": "application/json"},
            verify=verify,
        )

    def _client_for(self, service: ServiceDescriptor) -> httpx.AsyncClient:
        """The pool that reaches ``service`` with its TLS settings."""
        tls = service.tls
        if not isinstance(tls, HttpTls) or tls == HttpTls():
            return self._client
        found = self._clients.get(tls)
        if found is None:
            found = self._clients[tls] = self._make_client(_ssl_context(tls))
        return found

    async def exchange(self, call: Call) -> Replies:
        """POST the request; its replies are the response's envelopes."""
        return self._replies(call)

    async def _replies(self, call: Call) -> AsyncGenerator[bytes, None]:
        service, deadline, message_timeout = call.service, call.deadline, call.message_timeout
        url, shown = service.url_text, service.shown_url
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout_at(deadline):
                client = self._client_for(service)
                headers = service.http_headers()
                request = client.build_request(
                    "POST",
                    url,
                    content=call.payload,
                    headers={**call.headers, **headers},
                    timeout=httpx.Timeout(message_timeout, connect=min(message_timeout, 10.0)),
                )
                # an Authorization the descriptor gives wins over the URL's userinfo
                given = any(k.lower() == "authorization" for k in headers)
                response = await client.send(
                    request, stream=True, auth=_AS_GIVEN if given else httpx.USE_CLIENT_DEFAULT
                )
                try:
                    if response.status_code >= 400:
                        body = _problem(await _start(response, 500))
                        refused = response.status_code in (401, 403)
                        raise ToolServiceError(
                            "Unauthorized" if refused else "Unavailable",
                            f"tool service '{service.id}' at {shown} answered HTTP "
                            f"{response.status_code}"
                            f"{' (unauthorized)' if refused else ''}: {mask_urls(body)}",
                            service=service.id,
                            hint="check the service's auth (bearer token) and tls settings"
                            if refused
                            else None,
                        )
                    lines = response.headers.get("content-type", "").startswith(_NDJSON)
                    async for message in _bounded(response, service, lines=lines):
                        yield message
                finally:
                    await response.aclose()
        except TimeoutError:
            raise call.timed_out(overall=True) from None
        except httpx.TimeoutException:
            raise call.timed_out(overall=deadline - loop.time() <= 0) from None
        except (httpx.HTTPError, ssl.SSLError, OSError) as exc:
            raise ToolServiceError(
                "Unavailable",
                f"cannot reach tool service '{service.id}' at {shown}: {type(exc).__name__}: "
                f"{mask_urls(str(exc))}",
                service=service.id,
                hint="start it: seamkit tool-service serve module:Class --transport http",
            ) from None

    async def aclose(self) -> None:
        """Close the pooled connections (idempotent)."""
        for client in (self._client, *self._clients.values()):
            await client.aclose()


async def _start(response: httpx.Response, size: int) -> bytes:
    """The first ``size`` bytes of the body (the rest is not read)."""
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) >= size:
            break
    return bytes(body[:size])


async def _bounded(
    response: httpx.Response, service: ServiceDescriptor, *, lines: bool
) -> AsyncGenerator[bytes, None]:
    """The body's messages, each line of it (``lines``) or the whole body;
    raises `ToolServiceError` (``BadReply``) as soon as the body passes the
    service's ``max_reply_bytes``: no more of it is read than that and one
    chunk."""
    limit = service.max_reply_bytes
    received = 0
    pending = bytearray()
    async for chunk in response.aiter_bytes():
        received += len(chunk)
        if received > limit:
            del pending[:]
            raise too_much(service, "max_reply_bytes", limit)
        pending += chunk
        if lines and b"\n" in chunk:
            *complete, rest = bytes(pending).split(b"\n")
            pending[:] = rest
            for line in complete:
                if line.strip():
                    yield line
    if not lines or pending.strip():
        yield bytes(pending)


class _AsGiven(httpx.Auth):
    """Send the request with the Authorization header it has."""

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        yield request


_AS_GIVEN = _AsGiven()


def _problem(body: bytes) -> str:
    """What an error response says: the message of its error envelope, else
    the start of its body."""
    try:
        reply = decode_reply(body)
    except EnvelopeError:
        reply = None
    if reply is not None and reply.error is not None:
        return f"{reply.error[0]}: {reply.error[1]}"[:200]
    return body[:200].decode("utf-8", "replace")


def _ssl_context(tls: HttpTls) -> ssl.SSLContext:
    """The TLS context of ``tls`` (its files already resolved). Raises
    `ToolServiceError` for a file that cannot be read."""
    try:
        context = ssl.create_default_context(cafile=tls.ca_file)
        if not tls.verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if tls.cert_file:
            context.load_cert_chain(tls.cert_file, tls.key_file)
    except (OSError, ssl.SSLError) as exc:
        raise ToolServiceError(
            "Unavailable",
            f"cannot load the TLS files of a tool service: {type(exc).__name__}: {exc}",
            hint="check tls.ca_file, tls.cert_file and tls.key_file (relative to the manifest)",
        ) from None
    return context
