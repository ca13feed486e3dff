"""NATS credentials, TLS and replies no one can forge (issue 29), against a
real ``nats-server`` started with a configuration file per mechanism: token,
user + password, NKey, decentralized JWT accounts with a ``.creds`` file, and
TLS (certificates made here with ``trustme``; server TLS, then client
certificates with ``verify: true``).

For each: the right credentials work (agent and worker), wrong or missing
ones fail the call with ``Error: Unavailable: ... authorization violation``
and no secret (a canary searched in the result, the log and the transcript),
and a worker with bad credentials says so in one line and exits non-zero.
Then a server with per-user permissions where a rogue client can neither
read a request on a service's subject nor answer into the agent's inbox,
and the ids and reply subjects of two calls sharing no guessable part.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import os
import re
import secrets
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import nats
import nkeys  # type: ignore[import-untyped]  # no stubs
import pytest
import seamkit
import trustme
from pydantic import ValidationError
from seamkit.testing import ScriptedModel
from seamkit_tool_service import ToolServicesConfig, dropped_replies, encode_reply
from seamkit_tool_service._config import NatsAuth, NatsTls
from seamkit_tool_service._kind import _CONNECTIONS
from seamkit_tool_service._nats_client import NatsTransport

from tests.plugins.otel_helpers import Exported, exported
from tests.plugins.tool_services import ROOT, SEAMKIT, ServiceProcess, app, results, tool

__all__ = ["exported"]  # the fixture, for pytest

if TYPE_CHECKING:
    from tests.plugins.nats_server import NatsServer

pytest_plugins = ["tests.plugins.nats_server"]

ECHO = "tests.plugins.services.basic:Echo"
SUBJECT = "tools.echo"
CANARY = "canary-" + secrets.token_hex(8)
"""Part of every secret here: it must never show in an error, log or transcript."""


def _start(config: str) -> NatsServer:
    from tests.plugins.nats_server import NatsServer  # after pytest_plugins registered it

    return NatsServer.start(config=config)


@pytest.fixture
def server_with() -> Iterator[Any]:
    """Start servers with a configuration file; all stopped at teardown."""
    started: list[NatsServer] = []

    def start(config: str) -> NatsServer:
        server = _start(config)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def manifest(url: str, **security: Any) -> dict[str, Any]:
    """An agent with the tool ``echo`` on ``url``, ``auth``/``tls`` on the section."""
    return app(
        [
            {
                "id": "echo",
                "transport": "nats",
                "servers": [url],
                "subject": SUBJECT,
                "config_params": [{"name": "collection", "required": True}],
                "timeout_seconds": 5,
            }
        ],
        [
            tool(
                "echo",
                "echo",
                ("text", "string", True),
                ("delay", "number", False),
                collection="docs",
            )
        ],
        **security,
    )


def run_echo(manifest: dict[str, Any]) -> tuple[str, str]:
    """One run calling ``echo``: the tool's result and the whole transcript (JSON)."""

    async def go() -> seamkit.RunResult:
        model = ScriptedModel(
            [
                {"tool_calls": [{"id": "c1", "name": "echo", "arguments": '{"text": "hi"}'}]},
                {"text": "done"},
            ]
        )
        async with await seamkit.Agent.load(manifest, model=model) as agent:
            return await agent.run("hi", context={"user": "ann"})

    result = asyncio.run(go())
    transcript = json.dumps([m.model_dump(mode="json") for m in result.transcript])
    return results(result)["c1"], transcript


def serve(
    url: str, log_dir: Path, flags: list[str], env: dict[str, str] | None = None
) -> ServiceProcess:
    return ServiceProcess.nats(ECHO, log_dir, servers=url, subject=SUBJECT, flags=flags, env=env)


def serve_refused(
    url: str, flags: list[str], env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """``seamkit tool-service serve`` with credentials the server refuses, to the end."""
    command = [str(SEAMKIT), "tool-service", "serve", ECHO, "--transport", "nats"]
    command += ["--servers", url, "--subject", SUBJECT, *flags]
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
    )


def assert_refused_worker(done: subprocess.CompletedProcess[str]) -> None:
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "Traceback" not in output and CANARY not in output
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, output
    assert "authorization violation" in errors[0], output
    others = [
        line
        for line in done.stderr.splitlines()
        if not line.startswith(("error: ", "hint: ", "seamkit tool-service: "))
    ]
    assert others == [], output  # no log lines besides the one error


def assert_refused_call(result: str, transcript: str, log: str) -> None:
    assert result.startswith("Error: Unavailable: cannot reach NATS at "), result
    assert "authorization violation" in result, result
    for text in (result, transcript, log):
        assert CANARY not in text


def user_seed() -> tuple[str, str]:
    """A new NKey user: (seed, public key)."""
    seed = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)
    return seed.decode(), nkeys.from_seed(bytearray(seed)).public_key.decode()


# --- the config models -------------------------------------------------------------


def test_auth_takes_exactly_one_form_each_problem_at_its_field() -> None:
    with pytest.raises(ValidationError) as none:
        NatsAuth.model_validate({})
    assert "auth needs one of token, user + password, nkey_seed or creds_file" in str(none.value)
    with pytest.raises(ValidationError) as several:
        NatsAuth.model_validate({"token": "a", "nkey_seed": "b"})
    assert several.value.errors()[0]["loc"] == ("nkey_seed",)
    assert "give only one" in str(several.value)
    with pytest.raises(ValidationError) as alone:
        NatsAuth.model_validate({"user": "ann"})
    assert alone.value.errors()[0]["loc"] == ("password",)
    with pytest.raises(ValidationError) as half:
        NatsTls.model_validate({"cert_file": "c.pem"})
    assert half.value.errors()[0]["loc"] == ("key_file",)
    # in the section, located under it
    with pytest.raises(ValidationError) as located:
        ToolServicesConfig.model_validate({"auth": {"token": "x", "user": "u", "password": "p"}})
    assert located.value.errors()[0]["loc"][0] == "auth"
    # a secret prints masked
    auth = NatsAuth.model_validate({"token": seamkit.Secret(CANARY)})
    assert CANARY not in repr(auth) and CANARY not in auth.model_dump_json()


def test_section_auth_and_tls_are_the_default_of_nats_services_files_by_the_manifest(
    tmp_path: Path,
) -> None:
    from seamkit_tool_service._config import secured

    section = ToolServicesConfig.model_validate(
        {
            "auth": {"creds_file": "agent.creds"},
            "tls": {"ca_file": "ca.pem"},
            "services": [
                {"id": "a", "transport": "nats", "servers": ["nats://h:1"], "subject": "t.a"},
                {
                    "id": "b",
                    "transport": "nats",
                    "servers": ["nats://h:1"],
                    "subject": "t.b",
                    "auth": {"token": "x"},
                },
            ],
        }
    )
    a = secured(section.by_id["a"], section, str(tmp_path))
    b = secured(section.by_id["b"], section, str(tmp_path))
    assert a.auth is not None and a.auth.creds_file == str(tmp_path / "agent.creds")
    assert a.tls is not None and a.tls.ca_file == str(tmp_path / "ca.pem")
    assert b.auth is not None and b.auth.token is not None and b.auth.creds_file is None
    assert b.tls is not None and b.tls.ca_file == str(tmp_path / "ca.pem")


def test_auth_and_tls_take_the_model_of_the_transport_mistakes_located(tmp_path: Path) -> None:
    from seamkit_tool_service import HttpAuth, HttpTls
    from seamkit_tool_service._config import secured

    http = {"id": "h", "url": "https://h/", "tls": {"ca_file": "ca.pem"}}
    nats = {"id": "n", "transport": "nats", "servers": ["nats://h:1"], "subject": "t.n"}
    section = ToolServicesConfig.model_validate(
        {"services": [http, {**nats, "tls": {"ca_file": "ca.pem"}, "auth": {"token": "x"}}]}
    )
    h, n = (secured(s, section, str(tmp_path)) for s in section.services)
    assert isinstance(h.tls, HttpTls) and h.tls.ca_file == str(tmp_path / "ca.pem")
    assert isinstance(n.tls, NatsTls) and n.tls.ca_file == str(tmp_path / "ca.pem")
    assert isinstance(n.auth, NatsAuth)
    bearer = {"id": "h", "url": "https://h/", "auth": {"bearer": "x"}}
    assert isinstance(
        ToolServicesConfig.model_validate({"services": [bearer]}).services[0].auth, HttpAuth
    )

    def problems(services: list[dict[str, Any]], **section: Any) -> list[seamkit.Problem]:
        manifest = {"name": "a", "model": "scripted:s"}
        with pytest.raises(seamkit.ManifestError) as info:
            seamkit.AppConfig.load({**manifest, "tool_services": {**section, "services": services}})
        return list(info.value.problems)

    [token] = problems([{**http, "auth": {"token": "x"}}])
    assert token.path == "tool_services.services[0].auth.token"
    assert "for nats services" in token.message and "bearer" in (token.hint or "")
    [first] = problems([{**nats, "auth": {"bearer": "x"}}])
    assert first.path == "tool_services.services[0].auth.bearer"
    assert "for http services" in first.message
    [verify] = problems([{**nats, "tls": {"verify": False}}])
    assert verify.path == "tool_services.services[0].tls.verify"
    wrong = problems([{**http, "tls": {"handshake_first": True}, "url": "ftp://h/"}])
    assert sorted(p.path for p in wrong) == [
        "tool_services.services[0].tls.handshake_first",
        "tool_services.services[0].url",
    ]
    [section_bearer] = problems([], auth={"bearer": "x"})
    assert section_bearer.path == "tool_services.auth.bearer"
    assert "is for NATS" in section_bearer.message


# --- one mechanism at a time -------------------------------------------------------


def _nkey_setup() -> tuple[
    str, dict[str, str], dict[str, Any], list[str], dict[str, str], list[str]
]:
    seed, public = user_seed()
    wrong_seed, _ = user_seed()
    config = f"authorization {{ users = [ {{ nkey: {public} }} ] }}"
    return (
        config,
        {"SEED": seed, "WRONG": wrong_seed},
        {"nkey_seed": "${secret:SEED}"},
        ["--nats-nkey-seed-env", "SEED"],
        {"nkey_seed": "${secret:WRONG}"},
        ["--nats-nkey-seed-env", "WRONG"],
    )


MECHANISMS: dict[str, Any] = {
    "token": lambda: (
        f'authorization {{ token: "{CANARY}-right" }}',
        {"TOKEN": f"{CANARY}-right", "WRONG": f"{CANARY}-wrong"},
        {"token": "${secret:TOKEN}"},
        ["--nats-token-env", "TOKEN"],
        {"token": "${secret:WRONG}"},
        ["--nats-token-env", "WRONG"],
    ),
    "user-password": lambda: (
        f'authorization {{ users = [ {{ user: ann, password: "{CANARY}-right" }} ] }}',
        {"PASSWORD": f"{CANARY}-right", "WRONG": f"{CANARY}-wrong"},
        {"user": "ann", "password": "${secret:PASSWORD}"},
        ["--nats-user", "ann", "--nats-password-env", "PASSWORD"],
        {"user": "ann", "password": "${secret:WRONG}"},
        ["--nats-user", "ann", "--nats-password-env", "WRONG"],
    ),
    "nkey": _nkey_setup,
}


@pytest.mark.parametrize("mechanism", list(MECHANISMS))
def test_right_credentials_work_wrong_or_missing_ones_are_refused_without_the_secret(
    mechanism: str,
    server_with: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    config, env, right, flags, wrong, wrong_flags = MECHANISMS[mechanism]()
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    server = server_with(config)
    caplog.set_level(logging.DEBUG)
    with serve(server.url, tmp_path, flags, env):
        result, _ = run_echo(manifest(server.url, auth=right))
        assert json.loads(result)["arguments"] == {"text": "hi"}
        for auth in (wrong, None):
            result, transcript = run_echo(manifest(server.url, **({"auth": auth} if auth else {})))
            assert_refused_call(result, transcript, caplog.text)
    assert_refused_worker(serve_refused(server.url, wrong_flags, env))


# --- decentralized JWT accounts, a .creds file ---------------------------------------


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _jwt(claims: dict[str, Any], signer: nkeys.KeyPair) -> str:
    """A NATS JWT (ed25519-nkey) of ``claims``, signed by ``signer``."""
    claims = {"iat": int(time.time()), "iss": signer.public_key.decode(), **claims}
    body = json.dumps(claims, separators=(",", ":")).encode()
    claims["jti"] = base64.b32encode(hashlib.sha256(body).digest()).decode().rstrip("=")
    header = _b64(b'{"typ":"JWT","alg":"ed25519-nkey"}')
    payload = _b64(json.dumps(claims, separators=(",", ":")).encode())
    signature = signer.sign(f"{header}.{payload}".encode())
    return f"{header}.{payload}.{_b64(signature)}"


def _pair(prefix: int) -> tuple[nkeys.KeyPair, str]:
    seed = nkeys.encode_seed(os.urandom(32), prefix)
    return nkeys.from_seed(bytearray(seed)), seed.decode()


def _creds(path: Path, jwt: str, seed: str) -> Path:
    path.write_text(
        f"-----BEGIN NATS USER JWT-----\n{jwt}\n------END NATS USER JWT------\n\n"
        f"-----BEGIN USER NKEY SEED-----\n{seed}\n------END USER NKEY SEED------\n"
    )
    return path


def test_decentralized_jwt_accounts_with_a_creds_file(
    server_with: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    operator, _ = _pair(nkeys.PREFIX_BYTE_OPERATOR)
    account, _ = _pair(nkeys.PREFIX_BYTE_ACCOUNT)
    stranger, _ = _pair(nkeys.PREFIX_BYTE_ACCOUNT)  # signs a user the server does not know
    op_pub, acc_pub = operator.public_key.decode(), account.public_key.decode()
    operator_jwt = _jwt(
        {"sub": op_pub, "name": "op", "nats": {"type": "operator", "version": 2}}, operator
    )
    account_jwt = _jwt(
        {
            "sub": acc_pub,
            "name": "tools",
            "nats": {
                "type": "account",
                "version": 2,
                "limits": {
                    "subs": -1,
                    "conn": -1,
                    "leaf": -1,
                    "imports": -1,
                    "exports": -1,
                    "data": -1,
                    "payload": -1,
                    "wildcards": True,
                },
            },
        },
        operator,
    )

    def user_creds(name: str, signer: nkeys.KeyPair) -> Path:
        user, seed = _pair(nkeys.PREFIX_BYTE_USER)
        jwt = _jwt(
            {
                "sub": user.public_key.decode(),
                "name": name,
                "nats": {
                    "type": "user",
                    "version": 2,
                    "pub": {},
                    "sub": {},
                    "subs": -1,
                    "data": -1,
                    "payload": -1,
                },
            },
            signer,
        )
        return _creds(tmp_path / f"{name}.creds", jwt, seed)

    service_creds = user_creds("service", account)
    agent_creds = user_creds("agent", account)
    rogue_creds = user_creds("rogue", stranger)
    server = server_with(
        f"operator: {operator_jwt}\nresolver: MEMORY\n"
        f"resolver_preload: {{ {acc_pub}: {account_jwt} }}\n"
    )
    caplog.set_level(logging.DEBUG)
    with serve(server.url, tmp_path, ["--nats-creds", str(service_creds)]):
        result, _ = run_echo(manifest(server.url, auth={"creds_file": str(agent_creds)}))
        assert json.loads(result)["arguments"] == {"text": "hi"}
        result, transcript = run_echo(manifest(server.url, auth={"creds_file": str(rogue_creds)}))
        assert_refused_call(result, transcript, caplog.text)
    assert_refused_worker(serve_refused(server.url, ["--nats-creds", str(rogue_creds)], {}))


# --- TLS ---------------------------------------------------------------------------


@pytest.fixture
def certificates(tmp_path: Path) -> dict[str, str]:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, as files."""
    ca = trustme.CA()
    server = ca.issue_cert("127.0.0.1", "localhost")
    client = ca.issue_cert("agent@example.org")
    files = {
        "ca": ca.cert_pem,
        "server_cert": server.cert_chain_pems[0],
        "server_key": server.private_key_pem,
        "client_cert": client.cert_chain_pems[0],
        "client_key": client.private_key_pem,
    }
    out: dict[str, str] = {}
    for name, blob in files.items():
        path = tmp_path / f"{name}.pem"
        blob.write_to_path(str(path))
        out[name] = str(path)
    return out


def tls_config(files: dict[str, str], *, verify: bool) -> str:
    return (
        f'tls {{ cert_file: "{files["server_cert"]}", key_file: "{files["server_key"]}", '
        f'ca_file: "{files["ca"]}", verify: {str(verify).lower()}, timeout: 2 }}'
    )


def test_server_tls_with_the_ca_given_works_without_it_fails(
    server_with: Any, certificates: dict[str, str], tmp_path: Path
) -> None:
    server = server_with(tls_config(certificates, verify=False))
    with serve(server.url, tmp_path, ["--tls-ca", certificates["ca"]]):
        result, _ = run_echo(manifest(server.url, tls={"ca_file": certificates["ca"]}))
        assert json.loads(result)["arguments"] == {"text": "hi"}
        result, _ = run_echo(manifest(server.url))  # the system's CAs do not know this one
        assert result.startswith("Error: Unavailable: cannot reach NATS at "), result


def test_tls_handshake_first(
    request: pytest.FixtureRequest, certificates: dict[str, str], tmp_path: Path
) -> None:
    # the server sends nothing in the clear: only a client that starts TLS at once connects
    from tests.plugins.nats_server import NatsServer

    config = tls_config(certificates, verify=False).replace(
        "timeout: 2", "timeout: 2, handshake_first: true"
    )
    server = NatsServer.start(config=config, tls_first=True)
    request.addfinalizer(server.stop)
    flags = ["--tls-ca", certificates["ca"], "--tls-handshake-first"]
    with serve(server.url, tmp_path, flags):
        tls = {"ca_file": certificates["ca"], "handshake_first": True}
        result, _ = run_echo(manifest(server.url, tls=tls))
        assert json.loads(result)["arguments"] == {"text": "hi"}
        result, _ = run_echo(manifest(server.url, tls={"ca_file": certificates["ca"]}))
        assert result.startswith("Error: Unavailable: cannot reach NATS at "), result


def test_client_certificates_with_verify_true(
    server_with: Any, certificates: dict[str, str], tmp_path: Path
) -> None:
    server = server_with(tls_config(certificates, verify=True))
    client = ["--tls-cert", certificates["client_cert"], "--tls-key", certificates["client_key"]]
    with serve(server.url, tmp_path, ["--tls-ca", certificates["ca"], *client]):
        tls = {
            "ca_file": certificates["ca"],
            "cert_file": certificates["client_cert"],
            "key_file": certificates["client_key"],
        }
        result, _ = run_echo(manifest(server.url, tls=tls))
        assert json.loads(result)["arguments"] == {"text": "hi"}
        result, _ = run_echo(manifest(server.url, tls={"ca_file": certificates["ca"]}))
        assert result.startswith("Error: Unavailable: cannot reach NATS at "), result
    done = serve_refused(server.url, ["--tls-ca", certificates["ca"]], {})
    assert done.returncode != 0
    assert len([x for x in done.stderr.splitlines() if x.startswith("error: ")]) == 1


def test_tls_files_relative_to_the_manifest_and_discovery_with_the_sections_credentials(
    server_with: Any,
    certificates: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TOKEN", f"{CANARY}-right")
    server = server_with(
        tls_config(certificates, verify=False) + f'\nauthorization {{ token: "{CANARY}-right" }}'
    )
    flags = ["--tls-ca", certificates["ca"], "--nats-token-env", "TOKEN"]
    folder = tmp_path / "agent"
    folder.mkdir()
    (folder / "certs").mkdir()
    (folder / "certs" / "ca.pem").write_bytes(Path(certificates["ca"]).read_bytes())
    section = {
        "discover": True,
        "servers": [server.url],
        "auth": {"token": "${secret:TOKEN}"},
        "tls": {"ca_file": "certs/ca.pem"},  # relative to the manifest's folder
    }
    path = folder / "agent.json"
    path.write_text(json.dumps(app([], [], **section)))  # its tools: those discovered

    async def go() -> str:
        model = ScriptedModel(
            [
                {"tool_calls": [{"id": "c1", "name": "echo", "arguments": '{"text": "hi"}'}]},
                {"text": "done"},
            ]
        )
        async with await seamkit.Agent.load(str(path), model=model) as agent:
            return results(await agent.run("hi", context={"user": "ann"}))["c1"]

    with serve(server.url, tmp_path, flags, {"TOKEN": f"{CANARY}-right"}):
        text = asyncio.run(go())
    assert json.loads(text)["config"] == {"collection": "announced"}, text
    assert json.loads(text)["arguments"] == {"text": "hi"}


def test_serve_flags_take_secrets_from_the_environment_only_one_form(tmp_path: Path) -> None:
    url = "nats://127.0.0.1:1"  # checked before any worker starts: never reached
    unset = serve_refused(url, ["--nats-token-env", "SEAMKIT_TEST_UNSET_VARIABLE"], {})
    assert unset.returncode != 0
    assert "error: the environment variable SEAMKIT_TEST_UNSET_VARIABLE" in unset.stderr
    both = serve_refused(url, ["--nats-token-env", "T", "--nats-nkey-seed-env", "T"], {"T": CANARY})
    assert both.returncode != 0 and CANARY not in both.stdout + both.stderr
    assert "give only one of" in both.stderr
    half = serve_refused(url, ["--tls-cert", str(tmp_path)], {})
    assert half.returncode != 0  # a folder is not a file; and a cert needs its key
    shown = serve_refused(url, ["--help"], {}).stdout  # no flag takes a secret itself
    assert not re.search(r"--(nats-)?(token|password|nkey-seed)(?![-\w])", shown), shown
    http_flag = serve_refused(url, ["--token-env", "T"], {"T": CANARY})
    assert (
        http_flag.returncode != 0 and "--token-env is not for --transport nats" in http_flag.stderr
    )


# --- replies no one can forge --------------------------------------------------------

PERMISSIONS = """
authorization {
  users = [
    { user: agent, password: "%(agent)s",
      permissions: { publish: { allow: ["tools.>", "$SRV.>"] },
                     subscribe: { allow: ["_INBOX.>"] } } }
    { user: echo, password: "%(echo)s",
      permissions: { subscribe: { allow: ["tools.echo", "$SRV.>"] },
                     publish: { deny: [">"] },
                     allow_responses: true } }
    { user: rogue, password: "%(rogue)s",
      permissions: { subscribe: { allow: ["tools.rogue", "$SRV.>"] },
                     publish: { deny: [">"] },
                     allow_responses: true } }
  ]
}
"""
"""Each service reads its own subject only and answers only the requests it
got (``allow_responses``); the agent alone reads ``_INBOX.>``."""


def test_a_rogue_client_can_neither_read_a_request_nor_answer_into_the_agents_inbox(
    server_with: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    passwords = {name: f"{CANARY}-{name}" for name in ("agent", "echo", "rogue")}
    monkeypatch.setenv("AGENT_PASSWORD", passwords["agent"])
    server = server_with(PERMISSIONS % passwords)
    flags = ["--nats-user", "echo", "--nats-password-env", "ECHO_PASSWORD"]

    async def go() -> tuple[str, list[bytes], list[str], dict[str, int]]:
        denied: list[str] = []

        async def on_error(exc: Exception) -> None:
            denied.append(str(exc))

        rogue = await nats.connect(
            server.url, user="rogue", password=passwords["rogue"], error_cb=on_error
        )
        seen: list[bytes] = []

        async def spy(msg: Any) -> None:
            seen.append(msg.data)

        for subject in ("tools.>", "tools.echo", "_INBOX.>"):
            await rogue.subscribe(subject, cb=spy)
        await rogue.flush()
        auth = {"user": "agent", "password": "${secret:AGENT_PASSWORD}"}
        async with await seamkit.Agent.load(
            manifest(server.url, auth=auth), model=ScriptedModel([])
        ) as agent:
            echo = agent.tools["echo"]
            context = seamkit.ActionContext(user="ann")
            pending = asyncio.ensure_future(echo.call({"text": "real", "delay": 0.5}, context))
            connections = _CONNECTIONS[agent.exit_stack]
            transport: NatsTransport | None = None
            for _ in range(100):  # until the request is on its way
                await asyncio.sleep(0.02)
                transport = next(
                    (
                        t
                        for table in connections._by_loop.values()
                        for t in table.transports.values()
                        if isinstance(t, NatsTransport) and t._calls
                    ),
                    None,
                )
                if transport is not None:
                    break
            assert transport is not None
            # the worst case: the rogue knows the call's id and its reply subject
            ((call_id, token),) = transport._calls.items()
            forged = encode_reply(call_id, "forged")
            await rogue.publish(f"{transport._prefix}.{token}", forged)
            await rogue.publish(SUBJECT, b"{}")  # nor may it call the service as another
            await rogue.flush()
            result = await pending
            await asyncio.sleep(0.2)
            dropped = dropped_replies(agent)
        await rogue.close()
        return str(result.content), seen, denied, dropped

    with serve(server.url, tmp_path, flags, {"ECHO_PASSWORD": passwords["echo"]}):
        text, seen, denied, dropped = asyncio.run(go())
    assert json.loads(text)["arguments"] == {"text": "real", "delay": 0.5}
    assert seen == []  # read nothing: neither the request nor the reply
    assert dropped == {"stray": 0, "duplicate": 0}  # the forgery never reached the agent
    assert any("permissions violation" in d.lower() for d in denied), denied


def _common(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share."""
    return next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )


def test_two_calls_share_no_guessable_part_of_their_ids_or_reply_subjects(
    server_with: Any, tmp_path: Path
) -> None:
    server = server_with("")
    ids: list[str] = []
    subjects: list[str] = []

    async def go() -> None:
        client = await nats.connect(server.url)

        async def record(msg: Any) -> None:
            ids.append(json.loads(msg.data)["id"])
            subjects.append(msg.reply)
            await msg.respond(encode_reply(json.loads(msg.data)["id"], "ok"))

        await client.subscribe(SUBJECT, cb=record)
        await client.flush()
        async with await seamkit.Agent.load(manifest(server.url), model=ScriptedModel([])) as agent:
            for _ in range(2):
                result = await agent.tools["echo"].call({"text": "x"}, seamkit.ActionContext())
                assert result.content == "ok", result.content
        await client.close()

    asyncio.run(go())
    (first_id, second_id), (first, second) = ids, subjects
    assert len(first_id) == len(second_id) == 32 and first_id != second_id
    # no common prefix or suffix beyond chance (a counter shares all but its end)
    assert _common(first_id, second_id) < 8
    first_token, second_token = first.rsplit(".", 1)[1], second.rsplit(".", 1)[1]
    assert len(first_token) == 32 and first_token != second_token
    assert _common(first_token, second_token) < 8
    assert first_id not in first and second_id not in second  # the subject is not the id


def test_a_password_in_a_servers_url_is_masked_in_the_error(
    server_with: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Userinfo written plainly in a NATS URL (not a secret) never shows:
    the refused call's error writes it ``***@``."""
    server = server_with(
        f'authorization {{ users = [ {{ user: ann, password: "{CANARY}-right" }} ] }}'
    )
    caplog.set_level(logging.DEBUG)
    plain = server.url.replace("nats://", f"nats://ann:{CANARY}-plain@")
    result, transcript = run_echo(manifest(plain))
    assert result.startswith("Error: Unavailable: cannot reach NATS at nats://***@"), result
    for text in (result, transcript, caplog.text):
        assert f"{CANARY}-plain" not in text


def test_a_secret_in_a_servers_url_connects_and_never_shows(
    server_with: Any,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    """``servers`` takes ``${secret:...}`` where a URL holds a credential:
    it connects with it, and a wrong one is refused without showing it."""
    server = server_with(
        f'authorization {{ users = [ {{ user: ann, password: "{CANARY}-right" }} ] }}'
    )
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("PASSWORD", f"{CANARY}-right")
    monkeypatch.setenv("WRONG", f"{CANARY}-wrong")
    monkeypatch.setenv("SERVER_URL", server.url.replace("nats://", f"nats://ann:{CANARY}-right@"))
    with serve(server.url, tmp_path, ["--nats-user", "ann", "--nats-password-env", "PASSWORD"]):
        secret_url = manifest("${secret:SERVER_URL}")
        result, transcript = run_echo(secret_url)
        assert json.loads(result)["arguments"] == {"text": "hi"}
        monkeypatch.setenv(
            "SERVER_URL", server.url.replace("nats://", f"nats://ann:{CANARY}-wrong@")
        )
        result, transcript = run_echo(manifest("${secret:SERVER_URL}"))
        assert_refused_call(result, transcript, caplog.text)


def test_nats_credentials_are_in_no_span_and_no_session_row(
    server_with: Any,
    monkeypatch: pytest.MonkeyPatch,
    exported: Exported,
    tmp_path: Path,
) -> None:
    """A token, traced with content capture on and kept in a session: no
    span, metric, log record or byte of the store holds it."""
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    monkeypatch.setenv("TOKEN", f"{CANARY}-right")
    server = server_with(f'authorization {{ token: "{CANARY}-right" }}')
    store = seamkit.SQLiteSessionStore(tmp_path / "sessions.sqlite")
    model = ScriptedModel(
        [
            {"tool_calls": [{"id": "c1", "name": "echo", "arguments": '{"text": "hi"}'}]},
            {"text": "done"},
        ]
    )

    async def go() -> seamkit.RunResult:
        loaded = manifest(server.url, auth={"token": "${secret:TOKEN}"})
        async with await seamkit.Agent.load(loaded, model=model) as agent:
            return await agent.run("hi", context={"user": "ann"}, session="s", store=store)

    with serve(server.url, tmp_path, ["--nats-token-env", "TOKEN"]):
        result = asyncio.run(go())
    assert json.loads(results(result)["c1"])["arguments"] == {"text": "hi"}
    assert exported.named("execute_tool"), "no tool span was exported"
    stored = "".join(
        p.read_bytes().decode("latin-1") for p in tmp_path.iterdir() if p.name.startswith("sess")
    )
    for text in (exported.everything(), stored, result.model_dump_json()):
        assert CANARY not in text
