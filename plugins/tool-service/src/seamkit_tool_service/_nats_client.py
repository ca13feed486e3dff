"""The NATS transport, client side: one connection per server list (and
credentials), one wildcard inbox subscription on it, each call's replies
routed by the reply subject's last token (a random token of that call alone,
not its id) and checked against the envelope's id.

nats-py is imported when the first call connects, so an agent without NATS
services never loads it. A request nobody listens for fails at once (NATS's
no-responders status), not at the time-out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from seamkit import redact
from seamkit.plugins import secret_texts

from ._errors import ToolServiceError
from ._http_auth import mask_urls
from ._transport import NO_RESPONDERS, OVERFLOW, Call, Dropped, Inbox, Replies, too_much

if TYPE_CHECKING:
    import ssl

    from nats.aio.client import Client
    from nats.aio.msg import Msg

    from ._config import NatsAuth, NatsTls

__all__ = ["FAILURE_MEMORY_SECONDS", "NatsTransport", "connect"]

log = logging.getLogger("seamkit_tool_service")

FAILURE_MEMORY_SECONDS = 1.0
"""How long a failed attempt to connect answers for the calls that come
after it (then the next call tries again)."""


def _again(error: ToolServiceError) -> ToolServiceError:
    """A fresh copy of a shared error (one raise per waiter, no shared traceback)."""
    return ToolServiceError(error.error_type, error.message, service=error.service, hint=error.hint)


def _auth_options(auth: NatsAuth | None) -> dict[str, Any]:
    """nats-py's connect options for ``auth`` (the secrets revealed here only)."""
    if auth is None:
        return {}
    if auth.token is not None:
        return {"token": auth.token.get_secret_value()}
    if auth.user is not None and auth.password is not None:
        return {"user": auth.user, "password": auth.password.get_secret_value()}
    if auth.nkey_seed is not None:
        return {"nkeys_seed_str": auth.nkey_seed.get_secret_value()}
    if auth.creds_file is not None:
        return {"user_credentials": auth.creds_file}
    return {}


def _tls_context(tls: NatsTls) -> ssl.SSLContext:
    """A client TLS context: the system's CAs or ``ca_file``, and the client
    certificate when one is given."""
    import ssl  # lazy: only services with TLS need it

    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=tls.ca_file)
    if tls.cert_file is not None:
        context.load_cert_chain(tls.cert_file, tls.key_file)
    return context


def _reason(exc: BaseException) -> str:
    """What went wrong, as the server or nats-py said it (``authorization
    violation`` in lower case, as the server sends it)."""
    text = str(exc) or type(exc).__name__
    if "authorization violation" in text.lower():
        return f"{type(exc).__name__}: authorization violation"
    return f"{type(exc).__name__}: {text}"


def _fatal(exc: BaseException) -> bool:
    """A connection error trying again cannot mend (a TLS handshake that
    failed: nats-py would never return from it)."""
    import ssl  # lazy: only a failed connection needs it

    return isinstance(exc, ssl.SSLError)


async def _connect_unless_refused(
    client: Client, servers: Sequence[str], options: dict[str, Any], refused: asyncio.Event
) -> None:
    """``client.connect``, given up as soon as ``refused`` is set."""
    connecting = asyncio.ensure_future(client.connect(servers=list(servers), **options))
    stopped = asyncio.ensure_future(refused.wait())
    try:
        await asyncio.wait([connecting, stopped], return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
        if not connecting.done():  # refused, or this call was cancelled
            connecting.cancel()
            await asyncio.wait([connecting])
    if connecting.cancelled():
        raise ConnectionError("the TLS handshake failed")
    connecting.result()


async def connect(
    servers: Sequence[str],
    *,
    name: str,
    auth: NatsAuth | None = None,
    tls: NatsTls | None = None,
) -> Client:
    """A nats-py client on ``servers`` that keeps reconnecting, with the
    credentials of ``auth`` and the TLS of ``tls``; raises `ToolServiceError`
    (``Unavailable``, with the server's reason and no credential) when none
    can be reached or the server refuses it."""
    try:
        from nats.aio.client import Client as NatsClient  # lazy: an optional extra, NATS only
    except ImportError:
        raise ToolServiceError(
            "Unavailable",
            "NATS transport needs nats-py",
            hint="pip install 'seamkit-tool-service[nats]'",
        ) from None

    # what the server said while first connecting: reported in the one
    # error that attempt raises, not logged (None once connected)
    connecting: list[Exception] | None = []

    async def on_error(exc: Exception) -> None:
        if connecting is not None:
            if len(connecting) < 8:
                connecting.append(exc)
            if _fatal(exc):
                refused.set()
            log.debug("NATS (%s): connecting: %s: %s", name, type(exc).__name__, exc)
            return
        log.warning("NATS (%s): %s: %s", name, type(exc).__name__, exc)

    async def on_disconnect() -> None:
        log.info("NATS (%s): disconnected, reconnecting", name)

    options: dict[str, Any] = {  # nats-py's stub wants an int wait, a float works
        "name": name,
        "connect_timeout": 2,
        "reconnect_time_wait": 0.25,
        # nats-py applies this to the first connect too, where -1 would
        # retry forever: give up after two tries per server there ...
        "max_reconnect_attempts": 1,
        "allow_reconnect": True,
        "error_cb": on_error,
        "disconnected_cb": on_disconnect,
    }
    hidden = secret_texts(auth)
    refused = asyncio.Event()
    client = NatsClient()
    try:
        options.update(_auth_options(auth))
        if tls is not None:
            options.update(tls=_tls_context(tls), tls_handshake_first=tls.handshake_first)
        await _connect_unless_refused(client, servers, options, refused)
    except Exception as exc:
        with contextlib.suppress(Exception):
            await client.close()
        # nats-py ends with "no servers available"; the server's own reason
        # (an authorization violation) came to the error callback before it
        seen = connecting or []
        said = [e for e in seen if "authorization" in str(e).lower()]
        reason = _reason(said[0] if said else seen[-1] if seen else exc)
        denied = "authorization violation" in reason
        raise ToolServiceError(
            "Unavailable",
            mask_urls(redact(f"cannot reach NATS at {', '.join(servers)}: {reason}", hidden)),
            hint="check the credentials (auth) of the tool service"
            if denied
            else "start nats-server, or fix the servers (and tls) of the tool service",
        ) from None
    except BaseException:  # called off midway: nats-py would leave its socket open
        await client.close()
        raise
    client.options["max_reconnect_attempts"] = -1  # ... and, once connected, reconnect forever
    connecting = None
    return client


class NatsTransport:
    """Calls services on one NATS server list.

    The connection is opened by the first call that needs it; calls that
    come meanwhile wait for that one attempt (each no longer than its own
    deadline), and a failed attempt is remembered for
    `FAILURE_MEMORY_SECONDS`, so a burst of calls with the server down
    fails together, at once."""

    def __init__(
        self,
        servers: Sequence[str],
        *,
        name: str = "seamkit-agent",
        auth: NatsAuth | None = None,
        tls: NatsTls | None = None,
    ) -> None:
        self._servers = tuple(servers)
        self._name = name
        self._auth = auth
        self._tls = tls
        self._calls: dict[str, str] = {}
        self._client: Client | None = None
        self._connecting: asyncio.Task[tuple[Client, str]] | None = None
        self._failure: tuple[float, ToolServiceError] | None = None
        self._prefix = ""
        self._inboxes: dict[str, Inbox] = {}
        self.dropped = Dropped()

    async def _connected(self) -> tuple[Client, str]:
        """The connection and its inbox prefix, connecting when there is none.
        Raises `ToolServiceError` (``Unavailable``) when it cannot connect."""
        client = self._client
        if client is not None and not client.is_closed:
            return client, self._prefix
        loop = asyncio.get_running_loop()
        failure = self._failure
        if failure is not None and loop.time() < failure[0]:
            raise _again(failure[1])
        attempt = self._connecting
        if attempt is None:
            attempt = self._connecting = loop.create_task(self._connect())
            attempt.add_done_callback(self._attempted)
        try:
            # shielded: a waiter that gives up (its deadline) leaves the
            # attempt to the others
            return await asyncio.shield(attempt)
        except ToolServiceError as exc:
            raise _again(exc) from None
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if attempt.cancelled() and (task is None or not task.cancelling()):
                # the attempt was called off (aclose), this waiter was not
                raise ToolServiceError(
                    "Unavailable", f"the NATS connection to {', '.join(self._servers)} was closed"
                ) from None
            raise

    async def _connect(self) -> tuple[Client, str]:
        """One attempt to connect (a task its waiters share)."""
        loop = asyncio.get_running_loop()
        try:
            client = await connect(self._servers, name=self._name, auth=self._auth, tls=self._tls)
        except ToolServiceError as exc:
            self._failure = (loop.time() + FAILURE_MEMORY_SECONDS, exc)
            raise
        prefix = f"_INBOX.{secrets.token_hex(8)}"
        try:
            self._prefix = prefix
            await client.subscribe(prefix + ".*", cb=self._on_reply)
        except Exception as exc:
            await client.close()
            error = ToolServiceError(
                "Unavailable",
                f"cannot subscribe on NATS at {', '.join(self._servers)}: "
                f"{type(exc).__name__}: {exc}",
            )
            self._failure = (loop.time() + FAILURE_MEMORY_SECONDS, error)
            raise error from None
        except BaseException:
            await client.close()
            raise
        self._client, self._failure = client, None
        return client, prefix

    def _attempted(self, attempt: asyncio.Task[tuple[Client, str]]) -> None:
        if self._connecting is attempt:
            self._connecting = None
        if not attempt.cancelled():
            attempt.exception()  # retrieved: its waiters may all have given up

    async def _on_reply(self, msg: Msg) -> None:
        token = msg.subject[len(self._prefix) + 1 :]
        inbox = self._inboxes.get(token)
        if inbox is None:
            self.dropped.unmatched(token)
            return
        headers = msg.headers
        if headers and headers.get("Status") == "503" and not msg.data:
            inbox.put(NO_RESPONDERS)
        else:
            inbox.put(msg.data)

    async def exchange(self, call: Call) -> Replies:
        """Publish the request with the call's own reply subject; its replies
        come to that subject."""
        client, prefix = self._client, self._prefix
        if client is None or client.is_closed:
            try:
                async with asyncio.timeout_at(call.deadline):
                    client, prefix = await self._connected()
            except TimeoutError:
                raise call.timed_out(overall=True) from None
        # a reply subject of its own, random, unrelated to the call's id or
        # to any other call's subject: no one who saw one can make another
        token = secrets.token_hex(16)
        inbox = self._inboxes[token] = Inbox(call.service.max_reply_bytes)
        self._calls[call.call_id] = token
        headers = dict(call.headers) if call.headers else None
        try:
            reply = f"{prefix}.{token}"
            await client.publish(
                call.service.subject or "", call.payload, reply=reply, headers=headers
            )
        except BaseException:
            self.release(call.call_id)
            raise
        return _NatsReplies(self, call, inbox)

    def release(self, call_id: str) -> None:
        """Stop routing replies to ``call_id`` (those still waiting count as
        duplicates)."""
        # replies that came after the last one the caller took (a worker
        # answering twice at once) are duplicates too
        token = self._calls.pop(call_id, None)
        inbox = None if token is None else self._inboxes.pop(token, None)
        if token is not None and inbox is not None:
            # and those dropped past max_reply_bytes (not the OVERFLOW in their place)
            waiting = len(inbox) - (1 if inbox.overflowed and len(inbox) else 0)
            self.dropped.duplicate += waiting + inbox.overflowed
            self.dropped.ended(token)

    async def gather(self, subject: str, *, wait: float, quiet: float) -> list[bytes]:
        """Every reply to one request on ``subject`` (a scatter-gather such as
        ``$SRV.INFO``): collected for up to ``wait`` seconds, ending early
        once ``quiet`` seconds pass without one (connecting counts in ``wait``)."""
        loop = asyncio.get_running_loop()
        end = loop.time() + wait
        try:
            async with asyncio.timeout_at(end):
                client, _ = await self._connected()
        except TimeoutError:
            raise ToolServiceError(
                "Unavailable",
                f"could not connect to NATS at {', '.join(self._servers)} within {wait:g}s",
            ) from None
        inbox = client.new_inbox()
        subscription = await client.subscribe(inbox)
        out: list[bytes] = []
        try:
            await client.publish(subject, b"", reply=inbox)
            while (left := end - loop.time()) > 0:
                try:
                    msg = await subscription.next_msg(timeout=min(left, quiet if out else left))
                except TimeoutError:
                    break
                if msg.data:
                    out.append(msg.data)
        finally:
            await subscription.unsubscribe()
        return out

    async def aclose(self) -> None:
        """Close the connection, calling off an attempt to connect (idempotent)."""
        attempt, self._connecting = self._connecting, None
        if attempt is not None and not attempt.done():
            attempt.cancel()
            await asyncio.wait([attempt])
        client, self._client = self._client, None
        if client is not None and not client.is_closed:
            await client.close()


class _NatsReplies:
    """The replies of one NATS call, as they come to its inbox."""

    __slots__ = ("_call", "_closed", "_inbox", "_transport")

    def __init__(self, transport: NatsTransport, call: Call, inbox: Inbox) -> None:
        self._transport = transport
        self._call = call
        self._inbox = inbox
        self._closed = False

    def __aiter__(self) -> _NatsReplies:
        return self

    async def __anext__(self) -> bytes:
        call = self._call
        if self._closed:
            raise StopAsyncIteration
        remaining = call.deadline - asyncio.get_running_loop().time()
        wait = min(call.message_timeout, remaining)
        if wait <= 0:
            raise call.timed_out(overall=True)
        try:
            data = await self._inbox.get(wait)
        except TimeoutError:
            raise call.timed_out(overall=remaining <= call.message_timeout) from None
        if data is OVERFLOW:
            await self.aclose()  # what comes after it is dropped as this call's duplicates
            service = call.service
            raise too_much(service, "max_reply_bytes", service.max_reply_bytes)
        if data is NO_RESPONDERS:
            service, subject = call.service, call.service.subject
            raise ToolServiceError(
                "Unavailable",
                f"no worker of tool service '{service.id}' listens on subject '{subject}'",
                service=service.id,
                hint="start one: seamkit tool-service serve module:Class "
                f"--transport nats --subject {subject}",
            )
        return data

    async def aclose(self) -> None:
        """Stop listening for the call's replies (idempotent)."""
        if not self._closed:
            self._closed = True
            self._transport.release(self._call.call_id)
