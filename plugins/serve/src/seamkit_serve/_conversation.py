"""A session's conversation as its client sees it, and what is new in a
request: the client may send only its new message, or its whole visible
conversation, which must then start with the stored one."""

from __future__ import annotations

import json
from collections.abc import Sequence

import seamkit

from ._wire import ApiError

__all__ = ["answer_json", "new_messages", "reply_text", "visible"]

Visible = list[tuple[str, str]]

SEPARATOR = "\n\n"
"""Between the texts of two model turns of one run, in the one reply a client gets."""


def reply_text(messages: Sequence[seamkit.Message]) -> str:
    """The texts of ``messages``' assistant messages, as one reply."""
    return SEPARATOR.join(m.text for m in messages if m.role == "assistant" and m.text)


def answer_json(output: seamkit.Output[object], value: object) -> str:
    """The reply a client gets for a structured run's validated ``value``:
    its JSON (`seamkit.Output.dump`)."""
    return json.dumps(output.dump(value), ensure_ascii=False)


def _accepted(output: seamkit.Output[object], reply: Sequence[seamkit.Message]) -> str:
    """The JSON a client saw for a structured run's ``reply`` (the messages
    between two of the user's): the last answer, when it validates (a run
    that ended failed showed the client an error, not an answer). Earlier
    answers were rejected, and feedback, tool calls and texts beside the
    answer are the server's own."""
    answers = [m for m in reply if m.role == "assistant"]
    if not answers:
        return ""
    last = answers[-1]
    calls = [c for c in last.tool_calls or () if c.function.name == output.name]
    text = calls[0].function.arguments if calls else last.text
    try:
        return answer_json(output, output.parse(text))
    except seamkit.OutputInvalid:
        return ""


def visible(
    transcript: Sequence[seamkit.Message], output: seamkit.Output[object] | None = None
) -> Visible:
    """``(role, text)`` of what the client saw: each user message, and the
    assistant texts between two user messages as one reply (with a declared
    ``output``: the accepted answer's JSON). Injected pairs, tool calls, tool
    results, the run's feedback and system messages are the server's own."""
    out: Visible = []
    reply: list[seamkit.Message] = []

    def close_reply() -> None:
        text = reply_text(reply).strip() if output is None else _accepted(output, reply)
        if text:
            out.append(("assistant", text))
        reply.clear()

    for message in transcript:
        if message.from_user:
            close_reply()
            out.append(("user", message.text.strip()))
        elif message.role == "user":
            continue  # the run's feedback to its model
        elif message.role == "assistant":
            reply.append(message)
    close_reply()
    return out


def new_messages(
    stored: Sequence[seamkit.Message],
    sent: Sequence[seamkit.Message],
    output: seamkit.Output[object] | None = None,
) -> list[seamkit.Message]:
    """What ``sent`` adds to the stored conversation. A new session takes
    all of it; otherwise the client's system messages are left out (the
    first request's are kept), and the rest is either the stored visible
    conversation followed by new messages, or user messages only (just the
    new ones). Anything else contradicts the stored conversation: a 409.
    ``output`` is the app's declared output (`visible`)."""
    if not stored:
        return list(sent)
    client = [m for m in sent if m.role != "system"]
    seen = visible(stored, output)
    mine = [(m.role, m.text.strip()) for m in client]
    if len(mine) > len(seen) and mine[: len(seen)] == seen:
        return client[len(seen) :]
    if all(m.role == "user" for m in client):
        return client
    where = next((i for i, (a, b) in enumerate(zip(mine, seen, strict=False)) if a != b), len(seen))
    raise ApiError(
        409,
        f"the conversation sent contradicts the session's stored one at visible message "
        f"{where} (of {len(seen)} stored): send only the new message, or the whole "
        "conversation as this session has it",
        param="messages",
        code="session_conflict",
    )
