"""Model-protocol cassettes: `seamkit.testing.record` and ``seamkit run
--record`` write a run's model exchanges; ``model: replay:FILE`` plays them
back without a provider or the network.

- An example app recorded, then replayed under the same app, gives the same
  result (text, transcript, output), streamed or not, from the CLI too.
- A changed preamble fails at that request with a diff naming it; a request
  that is the same but for an injected result's expiry (a minute later)
  plays; the user's ``ignore`` patterns are ignored too.
- Secrets never reach the file, even split over streamed deltas; a cut
  file and a killed run leave the earlier exchanges playable; a bad path
  is one clear error.
- Recorded errors come back as their class; concurrent runs (in process,
  and through ``seamkit serve``) replay in any order; a law: any scripted
  answers come back the same, streamed or whole.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import seamkit
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st
from seamkit import ModelRequest, ModelTurn
from seamkit._cli._group import cli
from seamkit.testing import ScriptedModel, record

from tests.elsewhere import forget_the_apps_modules as forget_the_apps_modules

EXAMPLES = Path(__file__).parent.parent / "docs" / "examples"
NOW = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)


def _example(tmp_path: Path, name: str) -> Path:
    folder, _, app = name.partition("/")
    target = tmp_path / folder
    if not target.exists():
        shutil.copytree(EXAMPLES / folder, target)
    return target / f"{app or 'app'}.yaml"


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to open a network connection fails the test."""

    def refuse(self: socket.socket, *args: object) -> None:
        raise AssertionError(f"a replayed run tried to connect to {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


async def _run(
    app: Path,
    message: str,
    *,
    model: str | seamkit.ModelConfig | None = None,
    cassette: Path | None = None,
    streamed: bool = False,
    clock: datetime = NOW,
    context: dict[str, str] | None = None,
) -> seamkit.RunResult:
    async with await seamkit.Agent.load(app, model=model, clock=lambda: clock) as agent:
        if cassette is None:
            return await _one(agent, message, streamed, context)
        with record(agent, cassette):
            return await _one(agent, message, streamed, context)


async def _one(
    agent: seamkit.Agent, message: str, streamed: bool, context: dict[str, str] | None
) -> seamkit.RunResult:
    if not streamed:
        return await agent.run(message, context=context)
    result = None
    async for event in agent.stream(message, context=context):
        if isinstance(event, seamkit.stream.RunFinished):
            result = event.result
    assert result is not None
    return result


def _seen(result: seamkit.RunResult) -> object:
    return (
        result.text,
        [m.model_dump() for m in result.transcript],
        result.output if isinstance(result.output, str | None) else repr(result.output),
        type(result.outcome).__name__,
        result.usage,
    )


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


EXAMPLE_RUNS = [
    ("hello", "What is 2 + 3?", {}),
    ("guarded", "What does the status page say?", {}),
    ("memory", "I like green tea", {"user": "alice"}),
    ("extract/app-tool", "Ada Lovelace, 2 notebooks and a pen", {}),
    ("extract/app-native", "Ada Lovelace, 2 notebooks and a pen", {}),
]


@pytest.mark.parametrize(("example", "message", "context"), EXAMPLE_RUNS)
@pytest.mark.parametrize(("recorded_streamed", "replayed_streamed"), [(True, True), (False, True)])
async def test_a_recorded_example_replays_to_the_same_result(
    tmp_path: Path,
    no_network: None,
    example: str,
    message: str,
    context: dict[str, str],
    recorded_streamed: bool,
    replayed_streamed: bool,
) -> None:
    app = _example(tmp_path, example)
    ctx = {**context, "memory_dir": str(tmp_path)}
    cassette = tmp_path / "run.cassette.jsonl"
    recorded = await _run(app, message, cassette=cassette, streamed=recorded_streamed, context=ctx)
    lines = _lines(cassette)
    assert lines[0]["cassette"] == 1 and lines[0]["model"]["provider"] == "scripted"
    assert [line["seq"] for line in lines[1:]] == list(range(len(lines) - 1))
    assert {line["call"] for line in lines[1:]} == {"stream" if recorded_streamed else "complete"}
    (tmp_path / "memories.json").unlink(missing_ok=True)  # what the memory example saved
    replayed = await _run(
        app, message, model=f"replay:{cassette}", streamed=replayed_streamed, context=ctx
    )
    assert _seen(replayed) == _seen(recorded)


async def test_streamed_deltas_and_tool_argument_fragments_replay_as_recorded(
    tmp_path: Path, no_network: None
) -> None:
    app = _example(tmp_path, "extract/app-tool")
    cassette = tmp_path / "run.jsonl"
    message = "Ada Lovelace, 2 notebooks and a pen"

    async def events(model: str | None) -> list[object]:
        async with await seamkit.Agent.load(app, model=model) as agent:
            with record(agent, cassette) if model is None else nullcontext():
                return [
                    (type(e).__name__, getattr(e, "text", None), getattr(e, "value", None))
                    for e in [e async for e in agent.stream(message)]
                    if isinstance(e, seamkit.stream.TextDelta | seamkit.stream.OutputDelta)
                ]

    recorded = await events(None)
    args = [d for line in _lines(cassette)[1:] for d in line["deltas"] if "args" in d]
    assert len(args) == 10  # the script's 4 + 6 chunks, as fragments of the output tool
    assert await events(f"replay:{cassette}") == recorded


async def test_a_changed_preamble_fails_with_a_diff_naming_it(
    tmp_path: Path, no_network: None
) -> None:
    app = _example(tmp_path, "hello")
    cassette = tmp_path / "run.jsonl"
    await _run(app, "What is 2 + 3?", cassette=cassette)
    app.write_text(app.read_text().replace("a friendly assistant", "a terse assistant"))
    result = await _run(app, "What is 2 + 3?", model=f"replay:{cassette}")
    outcome = result.outcome
    assert isinstance(outcome, seamkit.Failed)
    assert f"replay cassette '{cassette}' seq 0" in outcome.error
    assert (
        "preamble: recorded 'You are a friendly assistant that can add numbers.' ≠ "
        "now 'You are a terse assistant that can add numbers.'"
    ) in outcome.error
    assert result.usage.requests == 0


async def test_a_long_text_shows_where_it_starts_to_differ(tmp_path: Path) -> None:
    cassette = tmp_path / "run.jsonl"
    long = "You are a support agent.\n" + "Be kind and brief. " * 10 + "\nNever guess."
    agent = seamkit.Agent(ScriptedModel([{"text": "hi"}]), preamble=long)
    with record(agent, cassette):
        await agent.run("hello")
    changed = seamkit.Agent(f"replay:{cassette}", preamble=long.replace("Never", "Always"))
    result = await changed.run("hello")
    assert isinstance(result.outcome, seamkit.Failed)
    error = result.outcome.error
    assert (
        "preamble: at character 216: recorded '…ef. Be kind and brief. \\nNever guess.' ≠ "
        "now '…ef. Be kind and brief. \\nAlways guess.' | @@ -3 +3 @@ | -Never guess. | "
        "+Always guess."
    ) in error


async def test_a_changed_argument_deep_in_the_history_is_named_by_its_path(
    tmp_path: Path, no_network: None
) -> None:
    app = _example(tmp_path, "hello")
    cassette = tmp_path / "run.jsonl"
    await _run(app, "What is 2 + 3?", cassette=cassette)
    tools = app.parent / "hello_tools.py"
    tools.write_text(tools.read_text().replace("return a + b", "return a + b + 1"))
    del sys.modules["hello_tools"]  # imported by the recorded run
    result = await _run(app, "What is 2 + 3?", model=f"replay:{cassette}")
    assert isinstance(result.outcome, seamkit.Failed)
    assert "seq 1" in result.outcome.error
    assert "messages[2].content: recorded '5' ≠ now '6'" in result.outcome.error


async def test_an_injected_results_expiry_may_differ_and_ignore_patterns_apply(
    tmp_path: Path, no_network: None
) -> None:
    app = _example(tmp_path, "memory")
    cassette = tmp_path / "run.jsonl"
    ctx = {"user": "alice", "memory_dir": str(tmp_path)}
    recorded = await _run(app, "I like green tea", cassette=cassette, context=ctx)
    requests = json.dumps([line["request"] for line in _lines(cassette)[1:]])
    assert "synth_" in requests  # the memories are injected, with an expiry
    (tmp_path / "memories.json").unlink()  # the same memories as at the recording
    later = NOW + timedelta(minutes=1)
    replayed = await _run(
        app, "I like green tea", model=f"replay:{cassette}", clock=later, context=ctx
    )
    assert replayed.text == recorded.text == "Noted."
    assert isinstance(replayed.outcome, seamkit.Completed)
    # Another user's message differs: unless an ignore pattern says it may.
    (tmp_path / "memories.json").unlink()
    other = await _run(
        app, "I like black tea", model=f"replay:{cassette}", clock=later, context=ctx
    )
    assert isinstance(other.outcome, seamkit.Failed)
    assert "recorded 'I like green tea' ≠ now 'I like black tea'" in other.outcome.error
    (tmp_path / "memories.json").unlink()
    config = {"provider": "replay", "name": str(cassette), "ignore": ["green|black"]}
    manifest = app.read_text().replace(
        "model: scripted:script.yaml", f"model: {json.dumps(config)}"
    )
    app.write_text(manifest)
    tolerant = await _run(app, "I like black tea", clock=later, context=ctx)
    assert isinstance(tolerant.outcome, seamkit.Completed), tolerant.outcome


async def test_secrets_never_reach_the_cassette_even_split_over_deltas(
    tmp_path: Path, no_network: None
) -> None:
    app = _example(tmp_path, "guarded")
    cassette = tmp_path / "run.jsonl"
    recorded = await _run(app, "What does the status page say?", cassette=cassette, streamed=True)
    text = cassette.read_text()
    for piece in ("tok-demo-4f9a1c77e2", "4f9a1c77e2", "tok-de", "mo-4f9a"):
        assert piece not in text
    assert "***" in text
    replayed = await _run(
        app, "What does the status page say?", model=f"replay:{cassette}", streamed=True
    )
    assert _seen(replayed) == _seen(recorded)


async def test_a_short_secret_does_not_break_the_cassettes_shape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_network: None
) -> None:
    monkeypatch.setenv("PIN", "to")  # inside tool_calls, tool_choice, max_tokens
    app = _example(tmp_path, "hello")
    app.write_text(app.read_text() + "serve: {api_keys: ['${secret:PIN}']}\n")
    cassette = tmp_path / "run.jsonl"
    recorded = await _run(app, "What is 2 + 3 today?", cassette=cassette)
    lines = _lines(cassette)
    assert set(lines[1]["request"]) == set(ModelRequest.model_fields)
    assert lines[1]["request"]["messages"][0]["content"] == "What is 2 + 3 \x00***day?"
    assert lines[1]["turn"]["finish_reason"] == "tool_calls"  # the format's own words
    assert lines[2]["request"]["messages"][2]["role"] == "tool"
    # A masked secret stands for any text at its place; the rest must still be equal.
    # (A mask is written after a NUL, JSON's \u0000: a *** the run carried is text.)
    replayed = await _run(app, "What is 2 + 3 today?", model=f"replay:{cassette}")
    assert replayed.text == recorded.text == "2 + 3 = 5."
    other = await _run(app, "What is 2 + 4 today?", model=f"replay:{cassette}")
    assert isinstance(other.outcome, seamkit.Failed)


async def test_the_header_names_the_model_and_nothing_secret(tmp_path: Path) -> None:
    canary = "sk-canary-0d1f7a9e3b"
    app = tmp_path / "app.yaml"
    app.write_text(
        "name: keyed\nmodel:\n  provider: openai\n  name: gpt-test\n"
        "  api_key: ${secret:CASSETTE_KEY}\n"
        f"  base_url: http://ann:{canary}@127.0.0.1:9/v1?key={canary}#{canary}\n"
    )
    os.environ["CASSETTE_KEY"] = canary
    try:
        async with await seamkit.Agent.load(app) as agent:
            agent.model = ScriptedModel([{"text": f"the key is {canary}"}])
            cassette = tmp_path / "run.jsonl"
            with record(agent, cassette):
                result = await agent.run(f"say {canary}")
    finally:
        del os.environ["CASSETTE_KEY"]
    text = cassette.read_text()
    assert canary not in text
    header = _lines(cassette)[0]
    assert header["model"]["provider"] == "openai" and header["model"]["name"] == "gpt-test"
    assert header["model"] == {
        "provider": "openai",
        "name": "gpt-test",
        "base_url": "http://127.0.0.1:9/v1",
    }  # only these: a config may hold keys in plain text
    assert header["output_modes"] == ["native", "tool"]
    assert canary not in (result.text or "")


async def test_append_continues_a_cassette_cut_by_a_crash(tmp_path: Path, no_network: None) -> None:
    app = _example(tmp_path, "hello")
    cassette = tmp_path / "run.jsonl"
    await _run(app, "What is 2 + 3?", cassette=cassette)
    with cassette.open("a") as out:
        out.write('{"seq": 2, "call": "str')  # a line a crash cut short
    async with await seamkit.Agent.load(app) as agent:
        original = agent.model
        with record(agent, cassette, append=True) as recording:
            assert agent.model is recording
            await agent.run("What is 2 + 3?")
        assert agent.model is original
    lines = _lines(cassette)
    assert [line.get("seq") for line in lines] == [None, 0, 1, 2, 3]
    async with await seamkit.Agent.load(app, model=f"replay:{cassette}") as agent:
        first, second = await agent.run("What is 2 + 3?"), await agent.run("What is 2 + 3?")
    assert first.text == second.text == "2 + 3 = 5."


async def test_a_cut_cassette_replays_its_earlier_exchanges(
    tmp_path: Path, no_network: None
) -> None:
    app = _example(tmp_path, "hello")
    cassette = tmp_path / "run.jsonl"
    await _run(app, "What is 2 + 3?", cassette=cassette)
    text = cassette.read_text()
    cut = text[: text.rindex("\n", 0, len(text) - 1) + 40]  # the last line, cut short
    cassette.write_text(cut)
    result = await _run(app, "What is 2 + 3?", model=f"replay:{cassette}")
    assert isinstance(result.outcome, seamkit.Failed)
    assert f"replay cassette '{cassette}' ran out: it has 1 exchanges" in result.outcome.error
    assert result.usage.requests == 1  # the first exchange played


SLOW_TOOL = '''
import pathlib, time
import seamkit

@seamkit.tool
def wait(marker: str) -> str:
    """Wait a long time."""
    pathlib.Path(marker).write_text("started")
    time.sleep(60)
    return "done"
'''


def test_a_run_killed_mid_way_leaves_a_readable_cassette(tmp_path: Path) -> None:
    (tmp_path / "slow_tools.py").write_text(SLOW_TOOL)
    marker = tmp_path / "marker"
    (tmp_path / "script.yaml").write_text(
        f"- tool_calls: [{{name: wait, arguments: {{marker: '{marker}'}}}}]\n- text: done\n"
    )
    app = tmp_path / "app.yaml"
    app.write_text(
        "name: slow\nmodel: scripted:script.yaml\ntools:\n  - {kind: function, ref: slow_tools}\n"
    )
    cassette = tmp_path / "run.jsonl"
    seamkit_command = str(Path(sys.executable).parent / "seamkit")
    command = [seamkit_command, "run", str(app), "go", "--record", str(cassette)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), "the run never called its tool"
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    lines = _lines(cassette)
    assert (
        len(lines) == 2
        and lines[1]["turn"]["message"]["tool_calls"][0]["function"]["name"] == "wait"
    )
    replay = seamkit.Agent(f"replay:{cassette}", base_dir=tmp_path).model
    assert len(replay.cassette.exchanges) == 1  # type: ignore[attr-defined]


def test_record_and_replay_from_the_command_line(tmp_path: Path, no_network: None) -> None:
    app = _example(tmp_path, "hello")
    cassette = app.parent / "run.jsonl"
    runner = CliRunner()
    recorded = runner.invoke(cli, ["run", str(app), "What is 2 + 3?", "--record", str(cassette)])
    assert recorded.exit_code == 0, recorded.output
    assert len(_lines(cassette)) == 3
    replay_app = app.with_name("replay.yaml")
    replay_app.write_text(
        app.read_text().replace("scripted:script.yaml", f"replay:{cassette.name}")
    )
    replayed = runner.invoke(cli, ["run", str(replay_app), "What is 2 + 3?"])
    assert replayed.exit_code == 0, replayed.output
    assert replayed.stdout == recorded.stdout == "2 + 3 = 5.\n"
    as_json = runner.invoke(
        cli, ["run", str(app), "What is 2 + 3?", "--model", f"replay:{cassette}", "--json"]
    )
    assert json.loads(as_json.stdout)["text"] == "2 + 3 = 5."
    changed = runner.invoke(cli, ["run", str(replay_app), "What is 2 + 4?"])
    assert changed.exit_code == 1
    assert "messages[0].content: recorded 'What is 2 + 3?' ≠ now 'What is 2 + 4?'" in (
        changed.output
    )
    assert "Traceback" not in changed.output


@pytest.mark.parametrize("spec", ["replay:missing.jsonl", "replay:script.yaml"])
def test_a_bad_replay_path_is_one_clear_error(tmp_path: Path, spec: str) -> None:
    app = _example(tmp_path, "hello")
    result = CliRunner().invoke(cli, ["run", str(app), "hi", "--model", spec])
    assert result.exit_code != 0
    assert spec.partition(":")[2] in result.output
    assert "cannot read replay cassette" in result.output or "replay cassette" in result.output
    assert "Traceback" not in result.output


def test_a_bad_ignore_pattern_is_a_manifest_problem(tmp_path: Path) -> None:
    app = tmp_path / "app.yaml"
    app.write_text("name: a\nmodel: {provider: replay, name: run.jsonl, ignore: ['(']}\n")
    result = CliRunner().invoke(cli, ["validate", str(app)])
    assert result.exit_code == 1
    assert "ignore pattern '(' is not a regex" in result.output


class _Failing:
    """A model that fails as a provider would."""

    output_modes = frozenset({"tool"})

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def complete(self, request: ModelRequest) -> ModelTurn:
        raise self.error

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ModelTurn]:
        yield "partial "
        raise self.error


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (seamkit.ContextLengthExceeded("too long", provider="fake"), seamkit.ContextLengthExceeded),
        (seamkit.ModelError("server said no", provider="fake", hint="retry"), seamkit.ModelError),
        (RuntimeError("socket closed"), seamkit.ModelError),
    ],
)
@pytest.mark.parametrize("streamed", [False, True])
async def test_a_recorded_error_is_raised_again(
    tmp_path: Path, error: Exception, kind: type[Exception], streamed: bool
) -> None:
    cassette = tmp_path / "run.jsonl"
    request = ModelRequest(messages=(seamkit.Message.user("hi"),))
    agent = seamkit.Agent(_Failing(error))
    with record(agent, cassette) as recording, pytest.raises(type(error)):
        await _call(recording, request, streamed)
    line = _lines(cassette)[1]
    assert line["error"]["class"] == type(error).__name__
    replay = seamkit.Agent(f"replay:{cassette}").model
    assert getattr(replay, "output_modes", None) == frozenset({"tool"})
    with pytest.raises(kind) as raised:
        await _call(replay, request, streamed)
    assert type(raised.value) is kind
    assert str(error) in str(raised.value)


async def _call(model: Any, request: ModelRequest, streamed: bool) -> list[object]:
    if not streamed:
        return [await model.complete(request)]
    return [item async for item in model.stream(request)]


async def test_concurrent_runs_replay_in_any_order(tmp_path: Path, no_network: None) -> None:
    app = _example(tmp_path, "hello")
    cassette = tmp_path / "run.jsonl"
    messages = ["What is 2 + 3?", "Please add 2 and 3", "2 plus 3?"]
    async with await seamkit.Agent.load(app) as agent:
        agent.model = ScriptedModel(
            [{"tool_calls": [{"name": "calc_add", "arguments": {"a": 2, "b": 3}}]}, {"text": "5"}],
            each_run=True,
        )
        with record(agent, cassette):
            recorded = await asyncio.gather(*(agent.run(m) for m in messages))
    async with await seamkit.Agent.load(app, model=f"replay:{cassette}") as agent:
        replayed = await asyncio.gather(*(agent.run(m) for m in reversed(messages)))
    assert [_seen(r) for r in reversed(replayed)] == [_seen(r) for r in recorded]


def test_the_replay_provider_imports_no_provider(tmp_path: Path) -> None:
    app = _example(tmp_path, "hello")
    cassette = tmp_path / "run.jsonl"
    CliRunner().invoke(cli, ["run", str(app), "What is 2 + 3?", "--record", str(cassette)])
    code = (
        "import asyncio, sys, seamkit\n"
        f"agent = seamkit.Agent('replay:{cassette}')\n"
        "print(sorted(m for m in sys.modules if m in ('seamkit_openai._model', "
        "'seamkit_anthropic._model', 'httpx', 'openai', 'anthropic')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=20)
_CALL = st.fixed_dictionaries(
    {
        "name": st.sampled_from(["add", "look_up", "t"]),
        "arguments": st.dictionaries(st.sampled_from("abc"), st.integers() | _TEXT, max_size=3),
    }
)
_TURN = st.one_of(
    st.builds(lambda t, d: {"text": t, **({"deltas": d} if d else {})}, _TEXT, st.lists(_TEXT)),
    st.builds(lambda c: {"tool_calls": c}, st.lists(_CALL, min_size=1, max_size=3)),
)


@settings(max_examples=30, deadline=None)
@given(turns=st.lists(_TURN, min_size=1, max_size=4), streams=st.lists(st.booleans()))
def test_record_then_replay_gives_the_same_turns(
    turns: list[dict[str, Any]], streams: list[bool]
) -> None:
    async def law() -> None:
        requests = [
            ModelRequest(messages=(seamkit.Message.user(f"question {i}"),), preamble="p")
            for i in range(len(turns))
        ]
        kinds = [streams[i] if i < len(streams) else False for i in range(len(turns))]
        with tempfile.TemporaryDirectory() as folder:
            cassette = Path(folder) / "run.jsonl"
            agent = seamkit.Agent(ScriptedModel(turns))
            with record(agent, cassette) as recording:
                recorded = [
                    await _call(recording, r, s) for r, s in zip(requests, kinds, strict=True)
                ]
            replay = seamkit.Agent(f"replay:{cassette}").model
            replayed = [await _call(replay, r, s) for r, s in zip(requests, kinds, strict=True)]
            whole = seamkit.Agent(f"replay:{cassette}").model
            answers = [await _call(whole, r, False) for r in requests]
        assert replayed == recorded
        assert [a[-1] for a in answers] == [r[-1] for r in recorded]

    asyncio.run(law())


def test_a_server_replays_concurrent_requests_in_any_order(tmp_path: Path) -> None:
    from tests.plugins.test_serve import Served  # lazy: serve's web stack, this test's only

    (tmp_path / "script.yaml").write_text("each_run: true\nturns:\n  - text: Hello there.\n")
    app = tmp_path / "app.yaml"
    app.write_text(
        "name: chat\nmodel: scripted:script.yaml\nserve: {api_keys: [sk-replay-key-1]}\n"
    )
    cassette = tmp_path / "run.jsonl"
    questions = [f"question {i}" for i in range(4)]

    async def recorded() -> None:
        async with await seamkit.Agent.load(app) as agent:
            with record(agent, cassette):
                await asyncio.gather(*(agent.run(q) for q in questions))

    asyncio.run(recorded())
    app.write_text(app.read_text().replace("scripted:script.yaml", "replay:run.jsonl"))
    served = Served(str(app), tmp_path)
    try:
        client = served.client("sk-replay-key-1")

        def ask(question: str) -> str | None:
            answer = client.chat.completions.create(
                model="chat", messages=[{"role": "user", "content": question}]
            )
            return answer.choices[0].message.content

        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(ask, reversed(questions)))
        assert answers == ["Hello there."] * 4
    finally:
        served.stop()


GUARDED_TEXT = """name: stopped
model: scripted:script.yaml
hooks:
  - kind: guard
    name: plans
    event: on_text_delta
    action: block
    patterns: ['secret plan']
    reason: the model started on the plan
"""


async def test_a_stream_a_text_guard_stops_is_recorded_and_replays(
    tmp_path: Path, no_network: None
) -> None:
    (tmp_path / "script.yaml").write_text(
        "- text: Here is the secret plan in full.\n"
        "  deltas: ['Here is the ', 'secret ', 'plan', ' in full.']\n"
    )
    app = tmp_path / "app.yaml"
    app.write_text(GUARDED_TEXT)
    cassette = tmp_path / "run.jsonl"
    recorded = await _run(app, "tell me", cassette=cassette, streamed=True)
    assert isinstance(recorded.outcome, seamkit.Terminated), recorded.outcome
    line = _lines(cassette)[1]
    assert line["closed"] is True and "turn" not in line
    assert [d["text"] for d in line["deltas"]] == ["Here is the ", "secret ", "plan"]
    replayed = await _run(app, "tell me", model=f"replay:{cassette}", streamed=True)
    assert _seen(replayed) == _seen(recorded)
    # Read past where the recording was closed, the replay says so.
    replay = seamkit.Agent(f"replay:{cassette}").model
    request = ModelRequest.model_validate(line["request"])
    with pytest.raises(seamkit.ModelError, match="seq 0: the recorded stream was closed"):
        await _call(replay, request, True)


def test_no_key_of_the_models_config_reaches_the_cassette(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.plugins.openai_server import ReplayServer, Reply  # lazy: starts uvicorn

    in_header, in_env, in_key, in_url = (f"canary-{n}-5c0e9a7d31" for n in range(4))
    monkeypatch.setenv("CASSETTE_HEADER", in_env)
    monkeypatch.setenv("ANTHROPIC_API_KEY", in_key)
    cassette = tmp_path / "run.jsonl"
    with ReplayServer() as server:
        server.script("claude-test", Reply.http("basic_response"), path="/v1/messages")
        root = server.root_url.replace("://", f"://ann:{in_url}@")
        app = tmp_path / "app.yaml"
        app.write_text(
            "name: keyed\nmodel:\n  provider: anthropic\n  name: claude-test\n"
            f"  base_url: {root}\n"
            f"  headers: {{x-plain: 'Bearer {in_header}', x-env: '${{env:CASSETTE_HEADER}}'}}\n"
        )
        result = asyncio.run(_run(app, f"say {in_key} and {in_url}", cassette=cassette))
    assert result.text == "Hello there!", result.outcome
    text = cassette.read_text()
    for canary in (in_header, in_env, in_key, in_url):
        assert canary not in text
    assert _lines(cassette)[0]["model"] == {
        "provider": "anthropic",
        "name": "claude-test",
        "base_url": server.root_url,
    }
    assert _lines(cassette)[1]["request"]["messages"][0]["content"] == "say \x00*** and \x00***"


async def test_a_literal_mask_in_a_message_is_text_not_a_wildcard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_network: None
) -> None:
    monkeypatch.setenv("PIN", "to")
    app = _example(tmp_path, "hello")
    app.write_text(app.read_text() + "serve: {api_keys: ['${secret:PIN}']}\n")
    cassette = tmp_path / "run.jsonl"
    said = "***Note*** What is 2 + 3 today?"  # markdown, and a secret (to)
    recorded = await _run(app, said, cassette=cassette)
    assert _lines(cassette)[1]["request"]["messages"][0]["content"] == (
        "***Note*** What is 2 + 3 \x00***day?"
    )
    replayed = await _run(app, said, model=f"replay:{cassette}")
    assert replayed.text == recorded.text == "2 + 3 = 5."
    other = await _run(app, "***Else*** What is 2 + 3 today?", model=f"replay:{cassette}")
    assert isinstance(other.outcome, seamkit.Failed)
    assert "recorded '***Note*** What is 2 + 3 ***day?'" in other.outcome.error


async def test_a_recorded_answer_plays_its_stars_and_nuls_as_said(tmp_path: Path) -> None:
    cassette = tmp_path / "run.jsonl"
    answer = "**bold**, ***both***, and a \x00 NUL \x00***"
    agent = seamkit.Agent(ScriptedModel([{"text": answer, "deltas": [answer[:9], answer[9:]]}]))
    with record(agent, cassette):
        recorded = await _one(agent, "hi", True, None)
    replayed = await _one(seamkit.Agent(f"replay:{cassette}"), "hi", True, None)
    assert replayed.text == recorded.text == answer


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        ({"turn": {"message": "nope"}}, "line 2: 'turn' is not a ModelTurn: message"),
        ({"turn": None, "error": {"class": 3}}, "line 2: the error's 'class' must be a string"),
        (
            {"turn": None, "error": {"class": "X", "message": "m", "hint": []}},
            "line 2: the error's 'hint' must be a string",
        ),
    ],
)
def test_a_hand_edited_cassette_fails_when_loaded_naming_file_and_line(
    tmp_path: Path, edit: dict[str, Any], said: str
) -> None:
    cassette = tmp_path / "run.jsonl"
    agent = seamkit.Agent(ScriptedModel([{"text": "hi", "deltas": ["h", "i"]}]))
    with record(agent, cassette):
        asyncio.run(_one(agent, "hi", True, None))
    header, line = _lines(cassette)
    line.update(edit)
    if line["turn"] is None:
        del line["turn"]
    cassette.write_text(json.dumps(header) + "\n" + json.dumps(line) + "\n")
    with pytest.raises(seamkit.ModelError) as raised:
        seamkit.Agent(f"replay:{cassette}")
    assert f"replay cassette '{cassette}' {said}" in str(raised.value)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("name: app\nmodel: scripted:script.yaml\n", "a line is not JSON"),
        ('{"name": "not a cassette"}\n', "its first line is not a cassette header"),
        ('{"cassette": 1}\n{"seq": 0, "call": "stream"}\nnot json\n', "a line is not JSON"),
        ('{"cassette": 1}\n["no seq"]\n', "its last line is not an exchange"),
        ("plain text, no newline", "it is not a cassette"),
    ],
)
def test_appending_to_what_is_not_a_cassette_is_one_clear_error(
    tmp_path: Path, text: str, said: str
) -> None:
    target = tmp_path / "run.jsonl"
    target.write_text(text)
    agent = seamkit.Agent(ScriptedModel([{"text": "hi"}]))
    with pytest.raises(seamkit.SeamkitError) as raised, record(agent, target, append=True):
        pass
    assert f"cannot append to the cassette '{target}': {said}" in str(raised.value)
    assert target.read_text() == text  # left as it was


async def test_append_continues_a_cassette_whose_text_holds_a_line_separator(
    tmp_path: Path,
) -> None:
    cassette = tmp_path / "run.jsonl"
    agent = seamkit.Agent(ScriptedModel([{"text": "a\u2028b"}, {"text": "c"}]))
    with record(agent, cassette):
        await agent.run("one")
    with record(agent, cassette, append=True):
        await agent.run("two")
    assert [line.get("seq") for line in map(json.loads, cassette.read_text().split("\n")[:-1])] == [
        None,
        0,
        1,
    ]


def test_loading_an_app_imports_no_cassette_code(tmp_path: Path) -> None:
    app = _example(tmp_path, "hello")
    code = (
        "import asyncio, sys, seamkit, seamkit._cli._commands\n"
        f"asyncio.run(seamkit.Agent.load({str(app)!r}))\n"
        "print(sorted(m for m in sys.modules if m in ('seamkit._cassette', "
        "'seamkit._replay', 'seamkit._recording')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_guides_cassette_is_not_left_in_the_tree() -> None:
    where = EXAMPLES.parent.parent
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", "docs/examples/hello/run.cassette.jsonl"], cwd=where
    )
    assert ignored.returncode == 0  # the guide's `--record` writes it there
