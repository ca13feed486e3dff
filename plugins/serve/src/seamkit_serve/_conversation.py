"""A session's conversation as its client sees it, and what is new in a
request: the client may send only its new message, or its whole visible
conversation, which must then start with the stored one."""

from __future__ import annotations

from collections.abc import Sequence

import seamkit

from ._wire import ApiError

__all__ = ["new_messages", "reply_text", "visible"]

Visible = list[tuple[str, str]]

SEPARATOR = "\n\n"
"""Between the texts of two model turns of one run, in the one reply a client gets."""


def reply_text(messages: Sequence[seamkit.Message]) -> str:
    """The texts of ``messages``' assistant messages, as one reply."""
    return SEPARATOR.join(m.text for m in messages if m.role == "assistant" and m.text)


def visible(transcript: Sequence[seamkit.Message]) -> Visible:
    """``(role, text)`` of what the client saw: each user message, and the
    assistant texts between two user messages as one reply. Injected pairs,
    tool calls, tool results and system messages are the server's own."""
    out: Visible = []
    reply: list[seamkit.Message] = []

    def close_reply() -> None:
        text = reply_text(reply).strip()
        if text:
            out.append(("assistant", text))
        reply.clear()

    for message in transcript:
        if message.role == "user":
            close_reply()
            out.append(("user", message.text.strip()))
        elif message.role == "assistant":
            reply.append(message)
    close_reply()
    return out


def new_messages(
    stored: Sequence[seamkit.Message], sent: Sequence[seamkit.Message]
) -> list[seamkit.Message]:
    """What ``sent`` adds to the stored conversation. A new session takes
    all of it; otherwise the client's system messages are left out (the
    first request's are kept), and the rest is either the stored visible
    conversation followed by new messages, or user messages only (just the
    new ones). Anything else contradicts the stored conversation: a 409."""
    if not stored:
        return list(sent)
    client = [m for m in sent if m.role != "system"]
    seen = visible(stored)
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
