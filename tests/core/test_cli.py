"""The CLI in-process: plugin commands, errors as one line plus a hint."""

from __future__ import annotations

import click
import seamkit
from click.testing import CliRunner
from seamkit._cli._group import _add_plugin_commands, cli
from seamkit.plugins import PluginInfo, add_plugin, load_plugins, reset_registry


class Commands:
    @seamkit.hookimpl
    def register_commands(self, cli):  # type: ignore[no-untyped-def]
        @cli.command("hello")
        def hello() -> None:
            """Say hello."""
            click.echo("hello from a plugin")


class BrokenCommands:
    @seamkit.hookimpl
    def register_commands(self, cli):  # type: ignore[no-untyped-def]
        raise RuntimeError("no commands today")


def test_plugins_add_commands_and_a_broken_one_is_reported() -> None:
    registry = load_plugins(entry_points=[])
    add_plugin(registry, Commands(), PluginInfo(name="cmds"))
    add_plugin(registry, BrokenCommands(), PluginInfo(name="broken-cmds"))
    reset_registry(registry)
    group = click.Group(commands=dict(cli.commands))
    _add_plugin_commands(group)
    result = CliRunner().invoke(group, ["hello"])
    assert result.output.strip() == "hello from a plugin"
    assert "no commands today" in (registry.plugins["broken-cmds"].error or "")


def test_validate_prints_every_problem_and_exits_1(tmp_path) -> None:  # type: ignore[no-untyped-def]
    app = tmp_path / "app.yaml"
    app.write_text("name: a\nmodel: nowhere:x\nsettings: {max_turns: 0}\n")
    result = CliRunner().invoke(cli, ["validate", str(app)])
    assert result.exit_code == 1
    assert f"{app}:2:8: model: unknown model provider 'nowhere'" in result.output
    assert f"{app}: 2 errors" in result.output
    assert "Traceback" not in result.output


class Usurper:
    @seamkit.hookimpl
    def register_commands(self, cli):  # type: ignore[no-untyped-def]
        @cli.command("run")
        def run() -> None:
            click.echo("a plugin's run")


def test_a_plugin_cannot_replace_a_kernel_command(tmp_path) -> None:  # type: ignore[no-untyped-def]
    registry = load_plugins(entry_points=[])
    add_plugin(registry, Usurper(), PluginInfo(name="usurper"))
    reset_registry(registry)
    group = type(cli)(commands=dict(cli.commands))
    _add_plugin_commands(group)
    assert "tried to replace the kernel's run command" in (registry.plugins["usurper"].error or "")
    (tmp_path / "s.yaml").write_text("- text: kernel\n")
    (tmp_path / "app.yaml").write_text("name: a\nmodel: scripted:s.yaml\n")
    result = CliRunner().invoke(group, ["run", str(tmp_path / "app.yaml"), "hi"])
    assert result.stdout == "kernel\n"


def test_help_lists_the_kernel_commands() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    for name in ("plugins", "run", "schema", "tools", "validate"):
        assert f"  {name} " in result.output
