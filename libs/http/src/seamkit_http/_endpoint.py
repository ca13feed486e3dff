"""`Endpoint`: one URL a model provider POSTs JSON to, on one pooled httpx
transport per event loop (`Connections`), retried as the official clients
retry, never following a redirect, and failing with a `seamkit.ModelError`
that shows no secret."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Protocol

import seamkit
from seamkit.plugins import retry_status, retry_wait

if TYPE_CHECKING:
    import httpx

    from ._settings import ConnectionSettings

__all__ = ["Connections", "Endpoint", "Failure", "RetryRule", "proxy_for"]

_ON_THE_WIRE = functools.partial(seamkit.secret_json, reveal=True)
"""What ``json`` cannot write: a `Secret` goes on the wire as its value."""


class Connections:
    """One event loop's pooled connections to an endpoint's server: an
    httpx transport (httpx's connection pool, without its client's cookie
    jar, auth and redirect layers, which a provider never uses: about a
    tenth of a streamed turn's CPU), whether it is closed, and what every
    request to the server carries, made once: its ``url``, ``headers`` and
    ``timeout``."""

    def __init__(
        self,
        transport: httpx.AsyncHTTPTransport,
        *,
        url: httpx.URL,
        headers: httpx.Headers,
        timeout: dict[str, float | None],
    ) -> None:
        self.transport = transport
        self.url = url
        self.headers = headers
        self.timeout = timeout
        self.is_closed = False

    def request(self, content: bytes) -> httpx.Request:
        """A POST of ``content``."""
        import httpx  # lazy: loaded with the connections

        return httpx.Request(
            "POST",
            self.url,
            content=content,
            headers=self.headers,
            extensions={"timeout": self.timeout},
        )

    async def aclose(self) -> None:
        """Close the connections (again is a no-op)."""
        if not self.is_closed:
            self.is_closed = True
            await self.transport.aclose()


async def _closing(connections: Connections) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        await connections.aclose()


def _close_at_shutdown(connections: Connections) -> AsyncGenerator[None, None]:
    """An async generator, started on the running loop and paused, that
    closes ``connections`` when it is finalized: the loop's
    ``shutdown_asyncgens`` (which ``asyncio.run`` calls before closing the
    loop) closes them there, on the loop they belong to. The caller keeps it
    (the loop holds it only weakly)."""
    closer = _closing(connections)
    step = closer.__anext__()  # registers it with the running loop
    with contextlib.suppress(StopIteration):
        step.send(None)  # runs to its yield, no await on the way
    return closer


def _basic_auth(user: str, password: str) -> str:
    """The ``authorization`` header for a URL's ``user`` and ``password``
    (a base URL such as ``https://ann:PASSWORD@llm.corp/``)."""
    import base64  # lazy: only a URL with a user in it needs it

    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def _exempt(host: str, port: int | None, no_proxy: str) -> bool:
    """Whether ``NO_PROXY`` (comma-separated; ``*`` for every host; an entry
    names a host and the domains under it, with or without a leading dot,
    and with ``:PORT`` only that port there) exempts ``host`` at ``port``."""
    host = host.lower()
    for entry in no_proxy.split(","):
        name = entry.strip().lower()
        head, colon, tail = name.rpartition(":")
        if colon and tail.isdigit() and (":" not in head or head.endswith("]")):
            if int(tail) != port:
                continue
            name = head  # "host:port" or "[v6]:port"; a bare IPv6 address has no port
        name = name.strip("[]").lstrip(".")
        if name == "*" or (name and (host == name or host.endswith(f".{name}"))):
            return True
    return False


_PORTS = {"http": 80, "https": 443}


def proxy_for(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``HTTPS_PROXY`` or
    ``HTTP_PROXY`` by its scheme, else ``ALL_PROXY``, in either case; with
    none of them set, the system's proxy settings on macOS and Windows),
    unless ``NO_PROXY`` exempts its host: what an httpx client that trusts
    the environment uses (``urllib.request.getproxies``, as httpx reads it)."""
    import urllib.parse  # lazy: read when connections are first made
    import urllib.request  # lazy: likewise

    parts = urllib.parse.urlsplit(url)
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if not proxy:
        return None
    port = parts.port or _PORTS.get(parts.scheme)
    if _exempt(parts.hostname or "", port, proxies.get("no", "")):
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


class Failure(Protocol):
    """The provider's error for a final failed answer: its ``status``, its
    ``body`` (empty when it could not be read) and how many ``attempts``
    were made (its ``failure`` function with the rest bound, say)."""

    def __call__(self, status: int, body: bytes, *, attempts: int) -> seamkit.ModelError: ...


RetryRule = Callable[[int, Mapping[str, str], bytes], bool]
"""Whether a failed answer (status, headers, body) is worth asking again."""


def _by_status(status: int, headers: Mapping[str, str], body: bytes) -> bool:
    """The official clients' rule, `seamkit.plugins.retry_status`."""
    return retry_status(status, headers)


class Endpoint:
    """Where a provider's requests go: ``url``, with ``headers`` on every
    request (then ``more_headers``, a config's own: names lower-cased, a
    `Secret` sent as its value, winning over ``headers``) and ``settings``
    for time-outs, connections and retries.

    ``where`` names the provider and its base URL in errors and logs
    (``"openai provider at https://..."``), ``provider`` is the provider's
    name for `seamkit.ModelError`, ``secrets`` are masked in every error and
    log line, ``log`` is the provider's logger (a warning per retry),
    ``failure`` makes the error for a final failed answer, ``should_retry``
    judges a failed answer (default: `seamkit.plugins.retry_status`), and
    ``hint`` is the error's hint when the server cannot be reached.

    Requests go straight to httpx's transport, as an httpx client would send
    them less what a provider never needs: no redirect is followed, no cookie
    is kept or sent back; a user and password in ``url`` go as Basic auth
    (winning over an ``authorization`` header, as in an httpx client), the
    environment's proxy (`proxy_for`) and ``SSL_CERT_FILE``/``SSL_CERT_DIR``
    are honoured, and ``accept-encoding`` offers gzip and deflate.
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str],
        more_headers: Mapping[str, str | seamkit.Secret[str]] | None = None,
        settings: ConnectionSettings,
        where: str,
        provider: str,
        secrets: Sequence[str],
        log: logging.Logger,
        failure: Failure,
        should_retry: RetryRule = _by_status,
        hint: str = "check base_url and that the server is running",
    ) -> None:
        self.url = url
        self.where = where
        self._headers = {"accept-encoding": "gzip, deflate", **headers}  # as httpx's client
        for name, value in (more_headers or {}).items():
            plain = value.get_secret_value() if isinstance(value, seamkit.Secret) else value
            self._headers[name.lower()] = plain
        self._settings = settings
        self._provider = provider
        self._secrets = tuple(secrets)
        self._log = log
        self._failure = failure
        self._should_retry = should_retry
        self._hint = hint
        self._tls = not url.startswith("http://")
        self._connections: Connections | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closer: AsyncGenerator[None, None] | None = None

    def connections(self) -> Connections:
        """The pooled connections of the running event loop (new ones when
        the loop changed: a connection belongs to one loop).

        They are closed on their own loop: when that loop shuts down
        (``asyncio.run`` ending, or any runner that finalizes async
        generators), and, when the loop changes while the old one still runs
        in another thread, there and then. Only a loop closed without
        finalizing its async generators leaves the old sockets to the
        garbage collector."""
        import httpx  # lazy: httpx loads when a provider first asks

        loop = asyncio.get_running_loop()
        if self._connections is None or self._loop is not loop:
            old, old_loop = self._connections, self._loop
            if (
                old is not None
                and old_loop is not None
                and not old.is_closed
                and old_loop.is_running()
                and not old_loop.is_closed()
            ):  # the old loop runs in another thread: close them there
                asyncio.run_coroutine_threadsafe(old.aclose(), old_loop)
            settings = self._settings
            transport = httpx.AsyncHTTPTransport(
                limits=httpx.Limits(
                    max_connections=settings.max_connections,
                    max_keepalive_connections=min(100, settings.max_connections),
                ),
                # A plain-HTTP server (a local Ollama, vLLM or LiteLLM proxy)
                # needs no TLS: no certificate store to load (about 0.1 s).
                verify=self._tls,
                proxy=proxy_for(self.url),
            )
            timeout = httpx.Timeout(
                settings.timeout_seconds,
                connect=settings.connect_timeout_seconds,
                pool=settings.timeout_seconds,
            )
            url = httpx.URL(self.url)
            headers = httpx.Headers(self._headers)
            if url.username or url.password:  # Basic auth, as an httpx client sends it
                headers["authorization"] = _basic_auth(url.username, url.password)
            self._connections = Connections(
                transport, url=url, headers=headers, timeout=timeout.as_dict()
            )
            self._loop = loop
            self._closer = _close_at_shutdown(self._connections)
        return self._connections

    async def aclose(self) -> None:
        """Close the pooled connections."""
        if self._connections is not None:
            connections, self._connections = self._connections, None
            await connections.aclose()

    @asynccontextmanager
    async def post(self, body: Mapping[str, object]) -> AsyncIterator[httpx.Response]:
        """The server's 2xx answer to ``body`` (a `Secret` in it goes on the
        wire as its value), its body not yet read, closed when the block
        ends; retried as the rule says, else a `seamkit.ModelError`."""
        import httpx  # lazy: loaded with the client

        connections = self.connections()
        content = json.dumps(body, default=_ON_THE_WIRE).encode()
        retries = self._settings.max_retries
        attempt = 0
        while True:
            attempt += 1
            request = connections.request(content)
            try:
                response = await connections.transport.handle_async_request(request)
                response.request = request
            except httpx.TransportError as exc:
                if attempt <= retries:
                    await self._pause(attempt, None, f"{type(exc).__name__}: {exc}")
                    continue
                raise self._unreachable(exc, attempt) from None
            if response.is_redirect:
                await response.aclose()
                raise self._redirected(response)
            if response.is_success:
                try:
                    yield response
                finally:
                    await response.aclose()
                return
            try:
                raw = await response.aread()
            except httpx.RequestError:  # cut, or a body that does not decode
                raw = b""
            finally:
                await response.aclose()
            status = response.status_code
            if attempt <= retries and self._should_retry(status, response.headers, raw):
                await self._pause(attempt, response, f"HTTP {status}")
                continue
            raise self._failure(status, raw, attempts=attempt)

    async def _pause(self, attempt: int, response: httpx.Response | None, why: str) -> None:
        wait = retry_wait(attempt - 1, response.headers if response is not None else {})
        self._log.warning(
            "%s: %s; retry %d of %d in %.2fs",
            self.where,
            seamkit.redact(why, self._secrets),
            attempt,
            self._settings.max_retries,
            wait,
        )
        await asyncio.sleep(wait)

    def _redirected(self, response: httpx.Response) -> seamkit.ModelError:
        """The error for a redirect, which is never followed: the key and the
        prompt stay with the server the config names."""
        location = response.headers.get("location", "")
        target = location.split("?", 1)[0].split("#", 1)[0] or "(no location)"
        return seamkit.ModelError(
            seamkit.redact(
                f"{self.where} answered {response.status_code}, a redirect to {target[:200]}; "
                f"the {self._provider} provider does not follow redirects (the API key and "
                "the prompt would go on to it)",
                self._secrets,
            ),
            provider=self._provider,
            hint="set base_url to the server that answers, if you trust it",
        )

    def _unreachable(self, exc: Exception, attempts: int) -> seamkit.ModelError:
        import httpx  # lazy: loaded with the client

        tries = f" after {attempts} attempts" if attempts > 1 else ""
        if isinstance(exc, httpx.ConnectTimeout):
            said = f"no connection within {self._settings.connect_timeout_seconds:g}s"
        elif isinstance(exc, httpx.TimeoutException):
            said = f"no answer within {self._settings.timeout_seconds:g}s"
        else:
            said = f"{type(exc).__name__}: {exc}"
        return seamkit.ModelError(
            seamkit.redact(f"cannot reach {self.where}{tries}: {said}", self._secrets),
            provider=self._provider,
            hint=self._hint,
        )
