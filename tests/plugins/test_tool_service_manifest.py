"""The ``tool_services:`` section and the ``tool-service`` tool kind as a
manifest author meets them: every mistake reported at once, each at its file,
line and column (through `seamkit.AppConfig.load` and ``seamkit validate``),
and the JSON Schema the model sees for a valid tool's ``arguments``."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import seamkit
from seamkit.testing import ScriptedModel

SEAMKIT = Path(sys.executable).with_name("seamkit")

BAD = """\
name: demo
model: scripted:s.yaml
tool_services:
  services:
    - id: kb
      url: http://127.0.0.1:9/
      config_params:
        - name: collection
          required: true
        - name: style
    - id: "bad id"
      url: http://127.0.0.1:9/
    - id: nourl
      transport: http
    - id: nonats
      transport: nats
    - id: kb
      url: http://127.0.0.1:8/
    - id: reserved
      url: http://127.0.0.1:9/
      config_params:
        - name: toolset
    - id: slow
      url: http://127.0.0.1:9/
      timeout_seconds: 0
tools:
  - name: lost
    kind: tool-service
    description: Names no declared service.
    service: nosuch
  - name: sloppy
    kind: tool-service
    description: Misses collection, misspells style.
    service: kb
    stlye: terse
  - name: typed
    kind: tool-service
    description: A bad argument type.
    service: kb
    collection: docs
    arguments:
      - name: q
        type: str
  - name: hasty
    kind: tool-service
    description: A bad time-out.
    service: kb
    collection: docs
    timeout_seconds: -1
"""

# (path as printed, the line it is on (a needle), words of its message, of its hint)
EXPECTED: list[tuple[str, str, str, str | None]] = [
    ("tools[0].service", "service: nosuch", "unknown tool service 'nosuch'", "known services:"),
    (
        "tools[1]",
        "- name: sloppy",
        "tool 'sloppy' misses the required config value 'collection' of service 'kb'",
        "add 'collection: ...'",
    ),
    (
        "tools[1].stlye",
        "stlye: terse",
        "unknown config key 'stlye' for service 'kb'",
        "did you mean 'style'?",
    ),
    ("tools[2].arguments[0].type", "type: str", "'string', 'number', 'integer'", None),
    ("tools[3].timeout_seconds", "timeout_seconds: -1", "greater than 0", None),
    ("tool_services.services[1].id", 'id: "bad id"', "should match pattern", None),
    ("tool_services.services[2].url", "- id: nourl", "'url' is missing", None),
    ("tool_services.services[3].subject", "- id: nonats", "'subject' is missing", None),
    ("tool_services.services[3].servers", "- id: nonats", "'servers' is missing", None),
    (
        "tool_services.services[4].id",
        "id: kb\n      url: http://127.0.0.1:8/",
        "declared twice",
        None,
    ),
    (
        "tool_services.services[5].config_params[0].name",
        "name: toolset",
        "config param 'toolset' is named like a field of tool entries",
        "reserved: approval, arguments, description, effects, kind, name, service, "
        "stream_output, timeout_seconds, toolset",
    ),
    ("tool_services.services[6].timeout_seconds", "timeout_seconds: 0", "greater than 0", None),
]


def line_of(text: str, needle: str) -> int:
    """The 1-based line ``needle`` starts on in ``text``."""
    return text[: text.index(needle)].count("\n") + 1


def manifest_problems(path: Path) -> list[seamkit.Problem]:
    with pytest.raises(seamkit.ManifestError) as info:
        seamkit.AppConfig.load(path)
    return list(info.value.problems)


def test_every_problem_is_reported_at_once_each_on_its_own_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD)
    problems = {p.path: p for p in manifest_problems(path)}
    assert sorted(problems) == sorted(e[0] for e in EXPECTED)
    for where, needle, words, hint in EXPECTED:
        problem = problems[where]
        assert words in problem.message, where
        assert problem.line == line_of(BAD, needle), where
        assert problem.column is not None, where
        if hint is not None:
            assert problem.hint is not None and hint in problem.hint, where
    known = problems["tools[0].service"].hint or ""
    assert all(i in known for i in ("kb", "nourl", "nonats", "reserved", "slow"))
    with pytest.raises(seamkit.ManifestError):  # nothing is half-applied: no agent either
        asyncio.run(seamkit.Agent.load(path, model=ScriptedModel([])))


def test_seamkit_validate_prints_each_problem_at_its_file_line_and_column(
    tmp_path: Path,
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD)
    done = subprocess.run(
        [str(SEAMKIT), "validate", str(path)], capture_output=True, text=True, timeout=60
    )
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "Traceback" not in output
    for problem in manifest_problems(path):
        head = f"{path}:{problem.line}:{problem.column}: {problem.path}: {problem.message}"
        assert head in output
    assert f"{path}: {len(EXPECTED)} errors" in output


@pytest.mark.parametrize(
    "field",
    [
        "kind",
        "name",
        "description",
        "service",
        "toolset",
        "arguments",
        "timeout_seconds",
        "approval",
        "effects",
        "stream_output",
    ],
)
def test_a_config_param_named_like_a_reserved_field_is_a_descriptor_error(field: str) -> None:
    service = {"id": "kb", "url": "http://127.0.0.1:9/", "config_params": [{"name": field}]}
    with pytest.raises(seamkit.ManifestError) as info:
        seamkit.AppConfig.load(
            {"name": "a", "model": "scripted:s", "tool_services": {"services": [service]}}
        )
    [problem] = info.value.problems
    assert problem.location == ("tool_services", "services", 0, "config_params", 0, "name")
    assert f"config param '{field}' is named like a field of tool entries" in problem.message


def test_an_unknown_service_is_reported_even_without_a_tool_services_section() -> None:
    tool = {"kind": "tool-service", "name": "t", "description": "T.", "service": "kb"}
    with pytest.raises(seamkit.ManifestError) as info:
        seamkit.AppConfig.load({"name": "a", "model": "scripted:s", "tools": [tool]})
    [problem] = info.value.problems
    assert problem.location == ("tools", 0, "service")
    assert problem.hint is not None and "tool_services.services" in problem.hint


def test_arguments_become_the_json_schema_the_model_sees() -> None:
    manifest: dict[str, Any] = {
        "name": "a",
        "model": "scripted:s",
        "tool_services": {"services": [{"id": "kb", "url": "http://127.0.0.1:9/"}]},
        "tools": [
            {
                "kind": "tool-service",
                "name": "search",
                "description": "Search the knowledge base.",
                "service": "kb",
                "arguments": [
                    {"name": "query", "type": "string", "description": "What to look for."},
                    {"name": "limit", "type": "integer", "required": False},
                    {"name": "exact", "type": "boolean", "required": False},
                    {"name": "filters", "type": "object", "required": False},
                    {"name": "tags", "type": "array", "required": False},
                    {"name": "boost", "type": "number", "required": False},
                ],
            }
        ],
    }

    async def spec() -> seamkit.ToolSpec:
        async with await seamkit.Agent.load(manifest, model=ScriptedModel([])) as agent:
            return agent.tools["search"].spec

    found = asyncio.run(spec())
    assert found.name == "search" and found.description == "Search the knowledge base."
    assert found.parameters == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for."},
            "limit": {"type": "integer"},
            "exact": {"type": "boolean"},
            "filters": {"type": "object"},
            "tags": {"type": "array"},
            "boost": {"type": "number"},
        },
        "required": ["query"],
        "additionalProperties": False,
    }


# --- approval, effects and stream_output on a tool-service entry -------------------

SETTINGS_APP = """\
name: demo
model: scripted:s.yaml
tool_services:
  services:
    - id: kb
      url: http://127.0.0.1:9/
      config_params: [{name: collection}]
tools:
  - kind: tool-service
    name: search
    description: Search.
    service: kb
    collection: docs
{settings}
"""


def _load_agent_tools(path: Path) -> dict[str, seamkit.Tool]:
    async def go() -> dict[str, seamkit.Tool]:
        async with await seamkit.Agent.load(path, model=ScriptedModel([])) as agent:
            return dict(agent.tools)

    return asyncio.run(go())


def test_a_tool_service_entry_takes_approval_effects_and_stream_output(tmp_path: Path) -> None:
    path = tmp_path / "app.yaml"
    path.write_text(
        SETTINGS_APP.replace(
            "{settings}",
            "    effects: idempotent\n    approval: {when: {required: [query]}}\n"
            "    stream_output: {search: true}",
        )
    )
    (entry,) = seamkit.AppConfig.load(path).tools
    assert entry.config_values == {"collection": "docs"}  # the settings are no config values
    search = _load_agent_tools(path)["search"]
    assert search.effects == "idempotent"
    assert search.approval.needed({"query": "x"}) and not search.approval.needed({})


def test_a_tool_service_entry_s_map_names_only_its_own_tool(tmp_path: Path) -> None:
    path = tmp_path / "app.yaml"
    path.write_text(SETTINGS_APP.replace("{settings}", "    effects: {search: none, lookup: none}"))
    with pytest.raises(seamkit.ManifestError) as info:
        _load_agent_tools(path)
    assert info.value.format().splitlines() == [
        f"{path}:14:37: tools[0].effects.lookup: effects names tool 'lookup', which this "
        "entry (kind 'tool-service') does not yield",
        "  hint: it yields: search; a map's keys are the tools' own names (before any toolset)",
    ]
