"""`check_text_guard`: a text guard never lets out what it must not, however
the model's text is cut into deltas."""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from .._engine._agent import Agent
from .._engine._dispatch import impls_of
from .._events import HookEvent
from .._secret import Redactor, Secret
from .._types import Message, ModelRequest, ModelTurn, RunResult
from ..stream import Event, RunFinished, TextDelta

__all__ = ["TextGuardChecked", "check_text_guard"]


@dataclass(frozen=True, slots=True)
class TextGuardChecked:
    """What `check_text_guard` inspected: ``texts`` model texts, driven
    through ``runs`` runs (streamed and not), whose ``releases`` pieces of
    released text (each `TextDelta`, each concatenation, each output and
    transcript message) held no forbidden match."""

    texts: int
    runs: int
    releases: int


class _Deltas:
    """The model of the check: one turn whose text is ``text``, streamed as
    the ``deltas`` set before each run (its text when not streamed)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.deltas: Sequence[str] = (text,)

    def _turn(self) -> ModelTurn:
        return ModelTurn(message=Message.assistant(self.text), finish_reason="stop")

    async def complete(self, request: ModelRequest) -> ModelTurn:
        return self._turn()

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ModelTurn]:
        for delta in self.deltas:
            yield delta
        yield self._turn()


def _matchers(
    forbidden: str | re.Pattern[str] | Iterable[str], secrets: Sequence[str]
) -> list[re.Pattern[str]]:
    """The patterns of everything forbidden: ``forbidden`` (a regular
    expression, or literal texts) and every form of every secret."""
    if isinstance(forbidden, re.Pattern):
        out = [forbidden]
    elif isinstance(forbidden, str):
        out = [re.compile(forbidden)] if forbidden else []
    else:
        literals = sorted({t for t in forbidden if t}, key=len, reverse=True)
        out = [re.compile("|".join(map(re.escape, literals)))] if literals else []
    forms = Redactor(secrets)._forms  # every form the run's redactor masks, longest first
    if forms:
        out.append(re.compile("|".join(map(re.escape, forms))))
    return out


def _splits(text: str, random_splits: int, rng: random.Random) -> Iterator[list[str]]:
    """The deltas to stream ``text`` as: whole, cut in two at every offset,
    then ``random_splits`` random cuts into several pieces."""
    yield [text]
    for cut in range(1, len(text)):
        yield [text[:cut], text[cut:]]
    if len(text) < 2:
        return
    for _ in range(random_splits):
        count = rng.randint(1, min(len(text) - 1, 8))
        cuts = sorted(rng.sample(range(1, len(text)), count))
        yield [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


def _has_impl(obj: object) -> bool:
    return HookEvent.ON_TEXT_DELTA in impls_of(obj)


def _transcript_texts(result: RunResult) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for index, message in enumerate(result.transcript):
        if message.role != "assistant":  # the input is the check's, not the model's
            continue
        out.append((f"transcript[{index}] ({message.role})", message.text))
        for call in message.tool_calls or ():
            out.append((f"transcript[{index}] call {call.id}", call.function.arguments))
    return out


def check_text_guard(
    hook: object | Callable[[], object] | None,
    forbidden: str | re.Pattern[str] | Iterable[str],
    texts: Iterable[str],
    *,
    secrets: Iterable[str | Secret[Any]] = (),
    random_splits: int = 50,
    seed: int = 0,
) -> TextGuardChecked:
    """Check that a text guard (an ``on_text_delta`` hook) never leaks:
    each of ``texts`` is played as one model turn through a real
    `seamkit.Agent`, streamed (`Agent.stream`) whole, cut in two at every
    offset and cut at random ``random_splits`` times (deterministic from
    ``seed``), and run once without streaming (`Agent.run`). No forbidden
    match may be in any `TextDelta`, in what the deltas of a run add up to,
    in ``RunResult.output`` or in the transcript's assistant messages. Raises `AssertionError`
    naming the text, the deltas and the release that leaked; returns what
    it inspected.

    ``forbidden`` is a regular expression (a ``str`` or a compiled
    pattern), or a collection of literal texts (a list, a tuple, a set).
    ``secrets`` become `seamkit.Secret` values in the runs' context, so the
    run's redactor is the first guard; every form of them it masks (plain,
    escaped, URL- and base64-encoded) is forbidden too. ``hook`` is a hook
    object, a zero-argument factory called afresh for each run (for a hook
    that keeps state), or ``None`` for the redactor alone. Call it where no
    event loop runs (a plain test function), as `check_hook_composes`.
    """
    plain = [s.get_secret_value() if isinstance(s, Secret) else s for s in secrets]
    patterns = _matchers(forbidden, [str(p) for p in plain])
    factory = hook is not None and (
        isinstance(hook, type) or (callable(hook) and not _has_impl(hook))
    )
    context = {f"secret_{i}": Secret(p) for i, p in enumerate(plain)}
    rng = random.Random(seed)
    runs = releases = 0
    count = 0

    def leaked(text: str, what: str, split: Sequence[str] | None, released: str) -> None:
        nonlocal releases
        releases += 1
        found = next((m for p in patterns if (m := p.search(released))), None)
        if found is None:
            return
        how = "Agent.run (not streamed)" if split is None else f"streamed as deltas {list(split)!r}"
        raise AssertionError(
            f"the text guard leaked {found.group()!r}: text {text!r} {how}; {what} was {released!r}"
        )

    def make_agent(model: _Deltas) -> Agent:
        hooks: list[object] = []
        if hook is not None:
            hooks.append(hook() if factory else hook)  # type: ignore[operator]
        return Agent(model, name="text-guard-check", hooks=hooks, plugin_hooks=False)

    def check_result(text: str, split: Sequence[str] | None, result: RunResult | None) -> None:
        if result is None:
            raise AssertionError(f"text {text!r}: the streamed run ended without a RunFinished")
        leaked(text, "RunResult.output", split, str(result.output or ""))
        for where, released in _transcript_texts(result):
            leaked(text, where, split, released)

    async def one(text: str) -> None:
        nonlocal runs
        model = _Deltas(text)
        shared = None if factory else make_agent(model)  # one agent for every run of a text
        for split in _splits(text, random_splits, rng):
            agent = shared or make_agent(model)
            model.deltas = split
            events: list[Event] = []
            async for event in agent.stream("go", context=context):
                events.append(event)
            runs += 1
            deltas = [e.text for e in events if isinstance(e, TextDelta)]
            for index, delta in enumerate(deltas):
                leaked(text, f"TextDelta #{index}", split, delta)
            leaked(text, "the TextDeltas together", split, "".join(deltas))
            finished = [e.result for e in events if isinstance(e, RunFinished)]
            check_result(text, split, finished[-1] if finished else None)
        agent = shared or make_agent(model)
        check_result(text, None, await agent.run("go", context=context))
        runs += 1

    async def all_texts() -> None:
        nonlocal count
        for text in texts:
            count += 1
            await one(text)

    asyncio.run(all_texts())
    return TextGuardChecked(count, runs, releases)
