"""The laws of text guards (``on_text_delta``, issue 28), proved with
hypothesis: guards nested in stacks behave as flat; with holds alone the
text released is the shortest any guard releases; the run's redactor lets
no secret form out whatever the split, and releases what masking the whole
text gives; text that could begin no secret is not delayed; and a run with
neither secrets nor text guards streams the model's deltas as they are.

Run with `HYPOTHESIS_PROFILE=deep` for 100,000 examples a law; CI runs 1,000.
"""

from __future__ import annotations

import asyncio
import itertools
import zlib
from collections.abc import Callable, Sequence
from typing import Any
from unittest import mock

import seamkit
from hypothesis import given, strategies as st
from seamkit import Agent, HookEvent, HookStack, flow as F
from seamkit._engine import _drive
from seamkit._engine._dispatch import Dispatcher
from seamkit._holding import Held
from seamkit._secret import Redactor
from seamkit.stream import HookFired, RunFinished, TextDelta
from seamkit.testing import Opaque, ScriptedModel, make_context

E = HookEvent.ON_TEXT_DELTA

# --- guards that are functions of (text, final) ----------------------------

Rule = Callable[[str, bool], Any]
"""What a guard returns for one input: a flow, or ``None``."""

_RULES: dict[str, Callable[[int], Rule]] = {
    "continue": lambda k: lambda text, final: None,
    "explicit-continue": lambda k: lambda text, final: F.Continue(),
    "hold": lambda k: lambda text, final: F.Hold(k),
    "hold-last-word": lambda k: lambda text, final: F.Hold(len(text.rpartition(" ")[2])),
    "upper": lambda k: lambda text, final: F.RewriteText(text.upper(), k),
    "mask-a": lambda k: lambda text, final: F.RewriteText(text.replace("a", "***")),
    "drop-tail": lambda k: lambda text, final: F.RewriteText(text[: max(0, len(text) - k)]),
    "prefix": lambda k: lambda text, final: F.RewriteText("<" + text, k),
    "constant": lambda k: lambda text, final: F.RewriteText("x" * k),
    "terminate": lambda k: lambda text, final: F.Terminate(f"stop {k}"),
}


class Guard:
    """A text guard that picks one of its ``rules`` by a hash of its input:
    drawn by hypothesis, deterministic for each ``(text, final)``."""

    def __init__(self, name: str, rules: Sequence[Rule]) -> None:
        self.name = name
        self.rules = list(rules)

    @seamkit.hookimpl
    def on_text_delta(self, ctx: seamkit.HookContext, text: str, final: bool) -> F.TextDeltaFlow:
        pick = zlib.crc32(f"{final}:{text}".encode()) % len(self.rules)
        flow: F.TextDeltaFlow = self.rules[pick](text, final)
        return flow


def guards(kinds: Sequence[str]) -> st.SearchStrategy[list[Guard]]:
    rule = st.builds(lambda kind, k: _RULES[kind](k), st.sampled_from(kinds), st.integers(0, 8))
    rules = st.lists(rule, min_size=1, max_size=3)
    return st.lists(rules, max_size=5).map(
        lambda drawn: [Guard(f"g{i}", r) for i, r in enumerate(drawn)]
    )


texts = st.text(alphabet="ab cAB*\n", max_size=20)


def dispatch(hooks: Sequence[object], text: str, final: bool) -> Any:
    return asyncio.run(Dispatcher(hooks=list(hooks)).dispatch(E, make_context(), text, final))


HOLDS = ("continue", "explicit-continue", "hold", "hold-last-word", "terminate")
"""The guards that hold and stop but never rewrite."""


def check_nested_equals_flat(hooks: list[Guard], text: str, final: bool, a: int, b: int) -> None:
    flat = dispatch(hooks, text, final)
    nested = dispatch([*hooks[:a], Opaque(HookStack(hooks[a:b])), *hooks[b:]], text, final)
    assert nested.flow == flat.flow
    inner = HookStack([*hooks[a:b]])
    twice = dispatch([*hooks[:a], Opaque(HookStack([Opaque(inner), *hooks[b:]]))], text, final)
    assert twice.flow == flat.flow
    inlined = dispatch([*hooks[:a], HookStack(hooks[a:b]), *hooks[b:]], text, final)
    assert inlined == flat  # a stack passed in code is inlined: the deciding hook too


@given(guards(HOLDS), texts, st.booleans(), st.data())
def test_nested_guards_give_the_flat_flow(
    hooks: list[Guard], text: str, final: bool, data: st.DataObject
) -> None:
    a, b = sorted(data.draw(st.lists(st.integers(0, len(hooks)), min_size=2, max_size=2)))
    check_nested_equals_flat(hooks, text, final, a, b)


@given(guards(("continue", "upper", "mask-a", "prefix", "constant")), texts, st.data())
def test_nested_rewrites_that_hold_nothing_give_the_flat_flow(
    hooks: list[Guard], text: str, data: st.DataObject
) -> None:
    """Rewrites alone, each keeping nothing back, nest as flat."""
    for guard in hooks:
        guard.rules = [lambda t, f, rule=rule: _without_keep(rule(t, f)) for rule in guard.rules]
    a, b = sorted(data.draw(st.lists(st.integers(0, len(hooks)), min_size=2, max_size=2)))
    check_nested_equals_flat(hooks, text, False, a, b)


def _without_keep(flow: Any) -> Any:
    return F.RewriteText(flow.text) if isinstance(flow, F.RewriteText) else flow


def test_a_hold_then_two_rewrites_nest_as_flat() -> None:
    """``Hold(1)`` on ``"a"``, then ``"A"``, then ``"<A"``: the rewrites
    release only what they left unchanged, so nested and flat agree (a rule
    that carried the held tail across a rewrite did not)."""
    hooks = [
        Guard("hold", [_RULES["hold"](1)]),
        Guard("upper", [_RULES["upper"](0)]),
        Guard("prefix", [_RULES["prefix"](0)]),
    ]
    check_nested_equals_flat(hooks, "a", False, 1, 3)


def test_a_hold_then_an_emptying_rewrite_nest_as_flat() -> None:
    """``Hold(1)`` on ``"A"``, then ``""``, then ``"<"``: nested as flat."""
    hooks = [
        Guard("hold", [_RULES["hold"](1)]),
        Guard("drop", [_RULES["drop-tail"](1)]),
        Guard("prefix", [_RULES["prefix"](0)]),
    ]
    check_nested_equals_flat(hooks, "A", False, 1, 3)


def _released(flow: Any, text: str) -> str:
    """The text released when the net flow of a dispatch on ``text`` is ``flow``."""
    held = Held.of(text)
    if isinstance(flow, F.Hold | F.RewriteText):
        held = held.then(flow)
    return held.released


@given(guards(kinds=("continue", "hold", "hold-last-word")), texts)
def test_with_holds_alone_the_release_is_the_shortest_any_guard_releases(
    hooks: list[Guard], text: str
) -> None:
    together = _released(dispatch(hooks, text, False).flow, text)
    alone = [_released(dispatch([h], text, False).flow, text) for h in hooks]
    assert text.startswith(together)
    assert all(len(together) <= len(one) for one in alone)
    assert together == min(alone, key=len, default=text)


# --- streamed through an agent ----------------------------------------------


def played(deltas: Sequence[str]) -> ScriptedModel:
    """One turn of the deltas' text, streamed as ``deltas``."""
    return ScriptedModel([{"text": "".join(deltas), "deltas": list(deltas)}])


def streamed(agent: Agent, **options: Any) -> tuple[list[Any], seamkit.RunResult]:
    async def go() -> tuple[list[Any], seamkit.RunResult]:
        events = [e async for e in agent.stream("go", **options)]
        finished = events[-1]
        assert isinstance(finished, RunFinished)
        return events, finished.result

    return asyncio.run(go())


def deltas_of(events: list[Any]) -> list[str]:
    return [e.text for e in events if isinstance(e, TextDelta)]


@st.composite
def cut(draw: st.DrawFn, text: str) -> list[str]:
    """``text`` cut at random offsets into non-empty deltas."""
    if not text:
        return []
    offsets = draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=8))
    cuts = [0, *sorted(o for o in offsets if o < len(text)), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(cuts)]


@given(guards(kinds=("continue", "hold", "hold-last-word")), texts, st.data())
def test_holds_in_a_stream_release_the_text_in_order(
    hooks: list[Guard], text: str, data: st.DataObject
) -> None:
    deltas = data.draw(cut(text))
    agent = Agent(played(deltas), hooks=hooks, plugin_hooks=False)
    events, result = streamed(agent)
    assert "".join(deltas_of(events)) == text == result.output


secrets = st.text(
    alphabet=st.characters(blacklist_characters="*", blacklist_categories=("Cs",)),
    min_size=1,
    max_size=10,
)


@st.composite
def with_secrets(draw: st.DrawFn) -> tuple[list[str], str]:
    """Secrets, and a text that holds some of their forms between filler."""
    plain = draw(st.lists(secrets, min_size=1, max_size=3, unique=True))
    forms = sorted(Redactor(plain)._forms)
    filler = st.text(alphabet="ab =:/%\"'\\", max_size=6)
    pieces = draw(st.lists(st.one_of(filler, st.sampled_from(forms)), max_size=6))
    return plain, "".join(pieces)


@given(with_secrets(), st.data())
def test_the_redactor_lets_no_secret_form_out_whatever_the_split(
    case: tuple[list[str], str], data: st.DataObject
) -> None:
    plain, text = case
    redactor = Redactor(plain)
    deltas = data.draw(cut(text))
    agent = Agent(played(deltas), plugin_hooks=False)
    context = {f"s{i}": seamkit.Secret(p) for i, p in enumerate(plain)}
    events, result = streamed(agent, context=context)
    released = deltas_of(events)
    for piece in [*released, "".join(released), result.output or ""]:
        leaked = [form for form in redactor._forms if form in piece]
        assert not leaked, (leaked, piece, deltas)
    # the stream releases what masking the whole text at once gives
    assert "".join(released) == redactor(text) == (result.output or "")


@st.composite
def ordinary(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    """Secrets, and deltas none of whose characters begins a form of one."""
    plain = draw(st.lists(secrets, min_size=1, max_size=3, unique=True))
    firsts = Redactor(plain)._firsts
    alphabet = st.characters(blacklist_characters=[*firsts, "*"], blacklist_categories=("Cs",))
    deltas = draw(st.lists(st.text(alphabet=alphabet, min_size=1, max_size=8), max_size=6))
    return plain, deltas


@given(ordinary())
def test_ordinary_text_is_not_delayed(case: tuple[list[str], list[str]]) -> None:
    plain, deltas = case
    agent = Agent(played(deltas), plugin_hooks=False)
    context = {f"s{i}": seamkit.Secret(p) for i, p in enumerate(plain)}
    events, _ = streamed(agent, context=context)
    assert deltas_of(events) == deltas  # each delta released as it came, unchanged


class Quiet:
    """A hook at another event: the run has hooks, none of them a text guard."""

    name = "quiet"

    @seamkit.hookimpl
    def on_pre_llm(self, ctx: seamkit.HookContext, request: seamkit.ModelRequest) -> None:
        return None


@given(st.lists(st.text(min_size=1, max_size=8), max_size=6), st.booleans())
def test_no_secrets_and_no_text_guard_stream_the_models_deltas(
    deltas: list[str], hooked: bool
) -> None:
    agent = Agent(played(deltas), hooks=[Quiet()] if hooked else [], plugin_hooks=False)

    def no_release(*args: object) -> object:
        raise AssertionError("a run with nothing to guard made a TextRelease")

    with mock.patch.object(_drive, "TextRelease", no_release):
        events, result = streamed(agent)
    assert deltas_of(events) == deltas
    assert not [e for e in events if isinstance(e, HookFired) and e.event == E.value]
    assert result.output == "".join(deltas)
