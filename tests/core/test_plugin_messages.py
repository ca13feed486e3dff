"""Messages about plugin loading that say what to do, read as a user reads
them: disabled plugins (their kinds, sections, store schemes and commands),
unknown names in the enable/disable variables, load tracebacks behind
``--debug`` (in the JSON too), ``seamkit plugins --check``, a closed standard
output, and the plugin commands in ``seamkit --help``."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import click
import pytest
import seamkit
from click.testing import CliRunner, Result
from seamkit import AppConfig, ManifestError
from seamkit._cli._group import _add_plugin_commands, cli
from seamkit.plugins import PluginInfo, add_plugin, load_plugins, reset_registry
from seamkit.testing import build_agent

from tests.conftest import FIXTURE_DISTS, entry_point, installed_entry_points

pytestmark = pytest.mark.usefixtures("fixture_plugins")

SEAMKIT = Path(sys.executable).parent / "seamkit"
TTL = f"seamkit-refresh-ttl {metadata.version('seamkit-refresh-ttl')}"
EVERY_PLUGIN = "`seamkit plugins` lists every installed plugin and its kinds"
OLD_KEYS = {"name", "distribution", "version", "module", "builtin", "kinds", "hookimpls", "error"}


@pytest.fixture(autouse=True)
def _no_plugin_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SEAMKIT_PLUGINS", "SEAMKIT_DISABLE_PLUGINS", "SEAMKIT_ENABLE_PREVIEW"):
        monkeypatch.delenv(name, raising=False)


def invoke(*args: str) -> Result:
    """``seamkit ARGS`` in-process, on the process-wide registry."""
    return CliRunner().invoke(cli, list(args))


def use(*fixtures: str) -> None:
    """Make the process-wide registry the installed plugins plus these
    fixture plugins (entry-point name = module suffix)."""
    extra = [entry_point(name, f"seamkit_fixture_{name}") for name in fixtures]
    reset_registry(load_plugins(entry_points=[*installed_entry_points(), *extra]))


CHILD = """
import sys
from importlib import metadata
from seamkit._cli._group import main
from seamkit.plugins import load_plugins, reset_registry

extra = [
    metadata.EntryPoint(name=name, value=f"seamkit_fixture_{name}", group="seamkit")
    for name in sys.argv[1].split(",") if name
]
reset_registry(load_plugins(entry_points=[*metadata.entry_points(group="seamkit"), *extra]))
main(sys.argv[2:])
"""


def child(*args: str, fixtures: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    """The ``seamkit`` command (its ``main``) in a child process, with the
    installed plugins plus the fixture plugins named in ``fixtures``."""
    path = os.pathsep.join(str(src) for src in sorted(FIXTURE_DISTS.glob("*/src")))
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in {"SEAMKIT_PLUGINS", "SEAMKIT_DISABLE_PLUGINS", "SEAMKIT_ENABLE_PREVIEW"}
    }
    return subprocess.run(
        [sys.executable, "-c", CHILD, fixtures, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**clean, "PYTHONPATH": path, **env},
    )


def manifest(tmp_path: Path, hooks: str) -> Path:
    (tmp_path / "s.yaml").write_text("- text: ok\n")
    app = tmp_path / "app.yaml"
    app.write_text("name: demo\nmodel: scripted:s.yaml\nhooks:\n" + hooks)
    return app


USES_TTL = (
    "  - kind: tool_call\n    event: on_request_start\n    tool_name: x\n"
    "    refresh_condition: {kind: ttl, ttl_minutes: 5}\n"
)


# --- 1. a kind from a disabled plugin says which variable disables it --------------------


def test_a_disabled_plugin_is_not_imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "imported"
    (tmp_path / "seamkit_probe_disabled.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('yes')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("SEAMKIT_DISABLE_PLUGINS", "probe")
    registry = load_plugins(entry_points=[entry_point("probe", "seamkit_probe_disabled")])
    assert not marker.exists()
    assert "probe" not in registry.plugins
    assert registry.skipped["probe"].variables == ("SEAMKIT_DISABLE_PLUGINS",)


def test_validate_says_which_variable_disables_the_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEAMKIT_DISABLE_PLUGINS", "ttl")
    app = manifest(tmp_path, USES_TTL)
    result = invoke("validate", str(app))
    assert result.exit_code == 1
    assert result.stderr.splitlines()[:2] == [
        f"{app}:7:31: hooks[0].refresh_condition.kind: unknown refresh condition 'ttl'; "
        f"plugin 'ttl' ({TTL}) is installed but disabled by SEAMKIT_DISABLE_PLUGINS",
        "  hint: to load it, remove 'ttl' from SEAMKIT_DISABLE_PLUGINS",
    ]


def test_a_kind_left_out_of_seamkit_plugins_says_to_name_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEAMKIT_PLUGINS", "tool_call")
    result = invoke("validate", str(manifest(tmp_path, USES_TTL)))
    assert result.exit_code == 1
    assert f"plugin 'ttl' ({TTL}) is installed but not named in SEAMKIT_PLUGINS" in result.stderr
    assert (
        "  hint: to load it, add 'ttl' to SEAMKIT_PLUGINS "
        "(or unset SEAMKIT_PLUGINS to load every plugin)" in result.stderr.splitlines()
    )


def test_a_kind_named_after_a_disabled_distribution_names_that_plugin(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SEAMKIT_DISABLE_PLUGINS", "ttl")
    data = {
        "name": "a",
        "model": "scripted:x",
        "hooks": [
            {
                "kind": "tool_call",
                "event": "on_request_start",
                "tool_name": "x",
                "refresh_condition": {"kind": "refresh-ttl"},
            }
        ],
    }
    with pytest.raises(ManifestError) as info:
        AppConfig.load(data, registry=load_plugins())
    problem = info.value.problems[0]
    assert problem.message == (
        f"unknown refresh condition 'refresh-ttl'; plugin 'ttl' ({TTL}) is installed but "
        "disabled by SEAMKIT_DISABLE_PLUGINS"
    )


def test_a_disabled_model_provider_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEAMKIT_DISABLE_PLUGINS", "openai")
    app = tmp_path / "app.yaml"
    app.write_text("name: demo\nmodel: openai:gpt-4o\n")
    result = invoke("validate", str(app))
    assert result.exit_code == 1
    version = metadata.version("seamkit-openai")
    assert (
        f"model: unknown model provider 'openai'; plugin 'openai' (seamkit-openai {version}) "
        "is installed but disabled by SEAMKIT_DISABLE_PLUGINS" in result.stderr
    )


def test_an_unrelated_unknown_kind_mentions_the_disabled_plugins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEAMKIT_DISABLE_PLUGINS", "ttl")
    app = manifest(tmp_path, "  - kind: memory\n    event: on_request_start\n")
    result = invoke("validate", str(app))
    lines = result.stderr.splitlines()
    assert lines[0] == f"{app}:4:11: hooks[0].kind: unknown hook kind 'memory'"
    assert lines[1].startswith("  hint: installed hook kinds: approval, guard, tool_call; ")
    assert "; installed plugins not loaded: ttl (disabled by SEAMKIT_DISABLE_PLUGINS); " in lines[1]
    assert lines[1].endswith(f"; {EVERY_PLUGIN}")


def test_seamkit_plugins_lists_the_disabled_ones_with_their_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SEAMKIT_DISABLE_PLUGINS", "ttl")
    result = invoke("plugins")
    assert result.exit_code == 0
    table, _, disabled = result.stdout.partition("\ndisabled:\n")
    assert "\nttl " not in table
    assert disabled.splitlines() == [f"  ttl ({TTL}): disabled by SEAMKIT_DISABLE_PLUGINS"]


def test_seamkit_plugins_with_only_one_plugin_lists_the_rest_as_not_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SEAMKIT_PLUGINS", "ttl")
    result = invoke("plugins")
    table, _, disabled = result.stdout.partition("\ndisabled:\n")
    assert [line.split()[0] for line in table.splitlines()[1:]] == ["seamkit", "ttl"]
    version = metadata.version("seamkit-tool-call")
    assert (
        f"  tool_call (seamkit-tool-call {version}): not named in SEAMKIT_PLUGINS"
        in disabled.splitlines()
    )
    assert "ttl (" not in disabled


def test_plugins_json_keeps_its_shape_and_all_adds_the_disabled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SEAMKIT_DISABLE_PLUGINS", "ttl")
    listed = json.loads(invoke("plugins", "--json").stdout)
    assert "ttl" not in {p["name"] for p in listed}
    for plugin in listed:
        assert set(plugin) >= OLD_KEYS
        assert plugin["disabled_by"] == [] and plugin["traceback"] is None
    every = json.loads(invoke("plugins", "--json", "--all").stdout)
    assert every[: len(listed)] == listed
    (ttl,) = (p for p in every if p["name"] == "ttl")
    assert ttl["disabled_by"] == ["SEAMKIT_DISABLE_PLUGINS"]
    assert ttl["distribution"] == "seamkit-refresh-ttl" and ttl["kinds"] == []
    assert set(ttl) == set(listed[0])


# --- 2. unknown names in the variables are warned about ----------------------------------


def test_an_unknown_name_in_seamkit_plugins_is_warned_about_with_a_did_you_mean(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("SEAMKIT_PLUGINS", "tll, zzz, seamkit")
    with caplog.at_level(logging.WARNING, logger="seamkit"):
        load_plugins()
    messages = [r.getMessage() for r in caplog.records if r.name == "seamkit"]
    assert len(messages) == 1
    names = ", ".join(sorted(ep.name for ep in installed_entry_points()))
    assert messages[0] == (
        "SEAMKIT_PLUGINS names unknown plugins 'tll' (did you mean 'ttl'?), 'zzz'; "
        f"installed plugins: {names}"
    )
    assert caplog.records[0].levelno == logging.WARNING


def test_an_unknown_disabled_name_is_warned_about_once_by_the_cli() -> None:
    env = {**os.environ, "SEAMKIT_DISABLE_PLUGINS": "tll"}
    env.pop("SEAMKIT_PLUGINS", None)
    out = subprocess.run(
        [str(SEAMKIT), "plugins"], capture_output=True, text=True, timeout=60, env=env
    )
    assert out.returncode == 0, out.stderr
    warnings = [line for line in out.stderr.splitlines() if "SEAMKIT_DISABLE_PLUGINS" in line]
    assert len(warnings) == 1
    assert warnings[0].startswith(
        "WARNING: SEAMKIT_DISABLE_PLUGINS names unknown plugin 'tll' (did you mean 'ttl'?); "
        "installed plugins: "
    )
    assert "ttl" in out.stdout  # the unknown name disables nothing


def test_known_names_are_not_warned_about(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("SEAMKIT_PLUGINS", "ttl,tool_call")
    monkeypatch.setenv("SEAMKIT_DISABLE_PLUGINS", "tool_call")
    with caplog.at_level(logging.WARNING, logger="seamkit"):
        load_plugins()
    assert not [r for r in caplog.records if r.name == "seamkit"]


def test_a_distribution_name_is_answered_with_its_plugin_and_far_names_get_no_guess() -> None:
    env = {**os.environ, "SEAMKIT_PLUGINS": "seamkit-refresh-ttl,nope,tll"}
    env.pop("SEAMKIT_DISABLE_PLUGINS", None)
    out = subprocess.run(
        [str(SEAMKIT), "plugins"], capture_output=True, text=True, timeout=60, env=env
    )
    assert out.returncode == 0, out.stderr
    names = ", ".join(sorted(ep.name for ep in installed_entry_points()))
    assert [line for line in out.stderr.splitlines() if "SEAMKIT_PLUGINS" in line] == [
        "WARNING: SEAMKIT_PLUGINS names unknown plugins 'nope', 'seamkit-refresh-ttl' "
        "(a distribution; its plugin is named 'ttl'), 'tll' (did you mean 'ttl'?); "
        f"installed plugins: {names}"
    ]


def test_given_entry_points_are_not_warned_about(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The testing kit loads no installed plugin (``entry_points=[]``): the
    variables, which name installed plugins, are nothing to warn about there."""
    monkeypatch.setenv("SEAMKIT_PLUGINS", "zzz")
    monkeypatch.setenv("SEAMKIT_DISABLE_PLUGINS", "nope")

    async def built() -> None:
        async with await build_agent({"name": "a"}, script=[{"text": "hi"}]):
            pass

    with caplog.at_level(logging.WARNING, logger="seamkit"):
        asyncio.run(built())
        load_plugins(entry_points=[entry_point("ttl", "seamkit_refresh_ttl")])
    assert not [r.getMessage() for r in caplog.records if r.name == "seamkit"]
    with caplog.at_level(logging.WARNING, logger="seamkit"):
        load_plugins()  # discovering the installed ones does warn
    assert [r.getMessage()[:30] for r in caplog.records if r.name == "seamkit"] == [
        "SEAMKIT_PLUGINS names unknown ",
        "SEAMKIT_DISABLE_PLUGINS names ",
    ]


# --- 3. --debug shows the load tracebacks -------------------------------------------------


def test_a_load_error_is_one_line_and_debug_shows_its_traceback() -> None:
    plain = child("plugins", fixtures="broken")
    assert plain.returncode == 0
    errors = plain.stdout.partition("\nload errors:\n")[2].splitlines()
    assert errors[0].startswith(
        "  broken (? ): import failed: ModuleNotFoundError: No module named "
        "'seamkit_dependency_that_is_not_installed'"
    )
    assert errors[1] == "hint: run `seamkit --debug plugins` for the traceback"
    assert "Traceback" not in plain.stdout + plain.stderr

    debug = child("--debug", "plugins", fixtures="broken")
    assert debug.returncode == 0
    errors = debug.stdout.partition("\nload errors:\n")[2].splitlines()
    assert errors[0] == plain.stdout.partition("\nload errors:\n")[2].splitlines()[0]
    assert errors[1] == "    Traceback (most recent call last):"
    assert any("seamkit_fixture_broken" in line for line in errors[2:])
    assert errors[-1].startswith("    ModuleNotFoundError: No module named")
    assert "--debug plugins` for the traceback" not in debug.stdout


def test_the_traceback_is_kept_beside_the_one_line_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Half:
        @seamkit.hookimpl
        def register_tool_kinds(self, register):  # type: ignore[no-untyped-def]
            raise RuntimeError("boom")

    registry = load_plugins(entry_points=[])
    info = add_plugin(registry, Half(), PluginInfo(name="half"))
    assert info.error == "registration failed: RuntimeError: boom"
    assert info.traceback is not None
    assert info.traceback.startswith("Traceback (most recent call last):")
    assert info.traceback.rstrip().endswith("RuntimeError: boom")
    reset_registry(registry)
    (listed,) = (p for p in json.loads(invoke("plugins", "--json").stdout) if p["name"] == "half")
    assert listed["traceback"] is None and listed["error"] == info.error
    # keep the test's logging
    monkeypatch.setattr("seamkit._cli._group._debug_logging", lambda **_: None)
    debug = json.loads(invoke("--debug", "plugins", "--json").stdout)
    (listed,) = (p for p in debug if p["name"] == "half")
    assert listed["traceback"] == info.traceback and listed["error"] == info.error


class BrokenCommands:
    @seamkit.hookimpl
    def register_commands(self, cli: click.Group) -> None:
        raise RuntimeError("no commands today")


def test_a_failing_register_commands_keeps_its_traceback() -> None:
    registry = load_plugins(entry_points=[])
    add_plugin(registry, BrokenCommands(), PluginInfo(name="broken-cmds"))
    reset_registry(registry)
    _add_plugin_commands(type(cli)(commands=dict(cli.commands)))
    info = registry.plugins["broken-cmds"]
    assert info.error == "register_commands failed: RuntimeError: no commands today"
    assert info.traceback is not None and "RuntimeError: no commands today" in info.traceback


LEAKY = """
import os
raise RuntimeError("database unavailable") from ValueError(
    f"cannot connect to {os.environ['MY_DSN']}"
)
"""


def test_a_credential_in_a_chained_load_error_shows_only_with_debug(tmp_path: Path) -> None:
    """A load error's traceback (whose chained exceptions may quote the
    environment) is in ``plugins --json`` only with ``--debug``, as in the table."""
    (tmp_path / "seamkit_fixture_leaky.py").write_text(LEAKY)
    canary = "canary-7c1e9a"
    env = {"PYTHONPATH": str(tmp_path), "MY_DSN": f"postgresql://app:{canary}@db/app"}
    for args in (
        ["plugins"],
        ["plugins", "--check"],
        ["plugins", "--json"],
        ["plugins", "--json", "--all", "--check"],
    ):
        out = child(*args, fixtures="leaky", **env)
        assert out.returncode == (1 if "--check" in args else 0), out.stderr
        assert canary not in out.stdout + out.stderr, args
    listed = json.loads(child("plugins", "--json", fixtures="leaky", **env).stdout)
    (leaky,) = (p for p in listed if p["name"] == "leaky")
    assert leaky["error"] == "import failed: RuntimeError: database unavailable"
    assert leaky["traceback"] is None

    debug = json.loads(child("--debug", "plugins", "--json", fixtures="leaky", **env).stdout)
    (leaky,) = (p for p in debug if p["name"] == "leaky")
    assert f"ValueError: cannot connect to postgresql://app:{canary}@db/app" in leaky["traceback"]
    assert leaky["traceback"].rstrip().endswith("RuntimeError: database unavailable")


# --- 4. plugins --check, and a closed standard output -------------------------------------


def test_plugins_check_exits_1_when_a_plugin_failed_after_the_listing() -> None:
    use("broken", "note")
    plain = invoke("plugins")
    assert plain.exit_code == 0
    checked = invoke("plugins", "--check")
    assert checked.exit_code == 1
    assert checked.stdout == plain.stdout
    assert "load errors:" in checked.stdout
    as_json = invoke("plugins", "--json", "--check")
    assert as_json.exit_code == 1
    assert "broken" in {p["name"] for p in json.loads(as_json.stdout)}


def test_plugins_check_exits_0_when_every_plugin_loaded() -> None:
    use("note")
    result = invoke("plugins", "--check")
    assert result.exit_code == 0, result.output
    assert "load errors:" not in result.stdout


@pytest.mark.parametrize("args", [["plugins"], ["plugins", "--json"], ["--help"]])
def test_a_closed_standard_output_ends_quietly_with_141(args: list[str]) -> None:
    read, write = os.pipe()
    os.close(read)  # nobody will read: the first write fails with EPIPE
    try:
        done = subprocess.run(
            [str(SEAMKIT), *args], stdout=write, stderr=subprocess.PIPE, text=True, timeout=60
        )
    finally:
        os.close(write)
    assert done.returncode == 141
    assert "BrokenPipe" not in done.stderr and "Traceback" not in done.stderr
    assert "Exception ignored" not in done.stderr


class PipeCommands:
    @seamkit.hookimpl
    def register_commands(self, cli: click.Group) -> None:
        @cli.command("pipe")
        def pipe() -> None:
            raise BrokenPipeError(32, "Broken pipe (a server's socket)")


def test_a_broken_pipe_not_of_standard_output_is_still_an_error() -> None:
    registry = load_plugins(entry_points=[])
    add_plugin(registry, PipeCommands(), PluginInfo(name="pipe"))
    reset_registry(registry)
    group = type(cli)(commands=dict(cli.commands), params=cli.params, callback=cli.callback)
    _add_plugin_commands(group)
    result = CliRunner().invoke(group, ["pipe"])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "error: BrokenPipeError: [Errno 32] Broken pipe (a server's socket)",
        "hint: run with --debug for the full traceback",
    ]


# --- 5. an unknown kind points at seamkit plugins ------------------------------------------


def test_an_unknown_kind_lists_the_installed_kinds_and_points_at_seamkit_plugins(
    tmp_path: Path,
) -> None:
    app = manifest(tmp_path, "  - kind: tool_cal\n    event: on_request_start\n")
    result = invoke("validate", str(app))
    assert result.exit_code == 1
    assert result.stderr.splitlines()[:2] == [
        f"{app}:4:11: hooks[0].kind: unknown hook kind 'tool_cal'",
        "  hint: did you mean 'tool_call'? installed hook kinds: approval, guard, tool_call; "
        + EVERY_PLUGIN,
    ]


# --- 6. seamkit --help lists the plugin commands apart ------------------------------------


class Commands:
    @seamkit.hookimpl
    def register_commands(self, cli: click.Group) -> None:
        @cli.command("hello")
        def hello() -> None:
            """Say hello."""
            click.echo("hello from a plugin")


def _sections(help_text: str) -> dict[str, list[str]]:
    """The command names under each ``Title:`` of a help text."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in help_text.splitlines():
        if line and not line.startswith(" ") and line.endswith(":"):
            current = sections.setdefault(line[:-1], [])
        elif current is not None and line.startswith("  ") and not line.startswith("   "):
            current.append(line.strip())
    return sections


def test_help_lists_plugin_commands_apart_with_their_distribution() -> None:
    registry = load_plugins(entry_points=[])
    add_plugin(
        registry, Commands(), PluginInfo(name="cmds", distribution="seamkit-cmds", version="1.0")
    )
    reset_registry(registry)
    group = type(cli)(
        commands=dict(cli.commands), params=cli.params, callback=cli.callback, help=cli.help
    )
    assert _add_plugin_commands(group) == {"hello": "seamkit-cmds"}
    result = CliRunner().invoke(group, ["--help"])
    assert result.exit_code == 0
    sections = _sections(result.stdout)
    kernel = [row.split()[0] for row in sections["Commands"]]
    assert {"plugins", "run", "schema", "tools", "validate"} <= set(kernel)
    assert "hello" not in kernel
    (row,) = sections["Plugin commands"]
    assert row.split(None, 1) == ["hello", "(seamkit-cmds) Say hello."]
    assert CliRunner().invoke(group, ["hello"]).stdout == "hello from a plugin\n"


def test_the_installed_seamkit_help_marks_the_plugin_commands() -> None:
    out = subprocess.run([str(SEAMKIT), "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    sections = _sections(out.stdout)
    plugin_rows = {row.split()[0]: row for row in sections["Plugin commands"]}
    assert plugin_rows["serve"].split()[1] == "(seamkit-serve)"
    assert "serve" not in [row.split()[0] for row in sections["Commands"]]
    assert "plugins" in [row.split()[0] for row in sections["Commands"]]


# --- 7. a disabled plugin's section, store scheme and command say what keeps it out -------


def test_an_unknown_section_lists_the_plugins_not_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEAMKIT_DISABLE_PLUGINS", "otel")
    (tmp_path / "s.yaml").write_text("- text: ok\n")
    app = tmp_path / "app.yaml"
    app.write_text("name: demo\nmodel: scripted:s.yaml\ntelemetry:\n  service_name: x\n")
    result = invoke("validate", str(app))
    assert result.exit_code == 1
    allowed = (
        "hooks, model, name, output, preamble, serve, sessions, settings, tool_services, tools"
    )
    assert result.stderr.splitlines()[:2] == [
        f"{app}:3:1: telemetry: unknown field 'telemetry'",
        f"  hint: allowed fields: {allowed}; installed plugins not loaded: otel (disabled by "
        "SEAMKIT_DISABLE_PLUGINS): a plugin's section is unknown while the plugin is not loaded",
    ]
    monkeypatch.delenv("SEAMKIT_DISABLE_PLUGINS")
    reset_registry()
    app.write_text("name: demo\nmodel: scripted:s.yaml\ntelemetri: {}\n")
    lines = invoke("validate", str(app)).stderr.splitlines()
    assert lines[1].startswith("  hint: did you mean 'telemetry'? allowed fields: ")
    assert "not loaded" not in lines[1]


def test_a_store_scheme_of_a_disabled_plugin_says_how_to_load_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SEAMKIT_DISABLE_PLUGINS", "postgresql")
    version = metadata.version("seamkit-sessions-postgres")
    result = invoke("sessions", "list", "--store", "postgresql://app@db/app")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "error: no session store is loaded for URLs of scheme 'postgresql'; plugin "
        f"'postgresql' (seamkit-sessions-postgres {version}) is installed but disabled by "
        "SEAMKIT_DISABLE_PLUGINS",
        "hint: to load it, remove 'postgresql' from SEAMKIT_DISABLE_PLUGINS",
    ]
    other = invoke("sessions", "list", "--store", "postgres://app@db/app")
    assert other.exit_code == 1
    assert other.stderr.splitlines() == [
        "error: no session store is installed for URLs of scheme 'postgres'",
        "hint: installed schemes: sqlite; a plugin adds one (e.g. seamkit-sessions-postgres "
        "for postgresql://); installed plugins not loaded: postgresql (disabled by "
        "SEAMKIT_DISABLE_PLUGINS)",
    ]


def _seamkit(*args: str, **variables: str) -> subprocess.CompletedProcess[str]:
    """The installed ``seamkit ARGS`` with these plugin variables (and no others)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"SEAMKIT_PLUGINS", "SEAMKIT_DISABLE_PLUGINS", "SEAMKIT_ENABLE_PREVIEW"}
    }
    return subprocess.run(
        [str(SEAMKIT), *args], capture_output=True, text=True, timeout=60, env={**env, **variables}
    )


def test_a_command_of_a_disabled_plugin_names_the_plugin_and_the_variable() -> None:
    version = metadata.version("seamkit-serve")
    out = _seamkit("serve", "app.yaml", SEAMKIT_DISABLE_PLUGINS="serve")
    assert out.returncode == 2
    assert out.stdout == ""
    assert out.stderr.splitlines() == [
        f"error: no such command 'serve'; plugin 'serve' (seamkit-serve {version}) is "
        "installed but disabled by SEAMKIT_DISABLE_PLUGINS",
        "hint: to load it, remove 'serve' from SEAMKIT_DISABLE_PLUGINS",
    ]
    left_out = _seamkit("tool-service", "--help", SEAMKIT_PLUGINS="ttl")
    assert left_out.returncode == 2
    assert left_out.stderr.splitlines()[1] == (
        "hint: to load it, add 'tool-service' to SEAMKIT_PLUGINS "
        "(or unset SEAMKIT_PLUGINS to load every plugin)"
    )


def test_an_unknown_command_no_plugin_matches_is_still_clicks_error() -> None:
    out = _seamkit("nope", SEAMKIT_DISABLE_PLUGINS="serve")
    assert out.returncode == 2
    assert out.stderr.splitlines()[-1] == "Error: No such command 'nope'."
