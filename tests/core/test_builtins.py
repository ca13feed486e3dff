"""The kernel's built-in scripted model (the `function` tool kind is in test_tool_resolution)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import seamkit
from seamkit import Message, ModelRequest
from seamkit.plugins import BuildContext, get_registry
from seamkit.testing import ScriptedModel, ScriptError


def test_scripted_model_plays_turns_then_runs_out(tmp_path: Path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text(
        "- tool_calls: [{name: calc_add, arguments: {a: 2, b: 3}}]\n"
        "- text: The answer is 5.\n  deltas: ['The answer ', 'is 5.']\n"
        "  expect: {last_user: 'add 2 and 3'}\n"
    )
    model = (
        get_registry()
        .model_provider("scripted")
        .factory(  # type: ignore[union-attr]
            seamkit.ModelConfig(provider="scripted", name="s.yaml"),
            BuildContext("t", get_registry(), base_dir=tmp_path),
        )
    )
    request = ModelRequest(messages=(Message.user("add 2 and 3"),))

    async def play() -> list[object]:
        first = await model.complete(request)
        streamed = [item async for item in model.stream(request)]
        return [first, *streamed]

    first, d1, d2, turn = asyncio.run(play())
    call = first.message.tool_calls[0]  # type: ignore[attr-defined, index]
    assert (call.function.name, call.function.arguments) == ("calc_add", '{"a": 2, "b": 3}')
    assert (d1, d2) == ("The answer ", "is 5.")
    assert turn.message.content == "The answer is 5."  # type: ignore[attr-defined]
    with pytest.raises(ScriptError, match="ran out after 2 turns"):
        asyncio.run(model.complete(request))


def test_scripted_model_checks_the_request_it_expected() -> None:
    model = ScriptedModel([{"text": "hi", "expect": {"last_user": "hello"}}])
    with pytest.raises(ScriptError, match="expected the last user message 'hello', got 'bye'"):
        asyncio.run(model.complete(ModelRequest(messages=(Message.user("bye"),))))


def test_missing_script_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match="cannot read model script"):
        ScriptedModel.from_spec("nope.yaml", base_dir=str(tmp_path))
