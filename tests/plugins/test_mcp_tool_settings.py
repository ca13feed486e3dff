"""``approval`` and ``effects`` on an ``mcp`` entry, end to end on real
servers: ``mcp-server-time`` with ``approval: {when: ...}`` on one of its
tools suspends that call (and only that one) until a decision; ``effects``
reaches the tools, again after ``tools/list_changed``; a map naming a tool
the server does not offer is a located problem listing those it does."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import seamkit
import yaml
from seamkit.testing import ScriptedModel

from tests.plugins.mcp_servers import BIN, TAG_VARIABLE, new_tag, stdio_entry, tagged

TIME = BIN / "mcp-server-time"

TOKYO_NEEDS_APPROVAL = {
    "convert_time": {
        "when": {
            "properties": {"target_timezone": {"const": "Asia/Tokyo"}},
            "required": ["target_timezone"],
        }
    }
}


def time_entry(tag: str, **fields: Any) -> dict[str, Any]:
    """``mcp-server-time`` over stdio, its environment tagged."""
    return {"kind": "mcp", "command": str(TIME), "env": {TAG_VARIABLE: tag}, **fields}


def manifest(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"name": "mcp-settings", "model": "scripted:inline", "tools": list(entries)}


def call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": json.dumps(arguments)}


def results(result: seamkit.RunResult) -> dict[str, str]:
    return {m.tool_call_id or "": m.text for m in result.transcript if m.role == "tool"}


def test_approval_when_on_one_mcp_tool_suspends_that_call_and_effects_reach_the_tools(
    tmp_path: Path,
) -> None:
    tag = new_tag()
    app = manifest(
        time_entry(
            tag,
            toolset="time",
            approval=TOKYO_NEEDS_APPROVAL,
            effects={"get_current_time": "none", "convert_time": "idempotent"},
        )
    )
    to = {"source_timezone": "UTC", "time": "12:00"}
    model = ScriptedModel(
        [
            {
                "tool_calls": [
                    call("c1", "time_convert_time", {**to, "target_timezone": "Asia/Tokyo"}),
                    call("c2", "time_convert_time", {**to, "target_timezone": "Europe/Paris"}),
                    call("c3", "time_get_current_time", {"timezone": "UTC"}),
                ]
            },
            {"text": "done"},
        ]
    )
    store = tmp_path / "sessions.sqlite"

    async def go() -> tuple[dict[str, seamkit.Tool], seamkit.RunResult, seamkit.RunResult]:
        async with await seamkit.Agent.load(app, model=model) as agent:
            tools = dict(agent.tools)
            first = await agent.run("convert", session="s", store=store)
            assert isinstance(first.outcome, seamkit.Suspended), first.outcome
            (pending,) = first.outcome.pending
            decided = seamkit.Decisions({pending.call_id: seamkit.Approve(digest=pending.digest)})
            second = await agent.run(decided, session="s", store=store)
            return tools, first, second

    tools, first, second = asyncio.run(go())
    assert tools["time_get_current_time"].effects == "none"
    assert tools["time_convert_time"].effects == "idempotent"
    assert isinstance(first.outcome, seamkit.Suspended)
    (pending,) = first.outcome.pending
    assert (pending.call_id, pending.tool, pending.hook) == ("c1", "time_convert_time", None)
    assert pending.arguments["target_timezone"] == "Asia/Tokyo"
    ran_first = results(first)
    assert set(ran_first) == {"c2", "c3"}  # the calls that need no approval ran
    assert json.loads(ran_first["c2"])["target"]["timezone"] == "Europe/Paris"
    assert second.outcome.kind == "completed" and second.output == "done"
    tokyo = json.loads(results(second)["c1"])
    assert tokyo["target"]["timezone"] == "Asia/Tokyo" and tokyo["time_difference"] == "+9.0h"
    assert tagged(tag) == []


def test_one_value_applies_to_every_tool_of_the_server_and_to_tools_listed_later() -> None:
    tag = new_tag()
    app = manifest(stdio_entry("main", tag, toolset="dyn", effects="none", approval="never"))
    model = ScriptedModel(
        [{"tool_calls": [call("c1", "dyn_grow", {})]}, {"text": "grown"}, {"text": "again"}]
    )

    async def go() -> tuple[dict[str, seamkit.Tool], dict[str, seamkit.Tool]]:
        async with await seamkit.Agent.load(app, model=model) as agent:
            before = dict(agent.tools)
            await agent.run("grow")
            await agent.run("again")  # the new listing is taken before this run
            return before, dict(agent.tools)

    before, after = asyncio.run(go())
    assert "dyn_grown" not in before and "dyn_grown" in after
    assert {t.effects for t in after.values()} == {"none"}
    assert not any(t.approval.needed({}) for t in after.values())
    assert tagged(tag) == []


def test_a_map_naming_a_tool_the_server_does_not_offer_is_a_located_problem(
    tmp_path: Path,
) -> None:
    tag = new_tag()
    path = tmp_path / "app.yaml"
    entry = time_entry(tag, toolset="time", effects={"convert_time": "none", "get_time": "none"})
    (tmp_path / "script.yaml").write_text("- text: ok\n")
    path.write_text(
        yaml.safe_dump({**manifest(entry), "model": "scripted:script.yaml"}, sort_keys=False)
    )

    async def go() -> None:
        async with await seamkit.Agent.load(path):
            pass

    with pytest.raises(seamkit.ManifestError) as info:
        asyncio.run(go())
    lines = info.value.format().splitlines()
    assert lines[0].startswith(f"{path}:")
    assert lines[0].split(": ", 1)[1] == (
        "tools[0].effects.get_time: effects names tool 'get_time', which this entry "
        "(kind 'mcp') does not yield"
    )
    assert lines[1] == (
        "  hint: it yields: get_current_time, convert_time; a map's keys are the tools' own "
        "names (before any toolset)"
    )
    assert tagged(tag) == []
