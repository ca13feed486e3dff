"""A manifest tool entry's ``approval``, ``effects`` and ``stream_output``:
one value for a ref that names one function, one value or a map by tool name
for a ref that names a module; applied to the tools the entry yields; every
wrong value, and every name of a map the entry does not yield, is a problem
located at its line and column that says what would be right."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import seamkit
from seamkit import FunctionToolConfig, ManifestError, ToolMap
from seamkit._tool_settings import PerTool
from seamkit.testing import ScriptedModel

BILLING = '''
import seamkit

@seamkit.tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: 120 EUR"

@seamkit.tool
def refund(order: str, amount: float) -> str:
    """Refund an order."""
    return f"refunded {amount} on {order}"

@seamkit.tool(effects="idempotent", approval=True)
def notify(order: str) -> str:
    """Tell the customer."""
    return "sent"
'''


@pytest.fixture(autouse=True)
def _forget_billing() -> Iterator[None]:
    """Each test writes its own ``billing``; never reuse an imported one."""
    yield
    sys.modules.pop("billing", None)


def write_app(tmp_path: Path, tools_yaml: str) -> Path:
    (tmp_path / "billing.py").write_text(BILLING)
    (tmp_path / "script.yaml").write_text("- text: ok\n")
    app = tmp_path / "app.yaml"
    app.write_text(
        "name: demo\nmodel: scripted:script.yaml\ntools:\n"
        + textwrap.indent(textwrap.dedent(tools_yaml), "  ")
    )
    return app


async def _tools(app: Path) -> ToolMap:
    async with await seamkit.Agent.load(app) as agent:
        return agent.tools


def tools_of(app: Path) -> ToolMap:
    return asyncio.run(_tools(app))


def problems_of(app: Path) -> list[str]:
    with pytest.raises(ManifestError) as info:
        tools_of(app)
    return info.value.format().splitlines()


def load_problems(app: Path) -> list[str]:
    with pytest.raises(ManifestError) as info:
        seamkit.AppConfig.load(app)
    return info.value.format().splitlines()


# --- applied to the tools -------------------------------------------------------------


def test_a_module_ref_takes_a_map_by_tool_name(tmp_path: Path) -> None:
    app = write_app(
        tmp_path,
        """\
        - kind: function
          ref: billing
          toolset: shop
          effects: {refund: once, lookup: none}
          approval:
            refund: {when: {properties: {amount: {minimum: 100}}, required: [amount]}}
            lookup: never
        """,
    )
    tools = tools_of(app)
    lookup, refund, notify = tools["shop_lookup"], tools["shop_refund"], tools["shop_notify"]
    assert (lookup.effects, refund.effects) == ("none", "once")
    assert notify.effects == "idempotent"  # the map leaves it out: it keeps its own
    assert not lookup.approval.needed({"order": "A1"})
    assert refund.approval.needed({"order": "A1", "amount": 150.0})
    assert not refund.approval.needed({"order": "A1", "amount": 20.0})
    assert notify.approval.needed({"order": "A1"})


def test_a_module_ref_takes_one_value_for_all_its_tools(tmp_path: Path) -> None:
    app = write_app(tmp_path, "- {kind: function, ref: billing, effects: none, approval: always}\n")
    tools = tools_of(app)
    assert {t.effects for t in tools.values()} == {"none"}
    assert all(t.approval.needed({}) for t in tools.values())


def test_a_function_ref_takes_one_value(tmp_path: Path) -> None:
    app = write_app(
        tmp_path,
        """\
        - {kind: function, ref: "billing:refund", effects: idempotent, approval: true}
        - {kind: function, ref: "billing:lookup", effects: none, approval: false}
        - {kind: function, ref: "billing:notify", approval: never, stream_output: true}
        """,
    )
    tools = tools_of(app)
    assert (tools["refund"].effects, tools["lookup"].effects) == ("idempotent", "none")
    assert tools["refund"].approval.needed({}) and not tools["lookup"].approval.needed({})
    assert tools["notify"].effects == "idempotent" and not tools["notify"].approval.needed({})


def test_stream_output_is_checked_and_kept_in_the_config(tmp_path: Path) -> None:
    app = write_app(
        tmp_path, "- {kind: function, ref: billing, stream_output: {lookup: true, refund: false}}\n"
    )
    (entry,) = seamkit.AppConfig.load(app).tools
    assert entry.stream_output == PerTool(by_name={"lookup": True, "refund": False})
    assert sorted(tools_of(app)) == ["lookup", "notify", "refund"]


def test_the_settings_round_trip_through_the_config_and_its_schema() -> None:
    config = FunctionToolConfig(
        ref="billing",
        approval={"refund": {"when": {"required": ["amount"]}}, "lookup": "never"},
        effects="none",
        stream_output={"lookup": True},
    )
    dumped = config.model_dump(mode="json")
    assert dumped["approval"] == {"refund": {"when": {"required": ["amount"]}}, "lookup": False}
    assert dumped["effects"] == "none" and dumped["stream_output"] == {"lookup": True}
    assert FunctionToolConfig.model_validate(dumped) == config
    schema = FunctionToolConfig.model_json_schema()["properties"]
    assert {"approval", "effects", "stream_output"} <= set(schema)


def test_an_agent_run_suspends_on_an_entry_s_approval_rule(tmp_path: Path) -> None:
    app = write_app(
        tmp_path,
        """\
        - kind: function
          ref: billing
          approval: {refund: {when: {properties: {amount: {minimum: 100}}}}}
        """,
    )
    model = ScriptedModel(
        [
            {
                "tool_calls": [
                    {"id": "c1", "name": "refund", "arguments": '{"order": "A1", "amount": 20}'},
                    {"id": "c2", "name": "refund", "arguments": '{"order": "A2", "amount": 150}'},
                ]
            },
            {"text": "done"},
        ]
    )

    async def go() -> seamkit.RunResult:
        async with await seamkit.Agent.load(app, model=model) as agent:
            return await agent.run("refund both", session="s1", store=tmp_path / "s.sqlite")

    result = asyncio.run(go())
    assert isinstance(result.outcome, seamkit.Suspended)
    assert [p.call_id for p in result.outcome.pending] == ["c2"]
    tool_results = {m.tool_call_id: m.text for m in result.transcript if m.role == "tool"}
    assert tool_results == {"c1": "refunded 20.0 on A1"}


# --- problems, as a user reads them ---------------------------------------------------


def test_a_map_naming_a_tool_the_entry_does_not_yield(tmp_path: Path) -> None:
    app = write_app(
        tmp_path,
        """\
        - kind: function
          ref: billing
          approval: {lookup: never, cancel: always}
          effects: {refnd: once, lookup: none}
        """,
    )
    hint = (
        "  hint: it yields: lookup, refund, notify; a map's keys are the tools' own names "
        "(before any toolset)"
    )
    assert problems_of(app) == [
        f"{app}:6:39: tools[0].approval.cancel: approval names tool 'cancel', which this "
        "entry (kind 'function') does not yield",
        hint,
        f"{app}:7:22: tools[0].effects.refnd: effects names tool 'refnd', which this entry "
        "(kind 'function') does not yield",
        hint,
    ]


def test_a_function_ref_refuses_a_map(tmp_path: Path) -> None:
    app = write_app(
        tmp_path, '- {kind: function, ref: "billing:refund", effects: {refund: once}}\n'
    )
    assert load_problems(app) == [
        f"{app}:4:54: tools[0].effects: ref 'billing:refund' names one function, so effects "
        "takes one value, not a map by tool name",
        "  hint: write the value itself (e.g. 'effects: none'); a map by tool name is for a "
        "ref that names a module",
    ]


EFFECTS_HINT = (
    "  hint: 'none' for a tool that only reads, 'idempotent' for one that acts once per "
    "idempotency key, 'once' (the default) for any other; or a map by tool name, e.g. "
    "{refund: once, lookup: none}"
)


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (
            "effects: sometimes",
            [
                '6:14: tools[0].effects: effects must be none, idempotent or once, got "sometimes"',
                EFFECTS_HINT,
            ],
        ),
        (
            "effects: {refund: twice}",
            [
                "6:23: tools[0].effects.refund: effects must be none, idempotent or once, "
                'got "twice"',
                EFFECTS_HINT,
            ],
        ),
        (
            "approval: maybe",
            [
                "6:15: tools[0].approval: approval must be always, never (or true, false) or "
                '{when: <JSON Schema>}, got "maybe"',
                "  hint: 'always' asks a person before every call, {when: <JSON Schema over "
                "the arguments>} only for calls whose arguments match; or a map by tool name, "
                "e.g. {refund: always, lookup: never}",
            ],
        ),
        (
            "approval: {when: {type: 5}}",
            [
                "6:15: tools[0].approval: approval.when is not valid JSON Schema: 5 is not "
                "valid under any of the given schemas",
                "  hint: write the JSON Schema the validated arguments must match to need approval",
            ],
        ),
        (
            "approval: {when: big}",
            [
                "6:15: tools[0].approval: approval.when must be a JSON Schema (a mapping) over "
                "the call's arguments",
                "  hint: e.g. when: {properties: {amount: {minimum: 100}}, required: [amount]}",
            ],
        ),
        (
            "stream_output: {lookup: yes please}",
            [
                "6:29: tools[0].stream_output.lookup: stream_output must be true or false, "
                'got "yes please"',
                "  hint: one boolean for all the entry's tools, or a map by tool name to booleans",
            ],
        ),
        (
            "effects: {}",
            [
                "6:14: tools[0].effects: effects is an empty map",
                "  hint: give one value for all the entry's tools, or a map by tool name",
            ],
        ),
    ],
)
def test_wrong_values_are_located_and_say_what_is_right(
    tmp_path: Path, entry: str, expected: list[str]
) -> None:
    app = write_app(tmp_path, f"- kind: function\n  ref: billing\n  {entry}\n")
    assert load_problems(app) == [f"{app}:{expected[0]}", *expected[1:]]


def test_the_generated_reference_shows_the_fields() -> None:
    reference = (Path(__file__).parents[2] / "docs" / "manifest-reference.md").read_text()
    section = reference.split('<a id="tool-kinds"></a>')[1].split('<a id="hook-kinds"></a>')[0]
    for field in ("approval", "effects", "stream_output"):
        assert section.count(f"| `{field}` |") == 3, field  # function, mcp, tool-service
