"""Tool kinds and resolution: manifest entries and code tools become one map,
with toolset naming, and every problem reported at once naming its entry."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
import seamkit
from click.testing import CliRunner
from seamkit import ManifestError, ToolMap
from seamkit._cli._group import cli
from seamkit.plugins import BuildContext, PluginInfo, add_plugin, load_plugins, reset_registry

TOOLS_MODULE = '''
import seamkit

@seamkit.tool
def get_memories(user: str) -> list[str]:
    """Recall what we know about a user."""
    return [f"{user} likes tea"]

@seamkit.tool(timeout_seconds=30)
def save_memory(text: str) -> str:
    """Remember something."""
    return "saved"

def helper(x: int) -> int:
    """Not a tool until referenced by name."""
    return x
'''


@pytest.fixture(autouse=True)
def _forget_tool_module() -> Iterator[None]:
    """Each test writes its own ``memory_tools``; never reuse an imported one."""
    yield
    sys.modules.pop("memory_tools", None)


def write_app(tmp_path: Path, tools_yaml: str, module: str = TOOLS_MODULE) -> Path:
    (tmp_path / "memory_tools.py").write_text(module)
    (tmp_path / "script.yaml").write_text("- text: ok\n")
    app = tmp_path / "app.yaml"
    app.write_text(
        "name: demo\nmodel: scripted:script.yaml\ntools:\n"
        + textwrap.indent(textwrap.dedent(tools_yaml), "  ")
    )
    return app


def resolve(app: Path | dict[str, Any], **kw: Any) -> ToolMap:
    return asyncio.run(_resolve(app, **kw))


def problems_of(app: Path, **kw: Any) -> str:
    with pytest.raises(ManifestError) as info:
        resolve(app, **kw)
    return info.value.format()


def test_module_ref_gives_every_tool_in_definition_order_under_its_toolset(
    tmp_path: Path,
) -> None:
    app = write_app(tmp_path, "- {kind: function, ref: memory_tools, toolset: memory_server}\n")
    tools = resolve(app)
    assert list(tools) == ["memory_server_get_memories", "memory_server_save_memory"]
    assert tools.toolsets == {
        "memory_server": {
            "get_memories": "memory_server_get_memories",
            "save_memory": "memory_server_save_memory",
        }
    }
    got = tools["memory_server_get_memories"]
    assert got.spec.name == "memory_server_get_memories"
    assert got.description == "Recall what we know about a user."
    assert tools.find("get_memories", toolset="memory_server") is got
    assert tools.origin("memory_server_get_memories") == "tools[0]"
    assert asyncio.run(got.call({"user": "ann"})).content == '["ann likes tea"]'


def test_function_ref_names_one_function_and_may_override_the_time_out(tmp_path: Path) -> None:
    app = write_app(
        tmp_path,
        """\
        - {kind: function, ref: "memory_tools:helper"}
        - {kind: function, ref: "memory_tools:save_memory", timeout_seconds: 2.5}
        """,
    )
    tools = resolve(app)
    assert list(tools) == ["helper", "save_memory"]
    assert tools["helper"].description == "Not a tool until referenced by name."
    assert tools["save_memory"].timeout_seconds == 2.5


def test_toolset_names_are_sanitised(tmp_path: Path) -> None:
    app = write_app(
        tmp_path,
        """\
        - {kind: function, ref: memory_tools, toolset: memory server}
        - {kind: function, ref: "memory_tools:helper", toolset: "9 lives!"}
        """,
    )
    assert list(resolve(app)) == [
        "memory_server_get_memories",
        "memory_server_save_memory",
        "_9_lives__helper",
    ]


def test_code_tools_and_manifest_tools_meet_in_one_map(tmp_path: Path) -> None:
    @seamkit.tool
    def clock() -> str:
        return "noon"

    def plain(x: int) -> int:
        return x

    app = write_app(tmp_path, "- {kind: function, ref: memory_tools, toolset: mem}\n")
    tools = resolve(app, tools=[clock, plain])
    assert list(tools) == ["mem_get_memories", "mem_save_memory", "clock", "plain"]
    assert tools.origin("plain") == "the tools passed in code"
    assert asyncio.run(tools["plain"].call({"x": 4})).content == "4"


def test_tools_from_code_alone() -> None:
    @seamkit.tool
    def ping() -> str:
        return "pong"

    tools = seamkit.ToolMap.of([ping])
    assert list(tools) == ["ping"] and tools.toolsets == {}


def test_the_map_is_immutable(tmp_path: Path) -> None:
    tools = resolve(write_app(tmp_path, "- {kind: function, ref: memory_tools}\n"))
    with pytest.raises(TypeError):
        tools["x"] = tools["get_memories"]  # type: ignore[index]
    with pytest.raises(TypeError):
        tools.toolsets["x"] = {}  # type: ignore[index]


def test_find_says_what_exists(tmp_path: Path) -> None:
    tools = resolve(write_app(tmp_path, "- {kind: function, ref: memory_tools, toolset: mem}\n"))
    with pytest.raises(seamkit.SeamkitError, match="no toolset named 'memory'") as info:
        tools.find("get_memories", toolset="memory")
    assert info.value.hint == "toolsets: mem (a tools entry sets 'toolset: NAME')"
    with pytest.raises(seamkit.SeamkitError, match="toolset 'mem' has no tool 'forget'") as info:
        tools.find("forget", toolset="mem")
    assert info.value.hint == "its tools: get_memories, save_memory"
    with pytest.raises(seamkit.SeamkitError, match="no tool named 'get_memories'"):
        tools.find("get_memories")


# --- errors, as a user reads them ----------------------------------------------


def test_duplicate_names_are_reported_with_both_entries(tmp_path: Path) -> None:
    app = write_app(
        tmp_path,
        """\
        - {kind: function, ref: memory_tools}
        - {kind: function, ref: "memory_tools:save_memory"}
        """,
    )
    assert problems_of(app) == (
        f"{app}:5:5: tools[1]: two tools are named 'save_memory': one from tools[0] and one "
        "from tools[1]\n"
        "  hint: give one of the entries a 'toolset' (names become '<toolset>_<tool>'), or "
        "rename one tool"
    )


def test_a_code_tool_clashing_with_a_manifest_tool(tmp_path: Path) -> None:
    @seamkit.tool
    def get_memories() -> str:
        return ""

    app = write_app(tmp_path, "- {kind: function, ref: memory_tools}\n")
    assert problems_of(app, tools=[get_memories]).startswith(
        f"{app}: two tools are named 'get_memories': one from tools[0] and one from the tools "
        "passed in code"
    )


def test_unknown_function_references(tmp_path: Path) -> None:
    app = write_app(
        tmp_path,
        """\
        - {kind: function, ref: "memory_tools:get_memory"}
        - {kind: function, ref: "no_such_module:f"}
        - {kind: function, ref: "memory_tools:save_memory"}
        """,
    )
    assert problems_of(app) == (
        f"{app}:4:5: tools[0]: function tool 'memory_tools:get_memory': module 'memory_tools' "
        "has no 'get_memory'\n"
        "  hint: check the name after ':' in ref (functions in the module: get_memories, "
        "helper, save_memory)\n"
        f"{app}:5:5: tools[1]: function tool 'no_such_module:f': no module named "
        f"'no_such_module' (also looked in {tmp_path})\n"
        "  hint: install the package that provides it, or fix the module path in ref"
    )


def test_a_module_without_tools(tmp_path: Path) -> None:
    app = write_app(tmp_path, "- {kind: function, ref: memory_tools}\n", module="X = 1\n")
    assert "module 'memory_tools' has no @seamkit.tool function" in problems_of(app)


def test_a_function_that_cannot_be_a_tool(tmp_path: Path) -> None:
    app = write_app(
        tmp_path,
        "- {kind: function, ref: 'memory_tools:f'}\n",
        module="def f(*args):\n    pass\n",
    )
    assert "tools[0]: tool f: *args is not supported" in problems_of(app)


def test_an_invalid_time_out_names_the_entry_and_field(tmp_path: Path) -> None:
    app = write_app(tmp_path, "- {kind: function, ref: memory_tools, timeout_seconds: 0}\n")
    with pytest.raises(ManifestError) as info:
        seamkit.AppConfig.load(app)
    assert "tools[0].timeout_seconds" in info.value.format()
    assert "greater than 0" in info.value.format()


class BoomConfig(seamkit.ToolConfig):
    kind: Literal["boom"] = "boom"


async def resolve_boom(config: BoomConfig, agent: Any) -> list[seamkit.Tool]:
    raise ConnectionError("service down")


class BoomPlugin:
    @seamkit.hookimpl
    def register_tool_kinds(self, register: Any) -> None:
        register(BoomConfig, resolve_boom)


def test_a_failing_tool_kind_is_reported_and_the_other_entries_still_resolve(
    tmp_path: Path,
) -> None:
    registry = load_plugins(entry_points=[])
    add_plugin(registry, BoomPlugin(), PluginInfo(name="boom", distribution="seamkit-boom"))
    reset_registry(registry)
    app = write_app(
        tmp_path,
        """\
        - {kind: boom}
        - {kind: function, ref: "memory_tools:nope"}
        """,
    )
    text = problems_of(app)
    assert text.splitlines()[0] == (
        f"{app}:4:5: tools[0]: tool kind 'boom' failed to resolve this entry: "
        "ConnectionError: service down"
    )
    assert "  hint: this is a bug in seamkit-boom, or the entry's settings are wrong" in text
    assert "tools[1]: function tool 'memory_tools:nope'" in text


def test_resolve_receives_the_build_context(tmp_path: Path) -> None:
    seen: list[Any] = []

    class EchoConfig(seamkit.ToolConfig):
        kind: Literal["echo"] = "echo"

    async def resolve_echo(config: EchoConfig, agent: Any) -> list[seamkit.Tool]:
        seen.append(agent)
        return [seamkit.Tool(lambda: "e", name="echo")]

    class Plugin:
        @seamkit.hookimpl
        def register_tool_kinds(self, register: Any) -> None:
            register(EchoConfig, resolve_echo)

    registry = load_plugins(entry_points=[])
    add_plugin(registry, Plugin(), PluginInfo(name="echo"))
    reset_registry(registry)
    app = write_app(tmp_path, "- {kind: echo, toolset: e}\n")
    assert list(resolve(app)) == ["e_echo"]
    assert (seen[0].app_name, seen[0].base_dir) == ("demo", tmp_path)
    assert isinstance(seen[0], BuildContext)


# --- the CLI -----------------------------------------------------------------------


def test_validate_resolves_tools(tmp_path: Path) -> None:
    app = write_app(tmp_path, "- {kind: function, ref: 'memory_tools:forget'}\n")
    result = CliRunner().invoke(cli, ["validate", str(app)])
    assert result.exit_code == 1
    assert f"{app}:4:5: tools[0]: function tool 'memory_tools:forget'" in result.output
    assert f"{app}: 1 error" in result.output
    good = write_app(tmp_path, "- {kind: function, ref: memory_tools, toolset: mem}\n")
    result = CliRunner().invoke(cli, ["validate", str(good)])
    assert result.exit_code == 0
    assert result.output.strip() == f"{good}: ok (1 tool entry giving 2 tools, 0 hooks)"


def test_tools_command_lists_what_the_model_sees(tmp_path: Path) -> None:
    app = write_app(tmp_path, "- {kind: function, ref: memory_tools, toolset: mem}\n")
    result = CliRunner().invoke(cli, ["tools", str(app)])
    assert result.exit_code == 0
    assert result.output.splitlines() == [
        "mem_get_memories(user)  [tools[0]]",
        "    Recall what we know about a user.",
        "mem_save_memory(text)  [tools[0]]",
        "    Remember something.",
    ]
    import json

    rows = json.loads(CliRunner().invoke(cli, ["tools", "--json", str(app)]).output)
    assert rows[1] == {
        "name": "mem_save_memory",
        "description": "Remember something.",
        "parameters": {
            "additionalProperties": False,
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
            "type": "object",
        },
        "origin": "tools[0]",
        "tags": [],
        "terminal": False,
        "timeout_seconds": 30,
    }


async def _resolve(app: object, **kw: object) -> seamkit.ToolMap:
    async with await seamkit.Agent.load(app, **kw) as agent:  # type: ignore[arg-type]
        return agent.tools
