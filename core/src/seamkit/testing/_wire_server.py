"""`WireServer`: a small local HTTP/1.1 server that plays wire cassettes.

It runs on 127.0.0.1 and a free port, on a thread of its own with its own
event loop (standard library only), so sync and async tests use it alike:
``with WireServer() as server: server.play(cassette)``. It answers every
path and method with the next response of the cassette it plays (the last
one again once they run out), records each request (path, headers and the
JSON body), and counts connections: how many are open, and when a client
closed one while an answer was still being written or held open (what a
cancelled stream does).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ._wire_cassette import WireCassette, WireResponse

__all__ = ["WireRequest", "WireServer"]

_HOLD_SECONDS = 30.0
"""How long a held answer waits for the client to go before it ends."""

_HEAD_LIMIT = 1 << 16


@dataclass(frozen=True)
class WireRequest:
    """A request the server received: ``method``, ``path`` (with the query),
    ``headers`` (names lower-cased), the raw ``content``, and ``body``, the
    content parsed as JSON (``None`` when it is not JSON)."""

    method: str
    path: str
    headers: dict[str, str]
    content: bytes
    body: object


@dataclass(frozen=True)
class _Plan:
    responses: tuple[WireResponse, ...]
    pause: float
    cut: bool
    hold: bool


class WireServer:
    """A local HTTP/1.1 server that plays wire cassettes to a client under
    test. `start` it (or use ``with``), `play` a cassette, point the client
    at `base_url`, read `requests`; `stop` it at the end.

    `play` options: ``pause`` seconds between a body's writes; ``cut``
    drops the connection after the last write (a stream that ends without
    its end); ``hold`` writes every event of a stream but the last, then
    waits for the client to close the connection (for up to 30 s, then it
    ends the answer normally).
    """

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._plan = _Plan((), 0.0, False, False)
        self._played = 0
        self._requests: list[WireRequest] = []
        self._open = 0
        self._disconnects: list[float] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._thread: threading.Thread | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self.port = 0

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``, the server's root (no path)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> list[WireRequest]:
        """The requests received since the last `play`, in order."""
        with self._changed:
            return list(self._requests)

    @property
    def open_connections(self) -> int:
        """Connections open now."""
        with self._changed:
            return self._open

    @property
    def disconnects(self) -> list[float]:
        """When (``time.monotonic()``) a client closed its connection while an
        answer was being written or held, since the last `play`."""
        with self._changed:
            return list(self._disconnects)

    def play(
        self,
        cassette: WireCassette | Sequence[WireResponse],
        *,
        pause: float = 0.0,
        cut: bool = False,
        hold: bool = False,
    ) -> None:
        """Answer the next requests with ``cassette``'s responses, in order
        (the last again after that), and forget the requests and disconnects
        seen so far."""
        responses = tuple(cassette.responses if isinstance(cassette, WireCassette) else cassette)
        if not responses:
            raise ValueError("a cassette needs at least one response")
        with self._changed:
            self._plan = _Plan(responses, pause, cut, hold)
            self._played = 0
            self._requests.clear()
            self._disconnects.clear()
            self._changed.notify_all()

    def wait_until(self, condition: Callable[[WireServer], bool], timeout: float) -> bool:
        """Block until ``condition(self)`` holds or ``timeout`` seconds pass;
        whether it holds (from sync code; async code polls)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not condition(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
            return True

    def start(self) -> WireServer:
        """Listen on a free port of 127.0.0.1, on a thread of its own."""
        if self._thread is not None:
            raise RuntimeError("the wire server is started already")
        ready = threading.Event()
        failed: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                self._server = loop.run_until_complete(
                    asyncio.start_server(self._connection, "127.0.0.1", 0, limit=_HEAD_LIMIT)
                )
                self.port = self._server.sockets[0].getsockname()[1]
            except BaseException as exc:  # reported to start()
                failed.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.close()

        self._thread = threading.Thread(target=run, name="seamkit-wire-server", daemon=True)
        self._thread.start()
        ready.wait(10)
        if failed:
            raise RuntimeError(f"the wire server did not start: {failed[0]}") from failed[0]
        if not ready.is_set():
            raise RuntimeError("the wire server did not start within 10 s")
        return self

    def stop(self) -> None:
        """Close the server and every connection, and end its thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return

        async def shut() -> None:
            if self._server is not None:
                self._server.close()
            for task in list(self._handlers):
                task.cancel()
            await asyncio.gather(*self._handlers, return_exceptions=True)
            if self._server is not None:
                await self._server.wait_closed()

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(shut(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        self._loop = self._thread = None

    def __enter__(self) -> WireServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # The server's own thread from here on.

    def _next(self, request: WireRequest) -> tuple[WireResponse, _Plan]:
        with self._changed:
            self._requests.append(request)
            plan = self._plan
            if not plan.responses:
                missing = WireResponse(
                    599,
                    "No Cassette",
                    (("content-type", "application/json"),),
                    (b'{"error": {"message": "the wire server plays no cassette"}}',),
                )
                self._changed.notify_all()
                return missing, plan
            response = plan.responses[min(self._played, len(plan.responses) - 1)]
            self._played += 1
            self._changed.notify_all()
            return response, plan

    def _count(self, opened: int = 0, *, disconnect: bool = False) -> None:
        with self._changed:
            self._open += opened
            if disconnect:
                self._disconnects.append(time.monotonic())
            self._changed.notify_all()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        self._count(1)
        try:
            pending = b""
            while True:
                request = await _read_request(reader, pending)
                if request is None:
                    return
                response, plan = self._next(request)
                outcome = await self._answer(reader, writer, response, plan)
                if outcome is None:
                    return
                pending = outcome
                if request.headers.get("connection", "").lower() == "close":
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            return
        finally:
            self._count(-1)
            self._handlers.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _answer(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        response: WireResponse,
        plan: _Plan,
    ) -> bytes | None:
        """Write ``response``; the bytes the client sent meanwhile (to read the
        next request from), or ``None`` when the connection is over."""
        chunked = response.is_stream
        head = [f"HTTP/1.1 {response.status} {response.reason or 'Answer'}"]
        head += [
            f"{name}: {value}"
            for name, value in response.headers
            if name not in ("content-length", "transfer-encoding", "connection")
        ]
        if chunked:
            head.append("transfer-encoding: chunked")
        else:
            head.append(f"content-length: {len(response.body)}")
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        writes = list(response.writes)
        held = writes.pop() if plan.hold and chunked and writes else None
        watch = asyncio.ensure_future(reader.read(1))
        try:
            for number, piece in enumerate(writes):
                if number and plan.pause:
                    await asyncio.wait({watch}, timeout=plan.pause)
                if watch.done() and not watch.result():
                    self._count(disconnect=True)
                    return None
                writer.write(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
                await writer.drain()
            if held is not None:
                await asyncio.wait({watch}, timeout=_HOLD_SECONDS)
                if watch.done() and not watch.result():
                    self._count(disconnect=True)
                    return None
                writer.write(b"%x\r\n%s\r\n" % (len(held), held))
            if plan.cut:
                await writer.drain()
                return None
            if chunked:
                writer.write(b"0\r\n\r\n")
            await writer.drain()
            if not watch.done():
                await asyncio.sleep(0)
            if watch.done():
                sent = watch.result()
                return sent or None
            return b""
        except ConnectionError:
            self._count(disconnect=True)
            return None
        finally:
            if not watch.done():
                watch.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watch


async def _read_request(reader: asyncio.StreamReader, pending: bytes) -> WireRequest | None:
    """The next request on the connection, or ``None`` when the client closed it."""
    try:
        head = pending + await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not (pending + exc.partial).strip():
            return None
        raise
    lines = head.decode("latin-1").split("\r\n")
    method, _, rest = lines[0].partition(" ")
    path = rest.rpartition(" ")[0] or rest
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        content = b""
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            content += (await reader.readexactly(size + 2))[:-2]
            if size == 0:
                break
    else:
        content = await reader.readexactly(int(headers.get("content-length") or 0))
    try:
        body: object = json.loads(content) if content else None
    except ValueError:
        body = None
    return WireRequest(method, path, headers, content, body)
