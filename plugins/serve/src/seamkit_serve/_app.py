"""The ASGI app: one seamkit agent behind OpenAI's chat-completions routes,
and the route that decides the calls a suspended run waits for.

`create_app` builds a Starlette app; the agent is built when the app starts
(``/readyz`` answers 200 from then on) and closed when it stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import seamkit
from seamkit.plugins import trace_headers
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ._config import Caller, Keys, ServeConfig
from ._conversation import Conversation, app_tools
from ._decisions import parse_decisions
from ._edges import SESSION_NAME as _SESSION_NAME, Edges
from ._error import ApiError, error_body
from ._format import run_output
from ._handed import CallIds, Handout, answering, made_session
from ._idempotency import IDEMPOTENCY_HEADER, Idempotency, fingerprint
from ._made import Conversations
from ._pending import may_ask
from ._responses_run import ResponsesRoutes
from ._run import SESSION_HEADER, Run, RunInput, error_response
from ._session_limits import SessionLimits
from ._wire import Limits, parse_request

__all__ = ["SESSION_HEADER", "ServerOptions", "app_from_env", "create_app"]

log = logging.getLogger("seamkit.serve")


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
        self._ids: CallIds | None = None
        self._ids_lock = asyncio.Lock()
        self._state_key: seamkit.Secret[str] | None = None
        self.ttl = 3600.0
        self.conversations = Conversations(None, self.ttl)
        self.idempotency = Idempotency(None, 0)
        self.session_limits = SessionLimits(1, 1)
        self.body_seconds = 30.0
        self.responses = ResponsesRoutes(None)

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        options = self.options
        agent = await seamkit.Agent.load(options.app, model=options.model, store=options.store)
        async with agent:
            config = agent.config.section("serve") if agent.config is not None else None
            serve = config if isinstance(config, ServeConfig) else ServeConfig()
            self.keys = Keys.gather(serve)
            self.limits = Limits(
                serve.max_body_bytes,
                serve.max_messages,
                client_tools=serve.client_tools == "pass",
            )
            self.ttl = serve.client_tool_ttl_seconds
            self.store = agent.session_store()
            self._state_key = agent.settings.state_key
            self.conversations = Conversations(self.store, self.ttl)
            self.idempotency = Idempotency(self.store, serve.idempotency_seconds)
            self.body_seconds = serve.body_timeout_seconds
            self.session_limits = SessionLimits(serve.max_session_messages, serve.max_session_bytes)
            self.responses = ResponsesRoutes(
                self.store,
                self._call_ids,
                self.ttl,
                self.session_limits,
                self.conversations.touch,
            )
            self.name = agent.name
            self.agent = agent
            log.info("serving app %r", agent.name)
            try:
                yield
            finally:
                self.agent = None

    # --- helpers ------------------------------------------------------------

    async def _call_ids(self, needed: bool = True) -> CallIds:
        """The ids of handed-out calls, keyed once, when first ``needed``
        (an app whose clients bring no tools keeps no key); a throwaway
        otherwise, which checks nothing it did not make."""
        if not needed:
            return CallIds()
        async with self._ids_lock:
            if self._ids is None:
                self._ids = await CallIds.for_app(self._state_key, self.store)
            return self._ids

    def _authenticate(self, request: Request) -> Caller:
        """Who the request comes from, by its API key; a 401 for no key of ours."""
        header = request.headers.get("authorization", "")
        scheme, _, presented = header.partition(" ")
        caller = self.keys.identify(presented.strip() if scheme.lower() == "bearer" else None)
        if caller is None:
            raise ApiError(
                401,
                "missing or wrong API key: send 'Authorization: Bearer <key>'",
                code="invalid_api_key",
            )
        return caller

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
        try:
            async with asyncio.timeout(self.body_seconds):  # a slow client holds nothing long
                async for piece in request.stream():
                    received += piece
                    if len(received) > limit:
                        raise ApiError(
                            413,
                            f"the request body is over {limit} bytes, the most this server takes",
                            code="request_too_large",
                        )
        except TimeoutError:
            raise ApiError(
                408,
                f"the request body did not arrive within {self.body_seconds:g} seconds "
                f"(serve.body_timeout_seconds); {len(received)} bytes came",
                code="request_timeout",
            ) from None
        return bytes(received)

    def _shown(self, request: Request) -> str | None:
        """The session the request names, as the client names it."""
        name = request.headers.get(SESSION_HEADER)
        if name is not None and not _SESSION_NAME.fullmatch(name):
            raise ApiError(
                400,
                f"{SESSION_HEADER} must be 1 to 128 letters, digits and . _ : @ -",
                param=SESSION_HEADER,
            )
        return name

    async def _keyed(
        self,
        request: Request,
        kid: str,
        body: bytes,
        produce: Callable[[], Awaitable[Response]],
    ) -> Response:
        """``produce``'s answer, or, for a request with an ``Idempotency-Key``,
        the first answer to the same request with that key (`Idempotency`)."""
        key = Idempotency.key(request.headers.get(IDEMPOTENCY_HEADER))
        if key is None:
            return await produce()
        digest = fingerprint(request.url.path, request.headers.get(SESSION_HEADER), body)
        return await self.idempotency.answer(kid, key, digest, produce)

    # --- routes ---------------------------------------------------------------

    def _model(self) -> dict[str, object]:
        return {"id": self.name, "object": "model", "created": 0, "owned_by": "seamkit"}

    async def models(self, request: Request) -> Response:
        self._authenticate(request)
        self._ready()
        return JSONResponse({"object": "list", "data": [self._model()]})

    async def model(self, request: Request) -> Response:
        """``GET /v1/models/{id}``: the app, by its name; another id is a 404."""
        self._authenticate(request)
        self._ready()
        asked = str(request.path_params["model"])
        if asked != self.name:
            raise ApiError(
                404,
                f"the model {asked!r} does not exist here; this server serves {self.name!r}",
                param="model",
                code="model_not_found",
            )
        return JSONResponse(self._model())

    async def healthz(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(self, request: Request) -> Response:
        if self.agent is None:
            return JSONResponse({"status": "starting"}, status_code=503)
        return JSONResponse({"status": "ready", "app": self.name})

    async def chat(self, request: Request) -> Response:
        caller = self._authenticate(request)
        self._ready()
        body = await self._body(request)
        return await self._keyed(
            request, caller.id, body, lambda: self._chat(request, caller, body)
        )

    async def _chat(self, request: Request, caller: Caller, body: bytes) -> Response:
        kid = caller.id
        agent = self._ready()
        chat = parse_request(body, self.name, self.limits)
        shown = self._shown(request)
        output = run_output(agent.output, chat.response_format, agent.model)
        # the run's user is the key's, unless the key may name the request's
        context: dict[str, Any] = {"api_key_id": kid, "user": caller.user(chat.user)}
        sent = chat.messages
        made = False
        ours = False  # a conversation the server made and keeps (`Conversations`)
        if shown is None:
            # A run that suspends or hands calls to the client is continued
            # from the store: it runs on a session the server makes, kept only
            # if it does; the ids of handed-out calls name it, and it goes on
            # while the client's conversation does.
            nonce = answering(sent)
            if nonce is not None:
                shown, ours = made_session(nonce), True
            elif chat.tools or may_ask(agent):
                shown, made = made_session(secrets.token_bytes(12)), True
                ours = bool(chat.tools)
        ids = await self._call_ids(
            bool(chat.tools) or any(m.role == "tool" or m.tool_calls for m in sent)
        )
        conversation = Conversation(
            sent,
            app_tools(agent, output),
            frozenset(t.name for t in chat.tools),
            ids,
            kid,
            shown or "",
        )
        # what the messages sent add to the session's stored ones, within a
        # client's session's limits (a stateless request, or one on a session
        # the server made for it, is bounded by max_body_bytes)
        given: RunInput = (
            self.session_limits.bounded(conversation.new_messages)
            if shown and not made
            else conversation.new_messages
        )
        run = Run(
            agent,
            self.name,
            given,
            self.store,
            context,
            trace_headers(request.headers),
            _pending_first,
            session=None if shown is None else f"{kid}/{shown}",  # a session is its key's
            shown=shown,
            made=made,
            defaults=chat.defaults,
            include_usage=chat.include_usage,
            output=output,
            tools=chat.tools,
            handout=Handout(ids, kid, self.ttl),
            kept=self.conversations.touch if ours else None,
        )
        return await (run.streamed() if chat.stream else run.whole())

    async def respond(self, request: Request) -> Response:
        """``POST /v1/responses``: the Responses API (`ResponsesRoutes`)."""
        caller = self._authenticate(request)
        agent = self._ready()
        body = await self._body(request)
        return await self._keyed(
            request,
            caller.id,
            body,
            lambda: self.responses.create(
                agent,
                self.name,
                self.limits,
                caller,
                body,
                self._shown(request),
                trace_headers(request.headers),
                _pending_first,
            ),
        )

    async def response(self, request: Request) -> Response:
        """``GET /v1/responses/{id}``: the key's own stored response."""
        caller = self._authenticate(request)
        self._ready()
        return await self.responses.retrieve(caller.id, str(request.path_params["id"]))

    async def decide(self, request: Request) -> Response:
        """``POST /v1/sessions/{name}/decisions``: decide the calls a
        session's suspended run waits for, and continue it."""
        caller = self._authenticate(request)
        self._ready()
        body = await self._body(request)
        return await self._keyed(
            request, caller.id, body, lambda: self._decide(request, caller, body)
        )

    async def _decide(self, request: Request, caller: Caller, body: bytes) -> Response:
        kid = caller.id
        agent = self._ready()
        shown = str(request.path_params["name"])
        asked = parse_decisions(body, self.limits)
        user = caller.user(asked.user)
        session = f"{kid}/{shown}"
        store = self.store
        known = store is not None and _SESSION_NAME.fullmatch(shown) is not None
        stored = await store.load(session) if store is not None and known else None
        if stored is None:  # another key's session is no session here
            raise ApiError(
                404,
                f"there is no session {shown!r} for this API key",
                param="name",
                code="session_not_found",
            )
        pending = list(stored.pending)
        order = list(asked.decisions)
        for call in pending:  # a reject's digest, which the kernel does not take, checked here
            given = asked.rejected.get(call.call_id)
            if given is not None and given != call.digest:
                raise ApiError(
                    409,
                    f"the digest given for call {call.call_id!r} does not match its arguments "
                    f"(pending digest {call.digest}); nothing was run",
                    param=f"decisions[{order.index(call.call_id)}]",
                    code="decision_refused",
                )
        context: dict[str, Any] = {"api_key_id": kid, "user": user}
        # no decisions: continue a run a crash cut short, or say again what waits
        decisions = seamkit.Decisions(dict(asked.decisions), by=kid) if asked.decisions else None
        run = Run(
            agent,
            self.name,
            decisions,
            self.store,
            context,
            trace_headers(request.headers),
            lambda exc: _decision_refused(exc, kid, order),
            session=session,
            shown=shown,
            continues=frozenset(p.call_id for p in pending),
            include_usage=asked.include_usage,
            handout=Handout(await self._call_ids(bool(stored.client_tools)), kid, self.ttl),
        )
        return await (run.streamed() if asked.stream else run.whole())


def _shown_message(exc: seamkit.ResumeError, kid: str) -> str:
    """The kernel's message, naming sessions as the client does."""
    return exc.message.replace(f"{kid}/", "")


def _pending_first(exc: seamkit.ResumeError) -> ApiError:
    """A chat message to a session whose calls wait for a decision (or whose
    run a crash cut short): a 409 that says to decide them (or continue it)
    first, and where."""
    session = exc.session or ""
    kid, _, shown = session.partition("/")
    return ApiError(
        409,
        f"{_shown_message(exc, kid)}, with POST /v1/sessions/{shown}/decisions",
        param="messages",
        code="calls_pending",
    )


def _decision_refused(exc: seamkit.ResumeError, kid: str, order: list[str]) -> ApiError:
    """A decision the session's pending calls refuse: a 409; nothing ran."""
    message = _shown_message(exc, kid)
    if exc.hint:
        message = f"{message} ({exc.hint})"
    param = f"decisions[{order.index(exc.call_id)}]" if exc.call_id in order else None
    return ApiError(409, message, param=param, code="decision_refused")


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return error_response(exc)


async def _server_error(request: Request, exc: Exception) -> Response:
    """An error the server did not expect: a 500 in OpenAI's shape that a
    client does not retry blindly (the run may have acted); the traceback
    goes to the log, never to the client."""
    failed = ApiError(
        500,
        f"the server failed ({type(exc).__name__}); its log says why",
        type="server_error",
        code="server_error",
    )
    return error_response(failed)


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
        Route("/v1/responses", server.respond, methods=["POST"]),
        Route("/v1/responses/{id}", server.response, methods=["GET"]),
        Route("/v1/sessions/{name}/decisions", server.decide, methods=["POST"]),
        Route("/v1/models", server.models, methods=["GET"]),
        Route("/v1/models/{model:path}", server.model, methods=["GET"]),
        Route("/healthz", server.healthz, methods=["GET"]),
        Route("/readyz", server.readyz, methods=["GET"]),
    ]
    return Starlette(
        routes=routes,
        middleware=[Middleware(Edges)],
        lifespan=server.lifespan,
        exception_handlers={
            ApiError: _api_error,
            HTTPException: _http_error,
            Exception: _server_error,
        },
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
