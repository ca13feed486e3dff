"""The HTTP transport, client side: the request envelope is POSTed to the
service's URL; the reply is one JSON envelope, or (a stream) one envelope
per line of ``application/x-ndjson``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import httpx

from ._errors import ToolServiceError
from ._transport import Call, Dropped, Replies

__all__ = ["HttpTransport"]

_NDJSON = "application/x-ndjson"


class HttpTransport:
    """Calls services over HTTP with one pooled httpx client."""

    def __init__(self, *, max_connections: int = 100) -> None:
        self._client = httpx.AsyncClient(
            limits=httpx.Limits(
                max_connections=max_connections, max_keepalive_connections=max_connections
            ),
            headers={"content-type": "application/json"},
        )
        self.dropped = Dropped()

    async def exchange(self, call: Call) -> Replies:
        """POST the request; its replies are the response's envelopes."""
        return self._replies(call)

    async def _replies(self, call: Call) -> AsyncGenerator[bytes, None]:
        service, deadline, message_timeout = call.service, call.deadline, call.message_timeout
        url = service.url or ""
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout_at(deadline):
                request = self._client.build_request(
                    "POST",
                    url,
                    content=call.payload,
                    headers=call.headers,
                    timeout=httpx.Timeout(message_timeout, connect=min(message_timeout, 10.0)),
                )
                response = await self._client.send(request, stream=True)
                try:
                    if response.status_code >= 400:
                        body = (await response.aread())[:200].decode("utf-8", "replace")
                        raise ToolServiceError(
                            "Unavailable",
                            f"tool service '{service.id}' at {url} answered HTTP "
                            f"{response.status_code}: {body}",
                            service=service.id,
                        )
                    if response.headers.get("content-type", "").startswith(_NDJSON):
                        async for line in response.aiter_lines():
                            if line.strip():
                                yield line.encode()
                    else:
                        yield await response.aread()
                finally:
                    await response.aclose()
        except TimeoutError:
            raise call.timed_out(overall=True) from None
        except httpx.TimeoutException:
            raise call.timed_out(overall=deadline - loop.time() <= 0) from None
        except httpx.HTTPError as exc:
            raise ToolServiceError(
                "Unavailable",
                f"cannot reach tool service '{service.id}' at {url}: {type(exc).__name__}: {exc}",
                service=service.id,
                hint="start it: seamkit tool-service serve module:Class --transport http",
            ) from None

    async def aclose(self) -> None:
        """Close the pooled connections (idempotent)."""
        await self._client.aclose()
