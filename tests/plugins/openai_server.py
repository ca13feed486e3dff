"""A local server for the model providers' tests (OpenAI's
``/v1/chat/completions``, Anthropic's ``/v1/messages``): a small ASGI app
that replays scripted answers byte for byte, served by uvicorn on 127.0.0.1
with a free port, on a thread of its own.

A request is routed by its path and its body's ``model``: `ReplayServer.script`
queues the answers for one model name, on any path or on one path only,
consumed one per request (a retry takes the next one). Every request is
recorded (`ReplayServer.requests`), path, headers and body, so a test can
read what went on the wire.

Answers come from code (`Reply.json`, `Reply.sse`) or from wire transcripts:
``tests/fixtures/openai/<name>.sse`` (`Reply.transcript`, data lines only) and
raw HTTP responses ``tests/fixtures/<provider>/<name>.http`` (`Reply.http`:
``#`` lines naming the source, then the status line, the headers, a blank
line and the body; an event stream's events are written one at a time).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn
from seamkit.testing import load_wire_cassette

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
TRANSCRIPTS = FIXTURES / "openai"


@dataclass
class Reply:
    """One scripted answer: ``status``, ``headers`` and the body in pieces
    (each piece its own write, ``pause`` seconds apart); ``delay`` before the
    headers; ``cut`` drops the connection after the last piece."""

    body: list[bytes] = field(default_factory=list)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    pause: float = 0.0
    delay: float = 0.0
    cut: bool = False

    @classmethod
    def json(cls, data: Any, status: int = 200, **headers: str) -> Reply:
        return cls(
            [json.dumps(data).encode()], status, {"content-type": "application/json", **headers}
        )

    @classmethod
    def sse(cls, events: list[Any], *, done: bool = True, **options: Any) -> Reply:
        """A stream of ``data:`` events (dicts are JSON-encoded), then ``[DONE]``."""
        body = [f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n".encode() for e in events]
        if done:
            body.append(b"data: [DONE]\n\n")
        return cls(body, headers={"content-type": "text/event-stream"}, **options)

    @classmethod
    def transcript(cls, name: str, **options: Any) -> Reply:
        """The wire transcript ``tests/fixtures/openai/<name>.sse``, its ``#``
        comment lines (the source) left out, one write per event."""
        text = (TRANSCRIPTS / f"{name}.sse").read_text(encoding="utf-8")
        lines = [line for line in text.splitlines() if not line.startswith("#")]
        events = "\n".join(lines).strip("\n").split("\n\n")
        return cls(
            [f"{event}\n\n".encode() for event in events],
            headers={"content-type": "text/event-stream"},
            **options,
        )

    @classmethod
    def http(cls, name: str, *, provider: str = "anthropic", **options: Any) -> Reply:
        """The first response of the wire cassette
        ``tests/fixtures/<provider>/<name>.http`` (`seamkit.testing.load_wire_cassette`):
        status and headers as written, the body one write per event."""
        response = load_wire_cassette(FIXTURES / provider / f"{name}.http").responses[0]
        return cls(list(response.writes), response.status, dict(response.headers), **options)


@dataclass
class Seen:
    """A request the server received."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    client: tuple[str, int]


class ReplayServer:
    """The server; use as a context manager, or `start` and `stop`."""

    def __init__(self) -> None:
        self.scripts: dict[str, deque[Reply]] = defaultdict(deque)
        self.routes: dict[tuple[str, str], deque[Reply]] = defaultdict(deque)
        self.requests: list[Seen] = []
        self.disconnects = 0
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted connections inherit TCP_NODELAY: no Nagle stall between a
        # body's last piece and the end of its chunked encoding.
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.port: int = self._sock.getsockname()[1]
        config = uvicorn.Config(
            self.app,
            interface="asgi3",
            log_level="critical",
            lifespan="off",
            timeout_graceful_shutdown=1,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL (ending in ``/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def root_url(self) -> str:
        """The base URL without ``/v1``, as Anthropic's clients spell it."""
        return f"http://127.0.0.1:{self.port}"

    def script(self, model: str, *replies: Reply, path: str | None = None) -> None:
        """Queue ``replies`` for requests naming ``model``: on any path, or
        only on ``path`` (``/v1/messages``, say) when given."""
        if path is None:
            self.scripts[model].extend(replies)
        else:
            self.routes[(path, model)].extend(replies)

    def seen(self, model: str) -> list[Seen]:
        """The requests that named ``model``, in order."""
        return [r for r in self.requests if r.body.get("model") == model]

    def _run(self) -> None:
        self._server.run(sockets=[self._sock])

    def start(self) -> ReplayServer:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the replay server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(10)
        self._sock.close()

    def __enter__(self) -> ReplayServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        raw = b""
        while True:
            message = await receive()
            raw += message.get("body", b"")
            if not message.get("more_body"):
                break
        body = json.loads(raw) if raw else {}
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        self.requests.append(Seen(scope["path"], headers, body, tuple(scope["client"])))
        model = str(body.get("model"))
        queue = self.routes.get((scope["path"], model)) or self.scripts.get(model)
        if scope["path"] == "/v1/models":
            reply = Reply.json({"object": "list", "data": []})
        elif not queue:
            reply = Reply.json(
                {
                    "type": "error",
                    "error": {
                        "type": "not_found_error",
                        "message": f"no script for model {model!r} on {scope['path']}",
                    },
                },
                404,
            )
        else:
            reply = queue.popleft()
        if reply.delay:
            await asyncio.sleep(reply.delay)
        await send(
            {
                "type": "http.response.start",
                "status": reply.status,
                "headers": [(k.encode(), v.encode()) for k, v in reply.headers.items()],
            }
        )
        watcher = asyncio.ensure_future(self._watch(receive))
        try:
            for piece in reply.body:
                await send({"type": "http.response.body", "body": piece, "more_body": True})
                if reply.pause:
                    await asyncio.sleep(reply.pause)
                if watcher.done():
                    return
            if reply.cut:
                raise ConnectionAbortedError("the replay server cuts this stream")
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            watcher.cancel()

    async def _watch(self, receive: Any) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        self.disconnects += 1
