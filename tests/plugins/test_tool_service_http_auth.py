"""HTTP tool services behind authentication, end to end: bearer tokens
(``--token-env``), TLS with a CA the tests make (trustme), client
certificates (``--ca-certs``), who the service is told called it, the
refusal to serve beyond loopback unauthenticated, and no token or password
ever shown (logs, banner, errors, transcript).

Every service is a real ``seamkit tool-service serve`` subprocess on
127.0.0.1, stopped whatever the test did.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any

import httpx
import pytest
import seamkit
import trustme
import uvicorn
from pydantic import ValidationError
from seamkit.testing import ScriptedModel
from seamkit_tool_service import ServiceDescriptor
from seamkit_tool_service._http_auth import check_token, mask_urls, token_specs

from tests.conftest import free_port
from tests.plugins.otel_helpers import Exported, exported
from tests.plugins.tool_services import SEAMKIT, ServiceProcess, app, results, tool

__all__ = ["exported"]  # the fixture, for pytest

WHOAMI = "tests.plugins.services.http_auth:Whoami"
TOKEN_1 = "tok-agent-one-canary-3f9d0c"
TOKEN_2 = "tok-other-canary-77ab12"
WRONG = "tok-wrong-canary-5e5e5e"
PASSWORD = "pw-userinfo-canary-a1b2c3"
CANARIES = (TOKEN_1, TOKEN_2, WRONG, PASSWORD)


# --- the pieces -----------------------------------------------------------------


def test_token_specs_name_each_token_by_its_id_or_variable() -> None:
    assert token_specs(["agent-1=A", "B"]) == [("agent-1", "A"), ("B", "B")]
    for bad in (["=A"], ["x="], ["a=A", "a=B"]):
        with pytest.raises(ValueError):
            token_specs(bad)


def test_check_token_finds_the_id_of_a_valid_bearer_only() -> None:
    tokens = {"agent-1": b"one", "other": b"two"}
    assert check_token("Bearer two", tokens) == "other"
    assert check_token("bearer one", tokens) == "agent-1"
    assert check_token("Bearer three", tokens) is None
    assert check_token("Basic one", tokens) is None
    assert check_token("", tokens) is None


def test_userinfo_is_masked_in_any_url_of_a_text() -> None:
    text = f"at http://u:{PASSWORD}@h:1/x and https://tok@h/ but not mail@example.org"
    masked = mask_urls(text)
    assert PASSWORD not in masked and "tok@" not in masked
    assert "http://***@h:1/x" in masked and "mail@example.org" in masked


def test_a_bad_url_with_a_password_is_reported_without_it() -> None:
    with pytest.raises(ValidationError) as info:
        ServiceDescriptor(id="x", url=f"ftp://u:{PASSWORD}@h/")
    assert PASSWORD not in str(info.value)


def test_a_key_file_without_a_cert_file_is_refused() -> None:
    with pytest.raises(ValidationError, match="cert_file"):
        ServiceDescriptor.model_validate({"id": "x", "url": "https://h/", "tls": {"key_file": "k"}})


# --- serving ---------------------------------------------------------------------


class Served(ServiceProcess):
    """``seamkit tool-service serve`` with auth options, ready when its
    ``/healthz`` answers (over TLS when ``verify`` is a context)."""

    verify: ssl.SSLContext | bool = True

    @classmethod
    def start(
        cls, spec: str, log_dir: Path, *options: str, verify: ssl.SSLContext | None = None
    ) -> Served:
        port = free_port()
        scheme = "https" if verify is not None else "http"
        command = [str(SEAMKIT), "tool-service", "serve", spec, "--transport", "http"]
        command += ["--port", str(port), *options]
        served = cls(
            command, log_dir / f"auth-{port}.log", workers=1, url=f"{scheme}://127.0.0.1:{port}/"
        )
        served.verify = verify if verify is not None else True
        served._wait(served._healthy)
        return served

    def _healthy(self) -> bool:
        try:
            got = httpx.get(self.url + "healthz", timeout=1, verify=self.verify)
        except httpx.HTTPError:
            return False
        return got.status_code == 200


@pytest.fixture(scope="module")
def tokens() -> Iterator[None]:
    """The token variables the services read (set for the module)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("TS_TOKEN_1", TOKEN_1)
    mp.setenv("TS_TOKEN_2", TOKEN_2)
    yield
    mp.undo()


@pytest.fixture(scope="module")
def token_service(tokens: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """`Whoami` behind two tokens: ``agent-1`` (trusted) and ``TS_TOKEN_2``."""
    log_dir = tmp_path_factory.mktemp("auth")
    served = Served.start(
        WHOAMI, log_dir, "--token-env", "agent-1=TS_TOKEN_1", "--token-env", "TS_TOKEN_2"
    )
    try:
        yield served
    finally:
        served.stop()


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A CA, a server certificate for 127.0.0.1, a client certificate."""
    directory = tmp_path_factory.mktemp("pki")
    ca = trustme.CA()
    paths = {name: directory / f"{name}.pem" for name in ("ca", "server", "client")}
    ca.cert_pem.write_to_path(str(paths["ca"]))
    ca.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem.write_to_path(
        str(paths["server"])
    )
    client = ca.issue_cert("agent.example", common_name="agent-tls", organization_name="seamkit")
    client.private_key_and_cert_chain_pem.write_to_path(str(paths["client"]))
    return paths


def ca_context(pki: dict[str, Path], *, client: bool = False) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(pki["ca"]))
    if client:
        context.load_cert_chain(str(pki["client"]))
    return context


def call(
    descriptor: dict[str, Any], *, user: str = "ann", caplog: pytest.LogCaptureFixture | None = None
) -> tuple[str, seamkit.RunResult]:
    """One call of the service's tool by an agent: the result the model saw."""
    manifest = app([descriptor], [tool("who", descriptor["id"])])
    model = ScriptedModel(
        [{"tool_calls": [{"id": "c1", "name": "who", "arguments": "{}"}]}, {"text": "done"}]
    )

    async def go() -> seamkit.RunResult:
        async with await seamkit.Agent.load(manifest, model=model) as agent:
            return await agent.run("hi", context={"user": user})

    result = asyncio.run(go())
    assert result.outcome.kind == "completed"
    return results(result)["c1"], result


def whoami(url: str, **fields: Any) -> dict[str, Any]:
    return {"id": "whoami", "transport": "http", "url": url, **fields}


def assert_no_canary(*texts: str) -> None:
    for text in texts:
        for canary in CANARIES:
            assert canary not in text


def test_the_right_token_works_and_the_service_sees_its_id(
    token_service: Served, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("TOKEN", TOKEN_1)
    text, result = call(whoami(token_service.url, auth={"bearer": "${secret:TOKEN}"}))
    assert json.loads(text) == {"user": "ann", "caller": "agent-1", "user_verified": True}
    assert_no_canary(text, result.model_dump_json(), caplog.text, token_service.output())


def test_a_token_not_trusted_to_assert_users_leaves_user_unverified(
    token_service: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOKEN", TOKEN_2)
    text, _ = call(whoami(token_service.url, auth={"bearer": "${secret:TOKEN}"}), user="root")
    assert json.loads(text) == {"user": "root", "caller": "TS_TOKEN_2", "user_verified": False}


def test_a_bearer_in_a_secret_header_works_too(
    token_service: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AUTH", f"Bearer {TOKEN_1}")
    descriptor = whoami(token_service.url, headers={"Authorization": "${secret:AUTH}"})
    text, result = call(descriptor)
    assert json.loads(text)["caller"] == "agent-1"
    assert_no_canary(result.model_dump_json())


@pytest.mark.parametrize("bearer", [WRONG, None])
def test_a_wrong_or_missing_token_is_401_unauthorized_and_shows_no_secret(
    token_service: Served,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    bearer: str | None,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("TOKEN", WRONG)
    fields = {"auth": {"bearer": "${secret:TOKEN}"}} if bearer else {}
    text, result = call(whoami(token_service.url, **fields))
    assert text.startswith("Error: Unauthorized: ") and "401" in text, text
    assert "unauthorized" in text.lower()
    assert_no_canary(text, result.model_dump_json(), caplog.text, token_service.output())


def test_a_raw_request_without_a_token_is_401_in_an_error_envelope(token_service: Served) -> None:
    got = httpx.post(token_service.url, content=b'{"id":"r1","user":"x"}', timeout=5)
    assert got.status_code == 401
    reply = got.json()
    assert reply["id"] == "r1" and reply["error"]["type"] == "Unauthorized"
    assert httpx.get(token_service.url + "descriptor", timeout=5).status_code == 401
    assert httpx.get(token_service.url + "healthz", timeout=5).status_code == 200


def test_the_banner_names_token_ids_never_values(token_service: Served) -> None:
    banner = token_service.output()
    assert "agent-1" in banner and "TS_TOKEN_2" in banner
    assert_no_canary(banner)


def test_a_password_in_the_url_is_masked_in_the_error_the_model_sees(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("PW", PASSWORD)
    port = free_port()  # nothing listens there
    for url in (
        f"http://svc:${{secret:PW}}@127.0.0.1:{port}/",
        f"http://svc:{PASSWORD}@127.0.0.1:{port}/",
    ):
        text, result = call(whoami(url))
        assert text.startswith("Error: Unavailable: "), text
        assert "svc" not in text.split("127.0.0.1")[0].split("://")[-1]
        assert_no_canary(text, result.model_dump_json(), caplog.text)


def test_a_token_variable_left_unset_is_a_one_line_error() -> None:
    done = subprocess.run(
        [str(SEAMKIT), "tool-service", "serve", WHOAMI, "--token-env", "a=TS_UNSET_VARIABLE"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "TS_UNSET_VARIABLE" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("host", ["0.0.0.0", "::"])
def test_serving_beyond_loopback_without_auth_refuses_to_start(host: str) -> None:
    done = subprocess.run(
        [str(SEAMKIT), "tool-service", "serve", WHOAMI, "--host", host, "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "refusing" in done.stderr and "Traceback" not in done.stderr
    assert done.stderr.count("error:") == 1


# --- TLS -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tls_service(pki: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    served = Served.start(
        WHOAMI,
        tmp_path_factory.mktemp("tls"),
        "--certfile",
        str(pki["server"]),
        verify=ca_context(pki),
    )
    try:
        yield served
    finally:
        served.stop()


def test_a_tls_service_is_verified_with_the_ca_file(
    tls_service: Served, pki: dict[str, Path]
) -> None:
    assert tls_service.url.startswith("https://")
    text, _ = call(whoami(tls_service.url, tls={"ca_file": str(pki["ca"])}))
    assert json.loads(text) == {"user": "ann", "caller": None, "user_verified": False}
    text, _ = call(whoami(tls_service.url))  # the system's CAs do not know it
    assert text.startswith("Error: Unavailable: ") and "CERTIFICATE_VERIFY_FAILED" in text
    text, _ = call(whoami(tls_service.url, tls={"verify": False}))
    assert json.loads(text)["user"] == "ann"


def test_tls_files_are_relative_to_the_manifest(
    tls_service: Served, pki: dict[str, Path], tmp_path: Path
) -> None:
    (tmp_path / "certs").mkdir()
    (tmp_path / "certs" / "ca.pem").write_bytes(pki["ca"].read_bytes())
    manifest = app(
        [whoami(tls_service.url, tls={"ca_file": "certs/ca.pem"})], [tool("who", "whoami")]
    )
    (tmp_path / "script.json").write_text(
        json.dumps([{"tool_calls": [{"name": "who", "arguments": "{}"}]}, {"text": "done"}])
    )
    path = tmp_path / "app.json"
    path.write_text(json.dumps({**manifest, "model": "scripted:script.json"}))
    done = subprocess.run(
        [str(SEAMKIT), "run", "--json", str(path), "hi"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    assert done.returncode == 0, done.stderr
    assert '\\"caller\\": null' in done.stdout or '"caller": null' in done.stdout, done.stdout


@pytest.fixture(scope="module")
def mtls_service(
    pki: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    served = Served.start(
        WHOAMI,
        tmp_path_factory.mktemp("mtls"),
        "--host",
        "0.0.0.0",  # client certificates are authentication enough beyond loopback
        "--certfile",
        str(pki["server"]),
        "--ca-certs",
        str(pki["ca"]),
        verify=ca_context(pki, client=True),
    )
    try:
        yield served
    finally:
        served.stop()


def test_client_certificates_are_required_and_the_subject_is_the_caller(
    mtls_service: Served, pki: dict[str, Path]
) -> None:
    tls = {"ca_file": str(pki["ca"]), "cert_file": str(pki["client"])}
    text, _ = call(whoami(mtls_service.url, tls=tls))
    answer = json.loads(text)
    assert "CN=agent-tls" in answer["caller"] and "O=seamkit" in answer["caller"]
    assert answer["user_verified"] is False
    text, _ = call(whoami(mtls_service.url, tls={"ca_file": str(pki["ca"])}))
    assert text.startswith("Error: Unavailable: "), text
    assert "client certificates required" in mtls_service.output()


# --- headers -----------------------------------------------------------------------------

Scope = MutableMapping[str, Any]


async def header_app(scope: Scope, receive: Any, send: Any) -> None:
    """Answers whether the request carried ``x-api-key: <TOKEN_2>``, and echoes it."""
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    headers = {k.decode(): v.decode() for k, v in scope["headers"]}
    key = headers.get("x-api-key", "")
    response = json.dumps({"ok": key == TOKEN_2, "echo": key, "team": headers.get("x-team")})
    reply = {"id": json.loads(body)["id"], "error": None, "response": response}
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": json.dumps(reply).encode()})


def test_headers_are_sent_and_a_secret_one_never_shown(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("API_KEY", TOKEN_2)
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(header_app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline
        time.sleep(0.02)
    try:
        headers = {"x-api-key": "${secret:API_KEY}", "x-team": "blue"}
        text, result = call(whoami(f"http://127.0.0.1:{port}/", headers=headers))
    finally:
        server.should_exit = True
        thread.join(10)
    answer = json.loads(text)
    assert answer["ok"] is True and answer["team"] == "blue"
    assert answer["echo"] == "***"  # the service echoed it: masked
    assert_no_canary(text, result.model_dump_json(), caplog.text)


# --- the CLI ---------------------------------------------------------------------------


def test_no_token_or_password_reaches_the_clis_output(
    token_service: Served, tmp_path: Path
) -> None:
    host_port = token_service.url.removeprefix("http://")
    services = [
        whoami(f"http://svc:${{secret:PW}}@{host_port}", auth={"bearer": "${secret:TOKEN}"}),
        {**whoami(token_service.url, auth={"bearer": "${secret:BAD}"}), "id": "refused"},
    ]
    manifest = app(services, [tool("who", "whoami"), tool("no", "refused")])
    turns = [
        {"tool_calls": [{"name": "who", "arguments": "{}"}, {"name": "no", "arguments": "{}"}]},
        {"text": "done"},
    ]
    (tmp_path / "script.json").write_text(json.dumps(turns))
    path = tmp_path / "app.json"
    path.write_text(json.dumps({**manifest, "model": "scripted:script.json"}))
    env = {**os.environ, "TOKEN": TOKEN_1, "PW": PASSWORD, "BAD": WRONG}
    outputs = []
    for command in (["validate"], ["tools", "--json"], ["run", "--json"], ["run"]):
        done = subprocess.run(
            [str(SEAMKIT), *command, str(path), *(["hi"] if command[0] == "run" else [])],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout + done.stderr)
    assert "agent-1" in outputs[2] and "Unauthorized" in outputs[2]
    assert_no_canary(*outputs, token_service.output())


def test_every_worker_checks_the_tokens(tokens: None, tmp_path: Path) -> None:
    command = ["--workers", "2", "--token-env", "agent-1=TS_TOKEN_1"]
    with Served.start(WHOAMI, tmp_path, *command) as served:
        envelope = b'{"id":"r","user":"u","config":"{}","arguments":"{}"}'
        for _ in range(6):  # both workers, whichever answers
            assert httpx.post(served.url, content=envelope, timeout=5).status_code == 401
            good = httpx.post(
                served.url,
                content=envelope,
                headers={"authorization": f"Bearer {TOKEN_1}"},
                timeout=5,
            )
            assert json.loads(good.json()["response"])["caller"] == "agent-1"


def test_credentials_are_in_no_span_and_no_session_row(
    token_service: Served,
    monkeypatch: pytest.MonkeyPatch,
    exported: Exported,
    tmp_path: Path,
) -> None:
    """A bearer token, a secret header and a password in the URL: traced
    with content capture on, kept in a session: no span, metric, log record
    or byte of the store holds any of them."""
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    monkeypatch.setenv("TOKEN", TOKEN_1)
    monkeypatch.setenv("HEADER", TOKEN_2)
    url = token_service.url.replace("http://", f"http://ann:{TOKEN_2}@")
    descriptor = whoami(
        url, auth={"bearer": "${secret:TOKEN}"}, headers={"X-Key": "${secret:HEADER}"}
    )
    manifest = app([descriptor], [tool("who", "whoami")])
    model = ScriptedModel(
        [{"tool_calls": [{"id": "c1", "name": "who", "arguments": "{}"}]}, {"text": "done"}]
    )
    store = seamkit.SQLiteSessionStore(tmp_path / "sessions.sqlite")

    async def go() -> seamkit.RunResult:
        async with await seamkit.Agent.load(manifest, model=model) as agent:
            return await agent.run("hi", context={"user": "ann"}, session="s", store=store)

    result = asyncio.run(go())
    assert json.loads(results(result)["c1"])["caller"] == "agent-1"
    assert exported.named("execute_tool"), "no tool span was exported"
    stored = "".join(
        p.read_bytes().decode("latin-1") for p in tmp_path.iterdir() if p.name.startswith("sess")
    )
    assert_no_canary(exported.everything(), stored, result.model_dump_json())
