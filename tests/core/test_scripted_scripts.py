"""Scripted-model script files, read as safely as manifests: a script that
cannot be parsed names the file, line and column; a malformed turn is
rejected when the script is loaded, never a ``KeyError`` in the middle of a
run. The turns are generated, valid and not."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, strategies as st
from seamkit import Message, ModelRequest
from seamkit.testing import ScriptedModel, ScriptError

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
