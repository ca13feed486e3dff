"""Prompt-cache counts: `seamkit.Usage` sums ``cache_read_tokens`` and
``cache_write_tokens`` like its other counts, and a run's cached tokens show in
``seamkit run``'s summary, its ``--json`` and its ``--trace`` timeline (only
when there are any, so a provider without a cache prints what it always
did). A failed tool's result is flagged in the transcript (`Message.is_error`),
which OpenAI's format leaves out."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import seamkit
from click.testing import CliRunner
from hypothesis import given, strategies as st
from seamkit._cli._group import cli
from seamkit.testing import ScriptedModel

APP = Path(__file__).resolve().parents[1] / "fixtures" / "cached" / "app.yaml"

_counts = st.integers(min_value=0, max_value=10**9)
usages = st.builds(
    seamkit.Usage,
    input_tokens=_counts,
    output_tokens=_counts,
    requests=_counts,
    cache_read_tokens=_counts,
    cache_write_tokens=_counts,
)


@given(usages, usages, usages)
def test_usage_sums_every_count_associatively_with_zero_as_identity(
    a: seamkit.Usage, b: seamkit.Usage, c: seamkit.Usage
) -> None:
    assert (a + b) + c == a + (b + c)
    assert a + seamkit.Usage() == a == seamkit.Usage() + a
    assert a + b == b + a
    total = a + b
    assert total.cache_read_tokens == a.cache_read_tokens + b.cache_read_tokens
    assert total.cache_write_tokens == a.cache_write_tokens + b.cache_write_tokens


def test_the_summary_says_how_many_input_tokens_the_cache_served() -> None:
    result = CliRunner().invoke(cli, ["run", str(APP), "hi"])
    assert result.exit_code == 0, result.output
    assert "1200 in (1000 cached, 150 written) / 8 out tokens]" in result.stderr


def test_the_json_result_carries_the_cache_counts() -> None:
    result = CliRunner().invoke(cli, ["run", str(APP), "hi", "--json"])
    assert result.exit_code == 0, result.output
    usage = json.loads(result.stdout)["usage"]
    assert usage["input_tokens"] == 1200
    assert (usage["cache_read_tokens"], usage["cache_write_tokens"]) == (1000, 150)


def test_the_timeline_shows_them_on_the_model_call() -> None:
    result = CliRunner().invoke(cli, ["run", str(APP), "hi", "--trace"], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    assert "model script.yaml · 1200/8 tok (1000 cached)" in result.stderr


def test_without_cache_counts_the_summary_is_unchanged() -> None:
    turn = seamkit.Usage(input_tokens=30, output_tokens=2, requests=1)
    assert turn.cache_note == ""
    assert seamkit.Usage(cache_write_tokens=5).cache_note == "5 written"


def failing() -> str:
    """A tool that fails."""
    raise RuntimeError("the disk is on fire")


def test_a_failed_tools_message_is_flagged_and_openai_never_sees_the_flag() -> None:
    model = ScriptedModel([{"tool_calls": [{"name": "failing", "id": "c1"}]}, {"text": "sorry"}])
    agent = seamkit.Agent(model, tools=[failing])
    result = asyncio.run(agent.run("go"))
    (tool,) = [m for m in result.transcript if m.role == "tool"]
    assert tool.is_error is True
    assert "is_error" not in tool.to_openai()
    assert seamkit.Message.tool("c2", "fine").is_error is None
    # the model's next request carried the flag
    assert model.requests[1].messages[-1].is_error is True
