"""The pieces `check_model_provider`'s checks are made of: how a check
fails (`Failed`, `NotCovered`), what a stream gave (`Answer`), a model closed
after use (`Closing`), the tool-call and request comparisons, and keeping the
check's API key out of a report (`safe`)."""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from collections.abc import Callable

from .._types import Model, ModelTurn, ToolArgumentsDelta

__all__ = [
    "KEY_PREFIX",
    "Answer",
    "Closing",
    "Failed",
    "NotCovered",
    "close_model",
    "key_pieces",
    "lacking",
    "safe",
    "tool_calls",
    "turn_difference",
    "wait_until",
]


class Failed(Exception):
    """A check's failure: its message says why."""


class NotCovered(Exception):
    """A check whose cassette was not given."""


class Answer:
    """What one ``stream`` gave: its text deltas, fragments and turn."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.fragments: list[ToolArgumentsDelta] = []
        self.turn: ModelTurn | None = None


class Closing:
    """``async with Closing(model)``: the model, closed at the end when it
    has an ``aclose()``."""

    def __init__(self, model: Model) -> None:
        self.model = model

    async def __aenter__(self) -> Model:
        return self.model

    async def __aexit__(self, *exc: object) -> None:
        await close_model(self.model)


async def close_model(model: Model) -> None:
    """Call the model's ``aclose()`` (awaited when it is a coroutine), when
    it has one; `seamkit.Model` does not require it."""
    closes = getattr(model, "aclose", None)
    if closes is not None:
        closing = closes()
        if inspect.isawaitable(closing):
            await closing


def tool_calls(answer: Answer, name: str) -> list[tuple[str, str]]:
    """The turn's tool calls as ``(id, name)``, each with a non-empty id and
    JSON-object arguments that its fragments (if any) join to."""
    turn = answer.turn
    assert turn is not None
    calls = list(turn.message.tool_calls or ())
    if not calls:
        raise Failed(f"the turn has no tool calls (is the {name!r} cassette a tool call?)")
    pieces: dict[int, list[str]] = {}
    for fragment in answer.fragments:
        pieces.setdefault(fragment.index, []).append(fragment.text)
    for index, call in enumerate(calls):
        label = f"call {index} ({call.function.name!r})"
        if not call.id:
            raise Failed(f"{label} has an empty id")
        try:
            arguments = json.loads(call.function.arguments)
        except ValueError:
            raise Failed(f"{label}'s arguments are not JSON: {call.function.arguments!r}") from None
        if not isinstance(arguments, dict):
            raise Failed(f"{label}'s arguments are not a JSON object: {arguments!r}")
        if pieces:
            joined = "".join(pieces.get(index, []))
            try:
                streamed = json.loads(joined)
            except ValueError:
                raise Failed(
                    f"{label}'s ToolArgumentsDelta fragments join to {joined!r}, which is not JSON"
                ) from None
            if streamed != arguments:
                raise Failed(
                    f"{label}'s fragments join to {streamed!r}, but its arguments are {arguments!r}"
                )
    for fragment in answer.fragments:
        if fragment.id is not None and (
            fragment.index >= len(calls) or fragment.id != calls[fragment.index].id
        ):
            raise Failed(
                f"a fragment for index {fragment.index} names id {fragment.id!r}, "
                "which is not that call's id"
            )
    return [(call.id, call.function.name) for call in calls]


def lacking(expected: object, found: object, path: str) -> str | None:
    """Where ``found`` lacks part of ``expected`` (objects compare as
    subsets, anything else by equality), or ``None``."""
    if isinstance(expected, dict):
        if not isinstance(found, dict):
            return f"{path or 'the body'} is {found!r}, not an object"
        for key, value in expected.items():
            where = f"{path}.{key}" if path else str(key)
            if key not in found:
                return f"{where} is missing"
            missing = lacking(value, found[key], where)
            if missing:
                return missing
        return None
    if expected != found:
        return f"{path or 'the body'} is {found!r}, not {expected!r}"
    return None


def turn_difference(streamed: ModelTurn, whole: ModelTurn) -> str:
    """Where two turns differ, as up to five ``path: streamed X, whole Y``
    items, for a parity check's message."""
    left, right = streamed.model_dump(mode="json"), whole.model_dump(mode="json")
    found: list[str] = []

    def walk(a: object, b: object, path: str) -> None:
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b), key=str):
                walk(a.get(key), b.get(key), f"{path}.{key}" if path else str(key))
        elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for index, (x, y) in enumerate(zip(a, b, strict=True)):
                walk(x, y, f"{path}[{index}]")
        elif a != b:
            found.append(f"{path}: streamed {a!r}, whole {b!r}")

    walk(left, right, "")
    return "; ".join(found[:5]) or "(equal dumps, unequal turns)"


async def wait_until(condition: Callable[[], bool], timeout: float) -> bool:
    """Whether ``condition()`` came true within ``timeout`` seconds (polled
    every 20 ms)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


KEY_PREFIX = "sk-seamkit-check-"
"""How the fake key each run of the checks makes starts; the rest is random."""
_PIECE = 6


def key_pieces(key: str) -> set[str]:
    """Every run of 6 characters of the key's random part: an error that
    shows one shows part of the key (\"...3fa9c1\")."""
    secret = key.removeprefix(KEY_PREFIX)
    return {secret[i : i + _PIECE] for i in range(len(secret) - _PIECE + 1)}


def safe(text: str, key: str) -> str:
    """``text`` with the check's key (and any part of it) masked, so a
    report never shows it."""
    text = text.replace(key, "<api_key>")
    for piece in key_pieces(key):
        text = text.replace(piece, "<part of api_key>")
    return text
