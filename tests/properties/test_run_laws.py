"""The laws of a run that meets bad input (issue 17), proved with hypothesis:
whatever the model answers, whatever malformed flow a hook returns at whatever
event, whatever a hook raises, the run ends in a defined outcome, ``run()``
does not raise (except to pass on an interrupt), every tool that ran has its
result in the transcript exactly once, every tool message answers one call of
the turn before it, and a session holds the run's transcript.

The inputs are generated: model turns with empty, duplicate and random call
ids, arguments that are bad JSON, ``NaN``, integers too long to convert,
nested up to 100,000 deep, not an object or of the wrong type, unknown tools,
turns of the wrong role and things that are not turns at all; flows of every
type each event accepts with a payload of the wrong type in each field; and
every kind of exception, BaseExceptions included, raised at every event by
plain and ``async`` hooks under both ``on_error`` policies.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import seamkit
from hypothesis import given, strategies as st
from seamkit import (
    Agent,
    FunctionCall,
    HookEvent,
    Message,
    MessageToolCall,
    ModelTurn,
    RequestPatch,
    RunResult,
    SQLiteSessionStore,
    flow as F,
)

OUTCOMES = {"completed", "terminated", "failed", "max_turns", "cancelled"}

_serial = itertools.count()


@seamkit.tool
def add(a: int, b: int) -> str:
    """Add two integers (each result unique, to tell results apart)."""
    return f"{a + b}#{next(_serial)}"


@seamkit.tool
def echo(text: str = "") -> str:
    """Say the text back."""
    return f"{text}#{next(_serial)}"


class Played:
    """A model that plays whatever it is given, then answers ``done``."""

    def __init__(self, turns: list[object]) -> None:
        self.turns = list(turns)

    async def complete(self, request: Any) -> Any:
        return self.turns.pop(0) if self.turns else ModelTurn(message=Message.assistant("done"))

    async def stream(self, request: Any) -> Any:
        yield await self.complete(request)


@dataclass
class Executed:
    """Every call whose tool ran, seen at ``on_post_tool_use``: (turn, id, content)."""

    seen: list[tuple[int, str, str]] = field(default_factory=list)
    name: str = "executed"

    @seamkit.hookimpl
    def on_post_tool_use(self, ctx: seamkit.HookContext, call: Any, result: Any) -> None:
        self.seen.append((ctx.turn, call.id, result.content))


def check_transcript(result: RunResult, executed: Executed, first_model_message: int) -> None:
    """Every tool message answers one call of the assistant message before it,
    at most once; every call id of a turn is set and unique; every tool that
    ran is answered exactly once, with its result (withheld when a hook after
    it stopped the run, or the run stopped while its hooks ran: issue 28)."""
    transcript = result.transcript
    segments: list[tuple[Message, list[Message]]] = []
    for message in transcript[first_model_message:]:
        if message.role == "tool":
            assert segments, "a tool message before any model turn"
            segments[-1][1].append(message)
        else:
            segments.append((message, []))
    model_turns = [m for m, _ in segments if m.role == "assistant"]
    for assistant, answers in segments:
        calls = [c.id for c in assistant.tool_calls or ()]
        assert all(calls) and len(set(calls)) == len(calls), calls
        answered = [a.tool_call_id for a in answers]
        assert len(set(answered)) == len(answered), answered
        assert set(answered) <= set(calls), (answered, calls)
    for turn, call_id, content in executed.seen:
        assistant, answers = next(s for s in segments if s[0] is model_turns[turn - 1])
        matching = [a for a in answers if a.tool_call_id == call_id]
        stopped = result.outcome.kind in ("terminated", "failed", "cancelled")
        if stopped and len(matching) == 1 and matching[0].text.startswith("Result withheld by "):
            continue
        assert [a.content for a in matching] == [content], (call_id, matching)


def run_with_session(
    agent: Agent,
    *,
    context: dict[str, Any] | None = None,
    interrupt: type[BaseException] | None = None,
) -> tuple[RunResult | None, tuple[Message, ...]]:
    """One run on a fresh session: its result (``None`` when it raised the
    expected ``interrupt``) and the transcript the session holds after it."""
    with tempfile.TemporaryDirectory() as home:
        store = SQLiteSessionStore(Path(home) / "s.sqlite")

        async def go() -> tuple[RunResult | None, tuple[Message, ...]]:
            result: RunResult | None = None
            if interrupt is None:
                result = await agent.run("go", session="s", store=store, context=context)
            else:
                with pytest.raises(interrupt):
                    await agent.run("go", session="s", store=store, context=context)
            stored = await store.load("s")
            assert stored is not None
            return result, stored.transcript

        try:
            return asyncio.run(go())
        except BaseException as exc:  # never let an interrupt reach pytest itself
            raise AssertionError(f"{type(exc).__name__} escaped the run: {exc}") from exc


def run_checked(agent: Agent, session: bool, **options: Any) -> RunResult:
    """One run, on a session or not; with a session, the stored transcript is the run's."""
    if not session:
        return agent.run_sync("go", **options)
    result, stored = run_with_session(agent, **options)
    assert result is not None and stored == result.transcript
    return result


# --- model output ------------------------------------------------------------------------

_ids = st.sampled_from(["", "", "a", "b", "call_1"]) | st.text("xy0", max_size=3)
_names = st.sampled_from(["add", "add", "echo", "nope", ""])
_depths = st.sampled_from([1, 10, 63, 64, 65, 200, 999, 5_000, 100_000])
_raw_arguments = st.one_of(
    st.builds(lambda a, b: json.dumps({"a": a, "b": b}), st.integers(), st.integers()),
    st.builds(lambda t: json.dumps({"text": t}), st.text(max_size=5)),
    st.just(json.dumps({"a": "one", "b": 2})),
    st.just(json.dumps({"a": 1, "b": 2, "c": 3})),
    _depths.map(lambda d: '{"a": ' + "[" * d + "]" * d + ', "b": 1}'),
    _depths.map(lambda d: '{"k": ' * d + "1" + "}" * d),
    st.sampled_from(['{"a": NaN, "b": 1}', '{"a": Infinity, "b": 1}', "[1, 2]", "12", '"x"']),
    st.just('{"a": ' + "1" * 5_000 + ', "b": 1}'),
    st.just(""),
    st.text(max_size=12),
)
_wire_calls = st.builds(
    lambda i, n, a: MessageToolCall(id=i, function=FunctionCall(name=n, arguments=a)),
    _ids,
    _names,
    _raw_arguments,
)


def _turn(role: str, text: str, calls: list[MessageToolCall]) -> ModelTurn:
    # model_construct: a provider may hand the run anything, valid or not
    message = Message.model_construct(
        role=role, content=text, tool_calls=tuple(calls) or None, tool_call_id=None, name=None
    )
    return ModelTurn.model_construct(message=message, usage=seamkit.Usage(), finish_reason=None)


_roles = st.sampled_from(["assistant"] * 8 + ["user", "tool", "system"])
_turns = st.one_of(
    st.builds(_turn, _roles, st.text(max_size=5), st.lists(_wire_calls, max_size=7)),
    st.sampled_from([None, "text", 42]),
)
_repairs = st.sampled_from(
    [None, F.Retry(), F.Retry("try again"), F.Skip("skipped"), F.Repair("add", {"a": 1, "b": 2})]
)


class Fixer:
    """An ``on_invalid_tool_call`` hook answering with one fixed flow."""

    name = "fixer"

    def __init__(self, answer: object) -> None:
        self.answer = answer

    @seamkit.hookimpl
    def on_invalid_tool_call(self, call: Any) -> object:
        return self.answer


@given(
    turns=st.lists(_turns, min_size=1, max_size=3),
    concurrency=st.sampled_from([1, 3]),
    max_invalid=st.integers(0, 6),
    repair=_repairs,
    session=st.booleans(),
)
def test_any_model_output_ends_in_an_outcome_with_every_result_kept(
    turns: list[object], concurrency: int, max_invalid: int, repair: object, session: bool
) -> None:
    executed = Executed()
    hooks: list[object] = [executed] if repair is None else [executed, Fixer(repair)]
    agent = Agent(
        Played(turns),
        tools=[add, echo],
        hooks=hooks,
        settings={"tool_concurrency": concurrency, "max_invalid_tool_calls": max_invalid},
        plugin_hooks=False,
    )
    result = run_checked(agent, session)
    assert result.outcome.kind in OUTCOMES
    assert result.transcript[0] == Message.user("go")
    check_transcript(result, executed, first_model_message=1)
    assert all(m.role == "assistant" or m.role == "tool" for m in result.transcript[1:])
    if result.outcome.kind == "failed":  # a sentence of the kernel's, not a crash's text
        crash = ("RecursionError", "ValidationError", "ValueError", "TypeError", "AttributeError")
        assert not result.outcome.error.startswith(crash), result.outcome.error


# --- malformed flows ---------------------------------------------------------------------

_junk = st.one_of(
    st.none(),
    st.integers(),
    st.floats(allow_nan=False),
    st.binary(max_size=3),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.integers(), st.integers(), max_size=2),
    st.builds(object),
)
_not_text = _junk.filter(lambda v: not isinstance(v, str))
_not_text_or_none = _not_text.filter(lambda v: v is not None)
_not_mapping = _junk.filter(lambda v: not isinstance(v, dict))
_bad_mapping = st.dictionaries(st.integers(), st.integers(), min_size=1, max_size=2)
_bad_messages = st.one_of(
    st.lists(_junk, min_size=1, max_size=3),
    st.lists(st.sampled_from([Message.user("ok")]), max_size=2).flatmap(
        lambda good: _junk.map(lambda bad: [*good, bad])
    ),
    st.integers(),
    st.text(min_size=1, max_size=3),
    st.just([Message.model_construct(role="robot", content="x")]),
    st.just([Message.model_construct(role="user", content=[{"type": "text", "x": object()}])]),
)


def _patch(**fields: Any) -> RequestPatch:
    return RequestPatch(**fields)


_bad_patches = st.one_of(
    _junk,
    _not_text_or_none.map(lambda v: _patch(preamble=v)),
    _not_text_or_none.map(lambda v: _patch(tool_choice=v)),
    st.sampled_from(["hot", True, [1]]).map(lambda v: _patch(temperature=v)),
    st.sampled_from(["10", 1.5, True]).map(lambda v: _patch(max_tokens=v)),
    st.lists(_junk, min_size=1, max_size=2).map(lambda v: _patch(history=v)),
    st.lists(_junk, min_size=1, max_size=2).map(lambda v: _patch(extra_context=v)),
    _bad_mapping.map(lambda v: _patch(additional_params=v)),
    st.lists(st.integers(), min_size=1, max_size=2).map(lambda v: _patch(active_tools=v)),
)

MALFORMED: dict[type, st.SearchStrategy[object]] = {
    F.PatchRequest: _bad_patches.map(F.PatchRequest),
    F.RewriteMessages: _bad_messages.map(F.RewriteMessages),
    F.RewriteArgs: (_not_mapping | _bad_mapping).map(F.RewriteArgs),
    F.RewriteResult: _not_text.map(F.RewriteResult),
    F.Skip: _not_text.map(F.Skip),
    F.Terminate: _not_text.map(F.Terminate),
    F.Fail: _not_text.map(F.Fail),
    F.Retry: _not_text_or_none.map(F.Retry),
    F.Hold: st.sampled_from([-1, "3", 1.5, True, None]).map(F.Hold),
    F.RewriteText: st.one_of(
        _not_text.map(F.RewriteText),
        st.sampled_from([-2, "1", None]).map(lambda keep: F.RewriteText("x", keep)),
    ),
    F.Repair: st.one_of(
        _not_text.map(F.Repair),
        (_not_mapping.filter(lambda v: v is not None) | _bad_mapping).map(
            lambda v: F.Repair("add", v)
        ),
    ),
}


def _malformed(event: HookEvent) -> st.SearchStrategy[object]:
    accepted = seamkit._events.EVENTS[event].flows
    return st.one_of(*(MALFORMED[t] for t in accepted if t in MALFORMED))


# on_output fires only in a run with a declared output: its flows are checked
# in tests/properties/test_output_laws.py.
_events_with_payloads = [
    e for e in HookEvent if e not in (HookEvent.ON_COMPLETION, HookEvent.ON_OUTPUT)
]
_signatures: dict[HookEvent, Callable[..., Any]] = {
    HookEvent.ON_REQUEST_START: lambda self, ctx, messages: self.answer,
    HookEvent.ON_PRE_LLM: lambda self, ctx, request: self.answer,
    HookEvent.ON_TEXT_DELTA: lambda self, ctx, text, final: self.answer,
    HookEvent.ON_MODEL_TURN_FINISHED: lambda self, ctx, turn: self.answer,
    HookEvent.ON_PRE_TOOL_USE: lambda self, ctx, call: self.answer,
    HookEvent.ON_POST_TOOL_USE: lambda self, ctx, call, result: self.answer,
    HookEvent.ON_INVALID_TOOL_CALL: lambda self, ctx, call, error, available_tools: self.answer,
    HookEvent.ON_ITERATION_END: lambda self, ctx, messages: self.answer,
    HookEvent.ON_OUTPUT: lambda self, ctx, output: self.answer,
    HookEvent.ON_COMPLETION: lambda self, ctx, result: self.answer,
}


def answering(event: HookEvent, answer: object, name: str = "bad", **attrs: Any) -> object:
    """A code hook returning ``answer`` (or raising it, if it is a raiser) at ``event``."""
    body = _signatures[event]
    cls = type("Answering", (), {event.value: seamkit.hookimpl(body), "name": name, **attrs})
    hook = cls()
    hook.answer = answer  # type: ignore[attr-defined]
    return hook


# one valid call and one invalid: every event fires
SCRIPT_TURNS = [
    {"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}, {"name": "nope"}]},
    {"text": "done"},
]


def scripted_agent(hooks: list[object], **settings: Any) -> Agent:
    return Agent(
        seamkit.testing.ScriptedModel(SCRIPT_TURNS),
        tools=[add, echo],
        hooks=hooks,
        settings={"max_invalid_tool_calls": 5, **settings},
        plugin_hooks=False,
    )


@given(data=st.data(), event=st.sampled_from(_events_with_payloads), session=st.booleans())
def test_a_malformed_flow_fails_the_run_naming_hook_event_and_field(
    data: st.DataObject, event: HookEvent, session: bool
) -> None:
    bad = data.draw(_malformed(event))
    for on_error in ("skip", "fail"):  # a malformed flow is a bug: no policy skips it
        executed = Executed()
        agent = scripted_agent([executed, answering(event, bad, on_error=on_error)])
        result = run_checked(agent, session)
        assert result.outcome.kind == "failed", (bad, result.outcome)
        error = result.outcome.error
        assert f"hook 'bad' returned a malformed {type(bad).__name__} at {event.value}" in error
        assert "ValidationError" not in error and "Traceback" not in error
        check_transcript(result, executed, first_model_message=1)


@given(bad=st.one_of(*MALFORMED.values()))
def test_a_malformed_flow_at_on_completion_is_ignored(bad: object) -> None:
    result = scripted_agent([answering(HookEvent.ON_COMPLETION, bad)]).run_sync("go")
    assert result.outcome.kind == "completed"
    [ignored] = [d for d in result.diagnostics if d.code == "flow_ignored"]
    assert "hook 'bad'" in ignored.message


# --- what a hook raises ------------------------------------------------------------------


class Custom(BaseException):
    """A BaseException no one expects."""


INTERRUPTS = (KeyboardInterrupt, SystemExit)
_raised = st.sampled_from(
    [
        KeyboardInterrupt,
        SystemExit,
        asyncio.CancelledError,
        GeneratorExit,
        Custom,
        ValueError,
        RuntimeError,
        TimeoutError,
        RecursionError,
    ]
)


def raising(event: HookEvent, kind: type[BaseException], is_async: bool, on_error: str) -> object:
    """A code hook named ``boom`` that raises ``kind`` (with the context's
    secret in its message) at ``event``. A hookimpl may take fewer arguments
    than its event: ``ctx`` alone fits every event."""

    def fail(self: Any, ctx: Any) -> Any:
        raise kind("token-123") if kind is not SystemExit else SystemExit(3)

    async def afail(self: Any, ctx: Any) -> Any:
        await asyncio.sleep(0)
        fail(self, ctx)

    body = seamkit.hookimpl(afail if is_async else fail)
    return type("Raising", (), {event.value: body, "name": "boom", "on_error": on_error})()


@dataclass
class Final:
    """Keeps the result ``on_completion`` sees (it runs before the raising hook)."""

    results: list[RunResult] = field(default_factory=list)
    name: str = "final"

    @seamkit.hookimpl
    def on_completion(self, ctx: Any, result: RunResult) -> None:
        self.results.append(result)


@given(
    event=st.sampled_from([e for e in HookEvent if e is not HookEvent.ON_OUTPUT]),
    kind=_raised,
    is_async=st.booleans(),
    on_error=st.sampled_from(["skip", "fail"]),
    concurrency=st.sampled_from([1, 3]),
)
def test_whatever_a_hook_raises_the_run_ends_and_the_session_is_kept(
    event: HookEvent,
    kind: type[BaseException],
    is_async: bool,
    on_error: str,
    concurrency: int,
) -> None:
    final, executed = Final(), Executed()
    hooks = [final, executed, raising(event, kind, is_async, on_error)]
    agent = scripted_agent(hooks, tool_concurrency=concurrency)
    secret = {"key": seamkit.Secret("token-123")}
    if kind in INTERRUPTS:  # re-raised after on_completion, with the session saved
        _, stored = run_with_session(agent, context=secret, interrupt=kind)
        [result] = final.results
        assert stored == result.transcript
        check_transcript(result, executed, first_model_message=1)
        if event is not HookEvent.ON_COMPLETION:
            assert result.outcome.kind == "cancelled"
            assert any(d.code == "hook_interrupted" for d in result.diagnostics)
        return
    result = run_checked(agent, True, context=secret)  # never raises
    check_transcript(result, executed, first_model_message=1)
    skipped = on_error == "skip" or event is HookEvent.ON_COMPLETION
    if skipped:
        assert result.outcome.kind == "completed"
        if event is not HookEvent.ON_COMPLETION:
            assert any(d.code == "hook_skipped" for d in result.diagnostics)
    else:
        assert result.outcome.kind == "failed"
        assert f"hook 'boom' failed at {event.value}: {kind.__name__}" in result.outcome.error
    texts = [d.message for d in result.diagnostics]
    if result.outcome.kind == "failed":
        texts.append(result.outcome.error)
    assert not any("token-123" in t for t in texts)  # the context's secret is masked
