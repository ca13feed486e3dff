"""A session's conversation as its client sees it, and what is new in a
request: the client may send only its new messages, or its whole visible
conversation, which must then start with the stored one.

What is matched of a stored transcript (`Conversation.visible`): each of
the user's messages, and each assistant message that handed calls to the
client, with those calls. A client's copy is matched against it by place,
by the user's texts, and by the calls (tool, arguments, and an id this
server issued for exactly that call: `seamkit_serve._handed`). Its
assistant messages without calls are the replies it was shown, and are not
compared: the reply a client got may be what the app's hooks made of it (a
rewritten output, a terminal tool's result, a stop's reason), or an error
for a run that failed, while the session holds the model's turns. Its
results are not compared either (a call the client abandoned has a "Not
run" result in the session), but each must answer a call matched before
it.

What is new is either user messages, or the results of the calls the last
reply handed out (`seamkit.ClientResults`), each for an id the server issued
to that key in that conversation, with the same tool and arguments, not
expired; anything else is a 400 that names the id, or a 409 when the
conversation contradicts the stored one.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import seamkit

from ._handed import CallIds
from ._wire import ApiError

__all__ = ["Conversation", "Turn", "answer_json", "app_tools", "reply_text"]

_NOT_OURS = "was not handed out by this server to this API key in this conversation"
_GONE = (
    "belongs to no conversation this server keeps for this API key: it was not handed "
    "out here, or its conversation ended (serve.client_tool_ttl_seconds without a "
    "request, or a session deleted); start a new conversation"
)

SEPARATOR = "\n\n"
"""Between the texts of two model turns of one run, in the one reply a client gets."""


def reply_text(messages: Sequence[seamkit.Message]) -> str:
    """The texts of ``messages``' assistant messages, as one reply."""
    return SEPARATOR.join(m.text for m in messages if m.role == "assistant" and m.text)


def answer_json(output: seamkit.Output[object], value: object) -> str:
    """The reply a client gets for a structured run's validated ``value``:
    its JSON (`seamkit.Output.dump`)."""
    return json.dumps(output.dump(value), ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class Turn:
    """One message of a stored conversation that a client's copy is matched
    against: the user's (``text``), or an assistant turn that handed
    ``calls`` to the client."""

    role: str
    text: str = ""
    calls: tuple[seamkit.ToolCall, ...] = ()


def app_tools(agent: seamkit.Agent, output: seamkit.Output[object] | None) -> frozenset[str]:
    """The names of the calls the server runs: the app's tools and its output tool."""
    names = set(agent.tools)
    declared = output if output is not None else agent.output
    if declared is not None:
        names.add(declared.name)
    return frozenset(names)


def _arguments(raw: str) -> object:
    """Arguments as JSON values, for comparing (the text when it is not JSON,
    or nested too deeply to read)."""
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return raw


def _first_id(message: seamkit.Message) -> str:
    """The first tool-call id ``message`` carries."""
    if message.role == "tool":
        return message.tool_call_id or ""
    return next((c.id for c in message.tool_calls or ()), "")


def _shown(given: str) -> str:
    """A client's id as an error message shows it: at most 64 characters."""
    return given if len(given) <= 64 else given[:61] + "..."


@dataclass(frozen=True, slots=True)
class Conversation:
    """How one request's messages meet its session's stored transcript.

    ``app_tools`` are the names the server runs (the app's tools and its
    output tool): a call to any other is the client's; ``client_tools`` the
    names of the tools the request brings. ``ids`` checks the
    ids the client sends back, ``caller`` is the API key's identity and
    ``session`` the client-facing session name; results expire at
    ``serve.client_tool_ttl_seconds``."""

    sent: tuple[seamkit.Message, ...]
    app_tools: frozenset[str]
    client_tools: frozenset[str]
    ids: CallIds
    caller: str
    session: str
    clock: float = field(default_factory=time.time)

    # --- what the client saw ---------------------------------------------------

    def visible(self, transcript: Sequence[seamkit.Message]) -> list[Turn]:
        """What is matched of the conversation the client saw (see the
        module's docstring)."""
        out: list[Turn] = []
        for message in transcript:
            if message.from_user:
                out.append(Turn("user", message.text.strip()))
            elif message.role == "assistant":
                calls = self._handed(message)
                if calls:
                    out.append(Turn("assistant", calls=calls))
        return out

    def _handed(self, message: seamkit.Message) -> tuple[seamkit.ToolCall, ...]:
        """The calls of a model turn that went to the client."""
        return tuple(
            seamkit.ToolCall.from_message(call, i)
            for i, call in enumerate(message.tool_calls or ())
            if call.function.name not in self.app_tools
        )

    def open_calls(self, transcript: Sequence[seamkit.Message]) -> list[seamkit.ToolCall]:
        """The calls the last reply handed out that no result answers yet."""
        answered: set[str] = set()
        for message in reversed(transcript):
            if message.role == "tool":
                answered.add(message.tool_call_id or "")
            elif message.role == "assistant":
                return [c for c in self._handed(message) if c.id not in answered]
            else:
                return []
        return []

    # --- the client's copy --------------------------------------------------------

    def _same(self, mine: seamkit.Message, seen: Turn) -> bool:
        """Whether the client's ``mine`` is the message it was shown as ``seen``."""
        if mine.role != seen.role:
            return False
        if seen.role == "user":
            return mine.text.strip() == seen.text
        given = mine.tool_calls or ()
        return len(given) == len(seen.calls) and all(
            g.function.name == c.name
            and _arguments(g.function.arguments) == c.arguments
            and self._issued(g.id, c)
            for g, c in zip(given, seen.calls, strict=True)
        )

    def _issued(self, given: str, call: seamkit.ToolCall) -> bool:
        return self.ids.matches(given, call, caller=self.caller, session=self.session)

    def new_messages(
        self, stored: Sequence[seamkit.Message]
    ) -> list[seamkit.Message] | seamkit.ClientResults:
        """What the request adds to the ``stored`` transcript: new user
        messages (a new session takes all of them), or the results of the
        calls the last reply handed out. The client's system messages are
        left out after the first request."""
        if not stored:  # a new conversation, or one the server no longer keeps
            for message in self.sent:
                if message.role == "tool" or message.tool_calls:
                    self._unknown(message, _GONE, _first_id(message))
            return list(self.sent)
        sent = [(i, m) for i, m in enumerate(self.sent) if m.role != "system"]
        # what is matched: the user's messages and the calls handed out (the
        # replies it was shown and the results it sent are not compared)
        mine = [(i, m) for i, m in sent if m.role == "user" or m.tool_calls]
        seen = self.visible(stored)
        new: list[seamkit.Message] = []
        matched = len(mine) >= len(seen) and all(
            self._same(m, t) for (_, m), t in zip(mine, seen, strict=False)
        )
        if matched:
            last = mine[len(seen) - 1][0] if seen else -1
            verified = {c.id for _, m in mine[: len(seen)] for c in m.tool_calls or ()}
            self._answering(self.sent[: last + 1], verified)
            new = self._tail(self.sent[last + 1 :], stored, verified)
        if matched and not new and any(m.role == "tool" for _, m in sent):
            raise ApiError(
                409,
                "the conversation sent adds nothing to the stored one: its results were taken "
                "already (send a new message; an Idempotency-Key makes a retry safe)",
                param="messages",
                code="nothing_new",
            )
        if not new and all(m.role == "user" for _, m in sent):
            new = [m for _, m in sent]  # the client sent only its new messages
        elif not new and all(m.role == "tool" for _, m in sent):
            new = [m for _, m in sent]  # only the results of the calls handed out
        if not new:
            where = next(
                (
                    i
                    for i, ((_, m), t) in enumerate(zip(mine, seen, strict=False))
                    if not self._same(m, t)
                ),
                len(seen),
            )
            if where < len(mine):
                self._not_seen(mine[where][1])
            raise ApiError(
                409,
                f"the conversation sent contradicts the session's stored one at visible "
                f"message {where} (of {len(seen)} stored): send only the new messages, or the "
                "whole conversation as this session has it",
                param="messages",
                code="session_conflict",
            )
        if all(m.role == "tool" for m in new):
            return self._results(new, self.open_calls(stored))
        if any(m.role == "tool" for m in new):
            raise ApiError(
                400,
                "the new messages mix tool results with other messages: send the results "
                "of the calls handed out, then the next user message in another request",
                param="messages",
            )
        return new

    def _answering(self, history: Sequence[seamkit.Message], verified: set[str]) -> None:
        """A 400 for a result in the client's ``history`` that answers no
        call handed out (and matched) before it."""
        for message in history:
            if message.role == "tool" and message.tool_call_id not in verified:
                self._unknown(message, "answers no call handed out before it in this conversation")

    def _tail(
        self,
        after: Sequence[seamkit.Message],
        stored: Sequence[seamkit.Message],
        verified: set[str],
    ) -> list[seamkit.Message]:
        """What the client sent after the last message the session holds:
        its new messages, without the replies it was shown and the results
        of calls answered already (the session has them); a call it says
        was made there was not (a 400)."""
        waiting = self.open_calls(stored)
        out: list[seamkit.Message] = []
        for message in after:
            if message.role == "system" or (message.role == "assistant" and not message.tool_calls):
                continue
            if message.tool_calls:
                self._not_seen(message)
            if message.role == "tool":
                given = message.tool_call_id or ""
                if not any(self._issued(given, c) for c in waiting) and given in verified:
                    continue  # answered already: history
            out.append(message)
        return out

    def _unknown(self, message: seamkit.Message, why: str, given: str | None = None) -> None:
        """A 400 naming the tool-call id of ``message`` and ``why`` it is refused."""
        given = given if given is not None else message.tool_call_id or ""
        where = f"messages[{self.sent.index(message)}]"
        raise ApiError(
            400,
            f"{where}: the tool call id {_shown(given)!r} {why}",
            param=where,
            code="unknown_tool_call",
        )

    def _not_seen(self, message: seamkit.Message) -> None:
        """A 400 for a tool call or result of the client's that contradicts
        the stored conversation: its id is not one handed out here for that
        tool and those arguments (forged, changed, or another's)."""
        ids = [c.id for c in message.tool_calls or ()]
        if message.role == "tool":
            ids.append(message.tool_call_id or "")
        if ids:
            self._unknown(message, f"{_NOT_OURS}, for that tool and those arguments", ids[0])

    def _results(
        self, new: Sequence[seamkit.Message], handed: Sequence[seamkit.ToolCall]
    ) -> seamkit.ClientResults:
        """The client's results for the ``handed`` calls, checked."""
        results: dict[str, str] = {}
        now = int(self.clock)
        for message in new:
            given = message.tool_call_id or ""
            index = self.sent.index(message)
            where = f"messages[{index}]"
            call = next((c for c in handed if self._issued(given, c)), None)
            if call is not None and call.name not in self.client_tools:
                raise ApiError(
                    400,
                    f"{where}: the call {_shown(given)!r} is to the tool {call.name!r}, which this "
                    "request's tools do not include: send the tools with every request",
                    param="tools",
                    code="tool_not_given",
                )
            if call is None:
                raise ApiError(
                    400,
                    f"{where}: the tool call id {_shown(given)!r} is not one of the calls this "
                    "conversation handed out and waits for",
                    param=where,
                    code="unknown_tool_call",
                )
            decoded = self.ids.decode(given)
            if decoded is not None and decoded.expires <= now:
                raise ApiError(
                    400,
                    f"{where}: the call {_shown(given)!r} expired (serve.client_tool_ttl_seconds); "
                    "send a new message instead",
                    param=where,
                    code="tool_call_expired",
                )
            if call.id in results:
                raise ApiError(400, f"{where}: a second result for {_shown(given)!r}", param=where)
            results[call.id] = message.text
        missing = [c.name for c in handed if c.id not in results]
        if missing:
            raise ApiError(
                400,
                f"the request answers {len(results)} of the {len(handed)} calls handed out; "
                f"send a result for each (missing: calls to {', '.join(missing)})",
                param="messages",
                code="tool_results_missing",
            )
        return seamkit.ClientResults(results)
