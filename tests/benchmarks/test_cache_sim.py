"""The cache simulator (``_cache_sim``) follows the documented rules the
caching benchmark relies on: prefix order, breakpoints, the minimum, the
lookback, writes up to the last breakpoint, TTL and its refresh, tiered
invalidation, and usage that adds up."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from tests.benchmarks._cache_sim import (
    LOOKBACK,
    CacheSimulator,
    SimUsage,
    blocks_of,
    estimate_tokens,
    minimum_for,
)
from tests.benchmarks.bench_anthropic_cache import CacheServer, Served, system_only

EPHEMERAL = {"type": "ephemeral"}
BIG = "x" * 8000  # about 2,000 estimated tokens: above a 1,024 minimum on its own


def text(value: str, *, mark: bool | str = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": value}
    if mark:
        block["cache_control"] = EPHEMERAL if mark is True else {**EPHEMERAL, "ttl": mark}
    return block


def body(
    messages: list[dict[str, Any]],
    *,
    system: list[dict[str, Any]] | None = None,
    tools: list[dict[str, Any]] | None = None,
    **more: Any,
) -> dict[str, Any]:
    out: dict[str, Any] = {"model": "claude-sonnet-4-6", "max_tokens": 16, "messages": messages}
    if system is not None:
        out["system"] = system
    if tools is not None:
        out["tools"] = tools
    return out | more


def user(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def test_the_minimum_is_looked_up_by_the_longest_model_name_prefix() -> None:
    assert minimum_for("claude-opus-4-6") == 4096
    assert minimum_for("claude-opus-4-1-20250805") == 1024
    assert minimum_for("claude-opus-4-20250514") == 1024
    assert minimum_for("claude-haiku-4-5-20251001") == 4096
    assert minimum_for("claude-3-5-haiku-latest") == 2048
    assert minimum_for("someone-elses-model") == 1024


def test_the_prompt_is_tools_then_system_then_messages_whatever_the_key_order() -> None:
    tool = {"name": "t", "description": "d", "input_schema": {"type": "object"}}
    a = blocks_of(body([user(text("hi"))], system=[text("sys")], tools=[tool]))
    reordered = {"messages": [user(text("hi"))], "system": [text("sys")], "tools": [tool]}
    b = blocks_of({**reordered, "model": "claude-sonnet-4-6"})
    assert [x.part for x in a] == ["tools", "system", "messages"]
    assert [x.prefix_hash for x in a] == [x.prefix_hash for x in b]


def test_the_first_request_writes_up_to_the_last_breakpoint_and_the_rest_is_input() -> None:
    sim = CacheSimulator()
    first = body([user(text("question"))], system=[text(BIG, mark=True)])
    usage = sim.answer(first, now=0)
    system_tokens = estimate_tokens(text(BIG))
    assert usage.cache_read_input_tokens == 0
    assert usage.cache_creation_input_tokens == system_tokens
    assert usage.input_tokens == usage.total - system_tokens > 0


def test_the_same_prefix_is_read_within_the_ttl_and_cache_control_is_not_part_of_it() -> None:
    sim = CacheSimulator()
    sim.answer(body([user(text("one", mark=True))], system=[text(BIG)]), now=0)
    # the marker moved to a later block: the earlier entry is still found (lookback)
    second = body(
        [user(text("one")), assistant(text("ok")), user(text("two", mark=True))], system=[text(BIG)]
    )
    usage = sim.answer(second, now=60)
    one = blocks_of(second)[1].prefix_tokens
    assert usage.cache_read_input_tokens == one
    assert usage.cache_creation_input_tokens == usage.total - one
    assert usage.input_tokens == 0


def test_a_breakpoint_below_the_minimum_is_ignored() -> None:
    sim = CacheSimulator()
    small = body([user(text("short", mark=True))], system=[text("a short system prompt")])
    for t in (0, 10):
        usage = sim.answer(small, now=t)
        assert (usage.cache_read_input_tokens, usage.cache_creation_input_tokens) == (0, 0)
        assert usage.input_tokens == usage.total
    assert sim.entries == {}
    # the same body is cached when the minimum is lower
    low = CacheSimulator(minimum=1)
    low.answer(small, now=0)
    assert low.answer(small, now=10).cache_read_input_tokens > 0


def test_the_lookback_reaches_20_blocks_before_a_breakpoint_and_no_further() -> None:
    def request(n_after: int) -> dict[str, Any]:
        blocks = [text(f"block {i}") for i in range(n_after)]
        if blocks:
            blocks[-1] = text(f"block {n_after - 1}", mark=True)
        first = text(BIG, mark=not blocks)
        return body([user(first, *blocks)])

    for gap, found in ((LOOKBACK, True), (LOOKBACK + 1, False)):
        sim = CacheSimulator()
        sim.answer(request(0), now=0)  # an entry ending at the big block
        usage = sim.answer(request(gap), now=1)  # the breakpoint `gap` blocks later
        assert (usage.cache_read_input_tokens > 0) is found, gap


def test_an_entry_expires_after_its_ttl_and_each_hit_refreshes_it() -> None:
    request = body([user(text("q"))], system=[text(BIG, mark=True)])
    sim = CacheSimulator()
    sim.answer(request, now=0)
    assert sim.answer(request, now=299).cache_read_input_tokens > 0  # refreshed at 299
    assert sim.answer(request, now=598).cache_read_input_tokens > 0  # within 5 min of 299
    miss = sim.answer(request, now=598 + 301)
    assert miss.cache_read_input_tokens == 0 and miss.cache_creation_input_tokens > 0
    hour = body([user(text("q"))], system=[text(BIG, mark="1h")])
    sim = CacheSimulator()
    sim.answer(hour, now=0)
    assert sim.answer(hour, now=3000).cache_read_input_tokens > 0


def test_changing_tool_choice_or_thinking_keeps_the_system_entry_and_loses_the_messages() -> None:
    messages = [user(text(BIG, mark=True))]
    system = [text(BIG, mark=True)]
    sim = CacheSimulator()
    first = sim.answer(body(messages, system=system), now=0)
    assert first.cache_creation_input_tokens == first.total - first.input_tokens
    system_tokens = estimate_tokens(text(BIG))
    for n, change in enumerate(
        ({"tool_choice": {"type": "any"}}, {"thinking": {"type": "enabled", "budget_tokens": 1024}})
    ):
        usage = sim.answer(body(messages, system=system, **change), now=1 + n)
        assert usage.cache_read_input_tokens == system_tokens, change


def test_changing_a_tool_or_the_model_invalidates_everything() -> None:
    tool = {"name": "t", "description": "d", "input_schema": {"type": "object"}}
    system = [text(BIG, mark=True)]
    sim = CacheSimulator()
    sim.answer(body([user(text("q"))], system=system, tools=[tool]), now=0)
    changed = {**tool, "description": "changed"}
    assert (
        sim.answer(
            body([user(text("q"))], system=system, tools=[changed]), now=1
        ).cache_read_input_tokens
        == 0
    )
    assert (
        sim.answer(
            body([user(text("q"))], system=system, tools=[tool], model="claude-opus-4-1"), now=2
        ).cache_read_input_tokens
        == 0
    )


def test_the_api_s_limits_are_errors() -> None:
    sim = CacheSimulator()
    with pytest.raises(ValueError, match="4"):
        sim.answer(body([user(*(text(str(i), mark=True) for i in range(5)))]), now=0)
    with pytest.raises(ValueError, match="longer cache TTL"):
        sim.answer(body([user(text("a", mark="5m"), text("b", mark="1h"))]), now=0)
    thinking = {"type": "thinking", "thinking": "...", "signature": "s", "cache_control": EPHEMERAL}
    with pytest.raises(ValueError, match="thinking"):
        sim.answer(body([user(text("q")), assistant(thinking)]), now=0)


def test_automatic_caching_marks_the_last_cacheable_block() -> None:
    sim = CacheSimulator()
    request = body([user(text(BIG))], cache_control=EPHEMERAL)
    assert sim.answer(request, now=0).cache_creation_input_tokens > 0
    again = sim.answer(request, now=1)
    assert again.cache_read_input_tokens == again.total


@settings(max_examples=60, deadline=None)
@given(
    turns=st.lists(
        st.tuples(st.integers(0, 30), st.integers(0, 3), st.integers(0, 400)),
        min_size=1,
        max_size=8,
    )
)
def test_the_three_counts_always_add_up_to_the_request_s_tokens(
    turns: list[tuple[int, int, int]],
) -> None:
    """Law: read + write + input = every block's tokens, none negative, and the
    totals are the sums of the answers."""
    sim = CacheSimulator(minimum=64)
    clock = 0.0
    messages: list[dict[str, Any]] = []
    seen: list[SimUsage] = []
    for size, marks, gap in turns:
        clock += gap
        messages = [*messages, user(text("y" * size * 40)), assistant(text("ok"))]
        users = [i for i, m in enumerate(messages) if m["role"] == "user"]
        marked = set(users[-marks:]) if marks else set()
        request = body(
            [
                m | {"content": [m["content"][0] | {"cache_control": EPHEMERAL}]}
                if i in marked
                else m
                for i, m in enumerate(messages)
            ],
            system=[text(BIG[:2000])],
        )
        usage = sim.answer(request, now=clock)
        seen.append(usage)
        parts = (
            usage.input_tokens,
            usage.cache_read_input_tokens,
            usage.cache_creation_input_tokens,
        )
        assert min(parts) >= 0
        assert usage.total == blocks_of(request)[-1].prefix_tokens
    assert sim.totals() == SimUsage(
        sum(u.input_tokens for u in seen),
        sum(u.cache_read_input_tokens for u in seen),
        sum(u.cache_creation_input_tokens for u in seen),
    )


def test_the_benchmark_s_server_answers_the_official_client_with_the_simulator_s_usage() -> None:
    """The caching benchmark's ASGI server, checked with the official SDK
    (whole and streamed), independently of the provider: the usage it reads
    is the simulator's, and the server keeps each body as sent."""
    asyncio.run(_ask_the_server_twice())


async def _ask_the_server_twice() -> None:
    from anthropic import AsyncAnthropic  # lazy: the SDK is heavy; this test alone speaks it

    app = CacheServer(simulator=CacheSimulator(minimum=1024))
    system: Any = [text(BIG, mark=True)]
    with Served(app) as served:
        client = AsyncAnthropic(base_url=served.base_url, api_key="sk-test", max_retries=0)
        async with client:
            first = await client.messages.create(
                model="claude-sonnet-4-6",
                max_tokens=16,
                system=system,
                messages=[{"role": "user", "content": "hi"}],
            )
            app.now = 60.0
            async with client.messages.stream(
                model="claude-sonnet-4-6",
                max_tokens=16,
                system=system,
                messages=[{"role": "user", "content": "hi again"}],
            ) as stream:
                second = await stream.get_final_message()
    written = estimate_tokens(text(BIG))
    assert first.content[0].type == "text" and first.content[0].text == "ok"
    assert first.usage.cache_creation_input_tokens == written
    assert first.usage.cache_read_input_tokens == 0
    assert second.usage.cache_read_input_tokens == written
    assert second.usage.cache_creation_input_tokens == 0
    assert second.usage.input_tokens == app.simulator.history[1].input_tokens > 0
    assert [b.get("stream") for b in app.bodies] == [None, True]
    assert app.bodies[0]["system"][0]["cache_control"] == EPHEMERAL


def test_the_system_only_baseline_moves_every_breakpoint_to_the_system_prompt() -> None:
    sent = body(
        [user(text("a", mark=True)), assistant(text("ok", mark=True))],
        system=[text("sys"), text("docs")],
        tools=[{"name": "t", "input_schema": {}, "cache_control": EPHEMERAL}],
    )
    seen = system_only(sent)
    marked = [b for b in blocks_of(seen) if b.ttl is not None]
    assert [b.part for b in marked] == ["system"]
    assert seen["system"][-1]["cache_control"] == EPHEMERAL
    assert "cache_control" in sent["messages"][0]["content"][0]  # the sent body is not changed
