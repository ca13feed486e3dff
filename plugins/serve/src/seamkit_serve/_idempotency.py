"""``Idempotency-Key``: a request repeated with the same key gets the first
answer again, and the app runs once.

A keyed request's record lives in the server's session store, as the state
of the session ``<api_key_id>/idem/<sha256(key)[:32]>`` (a key is its API
key's: another API key's same ``Idempotency-Key`` is its own; the ``/``
keeps it apart from every session a client can name), so every worker of
the server finds it. The request that runs holds the store's lock
on that name from before its run until its answer is recorded; a repeat
waits for the lock, then replays what was recorded. A repeat whose path,
``X-Seamkit-Session`` or body differ from the first's is a 409
``idempotency_key_reused``.

The keyed run goes on in a task of its own: a client that disconnects does
not cancel it, and its answer is recorded for the retry. A streamed answer
is recorded as the SSE bytes the client got (and a replay sends those
bytes); a whole one as its status, headers and body. Only answers of a run
are recorded (a 200, or an answer carrying ``X-Seamkit-Outcome``): a request
refused before it ran (a 4xx, a busy session) is not, so its retry is
checked again. Records older than ``serve.idempotency_seconds`` are ignored
and overwritten, and each worker deletes expired ones now and then (at most
hourly). Recorded answers are never logged.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import seamkit
from starlette.responses import Response, StreamingResponse

from ._background import Background
from ._error import ApiError

__all__ = ["IDEMPOTENCY_HEADER", "REPLAYED_HEADER", "Idempotency", "fingerprint"]

log = logging.getLogger("seamkit.serve")

IDEMPOTENCY_HEADER = "idempotency-key"
"""The request header that names a request's idempotency key."""

REPLAYED_HEADER = "idempotent-replayed"
"""The header of an answer replayed from a record: ``true``."""

_STATE_KEY = "idempotency"
"""The key of the record in its session's state."""

_WAIT_SECONDS = 900.0
"""How long a repeat waits for the first request's run before it is a 409."""

_SWEEP_SECONDS = 3600.0
"""How often (at most) a worker deletes expired records: after recording an
answer, once this long (or ``idempotency_seconds``, when shorter) passed
since its last sweep."""

_MAX_KEY = 255
"""The longest idempotency key taken."""

_KEPT_HEADERS = frozenset(
    {"content-type", "x-seamkit-outcome", "x-seamkit-session", "x-should-retry"}
)
"""The headers of an answer a replay gives again."""

Produce = Callable[[], Awaitable[Response]]
"""What answers a keyed request when no record does: the route itself."""


def fingerprint(path: str, session: str | None, body: bytes) -> str:
    """The SHA-256 of what makes two requests the same: the path, the
    ``X-Seamkit-Session`` and the body."""
    digest = hashlib.sha256()
    for part in (path.encode(), (session or "").encode(), body):
        digest.update(len(part).to_bytes(8, "big") + part)
    return digest.hexdigest()


@dataclass(slots=True)
class _Recording:
    """An answer as it is made: its head, then its body's pieces."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    streamed: bool = False
    pieces: list[bytes] = field(default_factory=list)
    head: asyncio.Future[None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    done: asyncio.Event = field(default_factory=asyncio.Event)
    grew: asyncio.Event = field(default_factory=asyncio.Event)

    def add(self, piece: bytes) -> None:
        self.pieces.append(piece)
        self.grew.set()

    async def follow(self) -> AsyncIterator[bytes]:
        """The body's pieces as they come, from the first."""
        i = 0
        while True:
            while i < len(self.pieces):
                yield self.pieces[i]
                i += 1
            if self.done.is_set():
                return
            self.grew.clear()
            if i < len(self.pieces) or self.done.is_set():
                continue
            await self.grew.wait()

    def response(self) -> Response:
        """The answer to send, as it is or as it comes."""
        if self.streamed:
            return StreamingResponse(self.follow(), self.status, headers=self.headers)
        return Response(b"".join(self.pieces), self.status, headers=self.headers)


class Idempotency:
    """The records of keyed requests, in ``store``, for ``seconds``."""

    def __init__(self, store: seamkit.SessionStore | None, seconds: float) -> None:
        self.store = store
        self.seconds = seconds
        self._background = Background(min(seconds, _SWEEP_SECONDS))

    @staticmethod
    def key(given: str | None) -> str | None:
        """The request's idempotency key, checked; ``None`` without one."""
        if given is None:
            return None
        if not given or len(given) > _MAX_KEY:
            raise ApiError(
                400,
                f"Idempotency-Key must be 1 to {_MAX_KEY} characters",
                param="Idempotency-Key",
                code="invalid_idempotency_key",
            )
        return given

    async def answer(self, kid: str, key: str, digest: str, produce: Produce) -> Response:
        """The answer to the keyed request: the recorded one, or ``produce``'s,
        made in a task a disconnect does not cancel, and recorded."""
        if self.store is None:  # no store, nothing to keep: as if unkeyed
            return await produce()
        name = f"{kid}/idem/{hashlib.sha256(key.encode()).hexdigest()[:32]}"
        recording = _Recording()
        self._background.start(self._keep(name, digest, produce, recording))
        await asyncio.shield(recording.head)
        if not recording.streamed:
            await recording.done.wait()
        return recording.response()

    async def _keep(self, name: str, digest: str, produce: Produce, recording: _Recording) -> None:
        store = self.store
        assert store is not None
        try:
            async with store.lock(name, _WAIT_SECONDS):
                stored = await store.load(name)
                record = stored.state.get(_STATE_KEY) if stored is not None else None
                if isinstance(record, dict) and _live(record):
                    if record.get("digest") != digest:
                        raise ApiError(
                            409,
                            "this Idempotency-Key was used for a different request (another "
                            "path, X-Seamkit-Session or body); use a new key for a new request",
                            param="Idempotency-Key",
                            code="idempotency_key_reused",
                        )
                    _replay(record, recording)
                    return
                response = await produce()
                recording.status = response.status_code
                recording.headers = {
                    k: v for k, v in response.headers.items() if k.lower() != "content-length"
                }
                recording.streamed = isinstance(response, StreamingResponse)
                recording.head.set_result(None)
                if isinstance(response, StreamingResponse):
                    async for piece in response.body_iterator:
                        recording.add(piece.encode() if isinstance(piece, str) else bytes(piece))
                else:
                    recording.add(bytes(response.body))
                ran = recording.status == 200 or "x-seamkit-outcome" in recording.headers
                if ran:
                    await store.save(name, (), {_STATE_KEY: self._record(digest, recording)})
                    self._background.now_and_then(self._sweep)
        except seamkit.SessionBusy:
            _fail(
                recording,
                ApiError(
                    409,
                    "a request with this Idempotency-Key is still running; retry later",
                    param="Idempotency-Key",
                    code="idempotency_key_in_use",
                ),
            )
        except BaseException as exc:
            _fail(recording, exc)
            if not isinstance(exc, Exception):
                raise
        finally:
            recording.done.set()
            recording.grew.set()

    async def _sweep(self) -> None:
        """Delete the records that expired (of every API key; a record in use
        is left to its request)."""
        store = self.store
        assert store is not None
        try:
            for name in await store.list():
                if name.count("/") != 2 or name.split("/")[1] != "idem":
                    continue
                try:
                    async with store.lock(name, 0):
                        stored = await store.load(name)
                        record = stored.state.get(_STATE_KEY) if stored is not None else None
                        if not _live(record):
                            await store.delete(name)
                except seamkit.SessionBusy:
                    continue
        except seamkit.SeamkitError as exc:
            log.warning("could not sweep expired idempotency records: %s", exc.message)

    def _record(self, digest: str, recording: _Recording) -> dict[str, object]:
        return {
            "digest": digest,
            "expires": time.time() + self.seconds,
            "status": recording.status,
            "streamed": recording.streamed,
            "headers": {k: v for k, v in recording.headers.items() if k.lower() in _KEPT_HEADERS},
            "body": base64.b64encode(b"".join(recording.pieces)).decode("ascii"),
        }


def _live(record: object) -> bool:
    """Whether ``record`` is a record that has not expired."""
    if not isinstance(record, dict):
        return False
    expires = record.get("expires")
    return isinstance(expires, int | float) and expires > time.time()


def _replay(record: dict[str, object], recording: _Recording) -> None:
    """Fill ``recording`` with the recorded answer."""
    headers = record.get("headers")
    status = record.get("status")
    body = record.get("body")
    recording.status = status if isinstance(status, int) else 200
    recording.headers = {
        **({str(k): str(v) for k, v in headers.items()} if isinstance(headers, dict) else {}),
        REPLAYED_HEADER: "true",
    }
    recording.streamed = bool(record.get("streamed"))
    recording.add(base64.b64decode(body) if isinstance(body, str) else b"")
    recording.head.set_result(None)


def _fail(recording: _Recording, exc: BaseException) -> None:
    """Hand ``exc`` to the request waiting for the answer's head, or, once
    the head went out, end the answer where it is (its body is not
    recorded)."""
    if not recording.head.done():
        if isinstance(exc, Exception):
            recording.head.set_exception(exc)
        else:
            recording.head.cancel()
    elif isinstance(exc, Exception) and not isinstance(exc, ApiError):
        log.warning("a keyed answer failed midway (%s); it is not recorded", type(exc).__name__)
