"""The laws of a declared output (issue 30), proved with hypothesis over
generated schemas and values (`seamkit.testing.strategies.output_schemas`):

- every `OutputDelta` a stream shows is consistent with the accepted value,
  the last one equal to it, whatever the split, in native, prompted and tool
  mode, bare or wrapped, in a Markdown fence or not;
- tool mode and native mode give the same value for the same answer;
- whatever mix of bad and good answers the model gives, the run ends
  ``completed`` with a validated value or ``failed`` with ``OutputInvalid:``
  within ``retries + 1`` model calls, never with a placeholder, and a stream
  shows one `OutputRetry` per failed answer;
- ``on_output``: a rewrite that does not fit fails the run naming the hook
  and the event, a malformed flow is reported as at every other event,
  ``Retry`` counts against ``retries``, ``Terminate`` ends the run with no
  output, a raising hook follows its ``on_error``;
- text guards: partials come from released text only.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import seamkit
from hypothesis import given, strategies as st
from pydantic import BaseModel
from seamkit import Agent, Message, MessageToolCall, ModelRequest, ModelTurn, Output, flow as F
from seamkit._partial import consistent
from seamkit.stream import OutputDelta, OutputRetry, RunFinished, TextDelta, ToolArgumentsDelta
from seamkit.testing import ScriptedModel
from seamkit.testing.strategies import json_values, output_schemas

MODES = st.sampled_from(["native", "tool"])


# --- models ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Said:
    """One answer a `Pieces` model gives: its JSON ``text`` cut at ``cuts``;
    ``as_text`` gives it as text even when the request asks for the output
    tool (a failed answer in tool mode)."""

    text: str
    cuts: tuple[int, ...] = ()
    as_text: bool = False

    def pieces(self) -> list[str]:
        bounds = [0, *sorted(c for c in set(self.cuts) if 0 < c < len(self.text)), len(self.text)]
        return [self.text[a:b] for a, b in itertools.pairwise(bounds) if b > a]


@dataclass
class Pieces:
    """A model that gives its answers in order (the last one again when they
    run out), each streamed in the pieces it is cut into: text in native
    mode, output tool argument fragments in tool mode."""

    answers: list[Said]
    requests: list[ModelRequest] = field(default_factory=list)
    output_modes = frozenset({"native", "tool"})

    def _next(self, request: ModelRequest) -> tuple[ModelTurn, list[str | ToolArgumentsDelta]]:
        self.requests.append(request)
        said = self.answers[min(len(self.requests), len(self.answers)) - 1]
        wanted = request.output
        if wanted is not None and wanted.mode == "tool" and not said.as_text:
            call_id = f"call_{len(self.requests)}"
            call = MessageToolCall.make(call_id, wanted.name, said.text)
            turn = ModelTurn(message=Message.assistant("", [call]), finish_reason="tool_calls")
            return turn, [ToolArgumentsDelta(0, call_id, wanted.name, p) for p in said.pieces()]
        return ModelTurn(message=Message.assistant(said.text)), list(said.pieces())

    async def complete(self, request: ModelRequest) -> ModelTurn:
        return self._next(request)[0]

    async def stream(self, request: ModelRequest) -> AsyncIterator[object]:
        turn, pieces = self._next(request)
        for piece in pieces:
            yield piece
        yield turn


@dataclass
class Streamed:
    """What a stream showed: partials and retries by turn, text by turn, the result."""

    partials: list[tuple[int, Any]] = field(default_factory=list)
    retries: list[OutputRetry] = field(default_factory=list)
    texts: dict[int, str] = field(default_factory=dict)
    result: seamkit.RunResult | None = None


def stream(agent: Agent, **options: Any) -> Streamed:
    async def go() -> Streamed:
        seen = Streamed()
        async for event in agent.stream("go", **options):
            if isinstance(event, OutputDelta):
                seen.partials.append((event.turn, event.partial))
            elif isinstance(event, OutputRetry):
                seen.retries.append(event)
            elif isinstance(event, TextDelta):
                seen.texts[event.turn] = seen.texts.get(event.turn, "") + event.text
            elif isinstance(event, RunFinished):
                seen.result = event.result
        return seen

    return asyncio.run(go())


def agent_of(model: object, output: Output[Any], hooks: list[object] | None = None) -> Agent:
    return Agent(model, output=output, hooks=hooks or [], plugin_hooks=False)


def wire(value: Any, output: Output[Any], bare: bool = False) -> str:
    """The JSON text of an answer of ``value`` (wrapped when the output is,
    unless ``bare``)."""
    return json.dumps(value if bare or not output.wrapped else {"response": value})


# --- a. partials are consistent with the answer -------------------------------------------


def check_partials(seen: Streamed, output: Output[Any]) -> None:
    result = seen.result
    assert result is not None and result.outcome.kind == "completed", result
    final = output.dump(result.output)
    assert seen.partials, "an accepted streamed answer shows at least one partial"
    for _, partial in seen.partials:
        assert consistent(partial, final), (partial, final)
    assert seen.partials[-1][1] == final
    assert seen.retries == []


@given(data=st.data(), drawn=output_schemas(objects_only=False), mode=MODES)
def test_scripted_partials_are_consistent_with_the_accepted_value(
    data: st.DataObject, drawn: tuple[dict[str, Any], Any], mode: str
) -> None:
    schema, values = drawn
    value = data.draw(values)
    chunks = data.draw(st.integers(1, 40))
    output = Output(schema, mode=mode)
    model = ScriptedModel([{"output": value, "chunks": chunks}])
    check_partials(stream(agent_of(model, output)), output)


@given(
    data=st.data(),
    drawn=output_schemas(objects_only=False),
    mode=st.sampled_from(["native", "tool", "prompted"]),
    bare=st.booleans(),
)
def test_partials_of_any_split_are_consistent_with_the_accepted_value(
    data: st.DataObject, drawn: tuple[dict[str, Any], Any], mode: str, bare: bool
) -> None:
    schema, values = drawn
    output = Output(schema, mode=mode)
    text = wire(data.draw(values), output, bare)
    if data.draw(st.booleans()):  # with the spaces a model may put around its JSON
        before = data.draw(st.sampled_from(["", " ", "\n"]))
        text = before + text + data.draw(st.sampled_from(["", " ", "\n "]))
    if mode != "tool" and data.draw(st.booleans()):  # in a Markdown fence
        text = data.draw(st.sampled_from(["```json\n", "```\n", " ```JSON \n"])) + text + "\n```"
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=len(text)))
    model = Pieces([Said(text, tuple(cuts))])
    check_partials(stream(agent_of(model, output)), output)


class Line(BaseModel):
    sku: str
    qty: int


class Order(BaseModel):
    customer: str
    total: float
    lines: list[Line]


_orders = st.fixed_dictionaries(
    {
        "customer": st.text(max_size=8),
        "total": st.integers(-(10**6), 10**6) | st.floats(allow_nan=False, allow_infinity=False),
        "lines": st.lists(
            st.fixed_dictionaries({"sku": st.text(max_size=4), "qty": st.integers(0, 99)}),
            max_size=3,
        ),
    }
)


@given(value=_orders, mode=MODES, chunks=st.integers(1, 30))
def test_partials_of_a_pydantic_output_are_consistent_with_its_dump(
    value: dict[str, Any], mode: str, chunks: int
) -> None:
    """A float field answered ``3`` dumps as ``3.0``: the same JSON number."""
    output = Output(Order, mode=mode)
    model = ScriptedModel([{"output": value, "chunks": chunks}])
    check_partials(stream(agent_of(model, output)), output)


# --- b. tool mode and native mode agree ------------------------------------------------------


@given(data=st.data(), drawn=output_schemas(objects_only=False))
def test_tool_and_native_mode_give_the_same_value(
    data: st.DataObject, drawn: tuple[dict[str, Any], Any]
) -> None:
    schema, values = drawn
    value = data.draw(values)
    chunks = data.draw(st.integers(1, 8))
    got = {}
    for mode in ("tool", "native"):
        model = ScriptedModel([{"output": value, "chunks": chunks}])
        result = agent_of(model, Output(schema, mode=mode)).run_sync("go")
        assert result.outcome.kind == "completed", result.outcome
        got[mode] = result.output
    assert got["tool"] == got["native"] == value


# --- c. bounded retries ----------------------------------------------------------------------

_not_json = st.sampled_from(
    ["", "nope", "{", '{"a": ', "[1, 2", "```json\n{\n```", "NaN", "{'a': 1}"]
)


@st.composite
def answers(draw: st.DrawFn, output: Output[Any], values: Any, mode: str) -> list[Said]:
    """Up to five answers, mostly bad: text that is not JSON, JSON values
    that may not fit, a text answer where the output tool was asked for; and
    good ones."""
    out = []
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["not_json", "any_json", "any_json", "as_text", "good"]))
        if kind == "not_json":
            text = draw(_not_json | st.text(max_size=10))
        elif kind == "any_json":
            text = json.dumps(draw(json_values))
        else:
            text = wire(draw(values), output)
        cuts = tuple(draw(st.lists(st.integers(0, len(text)), max_size=4)))
        out.append(Said(text, cuts, as_text=kind == "as_text"))
    return out


def accepted(output: Output[Any], said: Said, mode: str) -> bool:
    if mode == "tool" and said.as_text:
        return False
    try:
        output.parse(said.text)
    except seamkit.OutputInvalid:
        return False
    return True


@given(data=st.data(), drawn=output_schemas(), mode=MODES, retries=st.integers(0, 3))
def test_any_answers_end_completed_or_failed_within_retries_plus_one_calls(
    data: st.DataObject, drawn: tuple[dict[str, Any], Any], mode: str, retries: int
) -> None:
    schema, values = drawn
    output = Output(schema, mode=mode, retries=retries)
    said = data.draw(answers(output, values, mode))
    model = Pieces(said)
    seen = stream(agent_of(model, output))
    result = seen.result
    assert result is not None
    calls = len(model.requests)
    assert calls <= retries + 1
    good = [i for i, s in enumerate(said) if accepted(output, s, mode)]
    # a model out of answers repeats its last one
    verdicts = [accepted(output, said[min(i, len(said) - 1)], mode) for i in range(retries + 1)]
    first = verdicts.index(True) if True in verdicts else None
    if first is None:
        assert result.outcome.kind == "failed", result.outcome
        assert result.outcome.error.startswith("OutputInvalid: "), result.outcome.error
        assert result.output is None
        assert calls == retries + 1
        assert len(seen.retries) == calls
    else:
        assert result.outcome.kind == "completed", (result.outcome, said, good)
        assert calls == first + 1
        expected = output.parse(said[min(first, len(said) - 1)].text)
        assert result.output == expected
        output.validate(result.output)
        assert len(seen.retries) == first
    assert [r.turn for r in seen.retries] == list(range(1, len(seen.retries) + 1))
    assert all(r.errors for r in seen.retries)
    codes = [d.code for d in result.diagnostics]
    assert codes.count("output_retry") == len(seen.retries)


# --- d. on_output -------------------------------------------------------------------------


class OnOutput:
    """An ``on_output`` hook that gives ``flows`` in turn (the last again
    when they run out)."""

    def __init__(self, flows: list[object], name: str = "shaper", on_error: str = "fail") -> None:
        self.flows = flows
        self.name = name
        self.on_error = on_error
        self.seen: list[object] = []

    @seamkit.hookimpl
    def on_output(self, ctx: seamkit.HookContext, output: object) -> object:
        self.seen.append(output)
        return self.flows[min(len(self.seen), len(self.flows)) - 1]


_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "n": {"type": "integer"}},
    "required": ["name", "n"],
    "additionalProperties": False,
}
_GOOD = {"name": "ok", "n": 1}


@given(bad=json_values.filter(lambda v: not (isinstance(v, dict) and set(v) == {"name", "n"})))
def test_a_rewrite_that_does_not_fit_fails_the_run_naming_hook_and_event(bad: object) -> None:
    for mode in ("native", "tool"):
        model = ScriptedModel([{"output": _GOOD}])
        hook = OnOutput([F.RewriteOutput(bad)])
        result = agent_of(model, Output(_SCHEMA, mode=mode), [hook]).run_sync("go")
        assert result.outcome.kind == "failed"
        assert "hook 'shaper'" in result.outcome.error and "on_output" in result.outcome.error
        assert result.output is None and len(model.requests) == 1


@given(name=st.text(max_size=6), n=st.integers(-5, 5))
def test_a_rewrite_that_fits_is_the_output(name: str, n: int) -> None:
    model = ScriptedModel([{"output": _GOOD}])
    hook = OnOutput([F.RewriteOutput({"name": name, "n": n})])
    result = agent_of(model, Output(_SCHEMA), [hook]).run_sync("go")
    assert result.outcome.kind == "completed" and result.output == {"name": name, "n": n}


_junk = st.one_of(st.integers(), st.binary(max_size=3), st.lists(st.integers(), max_size=2))
_MALFORMED = st.one_of(
    (_junk | st.none()).map(F.Terminate),
    _junk.map(F.Retry),
    st.just(F.Skip("no")),
    st.just(F.Hold(2)),
    st.just("not a flow"),
)


@given(bad=_MALFORMED, mode=MODES, on_error=st.sampled_from(["skip", "fail"]))
def test_a_malformed_flow_at_on_output_fails_the_run_naming_hook_and_event(
    bad: object, mode: str, on_error: str
) -> None:
    model = ScriptedModel([{"output": _GOOD}])
    hook = OnOutput([bad], name="bad", on_error=on_error)
    result = agent_of(model, Output(_SCHEMA, mode=mode), [hook]).run_sync("go")
    assert result.outcome.kind == "failed", (bad, result.outcome)
    error = result.outcome.error
    assert "hook 'bad'" in error and "on_output" in error, error
    assert "Traceback" not in error and "ValidationError" not in error
    assert result.output is None


@given(refusals=st.integers(0, 4), retries=st.integers(0, 3), mode=MODES)
def test_retry_at_on_output_counts_against_retries(refusals: int, retries: int, mode: str) -> None:
    model = ScriptedModel([{"output": _GOOD}] * 5)
    flows: list[object] = [F.Retry(f"not yet {i}") for i in range(refusals)] + [None]
    hook = OnOutput(flows)
    seen = stream(agent_of(model, Output(_SCHEMA, mode=mode, retries=retries), [hook]))
    result = seen.result
    assert result is not None
    if refusals <= retries:
        assert result.outcome.kind == "completed" and result.output == _GOOD
        assert len(model.requests) == refusals + 1
    else:
        assert result.outcome.kind == "failed" and result.output is None
        assert result.outcome.error.startswith(f"OutputInvalid: not yet {retries}")
        assert len(model.requests) == retries + 1
    assert len(seen.retries) == min(refusals, retries + 1)
    if refusals and retries:  # the model is told what the hook said
        feedback = model.requests[1].messages[-1].text
        assert "not yet 0" in feedback


@given(reason=st.text(min_size=1, max_size=8), mode=MODES)
def test_terminate_at_on_output_ends_the_run_with_no_output(reason: str, mode: str) -> None:
    model = ScriptedModel([{"output": _GOOD}])
    result = agent_of(
        model, Output(_SCHEMA, mode=mode), [OnOutput([F.Terminate(reason)])]
    ).run_sync("go")
    outcome = result.outcome
    assert outcome.kind == "terminated" and outcome.event == "on_output"
    assert outcome.hook == "shaper" and outcome.reason == reason
    assert result.output is None


class Custom(BaseException):
    """A BaseException no one expects."""


_RAISED = st.sampled_from(
    [asyncio.CancelledError, GeneratorExit, Custom, ValueError, RuntimeError, RecursionError]
)


def raising(kind: type[BaseException], is_async: bool, on_error: str) -> object:
    """An ``on_output`` hook named ``boom`` that raises ``kind`` with a secret in its message."""

    def fail(self: Any, ctx: Any) -> Any:
        raise kind("token-123")

    async def afail(self: Any, ctx: Any) -> Any:
        await asyncio.sleep(0)
        fail(self, ctx)

    body = seamkit.hookimpl(afail if is_async else fail)
    return type("Raising", (), {"on_output": body, "name": "boom", "on_error": on_error})()


@given(kind=_RAISED, is_async=st.booleans(), on_error=st.sampled_from(["skip", "fail"]), mode=MODES)
def test_whatever_an_on_output_hook_raises_the_run_follows_its_on_error(
    kind: type[BaseException], is_async: bool, on_error: str, mode: str
) -> None:
    model = ScriptedModel([{"output": _GOOD}])
    agent = agent_of(model, Output(_SCHEMA, mode=mode), [raising(kind, is_async, on_error)])
    result = agent.run_sync("go", context={"key": seamkit.Secret("token-123")})  # never raises
    if on_error == "skip":
        assert result.outcome.kind == "completed" and result.output == _GOOD
        assert any(d.code == "hook_skipped" for d in result.diagnostics)
    else:
        assert result.outcome.kind == "failed" and result.output is None
        assert f"hook 'boom' failed at on_output: {kind.__name__}" in result.outcome.error
    texts = [d.message for d in result.diagnostics]
    if result.outcome.kind == "failed":
        texts.append(result.outcome.error)
    assert not any("token-123" in t for t in texts)


@pytest.mark.parametrize("kind", [KeyboardInterrupt, SystemExit])
def test_an_interrupt_in_an_on_output_hook_is_passed_on(kind: type[BaseException]) -> None:
    model = ScriptedModel([{"output": _GOOD}])
    agent = agent_of(model, Output(_SCHEMA), [raising(kind, False, "skip")])
    with pytest.raises(kind):
        agent.run_sync("go")


# --- e. text guards -------------------------------------------------------------------------


class Guard:
    """A text guard that masks every ``z`` and holds back the last ``hold``
    characters of what it sees (all of it at the end)."""

    name = "guard"

    def __init__(self, hold: int) -> None:
        self.hold = hold

    @seamkit.hookimpl
    def on_text_delta(self, ctx: seamkit.HookContext, text: str, final: bool) -> F.TextDeltaFlow:
        return F.RewriteText(text.replace("z", "*"), 0 if final else self.hold)


def _has_z(value: Any) -> bool:
    return "z" in json.dumps(value, ensure_ascii=False)


@given(
    data=st.data(),
    drawn=output_schemas(objects_only=False),
    mode=MODES,
    hold=st.integers(0, 6),
)
def test_partials_come_from_released_text_only(
    data: st.DataObject, drawn: tuple[dict[str, Any], Any], mode: str, hold: int
) -> None:
    schema, values = drawn
    output = Output(schema, mode=mode)
    value = data.draw(values)
    if data.draw(st.booleans()):
        value = {"zz": value} if output.wrapped else value
    text = wire(value, output).replace("a", "z")  # much to mask
    cuts = tuple(data.draw(st.lists(st.integers(0, len(text)), max_size=12)))
    model = Pieces([Said(text, cuts)])
    seen = stream(agent_of(model, output, [Guard(hold)]))
    assert seen.result is not None
    assert not any(_has_z(p) for _, p in seen.partials), seen.partials
    if mode == "native":  # partials of the text the stream showed
        released = seen.texts.get(1, "")
        assert "z" not in released
        try:
            whole = json.loads(released)
        except ValueError:
            return
        if output.wrapped and isinstance(whole, dict) and set(whole) == {"response"}:
            whole = whole["response"]
        assert all(consistent(p, whole) for _, p in seen.partials), (seen.partials, whole)
    else:  # a guard sees the arguments whole: no fragment shows
        assert seen.partials == []
    if seen.result.outcome.kind == "completed":
        final = output.dump(seen.result.output)
        assert all(consistent(p, final) for _, p in seen.partials)
