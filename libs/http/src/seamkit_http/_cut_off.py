"""The error for an answer that stopped before its end: how far it got (so
a user can tell a dropped stream from a server that never began), and why,
with secrets masked."""

from __future__ import annotations

from collections.abc import Sequence

import seamkit

__all__ = ["cut_off", "stream_progress"]


def stream_progress(
    count: int, unit: str, open_call: tuple[str, int] | None, text_so_far: str
) -> str:
    """How far a stream got: ``count`` ``unit`` (``"chunks"``, ``"events"``),
    then in the middle of which tool call (``open_call``: its name and the
    length of its arguments so far), else of the text, else before any of
    the answer."""
    if open_call is not None:
        name, length = open_call
        where_cut = (
            f"in the middle of tool call {name or '(unnamed)'!r} "
            f"({length} characters of arguments so far)"
        )
    elif text_so_far:
        where_cut = f"in the middle of the text ({len(text_so_far)} characters so far)"
    else:
        where_cut = "before any of the answer"
    return f"after {count} {unit}, {where_cut}"


def cut_off(
    exc: Exception | None,
    *,
    where: str,
    model: str,
    end: str,
    progress: str | None,
    timeout_seconds: float,
    secrets: Sequence[str],
    provider: str,
) -> seamkit.ModelError:
    """The error for an answer from ``where`` that stopped before ``end``
    (``"[DONE]"``, ``"message_stop"``): ``progress`` says how far a stream
    got (`stream_progress`; ``None`` for a whole body cut while it was read),
    ``exc`` what cut it (``None``: the stream just ended)."""
    where_cut = "while its body was read" if progress is None else progress
    if exc is None:
        cause = ""
    elif str(exc):
        cause = f": {type(exc).__name__}: {exc}"
    else:  # httpx's time-outs say nothing
        cause = f": {type(exc).__name__} (nothing for {timeout_seconds:g}s)"
    return seamkit.ModelError(
        seamkit.redact(
            f"the answer from {where} (model {model!r}) was cut off "
            f"before {end} {where_cut}{cause}",
            secrets,
        ),
        provider=provider,
        hint="the server or the network dropped the stream; run again",
    )
