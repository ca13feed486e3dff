"""Scripted-model script files, read as safely as manifests: a script that
cannot be parsed names the file, line and column; a malformed turn is
rejected when the script is loaded, never a ``KeyError`` in the middle of a
run. The turns are generated, valid and not."""

from __future__ import annotations

import asyncio
import json
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, strategies as st
from seamkit import Message, ModelRequest, ToolSpec
from seamkit._expect import Expect, expect_keys
from seamkit.testing import ScriptedModel, ScriptError

from tests.conftest import ROOT
from tests.properties._manifests import DEEP, scaled

# The deep profile runs for much longer than pytest-timeout allows a test;
# each example has its own 2 s deadline there instead.
pytestmark = [pytest.mark.timeout(0)] if DEEP else []

TURN_FIELDS = {"text", "tool_calls", "deltas", "expect"}
CALL_FIELDS = {"name", "arguments", "id"}

_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=8)
_ANY = st.none() | st.booleans() | st.integers(-2, 2) | _TEXT | st.lists(_TEXT, max_size=2)


@st.composite
def calls(draw: st.DrawFn) -> tuple[Any, bool]:
    """A tool call (a mapping or not) and whether it is well-formed."""
    if draw(st.integers(0, 9)) == 0:
        return draw(_ANY), False
    call: dict[str, Any] = {}
    ok = True
    if draw(st.booleans()) or draw(st.booleans()):
        name = draw(_TEXT | _ANY)
        call["name"] = name
        ok = ok and isinstance(name, str)
    else:
        ok = False  # no name
    if draw(st.booleans()):
        arguments = draw(st.dictionaries(_TEXT, _ANY, max_size=2) | _TEXT | _ANY)
        call["arguments"] = arguments
        ok = ok and isinstance(arguments, dict | str)
    if draw(st.booleans()):
        call_id = draw(_TEXT | st.none() | st.integers())
        call["id"] = call_id
        ok = ok and (call_id is None or isinstance(call_id, str))
    if draw(st.integers(0, 5)) == 0:
        call[draw(st.sampled_from(["nme", "args", "ID"]))] = 1
        ok = False
    return call, ok


@st.composite
def turns(draw: st.DrawFn) -> tuple[Any, bool]:
    """A turn (a mapping or not) and whether it is well-formed."""
    if draw(st.integers(0, 12)) == 0:
        return draw(_ANY), False
    turn: dict[str, Any] = {}
    ok = True
    if draw(st.booleans()):
        text = draw(_TEXT | st.none() | st.integers())
        turn["text"] = text
        ok = ok and (text is None or isinstance(text, str))
    if draw(st.booleans()):
        drawn = draw(st.lists(calls(), max_size=2))
        turn["tool_calls"] = [c for c, _ in drawn]
        ok = ok and all(good for _, good in drawn)
    if draw(st.integers(0, 3)) == 0:
        deltas = draw(st.lists(_TEXT, max_size=2) | st.lists(st.integers(), min_size=1))
        turn["deltas"] = deltas
        ok = ok and all(isinstance(d, str) for d in deltas)
    if draw(st.integers(0, 3)) == 0:
        expect = draw(st.fixed_dictionaries({"last_user": _TEXT}) | st.just({"last": "x"}))
        turn["expect"] = expect
        ok = ok and "last_user" in expect
    if draw(st.integers(0, 6)) == 0:
        turn[draw(st.sampled_from(["txt", "tool_call", "delta"]))] = "x"
        ok = False
    return turn, ok


@st.composite
def scripts(draw: st.DrawFn) -> tuple[Any, bool]:
    """A script (a list of turns, a mapping with ``turns``, or neither) and
    whether it is well-formed."""
    drawn = draw(st.lists(turns(), max_size=4))
    listed = [t for t, _ in drawn]
    ok = all(good for _, good in drawn)
    form = draw(st.sampled_from(["list", "mapping", "mapping+each_run", "other"]))
    if form == "list":
        return listed, ok
    if form == "mapping":
        return {"turns": listed}, ok
    if form == "mapping+each_run":
        return {"turns": listed, "each_run": draw(st.booleans())}, ok
    scalar = st.none() | st.booleans() | st.integers(-2, 2) | _TEXT
    return draw(scalar | st.just({"turn": listed})), False


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("scripts")


def request() -> ModelRequest:
    return ModelRequest(messages=(Message.user("hi"),), tools=())


def play(model: ScriptedModel, count: int) -> None:
    """Answer ``count`` requests; only a `ScriptError` (an expectation not
    met) may stop it."""

    async def go() -> None:
        for _ in range(count):
            try:
                await model.complete(request())
            except ScriptError as exc:
                assert "expected the last user message" in exc.message
                return

    asyncio.run(go())


@scaled()
@given(script=scripts(), as_json=st.booleans())
def test_a_script_loads_and_plays_or_is_rejected_naming_the_file_and_place(
    folder: Path, script: tuple[Any, bool], as_json: bool
) -> None:
    data, ok = script
    path = folder / ("s.json" if as_json else "s.yaml")
    path.write_text(json.dumps(data) if as_json else yaml.safe_dump(data, allow_unicode=True))
    try:
        model = ScriptedModel.from_spec(str(path))
    except ScriptError as exc:
        assert not ok, exc.message
        assert exc.message.startswith(f"model script {path}:"), exc.message
        line, column = exc.message.removeprefix(f"model script {path}:").split(":")[:2]
        assert int(line) >= 1 and int(column) >= 1
        return
    assert ok, data
    turns_ = data if isinstance(data, list) else data["turns"]
    play(model, len(turns_))


@scaled()
@given(script=scripts())
def test_turns_given_in_code_are_checked_when_the_model_is_made(
    script: tuple[Any, bool],
) -> None:
    data, ok = script
    if not isinstance(data, list):
        return
    try:
        model = ScriptedModel(data)
    except ScriptError as exc:
        assert not ok and exc.message.startswith("model script 'script': ["), exc.message
        return
    assert ok
    play(model, len(data))


def test_a_script_that_does_not_parse_names_the_file_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("- text: [hi\n")
    with pytest.raises(ScriptError) as info:
        ScriptedModel.from_spec(str(path))
    assert info.value.message.startswith(f"model script {path}:2:1: invalid YAML: ")


def test_a_malformed_turn_is_named_with_its_place(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("turns:\n  - text: hi\n  - tool_calls: [{nme: x}]\n")
    with pytest.raises(ScriptError) as info:
        ScriptedModel.from_spec(str(path))
    assert info.value.message == (
        f"model script {path}:3:19: turns[1].tool_calls[0].nme: unknown field 'nme' (and 1 more)"
    )
    assert info.value.hint == "did you mean 'name'? allowed fields: arguments, id, name"


# --- what the model received: model.requests and the expect: keys --------------


def test_the_model_records_every_request_it_received_in_order() -> None:
    model = ScriptedModel([{"text": "a"}, {"text": "b", "deltas": ["b"]}])
    first = ModelRequest(messages=(Message.user("one"),))
    second = ModelRequest(messages=(Message.user("two"),), temperature=0.5)
    third = ModelRequest(messages=(Message.user("three"),))

    async def go() -> None:
        await model.complete(first)
        assert [item async for item in model.stream(second)][-1].message.text == "b"
        with pytest.raises(ScriptError, match="ran out"):
            await model.complete(third)

    assert model.requests == []
    asyncio.run(go())
    assert model.requests == [first, second, third]  # the one past the script too


def test_a_model_loaded_from_a_file_records_requests_too(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("- text: hi\n")
    model = ScriptedModel.from_spec(str(path))
    asyncio.run(model.complete(request()))
    assert model.requests == [request()]


async def test_an_agent_s_requests_are_the_ones_after_the_hooks() -> None:
    from seamkit import Agent, RequestPatch, flow as F
    from seamkit.testing import scripted_hook

    model = ScriptedModel([{"text": "hi"}])
    hook = scripted_hook("on_pre_llm", F.PatchRequest(RequestPatch(temperature=0.1)))
    agent = Agent(model=model, preamble="You are terse.", hooks=[hook])
    await agent.run("hello")
    (sent,) = model.requests
    assert (sent.preamble, sent.temperature) == ("You are terse.", 0.1)
    assert sent.messages[-1] == Message.user("hello")


EXPECTING = ModelRequest(
    messages=(Message.user("hi"), Message.assistant("", None), Message.tool("c1", "42")),
    preamble="Be brief.",
    tools=(ToolSpec(name="calc"), ToolSpec(name="search")),
    tool_choice="auto",
    temperature=0.2,
    max_tokens=100,
)
"""A request every key of ``MET`` holds."""

MET: dict[str, Any] = {
    "last_user": "hi",
    "last_tool": "42",
    "preamble": "Be brief.",
    "tools": ["calc", "search"],
    "tool_choice": "auto",
    "temperature": 0.2,
    "max_tokens": 100,
}
"""One value per ``expect:`` key that ``EXPECTING`` satisfies."""

UNMET: dict[str, Any] = {
    "last_user": "bye",
    "last_tool": "41",
    "preamble": None,
    "tools": ["calc"],
    "tool_choice": "required",
    "temperature": 1.0,
    "max_tokens": 5,
}


def test_the_examples_here_cover_every_expect_key() -> None:
    assert set(MET) == set(UNMET) == set(expect_keys())


@pytest.mark.parametrize("key", sorted(MET))
def test_each_expect_key_passes_a_request_that_holds_it(key: str) -> None:
    model = ScriptedModel([{"text": "ok", "expect": {key: MET[key]}}])
    turn = asyncio.run(model.complete(EXPECTING))
    assert turn.message.text == "ok"


@pytest.mark.parametrize("key", sorted(UNMET))
def test_each_expect_key_fails_a_request_that_differs_naming_what(key: str) -> None:
    model = ScriptedModel([{"text": "ok", "expect": {key: UNMET[key]}}])
    with pytest.raises(ScriptError) as info:
        asyncio.run(model.complete(EXPECTING))
    what = expect_keys()[key]
    assert info.value.message == (
        f"model script 'script' turn 1 expected {what} {UNMET[key]!r}, got {MET[key]!r}"
    )
    assert info.value.hint is not None and key in info.value.hint


def test_null_expects_there_is_none() -> None:
    bare = ModelRequest(messages=(Message.user("hi"),))
    model = ScriptedModel([{"text": "ok", "expect": {"preamble": None, "last_tool": None}}] * 2)
    asyncio.run(model.complete(bare))
    with pytest.raises(ScriptError, match=r"expected the preamble .* None, got 'x'"):
        asyncio.run(model.complete(bare.model_copy(update={"preamble": "x"})))


def test_every_failing_key_is_counted_and_the_first_shown() -> None:
    model = ScriptedModel([{"text": "ok", "expect": {"max_tokens": 1, "last_user": "no"}}])
    with pytest.raises(ScriptError) as info:
        asyncio.run(model.complete(EXPECTING))
    assert info.value.message.endswith("expected the last user message 'no', got 'hi' (and 1 more)")
    assert info.value.hint == "the turn's expect: keys that differ: last_user, max_tokens"


def test_a_misspelt_expect_key_lists_the_keys() -> None:
    with pytest.raises(ScriptError) as info:
        ScriptedModel([{"text": "ok", "expect": {"last_usr": "hi"}}])
    assert info.value.hint == (
        "did you mean 'last_user'? allowed fields: " + ", ".join(sorted(expect_keys()))
    )


_VALUE = {str: "text", list[str]: "list of text", float: "number", int: "integer"}
"""How the guide's table names an ``expect:`` key's value type."""


def _expect_table() -> str:
    """The guide's table of ``expect:`` keys, as ``Expect``'s fields give it."""
    rows = ["| `expect:` key | value | compared with |", "|---|---|---|"]
    for key, field in Expect.model_fields.items():
        (value,) = [t for t in typing.get_args(field.annotation) if t is not type(None)]
        rows.append(f"| `{key}` | {_VALUE[value]} | {expect_keys()[key]} |")
    return "\n".join(rows) + "\n"


def test_the_guide_lists_every_expect_key_in_one_table() -> None:
    guide = (ROOT / "docs" / "guide.md").read_text(encoding="utf-8")
    table = _expect_table()
    assert table in guide, f"update the table of expect: keys in docs/guide.md to:\n\n{table}"
    assert guide.count("| `expect:` key |") == 1


def test_a_scripted_model_keeps_only_its_latest_requests() -> None:
    """With ``keep_requests``, the latest that many stay, in order; without,
    every request."""
    model = ScriptedModel([{"text": "hi"}], each_run=True, keep_requests=3)
    for n in range(5):
        asyncio.run(model.complete(ModelRequest(messages=(Message.user(f"m{n}"),))))
    assert [r.messages[-1].text for r in model.requests] == ["m2", "m3", "m4"]
    every = ScriptedModel([{"text": "hi"}], each_run=True, keep_requests=None)
    for n in range(1200):
        asyncio.run(every.complete(ModelRequest(messages=(Message.user(f"m{n}"),))))
    assert len(every.requests) == 1200
    assert ScriptedModel([{"text": "hi"}]).keep_requests is None  # in code: every one


def test_a_scripted_model_from_a_manifest_keeps_its_latest_100(tmp_path: Path) -> None:
    """``seamkit serve`` may play a manifest's script for hours: it keeps a bounded record."""
    script = tmp_path / "script.yaml"
    script.write_text("- text: hi\n")
    assert ScriptedModel.from_spec(str(script)).keep_requests == 100
