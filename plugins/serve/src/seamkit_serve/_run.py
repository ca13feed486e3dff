"""One request's run, answered whole or streamed: a chat completion's, or the
continuation a decisions request asks for.

A stream's headers go out with the run's first event: a run refused before
it starts (a conflicting history, a busy session, calls that wait for a
decision) is an HTTP error, streamed or not; a stored session that cannot
be read is a 500 in OpenAI's shape whole, and streamed an error event and
``[DONE]``, wherever in the run it fails. A run that ends ``suspended``
answers with a text naming what waits, and ``seamkit: {outcome, session,
pending}`` beside the choices (on a stream, in the chunk that carries the
finish reason). A run that ends ``deferred`` (the model called the
client's tools) answers with those calls, under ids the server issued
(`seamkit_serve._handed`), and ``finish_reason: "tool_calls"``. A run with
a declared output (the app's,
`seamkit.Agent.output`, or the client's ``response_format``) answers with
the validated value's JSON, streamed or not: a stream holds the model's
text and sends the JSON once the run completed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import seamkit
from seamkit.plugins import continue_trace
from seamkit.stream import Event, RunFinished, TextDelta
from starlette.responses import JSONResponse, Response, StreamingResponse

from ._conversation import SEPARATOR, answer_json, reply_text
from ._edges import SESSION_HEADER
from ._error import ApiError
from ._handed import Handout
from ._pending import described, notice, waiting
from ._wire import chunk, completion, new_id, sse

__all__ = [
    "OUTCOME_HEADER",
    "SESSION_HEADER",
    "Run",
    "RunInput",
    "added",
    "detached",
    "error_response",
    "waits",
]

log = logging.getLogger("seamkit.serve")

OUTCOME_HEADER = "x-seamkit-outcome"
"""The header of a whole answer that says how its run ended."""

_DONE = b"data: [DONE]\n\n"

_UNREADABLE = "session_unreadable"
"""The code of the 500 for a stored session that cannot be read (or saved)."""

RunInput = (
    None
    | seamkit.Decisions
    | list[seamkit.Message]
    | Callable[[tuple[seamkit.Message, ...]], list[seamkit.Message] | seamkit.ClientResults]
)
"""What a run answers: decisions, the client's messages, what a client's
messages add to its session's stored transcript, or nothing (a run that
continues)."""
Refusal = Callable[[seamkit.ResumeError], ApiError]
"""How a request refuses a run that cannot continue as asked."""


def error_response(exc: ApiError, headers: Mapping[str, str] | None = None) -> Response:
    """``exc`` as an answer in OpenAI's error shape, with ``headers`` and
    whether a client may retry it (`ApiError.headers`)."""
    return JSONResponse(
        exc.body(), status_code=exc.status, headers={**(headers or {}), **exc.headers()}
    )


@dataclass(slots=True)
class Run:
    """One request's run.

    ``session`` is the store's name (``<api_key_id>/<NAME>``) and ``shown``
    the client's (``NAME``); ``made`` marks a session the server made for a
    request that named none, which is deleted after the run unless the run
    suspended. ``continues`` holds the ids of the calls a decisions request
    decided: what the run adds starts after the turn that made them.
    ``refused`` turns a `seamkit.ResumeError` into the answer's error;
    ``trace`` is the caller's trace-context headers, which the run continues.
    ``output`` is the run's output when the request asked for one (a
    client's ``response_format``); ``None``: the app's own, if any.
    ``tools`` are the client's tools and ``handout`` how calls to them are
    handed back.
    """

    agent: seamkit.Agent
    model: str
    input: RunInput
    store: seamkit.SessionStore | None
    context: Mapping[str, Any]
    trace: Mapping[str, str]
    refused: Refusal
    session: str | None = None
    shown: str | None = None
    made: bool = False
    continues: frozenset[str] = frozenset()
    defaults: seamkit.RequestPatch = field(default_factory=seamkit.RequestPatch)
    include_usage: bool = False
    output: seamkit.Output[object] | None = None
    tools: tuple[seamkit.ToolSpec, ...] = ()
    handout: Handout | None = None
    gone: bool = False
    """The session the server made for this run was deleted (`forget`)."""
    kept: Callable[[str], Awaitable[None]] | None = None
    """Told the store's name of the session once a run kept it (a
    conversation the server made: `seamkit_serve._made.Conversations.touch`)."""
    id: str = field(default_factory=new_id)

    @property
    def declared(self) -> seamkit.Output[object] | None:
        """The output the run answers with (``None``: text)."""
        return self.agent.output if self.output is None else self.output

    def _options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"context": self.context, "defaults": self.defaults}
        if self.session is None:
            options["state"] = {}  # no freshness carried between clients' requests
        else:
            options["session"] = self.session
            options["store"] = self.store
        if self.output is not None:
            options["output"] = self.output
        if self.tools:
            options["client_tools"] = self.tools
        return options

    def _input(self) -> RunInput:
        """The run's input; a continuation that answers handed-out calls
        makes the reply start after the turn that handed them out."""
        given = self.input
        if not callable(given):
            return given

        def input(
            stored: tuple[seamkit.Message, ...],
        ) -> list[seamkit.Message] | seamkit.ClientResults:
            out = given(stored)
            if isinstance(out, seamkit.ClientResults):
                self.continues = frozenset(out.results)
            return out

        return input

    def refusal(self, exc: Exception) -> ApiError | None:
        """The answer to a run refused before it started, if ``exc`` is one."""
        if isinstance(exc, ApiError):
            return exc
        if isinstance(exc, seamkit.SessionBusy):
            return ApiError(409, exc.message, code="session_busy")
        if isinstance(exc, seamkit.ResumeError):
            return self.refused(exc)
        if isinstance(exc, seamkit.SessionError) and self.session is not None:
            # a stored session that cannot be read (or saved): the why, which
            # names the store, goes to the log; the client learns which one
            log.warning("session %r: %s", self.shown, exc.message)
            return ApiError(
                500,
                f"the session {self.shown!r} could not be read or saved; "
                "the server's log says why (an operator can export or delete it with "
                "'seamkit sessions')",
                type="server_error",
                code=_UNREADABLE,
            )
        if isinstance(exc, seamkit.ToolDefinitionError):  # the client's tools
            return ApiError(400, exc.message, param="tools", code="invalid_tools")
        if isinstance(exc, seamkit.OutputDefinitionError):  # the client's response_format
            return ApiError(
                400, exc.message, param="response_format", code="invalid_response_format"
            )
        return None

    def _headers(self, kept: bool) -> dict[str, str]:
        return {SESSION_HEADER: self.shown} if self.shown and kept else {}

    async def keep(self, kept: bool) -> None:
        """Tell `kept` that the run kept its session."""
        if kept and not self.gone and self.kept is not None and self.session is not None:
            await self.kept(self.session)

    async def forget(self) -> None:
        """Delete the session the server made for this run (once)."""
        if not (self.made and self.session and self.store) or self.gone:
            return
        self.gone = True
        try:
            await self.store.delete(self.session)
        except seamkit.SeamkitError as exc:
            log.warning("could not delete the run's own session: %s", exc.message)

    # --- whole ------------------------------------------------------------------

    async def whole(self) -> Response:
        """The answer as one ``chat.completion``."""
        try:
            result = await self.result()
        except ApiError as refusal:
            return error_response(refusal, self._headers(not self.made))
        kept = waits(result.outcome) or not self.made
        text, finish, failure = self.answer(result)
        headers = {OUTCOME_HEADER: result.outcome.kind, **self._headers(kept)}
        if failure is not None:
            return error_response(failure, headers)
        body = completion(
            self.id,
            self.model,
            text,
            finish,
            result.usage,
            self.pending(result),
            self.handed(result),
        )
        return JSONResponse(body, headers=headers)

    # --- streamed ---------------------------------------------------------------

    async def streamed(self) -> Response:
        """The answer as server-sent events; an error answer when the run is
        refused before its first event."""
        try:
            stream, first = await self.opened()
        except ApiError as refusal:
            if refusal.code == _UNREADABLE:  # the server's failure: said as a stream's
                return StreamingResponse(
                    iter([sse(refusal.body()) + _DONE]),
                    media_type="text/event-stream",
                    headers=self._headers(not self.made),
                )
            return error_response(refusal, self._headers(not self.made))
        return StreamingResponse(
            detached(self._events(stream, first)),
            media_type="text/event-stream",
            headers=self._headers(True),  # the outcome is not known yet
        )

    async def _events(
        self, stream: AsyncIterator[Event], event: Event | None
    ) -> AsyncIterator[bytes]:
        """The SSE body. The role chunk goes out with the first text, and the
        finish, usage and ``[DONE]`` go out as one write: fewer writes, the
        same events."""
        pending = sse(chunk(self.id, self.model, {"role": "assistant", "content": ""}))
        ending = b""
        turn_with_text = 0
        sent_text: list[str] = []
        kept = False
        # a structured run's text is its answers, held: the reply is the
        # validated value's JSON, sent once the run completed
        held = self.declared is not None
        try:
            while event is not None:
                if isinstance(event, TextDelta) and event.text and not held:
                    text = event.text
                    if turn_with_text and event.turn != turn_with_text:
                        text = SEPARATOR + text
                    turn_with_text = event.turn
                    sent_text.append(text)
                    yield pending + sse(chunk(self.id, self.model, {"content": text}))
                    pending = b""
                elif isinstance(event, RunFinished):
                    kept = waits(event.result.outcome)
                    ending = pending + self._end(event.result, "".join(sent_text))
                    pending = b""
                event = await anext(stream, None)
            # the agent's stream ends once the session is saved: only then the
            # [DONE], so a client's next request always finds this one stored
            # (and never the session the server made for a run that did not
            # suspend)
            if not kept:
                await self.forget()
            await self.keep(kept or not self.made)
            yield ending
        except Exception as exc:
            refusal = self.refusal(exc)
            if refusal is None:
                raise
            yield pending + sse(refusal.body()) + _DONE
        finally:
            await _close(stream)  # a client that went away cancels the run
            if not kept:
                await self.forget()

    def _end(self, result: seamkit.RunResult, so_far: str) -> bytes:
        """The last events: what the stream has not said yet (a terminal
        tool's result, what waits for approval), the finish (with
        ``seamkit`` when the run suspended), the usage if asked for,
        ``[DONE]``; or the error of a run that failed."""
        full, finish, failure = self.answer(result)
        if failure is not None:
            return sse(failure.body()) + _DONE
        out = b""
        if full.startswith(so_far) and full != so_far:
            out += sse(chunk(self.id, self.model, {"content": full[len(so_far) :]}))
        calls = self.handed(result)
        if calls:
            indexed = [{"index": i, **call} for i, call in enumerate(calls)]
            out += sse(chunk(self.id, self.model, {"tool_calls": indexed}))
        out += sse(chunk(self.id, self.model, {}, finish, extra=self.pending(result)))
        if self.include_usage:
            out += sse(chunk(self.id, self.model, None, used=result.usage))
        return out + _DONE

    # --- the answer -------------------------------------------------------------

    def answer(self, result: seamkit.RunResult) -> tuple[str, str, ApiError | None]:
        """The reply text, the finish reason, or the error a run's outcome gives."""
        outcome = result.outcome
        if isinstance(outcome, seamkit.Failed):
            return "", "stop", ApiError(500, outcome.error, type="server_error", code="run_failed")
        if isinstance(outcome, seamkit.Cancelled):
            return "", "stop", ApiError(504, "the run was cancelled", type="server_error")
        declared = self.declared
        if declared is not None:  # the validated value only: never an answer it rejected
            completed = isinstance(outcome, seamkit.Completed)
            text = answer_json(declared, result.output) if completed else ""
        else:
            text = reply_text(added(result.transcript, self.continues))
            output = result.output if isinstance(result.output, str) else None
            if output and not text.endswith(output):
                text = f"{text}{SEPARATOR}{output}" if text else output
        if isinstance(outcome, seamkit.Terminated) and not text:
            text = outcome.reason
        if isinstance(outcome, seamkit.Suspended):
            said = notice(waiting(outcome.pending), self.agent.redactor)
            text = f"{text}{SEPARATOR}{said}" if text else said
        return text, _finish(outcome), None

    def handed(self, result: seamkit.RunResult) -> list[dict[str, object]] | None:
        """The ``tool_calls`` of a deferred run's answer, with the ids issued
        for its calls."""
        outcome = result.outcome
        if not isinstance(outcome, seamkit.Deferred) or self.handout is None:
            return None
        return self.handout.tool_calls(outcome.calls, self.shown or "", time.time())

    def pending(self, result: seamkit.RunResult) -> dict[str, object] | None:
        """The ``seamkit`` field of a suspended run's answer."""
        outcome = result.outcome
        if not isinstance(outcome, seamkit.Suspended):
            return None
        return {
            "outcome": outcome.kind,
            "session": self.shown,
            "pending": described(waiting(outcome.pending), self.agent.redactor),
        }

    # --- the run (also for another wire format: the Responses API) -----------------

    async def result(self) -> seamkit.RunResult:
        """The run's result (what `whole` answers with; a caller that writes
        its own answer calls it too): a run refused before it started raises
        its `ApiError`; the session the server made is gone unless the run
        goes on later (`waits`), and a kept one is told to `kept`."""
        try:
            with continue_trace(self.trace):
                result = await self.agent.run(self._input(), **self._options())
        except Exception as exc:
            await self.forget()
            refusal = self.refusal(exc)
            if refusal is None:
                raise
            raise refusal from None
        if not waits(result.outcome):
            await self.forget()  # gone before the answer: a client never finds it
        await self.keep(waits(result.outcome) or not self.made)
        return result

    async def opened(self) -> tuple[AsyncIterator[Event], Event | None]:
        """The run's event stream and its first event (what `streamed`
        writes; a caller that writes its own stream calls it too); a run
        refused before its first event raises its `ApiError`. The caller
        closes the stream, `forget`s and `keep`s."""
        stream = self.agent.stream(self._input(), **self._options())
        try:
            # the agent's stream starts its run at the first event, in the
            # context of the moment: the caller's trace context, then
            with continue_trace(self.trace):
                first = await anext(stream, None)
        except Exception as exc:
            await _close(stream)
            await self.forget()
            refusal = self.refusal(exc)
            if refusal is None:
                raise
            raise refusal from None
        return stream, first


GUARDED = frozenset({"on_request_start", "on_text_delta", "on_post_tool_use"})
"""The events where a hook's stop is a content filter's: it refused what the
user wrote, what the model wrote, or what a tool returned."""


def waits(outcome: seamkit.Outcome) -> bool:
    """Whether a run that ended so goes on later (its session is kept)."""
    return isinstance(outcome, seamkit.Suspended | seamkit.Deferred)


def _finish(outcome: seamkit.Outcome) -> str:
    """The ``finish_reason`` of an answer: ``length`` at ``max_turns``,
    ``content_filter`` when a guard stopped the run, ``tool_calls`` when it
    handed calls to the client, else ``stop``."""
    if isinstance(outcome, seamkit.MaxTurns):
        return "length"
    if isinstance(outcome, seamkit.Deferred):
        return "tool_calls"
    if isinstance(outcome, seamkit.Terminated) and outcome.event in GUARDED:
        return "content_filter"
    return "stop"


def added(
    transcript: Sequence[seamkit.Message], continues: frozenset[str] = frozenset()
) -> list[seamkit.Message]:
    """What a run added to ``transcript``: the messages after the model turn
    that made the calls it ``continues``, or else after the user's last
    message (the run's feedback to its model is not the user's)."""
    if continues:
        for i in range(len(transcript) - 1, -1, -1):
            message = transcript[i]
            if message.role == "assistant" and any(
                call.id in continues for call in message.tool_calls or ()
            ):
                return list(transcript[i + 1 :])
    for i in range(len(transcript) - 1, -1, -1):
        if transcript[i].from_user:
            return list(transcript[i + 1 :])
    return list(transcript)


_PUMPS: set[asyncio.Task[None]] = set()
"""The tasks that make streamed answers."""


async def detached(body: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """``body``'s pieces, made in a task of their own, which a client that
    goes away cancels once.

    The server cancels a stream whose client disconnected with a cancel
    scope, which cancels again at each of the stream's awaits: a run closed
    in it would see a second cancellation at once and cut its
    ``on_completion``. Out of that scope, the run is cancelled once, and
    its ``on_completion`` finishes within its own deadline."""
    queue: asyncio.Queue[bytes | None] = asyncio.Queue()

    async def pump() -> None:
        try:
            async for piece in body:
                queue.put_nowait(piece)
        finally:
            queue.put_nowait(None)

    task = asyncio.ensure_future(pump())
    _PUMPS.add(task)  # held until done, wherever the answer went
    task.add_done_callback(_PUMPS.discard)
    try:
        while (piece := await queue.get()) is not None:
            yield piece
        await task  # its failure, if it failed
    finally:
        if not task.done():
            task.cancel()  # the one cancellation


async def _close(stream: AsyncIterator[Event]) -> None:
    close = getattr(stream, "aclose", None)
    if close is not None:
        await close()
