"""The release of the model's text: nothing the model writes leaves a run
(a `TextDelta`, the transcript, ``RunResult.output``, a tool call's
arguments) before every text guard let it out.

The guards are the run's redactor, first, when the run has secrets (it holds
the characters that could begin one and masks each one that completes), then
the ``on_text_delta`` hooks, composed as the events table says
(`seamkit._holding`). A run with neither makes no `TextRelease` at all.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from .. import flow as F
from .._events import HookEvent
from .._holding import Held
from .._secret import Redactor
from .._types import MessageToolCall, ModelTurn
from ..flow import Dispatched

__all__ = ["TextRelease", "TextStopped"]

Dispatch = Callable[[HookEvent, str, bool], Awaitable[Dispatched]]
"""Runs the ``on_text_delta`` hooks on ``(text, final)``."""


class TextStopped(Exception):
    """A text guard ended the run (``Terminate``): ``released`` is the text
    that had left by then, all the stream showed of the turn."""

    def __init__(self, reason: str, hook: str | None, released: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.hook = hook
        self.released = released


class TextRelease:
    """One model turn's text on its way out: `feed` it the deltas as they
    arrive and each call returns what may leave now; `end` returns the rest.
    `whole` guards a separate text at once (a tool call's arguments, a turn
    that did not stream)."""

    __slots__ = ("_dispatch", "_pending", "_redactor", "released")

    def __init__(self, redactor: Redactor | None, dispatch: Dispatch | None) -> None:
        self._redactor = redactor
        self._dispatch = dispatch
        self._pending = ""
        self.released = ""
        """Everything released so far, in order."""

    async def feed(self, delta: str) -> str:
        """Take a delta; the text every guard released (maybe ``""``)."""
        held = await self._guard(self._pending + delta, final=False)
        self._pending = held.kept
        out = held.released
        self.released += out
        return out

    async def end(self) -> str:
        """The turn ended: what was held, as the guards release it at last."""
        held = await self._guard(self._pending, final=True)
        self._pending = ""
        self.released += held.text
        return held.text

    async def whole(self, text: str) -> str:
        """``text`` as the guards release it, seen all at once (``final``)."""
        return (await self._guard(text, final=True)).text

    async def _guard(self, text: str, *, final: bool) -> Held:
        held = Held.of(text)
        if self._redactor is not None:
            held = _redacted(self._redactor, held, final)
        if self._dispatch is not None and (held.text or final):
            decided = await self._dispatch(HookEvent.ON_TEXT_DELTA, held.text, final)
            flow = decided.flow
            if type(flow) is F.Terminate:
                raise TextStopped(flow.reason, decided.hook, self.released)
            if type(flow) is F.Hold or type(flow) is F.RewriteText:
                held = held.then(flow)
        return Held.of(held.text) if final else held

    async def turn(self, turn: ModelTurn, streamed: str | None) -> ModelTurn:
        """``turn`` as it may be committed: its text what was released (for a
        streamed turn, ``streamed`` is the raw text its deltas carried), its
        tool calls' arguments each guarded whole."""
        message = turn.message
        text = message.text
        if streamed is None:
            released = await self.whole(text) if text else ""
            self.released = released
        else:
            if text.startswith(streamed) and len(text) > len(streamed):
                await self.feed(text[len(streamed) :])  # what the provider did not stream
            await self.end()
            released = self.released
        update: dict[str, object] = {}
        if released != text:
            update["content"] = released if released or message.content is not None else None
        calls = message.tool_calls
        if calls:
            guarded = [await self._call(call) for call in calls]
            if any(g is not c for g, c in zip(guarded, calls, strict=True)):
                update["tool_calls"] = tuple(guarded)
        if not update:
            return turn
        return turn.model_copy(update={"message": message.model_copy(update=update)})

    async def _call(self, call: MessageToolCall) -> MessageToolCall:
        """A tool call as it may be surfaced: its argument text guarded; an
        id or a name that holds a secret does not leave either (the id is
        dropped, so the run gives the call a fresh one; the name is masked,
        so the call is invalid and the model is told)."""
        function = call.function
        arguments = await self.whole(function.arguments)
        name = self._redactor(function.name) if self._redactor is not None else function.name
        if arguments != function.arguments or name != function.name:
            function = function.model_copy(update={"arguments": arguments, "name": name})
        secret_id = self._redactor is not None and self._redactor(call.id) != call.id
        if function is call.function and not secret_id:
            return call
        return call.model_copy(update={"function": function, "id": "" if secret_id else call.id})


def _redacted(redactor: Redactor, held: Held, final: bool) -> Held:
    """The redactor as the first guard: every whole secret masked, the
    characters that could begin one held (none at the end)."""
    text = held.text
    keep = 0 if final else redactor.unfinished(text)
    head = text[: len(text) - keep]
    masked = redactor(head)
    if masked == head:
        return held.then(F.Hold(keep)) if keep else held
    return held.then(F.RewriteText(masked + text[len(head) :], keep))
