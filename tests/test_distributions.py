"""Plugins are real distributions: build them, pip-install them into a fresh
virtual environment, and see them through the `seamkit` command.

One environment serves every check here (installing is the slow part).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_DISTS, ROOT, free_port
from tests.plugins.openai_server import ReplayServer, Reply

pytestmark = pytest.mark.slow


class Env:
    """A fresh virtual environment with seamkit and some plugins pip-installed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.bin = path / "bin"

    def pip(self, *args: str) -> None:
        subprocess.run(
            [
                str(self.bin / "python"),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                *args,
            ],
            check=True,
        )

    def seamkit(
        self, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        full_env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("SEAMKIT_", "VIRTUAL_ENV", "PYTHON"))
        }
        full_env.update(env or {})
        return subprocess.run(
            [str(self.bin / "seamkit"), *args],
            capture_output=True,
            text=True,
            env=full_env,
            cwd=cwd,
            timeout=120,
        )


@pytest.fixture(scope="module")
def fresh_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    path = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(with_pip=True, clear=True).create(path)
    env = Env(path)
    env.pip(
        str(ROOT / "core"),
        str(ROOT / "plugins" / "refresh-ttl"),
        str(ROOT / "contrib" / "refresh-daily"),
        str(ROOT / "plugins" / "tool-call"),
        str(ROOT / "libs" / "http"),  # the providers' shared HTTP plumbing, not on PyPI
        str(ROOT / "plugins" / "openai"),
        str(ROOT / "plugins" / "anthropic"),
        str(ROOT / "plugins" / "serve"),
        str(ROOT / "plugins" / "sessions-postgres"),
        f"{ROOT / 'plugins' / 'tool-service'}[nats]",
        str(ROOT / "contrib" / "joke-service"),
        str(ROOT / "plugins" / "mcp"),
        str(ROOT / "contrib" / "memory-server"),
        str(ROOT / "plugins" / "otel"),
        str(ROOT / "plugins" / "approval"),
        str(ROOT / "plugins" / "guard"),
        str(ROOT / "plugins" / "temporal"),
        *(str(FIXTURE_DISTS / name) for name in ("note", "broken", "dupe", "future")),
    )
    yield env


def test_installed_plugin_appears_in_plugins(fresh_env: Env) -> None:
    out = fresh_env.seamkit("plugins", "--json")
    assert out.returncode == 0, out.stderr
    plugins = {p["name"]: p for p in json.loads(out.stdout)}
    note = plugins["note"]
    assert (note["distribution"], note["version"]) == ("seamkit-fixture-note", "1.2.3")
    assert note["kinds"] == ["hook:note", "tool:echo"]
    assert note["hookimpls"] == ["on_completion"]
    assert note["error"] is None
    assert plugins["ttl"]["kinds"] == ["refresh:ttl"]
    assert "ModuleNotFoundError" in plugins["broken"]["error"]
    assert "already registered by plugin 'ttl'" in plugins["ttl_dupe"]["error"]
    assert "__seamkit_api__ = 2" in plugins["future"]["error"]


def test_contrib_plugin_appears_in_plugins(fresh_env: Env) -> None:
    out = fresh_env.seamkit("plugins", "--json")
    assert out.returncode == 0, out.stderr
    daily = {p["name"]: p for p in json.loads(out.stdout)}["daily"]
    assert (daily["distribution"], daily["version"]) == ("seamkit-refresh-daily", "0.1.0")
    assert daily["kinds"] == ["refresh:daily"]
    assert daily["error"] is None


def test_the_memory_example_runs_with_the_installed_tool_call_plugin(
    fresh_env: Env, tmp_path: Path
) -> None:
    example = tmp_path / "memory"
    shutil.copytree(ROOT / "docs" / "examples" / "memory", example)
    args = ["--session", "s", "--store", str(tmp_path / "s.sqlite"), "--context", "user=ann"]
    args += ["--context", f"memory_dir={tmp_path}"]
    for now in ("2026-11-22T09:00:00Z", "2026-11-22T09:10:00Z"):
        out = fresh_env.seamkit(
            "run", str(example / "app.yaml"), "hello", *args, env={"SEAMKIT_NOW": now}
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout == "Noted.\n"
    assert (tmp_path / "calls.log").read_text() == "get_memories ann\n"  # fresh at 09:10


def test_the_installed_openai_provider_answers_from_a_real_server(
    fresh_env: Env, tmp_path: Path
) -> None:
    out = fresh_env.seamkit("plugins", "--json")
    openai = {p["name"]: p for p in json.loads(out.stdout)}["openai"]
    assert (openai["distribution"], openai["error"]) == ("seamkit-openai", None)
    assert openai["kinds"] == ["model:openai"]
    with ReplayServer() as server:
        server.script("installed", Reply.transcript("openai_text"))
        app = tmp_path / "app.yaml"
        app.write_text(
            f"name: demo\nmodel: {{provider: openai, name: installed, "
            f"base_url: '{server.base_url}'}}\n"
        )
        out = fresh_env.seamkit("run", str(app), "hi")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "Hello, world\n"


def test_the_installed_anthropic_provider_answers_from_a_real_server(
    fresh_env: Env, tmp_path: Path
) -> None:
    out = fresh_env.seamkit("plugins", "--json")
    anthropic = {p["name"]: p for p in json.loads(out.stdout)}["anthropic"]
    assert (anthropic["distribution"], anthropic["error"]) == ("seamkit-anthropic", None)
    assert anthropic["kinds"] == ["model:anthropic"]
    with ReplayServer() as server:
        server.script("installed", Reply.http("cached_response"), path="/v1/messages")
        app = tmp_path / "app.yaml"
        app.write_text("name: demo\nmodel: anthropic:installed\n")
        env = {"ANTHROPIC_BASE_URL": server.root_url, "ANTHROPIC_API_KEY": "sk-ant-canary"}
        out = fresh_env.seamkit("run", str(app), "hi", env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "Cached.\n"
    assert "cached" in out.stderr  # the summary counts the tokens the cache served
    assert "sk-ant-canary" not in out.stdout + out.stderr


def test_the_installed_serve_plugin_adds_the_command_and_its_section(
    fresh_env: Env, tmp_path: Path
) -> None:
    out = fresh_env.seamkit("plugins", "--json")
    plugins = {p["name"]: p for p in json.loads(out.stdout)}
    serve = plugins["serve"]
    assert (serve["distribution"], serve["error"]) == ("seamkit-serve", None)
    postgres = plugins["postgresql"]
    assert (postgres["distribution"], postgres["error"]) == ("seamkit-sessions-postgres", None)
    help_text = fresh_env.seamkit("serve", "--help")
    assert help_text.returncode == 0, help_text.stderr
    assert "OpenAI-compatible endpoint" in help_text.stdout
    app = tmp_path / "app.yaml"
    (tmp_path / "script.yaml").write_text("- text: ok\n")
    app.write_text("name: demo\nmodel: scripted:script.yaml\nserve: {max_messages: 0}\n")
    out = fresh_env.seamkit("validate", str(app))
    assert out.returncode == 1
    assert "serve.max_messages" in out.stderr


def test_the_installed_tool_service_plugin_calls_the_installed_joke_service(
    fresh_env: Env, tmp_path: Path
) -> None:
    plugins = {p["name"]: p for p in json.loads(fresh_env.seamkit("plugins", "--json").stdout)}
    found = plugins["tool-service"]
    assert (found["distribution"], found["error"]) == ("seamkit-tool-service", None)
    assert found["kinds"] == ["tool:tool-service", "section:tool_services"]
    port = free_port()
    log = tmp_path / "joke.log"
    command = [str(fresh_env.bin / "seamkit"), "tool-service", "serve"]
    with log.open("w") as sink:
        service = subprocess.Popen(
            [*command, "joke_service:JokeService", "--port", str(port)],
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 30
        while "joke_service:JokeService on" not in log.read_text():
            assert service.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        (tmp_path / "script.yaml").write_text(
            '- tool_calls: [{id: c1, name: tell-joke, arguments: \'{"topic": "food"}\'}]\n'
            "- text: done\n"
        )
        app = tmp_path / "app.yaml"
        app.write_text(
            "name: jokes\nmodel: scripted:script.yaml\n"
            f"tool_services: {{services: [{{id: joke-service, url: 'http://127.0.0.1:{port}/',"
            " config_params: [{name: style}]}]}\n"
            "tools:\n  - {kind: tool-service, name: tell-joke, description: A joke,"
            " service: joke-service, style: dad, arguments: [{name: topic, type: string}]}\n"
        )
        out = _run_until_served(fresh_env, app)
        assert out.returncode == 0, out.stderr
        assert "← tell-joke" in out.stderr and "Hey ann!" in out.stderr, out.stderr
        assert "dad" in out.stderr
    finally:
        service.terminate()
        assert service.wait(20) in (0, -signal.SIGTERM), log.read_text()


def test_the_installed_mcp_plugin_runs_the_memory_app_with_the_installed_server(
    fresh_env: Env, tmp_path: Path
) -> None:
    plugins = {p["name"]: p for p in json.loads(fresh_env.seamkit("plugins", "--json").stdout)}
    found = plugins["mcp"]
    assert (found["distribution"], found["error"]) == ("seamkit-mcp", None)
    assert found["kinds"] == ["tool:mcp"]
    example = tmp_path / "memory-mcp"
    shutil.copytree(
        ROOT / "docs" / "examples" / "memory-mcp",
        example,
        ignore=shutil.ignore_patterns("memories.sqlite*"),
    )
    path = {"PATH": f"{fresh_env.bin}{os.pathsep}{os.environ.get('PATH', '')}"}
    args = ["--session", "s", "--store", str(tmp_path / "s.sqlite"), "--context", "user=ann"]
    for message in ("I like tea", "hello again"):
        out = fresh_env.seamkit("run", str(example / "app.yaml"), message, *args, env=path)
        assert out.returncode == 0, out.stderr
    out = fresh_env.seamkit("run", str(example / "app.yaml"), "and?", *args, "--json", env=path)
    assert out.returncode == 0, out.stderr
    tool_results = [
        m["content"] for m in json.loads(out.stdout)["transcript"] if m["role"] == "tool"
    ]
    assert tool_results[-1] == "I like tea\nhello again"


def test_the_installed_otel_plugin_traces_a_run_to_the_console(
    fresh_env: Env, tmp_path: Path
) -> None:
    plugins = {p["name"]: p for p in json.loads(fresh_env.seamkit("plugins", "--json").stdout)}
    found = plugins["otel"]
    assert (found["distribution"], found["error"]) == ("seamkit-otel", None)
    assert found["hookimpls"] == ["on_run_event"]
    example = tmp_path / "telemetry"
    shutil.copytree(ROOT / "docs" / "examples" / "telemetry", example)
    env = {"SHOP_API_KEY": "canary-dist-42", "OTEL_TRACES_EXPORTER": "console"}
    env["OTEL_METRICS_EXPORTER"] = "none"
    out = fresh_env.seamkit("run", str(example / "app.yaml"), "where is A1?", env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("Order A1 has shipped")
    for name in ("invoke_agent shop", "execute_tool lookup_order", "execute_tool charge"):
        assert f'"name": "{name}"' in out.stdout
    assert "canary-dist-42" not in out.stdout


def test_the_installed_approval_plugin_adds_its_hook_kind(fresh_env: Env, tmp_path: Path) -> None:
    plugins = {p["name"]: p for p in json.loads(fresh_env.seamkit("plugins", "--json").stdout)}
    found = plugins["approval"]
    assert (found["distribution"], found["error"]) == ("seamkit-approval", None)
    assert found["kinds"] == ["hook:approval"]
    (tmp_path / "script.yaml").write_text("- text: ok\n")
    app = tmp_path / "app.yaml"
    entry = "{kind: approval, event: on_pre_tool_use, tools: [refund], reason: 'Refund {amount}'"
    app.write_text(f"name: shop\nmodel: scripted:script.yaml\nhooks:\n  - {entry}}}\n")
    out = fresh_env.seamkit("validate", str(app))
    assert out.returncode == 0, out.stderr
    app.write_text(
        f"name: shop\nmodel: scripted:script.yaml\nhooks:\n  - {entry}, when: {{type: wrong}}}}\n"
    )
    out = fresh_env.seamkit("validate", str(app))
    assert out.returncode == 1
    assert "hooks[0].when: when is not a valid JSON Schema" in out.stderr, out.stderr


def test_the_installed_guard_plugin_adds_its_hook_kind(fresh_env: Env, tmp_path: Path) -> None:
    plugins = {p["name"]: p for p in json.loads(fresh_env.seamkit("plugins", "--json").stdout)}
    found = plugins["guard"]
    assert (found["distribution"], found["error"]) == ("seamkit-guard", None)
    assert found["kinds"] == ["hook:guard"]
    (tmp_path / "script.yaml").write_text("- text: 'your key-1234'\n")
    app = tmp_path / "app.yaml"
    entry = "{kind: guard, event: on_text_delta, patterns: ['key-\\d{4}']"
    app.write_text(f"name: shop\nmodel: scripted:script.yaml\nhooks:\n  - {entry}}}\n")
    out = fresh_env.seamkit("run", str(app), "hi")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("your ***"), out.stdout
    app.write_text(
        "name: shop\nmodel: scripted:script.yaml\nhooks:\n"
        "  - {kind: guard, event: on_text_delta, patterns: ['\\d+']}\n"
    )
    out = fresh_env.seamkit("validate", str(app))
    assert out.returncode == 1
    assert "hooks[0].patterns[0]: pattern" in out.stderr and "give `hold:`" in out.stderr


def _run_until_served(fresh_env: Env, app: Path) -> subprocess.CompletedProcess[str]:
    """``seamkit run`` once the service accepts connections (uvicorn binds after
    printing its line)."""
    deadline = time.monotonic() + 20
    while True:
        out = fresh_env.seamkit("run", str(app), "a joke", "--context", "user=ann")
        if "Unavailable" not in out.stderr or time.monotonic() > deadline:
            return out
        time.sleep(0.2)


def test_the_installed_temporal_plugin_runs_an_app_on_a_dev_server(
    fresh_env: Env, tmp_path: Path
) -> None:
    from tests.plugins.temporal_server import TemporalDevServer  # lazy: only this test

    plugins = {p["name"]: p for p in json.loads(fresh_env.seamkit("plugins", "--json").stdout)}
    assert (plugins["temporal"]["distribution"], plugins["temporal"]["error"]) == (
        "seamkit-temporal",
        None,
    )
    example = tmp_path / "hello"
    shutil.copytree(ROOT / "docs" / "examples" / "hello", example)
    app = str(example / "app.yaml")
    with TemporalDevServer.start(root=tmp_path) as server:
        worker = subprocess.Popen(
            [
                str(fresh_env.bin / "seamkit"),
                "temporal",
                "worker",
                app,
                "--address",
                server.address,
            ],
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert worker.stderr is not None
            lines = iter(worker.stderr.readline, "")  # (a fixture plugin warns first)
            assert any("serving hello" in line for line in lines)
            out = fresh_env.seamkit(
                "temporal", "run", app, "What is 2 + 3?", "--address", server.address
            )
            assert (out.returncode, out.stdout) == (0, "2 + 3 = 5.\n"), out.stderr
        finally:
            worker.send_signal(signal.SIGTERM)
            worker.wait(30)


def test_plugins_table_shows_load_errors(fresh_env: Env) -> None:
    out = fresh_env.seamkit("plugins")
    assert out.returncode == 0
    assert "seamkit-fixture-note" in out.stdout and "hook:note" in out.stdout
    assert "load errors:" in out.stdout and "broken (seamkit-fixture-broken 0.0.1)" in out.stdout
    assert "Traceback" not in out.stdout + out.stderr


def test_installed_kind_is_in_the_schema(fresh_env: Env) -> None:
    out = fresh_env.seamkit("schema")
    assert out.returncode == 0, out.stderr
    schema = json.loads(out.stdout)
    assert "NoteConfig" in schema["$defs"] and "TTLRefresh" in schema["$defs"]
    note = schema["$defs"]["NoteConfig"]
    assert note["properties"]["kind"]["const"] == "note"
    assert "text" in note["required"]


def test_validate_accepts_the_installed_kind(fresh_env: Env, tmp_path: Path) -> None:
    app = tmp_path / "app.yaml"
    (tmp_path / "script.yaml").write_text("- text: ok\n")
    app.write_text(
        "name: demo\nmodel: scripted:script.yaml\nhooks:\n"
        "  - kind: note\n    event: on_request_start\n    text: be brief\n"
        "    refresh_condition: {kind: ttl, ttl_minutes: 5}\n"
    )
    out = fresh_env.seamkit("validate", str(app))
    assert out.returncode == 0, out.stderr
    assert "ok" in out.stdout


def test_installed_tool_kind_resolves_into_tools(fresh_env: Env, tmp_path: Path) -> None:
    app = tmp_path / "app.yaml"
    (tmp_path / "script.yaml").write_text("- text: ok\n")
    app.write_text(
        "name: demo\nmodel: scripted:script.yaml\ntools:\n"
        "  - {kind: echo, toolset: fixture, text: hi, names: [echo, 'say hi']}\n"
        "  - {kind: echo, text: ho}\n"
    )
    out = fresh_env.seamkit("tools", "--json", str(app))
    assert out.returncode == 0, out.stderr
    tools = {t["name"]: t for t in json.loads(out.stdout)}
    assert list(tools) == ["fixture_echo", "fixture_say_hi", "echo"]
    assert tools["fixture_echo"]["origin"] == "tools[0]" and tools["echo"]["origin"] == "tools[1]"
    assert tools["echo"]["description"] == "Say 'ho'."
    assert tools["echo"]["parameters"]["properties"] == {"times": {"default": 1, "type": "integer"}}


def test_tool_resolution_errors_name_the_entries(fresh_env: Env, tmp_path: Path) -> None:
    app = tmp_path / "app.yaml"
    app.write_text(
        "name: demo\nmodel: scripted:script.yaml\ntools:\n"
        "  - {kind: echo, text: hi}\n"
        "  - {kind: echo, text: ho}\n"
        "  - {kind: function, ref: 'nowhere_at_all:f'}\n"
    )
    out = fresh_env.seamkit("validate", str(app))
    assert out.returncode == 1
    assert (
        f"{app}:5:5: tools[1]: two tools are named 'echo': one from tools[0] and one from "
        "tools[1]" in out.stderr
    )
    assert f"{app}:6:5: tools[2]: function tool 'nowhere_at_all:f': no module named" in out.stderr
    assert f"{app}:2:8: model: cannot read model script" in out.stderr  # every problem at once
    assert f"{app}: 3 errors" in out.stderr
    assert "Traceback" not in out.stderr


def test_validate_reports_every_error_with_its_location(fresh_env: Env, tmp_path: Path) -> None:
    app = tmp_path / "app.yaml"
    app.write_text(
        "name: demo\nmodel: scripted:script.yaml\nhooks:\n"
        "  - kind: note\n    event: on_pre_llm\n    text: be brief\n"
        "  - kind: broken\n    event: on_pre_llm\n"
    )
    out = fresh_env.seamkit("validate", str(app))
    assert out.returncode == 1
    assert f"{app}:5:12: hooks[0].event: hook kind 'note' does not support" in out.stderr
    assert (
        f"{app}:7:11: hooks[1].kind: unknown hook kind 'broken'; it belongs to plugin "
        "'broken'" in out.stderr
    )
    assert f"{app}: 2 errors" in out.stderr
    assert "Traceback" not in out.stderr


def test_enable_and_disable_variables(fresh_env: Env) -> None:
    only = json.loads(
        fresh_env.seamkit("plugins", "--json", env={"SEAMKIT_PLUGINS": "note"}).stdout
    )
    assert {p["name"] for p in only} == {"seamkit", "note"}
    without = json.loads(
        fresh_env.seamkit("plugins", "--json", env={"SEAMKIT_DISABLE_PLUGINS": "broken"}).stdout
    )
    assert "broken" not in {p["name"] for p in without}


def test_user_mistakes_are_one_line_and_a_hint(fresh_env: Env, tmp_path: Path) -> None:
    out = fresh_env.seamkit("validate", str(tmp_path / "missing.yaml"))
    assert out.returncode == 1
    lines = out.stderr.splitlines()
    assert lines[0].startswith("WARNING: seamkit plugin 'broken' (seamkit-fixture-broken 0.0.1)")
    assert f"no such file: {tmp_path / 'missing.yaml'}" in lines
    assert "  hint: check the path to the app manifest" in lines
    assert "Traceback" not in out.stderr
    version = fresh_env.seamkit("--version")
    assert version.stdout.strip() == "seamkit, version 0.1.0"


def test_pip_install_core_and_plugin_without_workspace(fresh_env: Env) -> None:
    code = (
        "import seamkit, seamkit_refresh_ttl, datetime as d; "
        "now = d.datetime(2026, 1, 1, tzinfo=d.timezone.utc); "
        "print(seamkit_refresh_ttl.TTLRefresh(ttl_minutes=90).expiry(now).isoformat())"
    )
    out = subprocess.run(
        [str(fresh_env.bin / "python"), "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "2026-01-01T01:30:00+00:00"
    assert sys.executable != str(fresh_env.bin / "python")
