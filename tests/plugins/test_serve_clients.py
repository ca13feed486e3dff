"""``seamkit serve`` for the OpenAI clients people use, each installed from the
package index into a throwaway virtual environment of its own (none is a
dependency of this repository): LangChain's ``ChatOpenAI``
(``langchain-openai``), pydantic-ai's OpenAI chat model
(``pydantic-ai-slim[openai]``), LiteLLM as a client, and the OpenAI Agents
SDK (``openai-agents``), with ``OpenAIChatCompletionsModel`` and with its
default model, which speaks the Responses API.

Each check is a small script under ``tests/plugins/serve_clients`` run by the
client's interpreter against a real ``seamkit serve`` (a scripted app written
to a temporary directory, with an API key); the script prints what the client
handed its caller as one JSON line. Per client: plain chat whole and
streamed, a conversation in one ``X-Seamkit-Session``, structured output
through ``response_format`` (LangChain
``with_structured_output(method="json_schema")``, pydantic-ai
``NativeOutput``, LiteLLM ``response_format=``, the Agents SDK
``output_type``), structured output through an output *tool* (LangChain's
``function_calling`` method, pydantic-ai's default ``ToolOutput``) and the
client's own function tool round trip (``bind_tools`` and a ``ToolMessage``,
``@agent.tool_plain``, ``@function_tool``, LiteLLM ``tools=``). The two
clients that speak the Responses API (``POST /v1/responses``) are run that
way too: the Agents SDK's default model, and LangChain with
``use_responses_api=True``.

The four environments are installed in parallel, once a session, by uv when
the suite runs under ``uv run`` (it sets ``UV``), else by pip; each install's
time is printed (on 2 CPUs with uv: about 10 s for all four with an empty
cache, 1-2 s with a warm one; the module then takes about 100 s, mostly the
clients' own imports, a few seconds per script). An environment that cannot
be installed (no network, say) fails its client's tests loudly: nothing is
skipped. The releases are pinned (`CLIENTS`) so that a client's new release
changes nothing here unannounced.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import venv
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.plugins.test_serve import Served, stored

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

CLIENTS = {
    "langchain": "langchain-openai==1.7.4",
    "pydantic_ai": "pydantic-ai-slim[openai]==2.68.0",
    "litellm": "litellm==1.110.2",
    "agents": "openai-agents==0.24.0",
}
"""Each client and the release it is installed at (the newest when this was written)."""

SCRIPTS = Path(__file__).resolve().parent / "serve_clients"
KEY = "sk-clients-canary-3141"
TEXT, DELTAS = "Hello there.", ["Hello", " there."]
RECORD = {"name": "Ann", "age": 31}
ADD_CALL = {"name": "add", "args": {"a": 2, "b": 3}}
SUM_TEXT = "2 + 3 = 5"
SCRIPT_SECONDS = 120
CONVERSATION = [("user", "one"), ("assistant", TEXT), ("user", "two"), ("assistant", TEXT)]
"""What the ``session`` check's session holds after its two turns."""

APPS: dict[str, list[dict[str, Any]]] = {
    "chat": [{"text": TEXT, "deltas": DELTAS}],
    "record": [{"output": RECORD, "chunks": 3}],
    # the client's own tool, then the answer with its result
    "add": [{"tool_calls": [{"name": "add", "arguments": ADD_CALL["args"]}]}, {"text": SUM_TEXT}],
    # LangChain's function_calling output tool is named after the class
    "lc-record": [{"tool_calls": [{"name": "Record", "arguments": RECORD}]}],
    # pydantic-ai's default output tool
    "pai-record": [{"tool_calls": [{"name": "final_result", "arguments": RECORD}]}],
}
"""The served apps (``clients-<name>``): each one's scripted turns, played
from the first in every run."""


# --- the environments -------------------------------------------------------------


@dataclass(frozen=True)
class Installed:
    """One client's environment: its interpreter, or why it could not be made."""

    python: Path
    seconds: float
    error: str = ""


def _clean_env(**extra: str) -> dict[str, str]:
    """This environment without what would tie a child to this repository's
    environment, seamkit's settings or a real OpenAI account."""
    prefixes = ("SEAMKIT_", "SERVE_", "VIRTUAL_ENV", "PYTHON", "LITELLM_", "OPENAI_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    env.update(extra)
    return env


def _install(path: Path, spec: str) -> Installed:
    """A fresh virtual environment at ``path`` with ``spec`` installed."""
    started = time.monotonic()
    uv = os.environ.get("UV")
    venv.EnvBuilder(with_pip=uv is None, clear=True).create(path)
    python = path / "bin" / "python"
    if uv is not None:
        command = [uv, "pip", "install", "--quiet", "--python", str(python), spec]
    else:
        command = [str(python), "-m", "pip", "install", "--quiet", spec]
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            env=_clean_env(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1"),
            timeout=600,
        )
    except subprocess.TimeoutExpired:
        return Installed(python, time.monotonic() - started, f"installing {spec} took over 600 s")
    seconds = time.monotonic() - started
    if done.returncode != 0:
        error = f"installing {spec} failed (exit {done.returncode}):\n{done.stderr[-3000:]}"
        return Installed(python, seconds, error)
    return Installed(python, seconds)


@pytest.fixture(scope="session")
def environments(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Installed]:
    """The four clients' environments, installed side by side, once a session."""
    root = tmp_path_factory.mktemp("client-venvs")
    started = time.monotonic()
    with ThreadPoolExecutor(len(CLIENTS)) as pool:
        futures = {name: pool.submit(_install, root / name, spec) for name, spec in CLIENTS.items()}
        installed = {name: future.result() for name, future in futures.items()}
    timings = ", ".join(f"{name} {got.seconds:.1f} s" for name, got in installed.items())
    print(
        f"\nclient environments installed in {time.monotonic() - started:.1f} s "
        f"({'uv' if os.environ.get('UV') else 'pip'}): {timings}",
        file=sys.stderr,
    )
    return installed


# --- the served apps ----------------------------------------------------------------


class Apps(dict[str, Served]):
    """``seamkit serve`` for each app in `APPS`, started when first asked for."""

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root

    def __missing__(self, name: str) -> Served:
        directory = self.root / name
        directory.mkdir()
        script = {"each_run": True, "turns": APPS[name]}
        (directory / "script.yaml").write_text(yaml.safe_dump(script), encoding="utf-8")
        config = {
            "name": f"clients-{name}",
            "model": "scripted:script.yaml",
            "serve": {"api_keys": ["${secret:CLIENTS_KEY}"]},
        }
        manifest = directory / "app.yaml"
        manifest.write_text(yaml.safe_dump(config), encoding="utf-8")
        served = Served(str(manifest), directory, env={"CLIENTS_KEY": KEY}, cwd=directory)
        self[name] = served
        return served


@pytest.fixture(scope="module")
def apps(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Apps]:
    running = Apps(tmp_path_factory.mktemp("client-apps"))
    yield running
    for served in running.values():
        log = served.stop()
        assert KEY not in log, "the API key reached the server's log"


def session_name(client: str, check: str) -> str:
    """The ``X-Seamkit-Session`` of ``client``'s ``check`` (its ``session`` check uses it)."""
    return f"s-{client}-{check}".replace("_", "-")


def run(
    environments: dict[str, Installed], apps: dict[str, Served], client: str, check: str, app: str
) -> dict[str, Any]:
    """Run ``check`` of ``client``'s script against app ``app``; what it printed."""
    installed = environments[client]
    if installed.error:
        pytest.fail(f"{client}: {installed.error}", pytrace=False)
    served = apps[app]
    env = _clean_env(
        SERVE_BASE_URL=f"{served.root}/v1",
        SERVE_API_KEY=KEY,
        SERVE_MODEL=f"clients-{app}",
        SERVE_SESSION=session_name(client, check),
        PYTHONDONTWRITEBYTECODE="1",
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        OPENAI_AGENTS_DISABLE_TRACING="1",
    )
    script = SCRIPTS / f"{client}_client.py"
    try:
        done = subprocess.run(
            [str(installed.python), str(script), check],
            capture_output=True,
            text=True,
            env=env,
            cwd=SCRIPTS,
            timeout=SCRIPT_SECONDS,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{client} {check}: no answer in {SCRIPT_SECONDS} s", pytrace=False)
    if done.returncode != 0:
        pytest.fail(
            f"{client} {check} against clients-{app} failed (exit {done.returncode}):\n"
            f"{done.stderr[-2500:]}\n--- the server's log ---\n{served.log.read_text()[-1500:]}",
            pytrace=False,
        )
    printed: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert printed["check"] == check
    return printed


ALL = sorted(CLIENTS)


# --- plain chat and response_format: on main -----------------------------------------


@pytest.mark.parametrize("client", ALL)
def test_plain_chat_whole(
    environments: dict[str, Installed], apps: dict[str, Served], client: str
) -> None:
    assert run(environments, apps, client, "chat", "chat")["got"] == TEXT


@pytest.mark.parametrize("client", ALL)
def test_plain_chat_streamed(
    environments: dict[str, Installed], apps: dict[str, Served], client: str
) -> None:
    pieces = run(environments, apps, client, "stream", "chat")["got"]
    assert "".join(pieces) == TEXT
    assert len(pieces) >= 2, f"the answer came whole, not streamed: {pieces!r}"


@pytest.mark.parametrize("client", ALL)
def test_a_conversation_in_one_session(
    environments: dict[str, Installed], apps: dict[str, Served], client: str
) -> None:
    """With ``X-Seamkit-Session`` among the client's headers, the client sends
    its conversation again with the next message (each in its own shape: the
    assistant's message as the client keeps it), and the server takes it as
    the stored session's continuation (no 409 ``session_conflict``)."""
    assert run(environments, apps, client, "session", "chat")["got"] == [TEXT, TEXT]
    session = stored(apps["chat"], session_name(client, "session"), KEY)
    assert [(m.role, m.text) for m in session] == CONVERSATION


@pytest.mark.parametrize("client", ALL)
def test_structured_output_through_response_format(
    environments: dict[str, Installed], apps: dict[str, Served], client: str
) -> None:
    """LangChain ``json_schema``, pydantic-ai ``NativeOutput``, LiteLLM
    ``response_format=Record``, the Agents SDK ``output_type=Record``."""
    assert run(environments, apps, client, "structured", "record")["got"] == RECORD


# --- client tools: these need the lead's client tools ----------------------------------


@pytest.mark.parametrize(
    ("client", "app"), [("langchain", "lc-record"), ("pydantic_ai", "pai-record")]
)
def test_structured_output_through_an_output_tool(
    environments: dict[str, Installed], apps: dict[str, Served], client: str, app: str
) -> None:
    """LangChain ``with_structured_output(method="function_calling")`` and
    pydantic-ai's default ``ToolOutput``: the model calls the client's output
    tool, and the client reads the record from the call's arguments."""
    assert run(environments, apps, client, "structured_tools", app)["got"] == RECORD


@pytest.mark.parametrize("client", ALL)
def test_the_clients_own_function_tool_round_trip(
    environments: dict[str, Installed], apps: dict[str, Served], client: str
) -> None:
    """The model calls the client's ``add``; the client runs it and sends the
    result back; the model's answer uses it."""
    printed = run(environments, apps, client, "tool_round_trip", "add")
    assert printed["got"] == {"calls": [ADD_CALL], "text": SUM_TEXT}
    assert printed["added"] == [[2, 3]], "the client's own tool ran once"


# --- the Agents SDK's default model: needs POST /v1/responses ---------------------------


@pytest.mark.parametrize(
    ("check", "app", "expected"),
    [
        ("chat", "chat", TEXT),
        ("stream", "chat", TEXT),  # the pieces joined
        ("session", "chat", [TEXT, TEXT]),  # and the session stored, as above
        ("structured", "record", RECORD),
        ("tool_round_trip", "add", {"calls": [ADD_CALL], "text": SUM_TEXT}),
    ],
)
def test_the_agents_sdk_default_responses_model(
    environments: dict[str, Installed],
    apps: dict[str, Served],
    check: str,
    app: str,
    expected: Any,
) -> None:
    got = run(environments, apps, "agents", f"responses_{check}", app)["got"]
    assert ("".join(got) if check == "stream" else got) == expected
    if check == "session":
        session = stored(apps["chat"], session_name("agents", "responses_session"), KEY)
        assert [(m.role, m.text) for m in session] == CONVERSATION


# --- LangChain with use_responses_api=True: POST /v1/responses ---------------------------


@pytest.mark.parametrize(
    ("check", "app", "expected"),
    [
        ("chat", "chat", TEXT),
        ("stream", "chat", TEXT),  # the pieces joined
        ("structured", "record", RECORD),
        ("tool_round_trip", "add", {"calls": [ADD_CALL], "text": SUM_TEXT}),
    ],
)
def test_langchain_with_the_responses_api(
    environments: dict[str, Installed],
    apps: dict[str, Served],
    check: str,
    app: str,
    expected: Any,
) -> None:
    got = run(environments, apps, "langchain", f"responses_{check}", app)["got"]
    assert ("".join(got) if check == "stream" else got) == expected
