"""The Responses API routes: ``POST /v1/responses`` runs a request as the
chat route does (the same `Run`) and answers in the Responses shapes,
whole or streamed; ``GET /v1/responses/{id}`` returns a stored response.

Where a response runs (the guide says the same):

- ``store`` true (the default) and no ``previous_response_id``: on the
  session ``X-Seamkit-Session`` names, else on a session the server makes
  (``run-<24 hex>``, kept) — or, when the input answers calls handed out,
  the session their ids name, so a client that resends its whole
  conversation goes on where the calls were made; the response is stored
  with the session it ran on.
- ``previous_response_id``: on that response's session, which must still
  be as the response left it — a response that is not its conversation's
  latest (a later response, a chat request or decided approvals moved the
  session on) is a 409 ``response_not_latest``; a response id is its API
  key's, so another key's is a 404, as is an id never stored. The new
  ``input`` is what the conversation adds; its system messages (and
  ``instructions``) are left out: a session keeps its first ones.
- ``store`` false: nothing is kept — no session (or, for a run that may
  suspend or hand calls to the client, a server-made one kept only until
  it is continued, as on the chat route) and no stored response. With
  ``previous_response_id`` it runs on a copy of that response's
  conversation (and takes no function call outputs). ``store: false`` with
  ``X-Seamkit-Session`` is a 400.

The input goes through the chat route's `Conversation`: handed-out calls
and their outputs are checked against the ids the server issued.

A stream's ``response.completed`` (or ``incomplete``) goes out once the
session and the response are saved, so the next request finds both.
"""

from __future__ import annotations

import functools
import json
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

import seamkit
from seamkit.stream import Event, RunFinished, TextDelta
from starlette.responses import JSONResponse, Response, StreamingResponse

from ._config import Caller
from ._conversation import SEPARATOR, Conversation, app_tools
from ._error import ApiError
from ._format import run_output
from ._handed import CallIds, Handout, answering, made_session
from ._pending import may_ask
from ._response_store import ResponseStore, StoredResponse
from ._responses import parse_responses, renamed
from ._responses_out import ClientCall, Rendered, ResponseShape
from ._run import (
    OUTCOME_HEADER,
    SESSION_HEADER,
    Refusal,
    Run,
    RunInput,
    detached,
    error_response,
    waits,
)
from ._session_limits import SessionLimits
from ._wire import Limits

__all__ = ["ResponsesRoutes"]

log = logging.getLogger("seamkit.serve")

_PREVIOUS = "previous_response_id"


def _not_found(response_id: str, param: str | None) -> ApiError:
    return ApiError(
        404,
        f"there is no stored response {response_id!r} for this API key",
        param=param,
        code="response_not_found",
    )


def _continued(
    stored: tuple[seamkit.Message, ...],
    *,
    length: int,
    conversation: Conversation,
    previous: str,
) -> list[seamkit.Message] | seamkit.ClientResults:
    """What a request continuing ``previous`` adds to its session (its new
    messages, or the results of the calls handed out), when the session is
    as ``previous`` left it (checked under the session's lock), else a 409."""
    if len(stored) != length:
        raise ApiError(
            409,
            f"the response {previous!r} is not its conversation's latest: its session has "
            "moved on since (a later response, a chat request on the session, or decided "
            "approvals); continue from the latest response, or send store: false to branch "
            "off without keeping anything",
            param=_PREVIOUS,
            code="response_not_latest",
        )
    return conversation.new_messages(stored)


async def _close(stream: AsyncIterator[Event]) -> None:
    close = getattr(stream, "aclose", None)
    if close is not None:
        await close()


class ResponsesRoutes:
    """The Responses API of one running app; ``store`` is the app's session
    store (``None``: nothing can be stored, as with ``store: false``);
    ``ids`` gives the ids of handed-out calls (keyed when the request
    ``needs`` them), which expire after ``ttl`` seconds; ``limits`` bound a
    kept session (as on the chat route), and ``touch`` is told of a
    conversation the server made for a stateless request that goes on
    (`seamkit_serve._made.Conversations`)."""

    def __init__(
        self,
        store: seamkit.SessionStore | None,
        ids: Callable[[bool], Awaitable[CallIds]] | None = None,
        ttl: float = 3600.0,
        limits: SessionLimits | None = None,
        touch: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self._sessions = store
        self._responses = ResponseStore(store) if store is not None else None
        self._ids = ids
        self._ttl = ttl
        self._limits = limits
        self._touch = touch

    async def _previous(self, kid: str, response_id: str, param: str | None) -> StoredResponse:
        stored = None
        if self._responses is not None:
            stored = await self._responses.load(kid, response_id)
        if stored is None:  # another key's response is no response here
            raise _not_found(response_id, param)
        return stored

    async def retrieve(self, kid: str, response_id: str) -> Response:
        """``GET /v1/responses/{id}``: the key's stored response."""
        stored = await self._previous(kid, response_id, None)
        return JSONResponse(stored.response())

    async def _history(self, kid: str, stored: StoredResponse) -> list[seamkit.Message]:
        """The conversation as ``stored`` left it (a ``store: false`` branch)."""
        if self._sessions is None or stored.session is None:
            return []
        try:
            session = await self._sessions.load(f"{kid}/{stored.session}")
        except seamkit.SessionError as exc:
            log.warning("session %r: %s", stored.session, exc.message)
            raise ApiError(
                500,
                f"the session {stored.session!r} could not be read; the server's log says why",
                type="server_error",
                code="session_unreadable",
            ) from None
        return list(session.transcript[: stored.length]) if session is not None else []

    async def create(
        self,
        agent: seamkit.Agent,
        name: str,
        limits: Limits,
        caller: Caller,
        raw: bytes,
        shown: str | None,
        trace: Mapping[str, str],
        refused: Refusal,
    ) -> Response:
        """``POST /v1/responses``: run the request and answer in the
        Responses shape; ``shown`` is the session the request names."""
        asked = parse_responses(raw, name, limits)
        chat = asked.chat
        try:
            output = run_output(agent.output, chat.response_format, agent.model)
        except ApiError as exc:
            raise renamed(exc) from None
        kid = caller.id
        context: dict[str, Any] = {"api_key_id": kid, "user": caller.user(chat.user)}
        keep = asked.store and self._responses is not None
        sent = chat.messages
        tools = frozenset(t.name for t in chat.tools)
        server_runs = app_tools(agent, output)
        needs = bool(chat.tools) or any(m.role == "tool" or m.tool_calls for m in sent)
        ids = await self._ids(needs) if self._ids is not None else CallIds()

        def conversation(messages: Sequence[seamkit.Message], on: str | None) -> Conversation:
            return Conversation(tuple(messages), server_runs, tools, ids, kid, on or "")

        made = False
        ours = False  # a stateless conversation on a session the server made
        if asked.previous is not None:
            stored = await self._previous(kid, asked.previous, _PREVIOUS)
            if stored.session is None:
                raise _not_found(asked.previous, _PREVIOUS)
            if shown is not None and shown != stored.session:
                raise ApiError(
                    400,
                    f"{_PREVIOUS} continues the session {stored.session!r}, and "
                    f"{SESSION_HEADER} names {shown!r}: send one of them",
                    param=_PREVIOUS,
                )
            later = [m for m in sent if m.role != "system"]  # a session keeps its first
            if keep:
                shown = stored.session
                given: RunInput = functools.partial(
                    _continued,
                    length=stored.length,
                    conversation=conversation(later, shown),
                    previous=asked.previous,
                )
            else:
                if any(m.role == "tool" or m.tool_calls for m in later):
                    raise ApiError(
                        400,
                        "store: false with previous_response_id starts from a copy of that "
                        "conversation, which takes no function call outputs: answer the calls "
                        "handed out with store: true (the default)",
                        param="store",
                    )
                given = [*await self._history(kid, stored), *later]  # the server's own copy
                shown = None
                if chat.tools or may_ask(agent):
                    shown, made = made_session(secrets.token_bytes(12)), True
                    ours = bool(chat.tools)
        else:
            if keep:
                if shown is None:
                    # a new session of the server's, or, for a conversation
                    # that holds calls handed out, the one their ids name
                    nonce = answering(sent)
                    shown = made_session(nonce or secrets.token_bytes(12))
            elif shown is not None:
                raise ApiError(
                    400,
                    f"store: false keeps nothing, so it cannot run on the session "
                    f"{SESSION_HEADER} names; send one of them",
                    param="store",
                )
            else:
                # as the chat route: a run that suspends or hands calls to the
                # client goes on from a session the server makes, kept only
                # then, and while the conversation goes on
                nonce = answering(sent)
                if nonce is not None:
                    shown, ours = made_session(nonce), True
                elif chat.tools or may_ask(agent):
                    shown, made = made_session(secrets.token_bytes(12)), True
                    ours = bool(chat.tools)
            given = conversation(sent, shown).new_messages
        if keep and self._limits is not None and callable(given):
            given = self._limits.bounded(given)  # a kept session grows: within its limits
        run = Run(
            agent,
            name,
            given,
            self._sessions,
            context,
            trace,
            lambda exc: renamed(refused(exc)),
            session=None if shown is None else f"{kid}/{shown}",  # a session is its key's
            shown=shown,
            made=made,
            defaults=chat.defaults,
            output=output,
            tools=chat.tools,
            handout=Handout(ids, kid, self._ttl),
            kept=self._touch if ours else None,
        )
        shape = ResponseShape(name, asked.echo)
        if chat.stream:
            return await self._streamed(run, shape, kid, keep)
        return await self._whole(run, shape, kid, keep)

    async def _keep(
        self, kid: str, shape: ResponseShape, body: dict[str, object], run: Run, length: int
    ) -> None:
        if self._responses is None:
            return
        text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
        await self._responses.save(kid, shape.id, StoredResponse(text, run.shown, length))

    @staticmethod
    def _headers(run: Run, kept: bool) -> dict[str, str]:
        return {SESSION_HEADER: run.shown} if run.shown and kept else {}

    # --- whole ------------------------------------------------------------------

    async def _whole(self, run: Run, shape: ResponseShape, kid: str, keep: bool) -> Response:
        result = await run.result()
        goes_on = waits(result.outcome)
        headers = {OUTCOME_HEADER: result.outcome.kind, **self._headers(run, keep or goes_on)}
        text, _, failure = run.answer(result)
        if failure is not None:
            if keep:  # kept failed: the conversation goes on from it
                body = shape.body(_failed(failure, result))
                await self._keep(kid, shape, body, run, len(result.transcript))
                failure = ApiError(
                    failure.status,
                    f"{failure.message} (response {shape.id}, kept with status failed: "
                    f"continue from it with {_PREVIOUS})",
                    type="server_error",
                    code=failure.code,
                )
            return error_response(failure, headers)
        rendered = ResponseShape.outcome(result, text, run.pending(result), run.handed(result))
        body = shape.body(rendered)
        if keep:
            await self._keep(kid, shape, body, run, len(result.transcript))
        return JSONResponse(body, headers=headers)

    # --- streamed ---------------------------------------------------------------

    async def _streamed(self, run: Run, shape: ResponseShape, kid: str, keep: bool) -> Response:
        stream, first = await run.opened()
        return StreamingResponse(
            detached(self._events(run, shape, stream, first, kid, keep)),
            media_type="text/event-stream",
            headers=self._headers(run, keep or run.made),
        )

    def _opened(self, shape: ResponseShape) -> bytes:
        """The events that open the message item and its text part."""
        item = shape.event(
            "response.output_item.added",
            output_index=0,
            item=shape.message("", status="in_progress"),
        )
        return item + shape.event(
            "response.content_part.added",
            item_id=shape.message_id,
            output_index=0,
            content_index=0,
            part=shape.part(""),
        )

    def _delta(self, shape: ResponseShape, text: str) -> bytes:
        return shape.event(
            "response.output_text.delta",
            item_id=shape.message_id,
            output_index=0,
            content_index=0,
            delta=text,
            logprobs=[],
        )

    async def _events(
        self,
        run: Run,
        shape: ResponseShape,
        stream: AsyncIterator[Event],
        event: Event | None,
        kid: str,
        keep: bool,
    ) -> AsyncIterator[bytes]:
        """The SSE body: created, in progress, the message's text as it
        comes, then the items' ends and the response's."""
        yield shape.event("response.created", response=shape.body()) + shape.event(
            "response.in_progress", response=shape.body()
        )
        opened = False
        turn_with_text = 0
        sent: list[str] = []
        ending = b""
        body: dict[str, object] | None = None
        length = 0
        kept = False
        held = run.declared is not None  # a structured run's JSON goes out once valid
        try:
            while event is not None:
                if isinstance(event, TextDelta) and event.text and not held:
                    text = event.text
                    if turn_with_text and event.turn != turn_with_text:
                        text = SEPARATOR + text
                    turn_with_text = event.turn
                    out = b"" if opened else self._opened(shape)
                    opened = True
                    sent.append(text)
                    yield out + self._delta(shape, text)
                elif isinstance(event, RunFinished):
                    result = event.result
                    kept = waits(result.outcome)
                    ending, body = self._end(run, shape, result, "".join(sent), opened)
                    length = len(result.transcript)
                event = await anext(stream, None)
            # the agent's stream ends once the session is saved; the response
            # is stored next, and only then the client hears the end
            if not kept:
                await run.forget()
            await run.keep(kept or not run.made)
            if keep and body is not None:  # a failed one too: the conversation goes on from it
                await self._keep(kid, shape, body, run, length)
            yield ending
        except Exception as exc:
            refusal = run.refusal(exc)
            if refusal is None:
                raise
            yield shape.event(
                "error", code=refusal.code, message=refusal.message, param=refusal.param
            )
        finally:
            await _close(stream)  # a client that went away cancels the run
            if not kept:
                await run.forget()

    def _end(
        self,
        run: Run,
        shape: ResponseShape,
        result: seamkit.RunResult,
        so_far: str,
        opened: bool,
    ) -> tuple[bytes, dict[str, object]]:
        """The last events and the finished response object."""
        text, _, failure = run.answer(result)
        if failure is not None:
            body = shape.body(_failed(failure, result))
            return shape.event("response.failed", response=body), body
        rendered = ResponseShape.outcome(result, text, run.pending(result), run.handed(result))
        out = b""
        index = 0
        if rendered.has_message:
            if not opened:
                out += self._opened(shape)
            if text.startswith(so_far) and text != so_far:
                out += self._delta(shape, text[len(so_far) :])
            where = {"item_id": shape.message_id, "output_index": 0, "content_index": 0}
            out += shape.event("response.output_text.done", text=text, logprobs=[], **where)
            out += shape.event("response.content_part.done", part=shape.part(text), **where)
            out += shape.event(
                "response.output_item.done", output_index=0, item=shape.message(text)
            )
            index = 1
        out += self._calls(shape, rendered.calls, index)
        body = shape.body(rendered)
        kind = "response.completed" if rendered.status == "completed" else "response.incomplete"
        return out + shape.event(kind, response=body), body

    def _calls(self, shape: ResponseShape, calls: Sequence[ClientCall], start: int) -> bytes:
        """The events of the function calls handed to the client."""
        out = b""
        for index, call in enumerate(calls, start=start):
            item_id = ResponseShape.call_item(call)
            arguments = call.arguments
            out += shape.event(
                "response.output_item.added",
                output_index=index,
                item=shape.call(call, arguments=""),
            )
            out += shape.event(
                "response.function_call_arguments.delta",
                item_id=item_id,
                output_index=index,
                delta=arguments,
            )
            out += shape.event(
                "response.function_call_arguments.done",
                item_id=item_id,
                output_index=index,
                arguments=arguments,
            )
            out += shape.event(
                "response.output_item.done", output_index=index, item=shape.call(call)
            )
        return out


def _failed(failure: ApiError, result: seamkit.RunResult) -> Rendered:
    """A failed run as a response says it: ``server_error`` (the code the
    SDKs' types know) and the message."""
    return Rendered(
        "failed", None, "", (), result.usage, {"code": "server_error", "message": failure.message}
    )
