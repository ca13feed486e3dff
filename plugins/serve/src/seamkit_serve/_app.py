"""The ASGI app: one seamkit agent behind OpenAI's chat-completions routes.

`create_app` builds a Starlette app; the agent is built when the app starts
(``/readyz`` answers 200 from then on) and closed when it stops.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import seamkit
from seamkit.plugins import continue_trace, trace_headers
from seamkit.stream import RunFinished, TextDelta
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ._config import Keys, ServeConfig
from ._conversation import SEPARATOR, new_messages, reply_text
from ._wire import (
    ApiError,
    ChatRequest,
    Limits,
    chunk,
    completion,
    error_body,
    new_id,
    parse_request,
    sse,
)

__all__ = ["SESSION_HEADER", "ServerOptions", "app_from_env", "create_app"]

log = logging.getLogger("seamkit.serve")

SESSION_HEADER = "x-seamkit-session"
"""The request header that names a server-side session."""

_SESSION_NAME = re.compile(r"[A-Za-z0-9._:@-]{1,128}")
_DONE = b"data: [DONE]\n\n"


@dataclass(frozen=True, slots=True)
class ServerOptions:
    """What ``seamkit serve`` was told: the manifest, and the store and model
    that replace the manifest's (``None``: the manifest's own)."""

    app: str
    store: str | None = None
    model: str | None = None


class _Server:
    """The state of one running app: its agent, keys, limits and store."""

    def __init__(self, options: ServerOptions) -> None:
        self.options = options
        self.agent: seamkit.Agent | None = None
        self.name = ""
        self.keys = Keys({})
        self.limits = Limits(1, 1)
        self.store: seamkit.SessionStore | None = None

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        options = self.options
        agent = await seamkit.Agent.load(options.app, model=options.model, store=options.store)
        async with agent:
            config = agent.config.section("serve") if agent.config is not None else None
            serve = config if isinstance(config, ServeConfig) else ServeConfig()
            self.keys = Keys.gather(serve)
            self.limits = Limits(serve.max_body_bytes, serve.max_messages)
            self.store = agent.session_store()
            self.name = agent.name
            self.agent = agent
            log.info("serving app %r", agent.name)
            try:
                yield
            finally:
                self.agent = None

    # --- helpers ------------------------------------------------------------

    def _authenticate(self, request: Request) -> str:
        header = request.headers.get("authorization", "")
        scheme, _, presented = header.partition(" ")
        kid = self.keys.identify(presented.strip() if scheme.lower() == "bearer" else None)
        if kid is None:
            raise ApiError(
                401,
                "missing or wrong API key: send 'Authorization: Bearer <key>'",
                code="invalid_api_key",
            )
        return kid

    def _ready(self) -> seamkit.Agent:
        if self.agent is None:
            raise ApiError(503, "the app is not ready yet", type="server_error")
        return self.agent

    async def _body(self, request: Request) -> bytes:
        limit = self.limits.max_body_bytes
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise ApiError(
                413,
                f"the request body is {declared} bytes; this server takes at most {limit}",
                code="request_too_large",
            )
        received = bytearray()
        async for piece in request.stream():
            received += piece
            if len(received) > limit:
                raise ApiError(
                    413,
                    f"the request body is over {limit} bytes, the most this server takes",
                    code="request_too_large",
                )
        return bytes(received)

    def _session(self, request: Request, kid: str) -> str | None:
        name = request.headers.get(SESSION_HEADER)
        if name is None:
            return None
        if not _SESSION_NAME.fullmatch(name):
            raise ApiError(
                400,
                f"{SESSION_HEADER} must be 1 to 128 letters, digits and . _ : @ -",
                param=SESSION_HEADER,
            )
        return f"{kid}/{name}"  # sessions belong to the key that made them

    # --- routes ---------------------------------------------------------------

    async def models(self, request: Request) -> Response:
        self._authenticate(request)
        self._ready()
        data = [{"id": self.name, "object": "model", "created": 0, "owned_by": "seamkit"}]
        return JSONResponse({"object": "list", "data": data})

    async def healthz(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(self, request: Request) -> Response:
        if self.agent is None:
            return JSONResponse({"status": "starting"}, status_code=503)
        return JSONResponse({"status": "ready", "app": self.name})

    async def chat(self, request: Request) -> Response:
        kid = self._authenticate(request)
        agent = self._ready()
        chat = parse_request(await self._body(request), self.name, self.limits)
        session = self._session(request, kid)
        context: dict[str, Any] = {"api_key_id": kid}
        if chat.user is not None:
            context["user"] = chat.user
        run = _Run(agent, chat, session, self.store, context, trace_headers(request.headers))
        if session is not None and any(m.role == "assistant" for m in chat.messages):
            # a 409 before any byte is sent (checked again under the lock); only
            # messages with a reply of the assistant's can contradict the session
            await run.check()
        if chat.stream:
            headers = {SESSION_HEADER: request.headers[SESSION_HEADER]} if session else None
            return StreamingResponse(
                run.events(self.name), media_type="text/event-stream", headers=headers
            )
        return await run.whole(self.name)


class _Run:
    """One request's run, answered whole or streamed; ``trace`` is the
    caller's trace-context headers, which the run continues."""

    def __init__(
        self,
        agent: seamkit.Agent,
        chat: ChatRequest,
        session: str | None,
        store: seamkit.SessionStore | None,
        context: Mapping[str, Any],
        trace: Mapping[str, str],
    ) -> None:
        self.agent = agent
        self.chat = chat
        self.session = session
        self.store = store
        self.context = context
        self.trace = trace
        self.id = new_id()

    async def check(self) -> None:
        assert self.store is not None and self.session is not None
        stored = await self.store.load(self.session)
        new_messages(stored.transcript if stored else (), self.chat.messages)

    def _input(self) -> list[seamkit.Message] | Callable[[tuple[seamkit.Message, ...]], Any]:
        if self.session is None:
            return list(self.chat.messages)
        sent = self.chat.messages
        return lambda stored: new_messages(stored, sent)

    def _options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"context": self.context, "defaults": self.chat.defaults}
        if self.session is None:
            options["state"] = {}  # no freshness carried between clients' requests
        else:
            options["session"] = self.session
            options["store"] = self.store
        return options

    async def whole(self, model: str) -> Response:
        try:
            with continue_trace(self.trace):
                result = await self.agent.run(self._input(), **self._options())
        except ApiError as exc:
            return _error(exc)
        except seamkit.SessionBusy as exc:
            return _error(ApiError(409, exc.message, code="session_busy"))
        text, finish, failure = _answer(result)
        if failure is not None:
            return _error(failure)
        return JSONResponse(
            completion(self.id, model, text, finish, result.usage),
            headers={"x-seamkit-outcome": result.outcome.kind},
        )

    async def events(self, model: str) -> AsyncIterator[bytes]:
        """The SSE body. The role chunk goes out with the first text, and the
        finish, usage and ``[DONE]`` go out as one write: fewer writes, the
        same events."""
        pending = sse(chunk(self.id, model, {"role": "assistant", "content": ""}))
        ending = b""
        turn_with_text = 0
        sent_text: list[str] = []
        stream = self.agent.stream(self._input(), **self._options())
        try:
            # the agent's stream starts its run at the first event, in the
            # context of the moment: the caller's trace context, then
            with continue_trace(self.trace):
                event = await anext(stream, None)
            while event is not None:
                if isinstance(event, TextDelta) and event.text:
                    text = event.text
                    if turn_with_text and event.turn != turn_with_text:
                        text = SEPARATOR + text
                    turn_with_text = event.turn
                    sent_text.append(text)
                    yield pending + sse(chunk(self.id, model, {"content": text}))
                    pending = b""
                elif isinstance(event, RunFinished):
                    ending = pending + self._end(model, event.result, "".join(sent_text))
                    pending = b""
                event = await anext(stream, None)
            # the agent's stream ends once the session is saved: only then the
            # [DONE], so a client's next request always finds this one stored
            yield ending
        except ApiError as exc:
            yield pending + sse(exc.body()) + _DONE
        except seamkit.SessionBusy as exc:
            busy = error_body(exc.message, "invalid_request_error", code="session_busy")
            yield pending + sse(busy) + _DONE
        finally:
            close = getattr(stream, "aclose", None)  # a client that went away cancels the run
            if close is not None:
                await close()

    def _end(self, model: str, result: seamkit.RunResult, so_far: str) -> bytes:
        """The last events: what the stream has not said yet (a terminal
        tool's result), the finish, the usage if asked for, ``[DONE]``; or
        the error of a run that failed."""
        full, finish, failure = _answer(result)
        if failure is not None:
            return sse(failure.body()) + _DONE
        out = b""
        if full.startswith(so_far) and full != so_far:  # a terminal tool's result
            out += sse(chunk(self.id, model, {"content": full[len(so_far) :]}))
        out += sse(chunk(self.id, model, {}, finish))
        if self.chat.include_usage:
            out += sse(chunk(self.id, model, None, used=result.usage))
        return out + _DONE


def _answer(result: seamkit.RunResult) -> tuple[str, str, ApiError | None]:
    """The reply text, the finish reason, or the error a run's outcome gives."""
    outcome = result.outcome
    if isinstance(outcome, seamkit.Failed):
        return "", "stop", ApiError(500, outcome.error, type="server_error", code="run_failed")
    if isinstance(outcome, seamkit.Cancelled):
        return "", "stop", ApiError(504, "the run was cancelled", type="server_error")
    added = _this_run(result.transcript)
    text = reply_text(added)
    if result.output and not text.endswith(result.output):
        text = f"{text}{SEPARATOR}{result.output}" if text else result.output
    if isinstance(outcome, seamkit.Terminated) and not text:
        text = outcome.reason
    return text, "length" if isinstance(outcome, seamkit.MaxTurns) else "stop", None


def _this_run(transcript: tuple[seamkit.Message, ...]) -> list[seamkit.Message]:
    """The messages after the last user message: what this run added."""
    for i in range(len(transcript) - 1, -1, -1):
        if transcript[i].role == "user":
            return list(transcript[i + 1 :])
    return list(transcript)


def _error(exc: ApiError) -> Response:
    return JSONResponse(exc.body(), status_code=exc.status)


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return _error(exc)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    kind = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code)
    message = f"{request.method} {request.url.path}: {exc.detail}"
    return JSONResponse(
        error_body(message, "invalid_request_error", code=kind), status_code=exc.status_code
    )


def create_app(options: ServerOptions) -> Starlette:
    """The ASGI app serving ``options.app``."""
    server = _Server(options)
    routes = [
        Route("/v1/chat/completions", server.chat, methods=["POST"]),
        Route("/v1/models", server.models, methods=["GET"]),
        Route("/healthz", server.healthz, methods=["GET"]),
        Route("/readyz", server.readyz, methods=["GET"]),
    ]
    return Starlette(
        routes=routes,
        lifespan=server.lifespan,
        exception_handlers={ApiError: _api_error, HTTPException: _http_error},
    )


def app_from_env() -> Starlette:
    """The app ``seamkit serve`` runs in each worker: its options come from
    ``SEAMKIT_SERVE_APP``, ``SEAMKIT_SERVE_STORE`` and ``SEAMKIT_SERVE_MODEL``
    (a worker is a fresh process that imports this by name)."""
    return create_app(
        ServerOptions(
            os.environ["SEAMKIT_SERVE_APP"],
            os.environ.get("SEAMKIT_SERVE_STORE") or None,
            os.environ.get("SEAMKIT_SERVE_MODEL") or None,
        )
    )
