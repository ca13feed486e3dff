"""Against the real OpenAI API: collected only when ``OPENAI_API_KEY`` is set
(CI does not need it). ``SEAMKIT_LIVE_MODEL`` picks the model (default
``gpt-4o-mini``); ``OPENAI_BASE_URL`` points it at another compatible API."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import seamkit
from seamkit.stream import RunFinished, TextDelta, ToolCallEmitted

MODEL = os.environ.get("SEAMKIT_LIVE_MODEL", "gpt-4o-mini")


@seamkit.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_a_streamed_run_with_a_tool_call_against_the_real_api() -> None:
    agent = seamkit.Agent(
        f"openai:{MODEL}",
        tools=[add],
        preamble="Use the add tool for arithmetic, then answer with the number only.",
    )

    async def go() -> list[Any]:
        async with agent:
            return [e async for e in agent.stream("What is 1234 + 4321?")]

    events = asyncio.run(go())
    result = events[-1]
    assert isinstance(result, RunFinished)
    assert result.result.outcome.kind == "completed", result.result.outcome
    assert [e.call.name for e in events if isinstance(e, ToolCallEmitted)] == ["add"]
    assert any(isinstance(e, TextDelta) for e in events)
    assert "5555" in (result.result.output or "")
    assert result.result.usage.input_tokens > 0
