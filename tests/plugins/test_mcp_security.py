"""Securing MCP servers (issue 29): a streamable-HTTP server over TLS (the
SDK's `MCPServer` under uvicorn, certificates from trustme) reached with
``tls.ca_file``, without it, and with a client certificate; a stdio
server's ``env`` given a ``${secret:...}`` that reaches that process, and
no other, unwrapped, and shows in no log, result, error or CLI output.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import seamkit
import trustme
from seamkit.testing import ScriptedModel

from tests.plugins.mcp_servers import ROOT, TINY_SOURCE, TOKEN_VARIABLE, new_tag, tagged
from tests.plugins.otel_helpers import Exported, exported
from tests.plugins.test_mcp import manifest, results, run_once, seamkit_cli, turns

__all__ = ["exported"]

CANARY = "canary-mcp-tls-0b9e44-token"
"""The HTTPS server's bearer token."""
ENV_CANARY = "canary-mcp-env-c3d2a1-secret"
"""A stdio server's secret environment variable."""


def assert_no_canary(*texts: str) -> None:
    for text in texts:
        assert CANARY not in text and ENV_CANARY not in text, text


# --- a streamable-HTTP server over TLS ----------------------------------------------


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A CA, a server certificate for 127.0.0.1, a client certificate (with
    its key in the same file, and apart)."""
    directory = tmp_path_factory.mktemp("pki")
    ca = trustme.CA()
    paths = {
        name: directory / f"{name}.pem"
        for name in ("ca", "server", "client", "client-cert", "client-key")
    }
    ca.cert_pem.write_to_path(str(paths["ca"]))
    server = ca.issue_cert("127.0.0.1", "localhost")
    server.private_key_and_cert_chain_pem.write_to_path(str(paths["server"]))
    client = ca.issue_cert("agent.example", common_name="agent-tls", organization_name="seamkit")
    client.private_key_and_cert_chain_pem.write_to_path(str(paths["client"]))
    client.cert_chain_pems[0].write_to_path(str(paths["client-cert"]))
    client.private_key_pem.write_to_path(str(paths["client-key"]))
    return paths


def serve(log_dir: Path, **env: str) -> Iterator[str]:
    """``python -m tests.plugins.mcp_servers main http PORT`` with ``env``
    (wanting ``Authorization: Bearer CANARY``): its endpoint URL, https."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = log_dir / "server.log"
    environ = {**os.environ, "PYTHONPATH": str(ROOT), TOKEN_VARIABLE: CANARY, **env}
    command = [sys.executable, "-m", "tests.plugins.mcp_servers", "main", "http", str(port)]
    with log.open("w") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=environ, cwd=ROOT
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, f"the server never listened:\n{log.read_text()}"
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        yield f"https://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def https_url(pki: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from serve(tmp_path_factory.mktemp("mcp-https"), MCP_TEST_TLS_CERT=str(pki["server"]))


@pytest.fixture(scope="module")
def mtls_url(pki: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from serve(
        tmp_path_factory.mktemp("mcp-mtls"),
        MCP_TEST_TLS_CERT=str(pki["server"]),
        MCP_TEST_TLS_CLIENT_CA=str(pki["ca"]),
    )


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_TEST_KEY", CANARY)


def https_entry(url: str, **fields: Any) -> dict[str, Any]:
    return {
        "kind": "mcp",
        "toolset": "web",
        "url": url,
        "headers": {"Authorization": "Bearer ${secret:MCP_TEST_KEY}"},
        "include": ["echo", "whoami"],
        **fields,
    }


def build_error(app: dict[str, Any]) -> seamkit.ManifestError:
    async def go() -> None:
        async with await seamkit.Agent.load(app, model=ScriptedModel([])):
            pass

    with pytest.raises(seamkit.ManifestError) as info:
        asyncio.run(go())
    return info.value


@pytest.mark.usefixtures("key")
def test_a_tls_server_is_reached_with_its_ca_file(
    https_url: str,
    pki: dict[str, Path],
    caplog: pytest.LogCaptureFixture,
    exported: Exported,
) -> None:
    caplog.set_level(logging.DEBUG)
    entry = https_entry(https_url, tls={"ca_file": str(pki["ca"])})
    result = run_once(manifest(entry), [("web_echo", {"text": "over tls"}), ("web_whoami", {})])
    got = results(result)
    assert got["c1"] == "over tls" and json.loads(got["c2"]) == {"user": "ann"}
    assert exported.named("execute_tool"), "no tool span was exported"
    assert_no_canary(
        result.model_dump_json(),
        caplog.text,
        "\n".join(d.model_dump_json() for d in result.diagnostics),
        exported.everything(),
    )


@pytest.mark.usefixtures("key")
def test_without_the_ca_file_the_certificate_fails_as_a_clear_located_error(
    https_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    error = build_error(manifest(https_entry(https_url)))
    [problem] = error.problems
    assert problem.location == ("tools", 0)
    assert f"MCP server 'web' ({https_url}) failed to start" in problem.message
    assert "CERTIFICATE_VERIFY_FAILED" in problem.message
    assert problem.hint is not None and "tls.ca_file" in problem.hint
    for text in (str(error), error.format(), repr(error), caplog.text):
        assert "Traceback" not in text
        assert_no_canary(text)


@pytest.mark.usefixtures("key")
def test_verify_false_reaches_it_without_the_ca(https_url: str) -> None:
    result = run_once(
        manifest(https_entry(https_url, tls={"verify": False})), [("web_echo", {"text": "ok"})]
    )
    assert results(result)["c1"] == "ok"


@pytest.mark.usefixtures("key")
def test_tls_files_are_relative_to_the_manifest(
    https_url: str, pki: dict[str, Path], tmp_path: Path
) -> None:
    (tmp_path / "certs").mkdir()
    (tmp_path / "certs" / "ca.pem").write_bytes(pki["ca"].read_bytes())
    script = turns([("web_echo", {"text": "relative"})], "done")
    (tmp_path / "script.json").write_text(json.dumps(script))
    app = {
        **manifest(https_entry(https_url, tls={"ca_file": "certs/ca.pem"})),
        "model": "scripted:script.json",
    }
    path = tmp_path / "app.json"
    path.write_text(json.dumps(app))
    done = seamkit_cli("run", "--json", str(path), "hi", env={"MCP_TEST_KEY": CANARY})
    assert done.returncode == 0, done.stderr
    assert results(seamkit.RunResult.model_validate_json(done.stdout))["c1"] == "relative"
    assert_no_canary(done.stdout, done.stderr)


@pytest.mark.usefixtures("key")
def test_the_cli_reports_a_bad_certificate_in_one_located_line(
    https_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "app.json"
    path.write_text(json.dumps(manifest(https_entry(https_url))))
    done = seamkit_cli("validate", str(path), env={"MCP_TEST_KEY": CANARY})
    assert done.returncode != 0
    assert "CERTIFICATE_VERIFY_FAILED" in done.stdout + done.stderr
    assert "tools[0]" in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert_no_canary(done.stdout, done.stderr)


@pytest.mark.usefixtures("key")
def test_a_missing_tls_file_is_a_located_error(https_url: str, tmp_path: Path) -> None:
    error = build_error(manifest(https_entry(https_url, tls={"ca_file": "nope/ca.pem"})))
    [problem] = error.problems
    assert problem.location == ("tools", 0)
    assert "cannot load the TLS files of MCP server 'web'" in problem.message
    assert problem.hint is not None and "relative to the manifest" in problem.hint


@pytest.mark.parametrize(
    ("entry", "location", "words"),
    [
        (
            {"url": "https://h/mcp", "tls": {"key_file": "k.pem"}},
            ("tools", 0, "tls", "key_file"),
            "key_file needs cert_file",
        ),
        ({"command": "x", "tls": {"verify": False}}, ("tools", 0), "'tls' is for a streamable"),
        (
            {"url": "https://h/mcp", "tls": {"ca": "x"}},
            ("tools", 0, "tls", "ca"),
            "unknown field",
        ),
    ],
)
def test_bad_tls_settings_are_located_manifest_errors(
    entry: dict[str, Any], location: tuple[str | int, ...], words: str
) -> None:
    error = build_error(manifest({"kind": "mcp", **entry}))
    [problem] = error.problems
    assert problem.location == location and words in problem.message, problem


@pytest.mark.usefixtures("key")
@pytest.mark.parametrize("separate_key", [False, True])
def test_a_server_requiring_client_certificates_is_reached_with_one(
    mtls_url: str, pki: dict[str, Path], separate_key: bool
) -> None:
    if separate_key:
        tls = {
            "ca_file": str(pki["ca"]),
            "cert_file": str(pki["client-cert"]),
            "key_file": str(pki["client-key"]),
        }
    else:
        tls = {"ca_file": str(pki["ca"]), "cert_file": str(pki["client"])}
    result = run_once(manifest(https_entry(mtls_url, tls=tls)), [("web_echo", {"text": "mtls"})])
    assert results(result)["c1"] == "mtls"


@pytest.mark.usefixtures("key")
def test_without_a_client_certificate_it_fails_to_start(
    mtls_url: str, pki: dict[str, Path]
) -> None:
    error = build_error(manifest(https_entry(mtls_url, tls={"ca_file": str(pki["ca"])})))
    [problem] = error.problems
    assert problem.location == ("tools", 0)
    assert f"MCP server 'web' ({mtls_url}) failed to start" in problem.message
    assert problem.hint is not None and "client certificate" in problem.hint
    assert_no_canary(error.format())


# --- a stdio server's secret environment ---------------------------------------------


def env_entry(tag: str, dump: Path, **env: str) -> dict[str, Any]:
    """The tiny server, started by a shell that first writes its whole
    environment to ``dump`` (proof of what reached the process)."""
    return {
        "kind": "mcp",
        "toolset": "t",
        "command": "/bin/sh",
        "args": ["-c", f'env > "{dump}"; exec "{sys.executable}" -c "$0"', TINY_SOURCE],
        "env": {"MCP_TEST_TAG": tag, **env},
    }


def test_a_secret_env_value_reaches_its_server_only_and_shows_nowhere(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
    exported: Exported,
) -> None:
    monkeypatch.setenv("MCP_TEST_ENV_KEY", ENV_CANARY)
    caplog.set_level(logging.DEBUG)
    tag = new_tag()
    mine, other = tmp_path / "mine.env", tmp_path / "other.env"
    app = manifest(
        env_entry(tag, mine, MCP_TEST_SECRET="${secret:MCP_TEST_ENV_KEY}"),
        {**env_entry(tag, other), "toolset": "u"},
    )
    model = ScriptedModel(
        turns([("t_secret", {}), ("t_echo", {"text": "hello"})], [("t_die", {})], "done")
    )

    store = seamkit.SQLiteSessionStore(tmp_path / "sessions.sqlite")

    async def go() -> seamkit.RunResult:
        async with await seamkit.Agent.load(app, model=model) as agent:
            return await agent.run("hi", session="s", store=store)

    result = asyncio.run(go())
    row = asyncio.run(store.load_raw("s"))
    assert row is not None
    # the plain value reached the server that was given it, and not the other one
    assert f"MCP_TEST_SECRET={ENV_CANARY}" in mine.read_text().splitlines()
    assert ENV_CANARY not in other.read_text()
    assert "MCP_TEST_SECRET" not in os.environ
    got = results(result)
    assert got["c1"] == "the secret is ***" and got["c2"] == "hello"
    assert got["c3"].endswith("its stderr ends: telling secret=***"), got["c3"]
    assert exported.named("execute_tool"), "no tool span was exported"
    files = sorted(tmp_path.glob("sessions.sqlite*"))  # with its journal, if any
    rows = "\n".join(
        [row.transcript, row.state, *(f.read_bytes().decode("utf-8", "replace") for f in files)]
    )
    assert "the secret is ***" in row.transcript  # the store holds the (masked) result
    assert_no_canary(
        result.model_dump_json(),
        caplog.text,
        "\n".join(d.model_dump_json() for d in result.diagnostics),
        exported.everything(),
        rows,
    )
    assert tagged(tag) == []


def test_a_server_failing_at_start_shows_no_secret_in_the_build_error(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    monkeypatch.setenv("MCP_TEST_ENV_KEY", ENV_CANARY)
    caplog.set_level(logging.DEBUG)
    entry = {
        **env_entry(new_tag(), tmp_path / "env", MCP_TEST_SECRET="${secret:MCP_TEST_ENV_KEY}"),
        "args": ["-c", TINY_SOURCE, "leak"],
        "command": sys.executable,
    }
    error = build_error(manifest(entry))
    [problem] = error.problems
    assert "secret=***" in problem.message, problem.message
    assert_no_canary(str(error), error.format(), repr(error), caplog.text)


def test_the_cli_shows_no_secret_env_value(tmp_path: Path) -> None:
    tag = new_tag()
    script = turns([("t_secret", {})], "done")
    (tmp_path / "script.json").write_text(json.dumps(script))
    entry = env_entry(tag, tmp_path / "env", MCP_TEST_SECRET="${secret:MCP_TEST_ENV_KEY}")
    app = {**manifest(entry), "model": "scripted:script.json"}
    path = tmp_path / "app.json"
    path.write_text(json.dumps(app))
    env = {"MCP_TEST_ENV_KEY": ENV_CANARY}
    outputs = []
    for command in (
        ["validate", str(path)],
        ["tools", "--json", str(path)],
        ["plugins"],
        ["schema"],
        ["run", "--json", str(path), "hi"],
    ):
        done = seamkit_cli(*command, env=env)
        assert done.returncode == 0, (command, done.stderr)
        outputs += [done.stdout, done.stderr]
    assert f"MCP_TEST_SECRET={ENV_CANARY}" in (tmp_path / "env").read_text().splitlines()
    assert_no_canary(*outputs)
    assert tagged(tag) == []
