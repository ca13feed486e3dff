"""``seamkit run`` and ``seamkit resume`` with calls that wait for approval:
listing them (text, ``--json``) and exiting 3, deciding them with flags or on
a terminal, and continuing a run a crash cut short.

The app is a scripted model calling a function tool that needs approval
(``@seamkit.tool(approval=True)``, referenced from the manifest); the tool
writes each effect to ``effects.log`` in the working directory, so a test
sees what ran and how often."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import seamkit
from click.testing import CliRunner, Result
from seamkit._approval import arguments_digest
from seamkit._cli import _pending
from seamkit._cli._group import cli

SEAMKIT = Path(sys.executable).parent / "seamkit"

TOOLS = '''\
"""Tools of the approval test app: each effect is a line of effects.log."""

import os
import signal
from pathlib import Path

import seamkit


@seamkit.tool(approval=True)
def refund(order: str, amount: int) -> str:
    """Refund part of an order."""
    with open("effects.log", "a") as log:
        log.write(f"refund {order} {amount}\\n")
    return f"refunded {amount} on {order}"


@seamkit.tool(effects="idempotent")
def ship(order: str, info: seamkit.CallInfo) -> str:
    """Ship an order (the first time, the process dies while it ships)."""
    with open("effects.log", "a") as log:
        log.write(f"ship {order} {info.idempotency_key} {info.attempt}\\n")
    if not Path("crashed").exists():
        Path("crashed").write_text("")
        os.kill(os.getpid(), signal.SIGKILL)
    return f"shipped {order}"


@seamkit.tool
def charge(order: str) -> str:
    """Charge an order (the first time, the process dies while it charges)."""
    with open("effects.log", "a") as log:
        log.write(f"charge {order}\\n")
    if not Path("crashed").exists():
        Path("crashed").write_text("")
        os.kill(os.getpid(), signal.SIGKILL)
    return f"charged {order}"
'''

ONE_CALL = [{"name": "pay_refund", "arguments": {"order": "A1", "amount": 30}}]
TWO_CALLS = [
    {"name": "pay_refund", "arguments": {"order": "A1", "amount": 30}, "id": "r1"},
    {"name": "pay_refund", "arguments": {"order": "B2", "amount": 70}, "id": "r2"},
]
DIGEST = arguments_digest("pay_refund", {"order": "A1", "amount": 30})


def _app(where: Path, calls: list[dict[str, object]] = ONE_CALL) -> Path:
    """The app in ``where``: its script makes ``calls``, then answers "Done."."""
    (where / "approval_tools.py").write_text(TOOLS)
    script = {"turns": [{"tool_calls": calls}, {"text": "Done."}], "each_run": True}
    (where / "script.json").write_text(json.dumps(script))
    app = where / "app.yaml"
    app.write_text(
        "name: pay\nmodel: scripted:script.json\n"
        "tools:\n  - kind: function\n    ref: approval_tools\n    toolset: pay\n"
    )
    return app


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The working directory, where the app goes; its tools module is
    forgotten afterwards."""
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    sys.modules.pop("approval_tools", None)


@pytest.fixture
def app(here: Path) -> Path:
    """The one-call app, in the working directory."""
    return _app(here)


def _cli(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input)


def _effects() -> list[str]:
    path = Path("effects.log")
    return path.read_text().splitlines() if path.exists() else []


def _transcript(session: str) -> list[seamkit.Message]:
    stored = asyncio.run(seamkit.SQLiteSessionStore("s.sqlite").load(session))
    assert stored is not None
    return list(stored.transcript)


def _suspend(app: Path, *extra: str) -> Result:
    result = _cli("run", str(app), "refund A1", "--session", "s", "--store", "s.sqlite", *extra)
    assert result.exit_code == 3, result.output
    return result


def test_run_without_a_terminal_lists_the_pending_calls_and_exits_3(app: Path) -> None:
    result = _suspend(app, "--context", "user=ann")
    prefix = f"seamkit resume {app} --session s --store s.sqlite --context user=ann"
    assert result.stdout.splitlines() == [
        "waiting for a decision: 1 call",
        'call_1_0  pay_refund({"order": "A1", "amount": 30})',
        "  reason: pay_refund needs approval",
        f"  digest: {DIGEST}",
        f"  approve: {prefix} --approve call_1_0@{DIGEST}",
        f"  reject:  {prefix} --reject call_1_0",
    ]
    assert "[suspended: 1 call waits for a decision · 1 model call" in result.stderr
    assert _effects() == []


def test_no_input_lists_them_even_on_a_terminal(app: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_pending, "is_terminal", lambda no_input: not no_input)
    result = _suspend(app, "--no-input")
    assert "approve: seamkit resume" in result.stdout
    assert "approve, reject or edit?" not in result.output


def test_json_carries_the_pending_calls(app: Path) -> None:
    result = _suspend(app, "--json")
    data = json.loads(result.stdout)
    assert data["outcome"]["kind"] == "suspended"
    (pending,) = data["pending"]
    assert pending["call_id"] == "call_1_0"
    assert pending["tool"] == "pay_refund"
    assert pending["arguments"] == {"order": "A1", "amount": 30}
    assert pending["reason"] == "pay_refund needs approval"
    assert pending["digest"] == DIGEST
    assert pending["approve_command"].endswith(f"--approve call_1_0@{DIGEST}")
    assert pending["reject_command"].endswith("--reject call_1_0")
    again = _cli("resume", str(app), "--session", "s", "--store", "s.sqlite", "--json")
    assert again.exit_code == 3
    assert json.loads(again.stdout)["pending"][0]["digest"] == DIGEST


def test_a_run_without_a_session_says_it_needs_one(app: Path) -> None:
    result = _cli("run", str(app), "refund A1")
    assert result.exit_code == 3
    assert "call_1_0  pay_refund(" in result.stdout
    assert "this run has no session, so the command line cannot continue it" in result.stdout
    assert "--approve" not in result.stdout


def test_resume_approve_with_the_digest_runs_the_tool_once(app: Path) -> None:
    _suspend(app)
    approve = f"call_1_0@{DIGEST}"
    result = _cli("resume", str(app), "--session", "s", "--store", "s.sqlite", "--approve", approve)
    assert result.exit_code == 0, result.output
    assert result.stdout == "Done.\n"
    assert "· pay_refund [call_1_0]: approved by cli" in result.stderr
    assert _effects() == ["refund A1 30"]
    # Nothing waits any more: resuming again is refused, and runs nothing.
    again = _cli("resume", str(app), "--session", "s", "--store", "s.sqlite", "--approve", approve)
    assert again.exit_code == 1
    assert "error: session 's' has no call waiting for a decision" in again.stderr
    assert "Traceback" not in again.output
    assert _effects() == ["refund A1 30"]


def test_a_wrong_digest_or_an_unknown_call_is_refused_and_nothing_runs(app: Path) -> None:
    _suspend(app)
    store = ("--session", "s", "--store", "s.sqlite")
    wrong = _cli("resume", str(app), *store, "--approve", "call_1_0@0000")
    assert wrong.exit_code == 1
    assert wrong.stderr.splitlines() == [
        "error: the digest given for call 'call_1_0' does not match its arguments "
        f"(pending digest {DIGEST}); nothing was run",
        "hint: approve what was shown: look at the pending call again",
    ]
    unknown = _cli("resume", str(app), *store, "--reject", "call_9")
    assert unknown.exit_code == 1
    assert "error: no pending call 'call_9' to decide (pending: call_1_0)" in unknown.stderr
    assert "Traceback" not in wrong.output + unknown.output
    assert _effects() == []
    assert _cli("resume", str(app), *store).exit_code == 3  # still waiting


def test_reject_gives_the_model_the_reason(app: Path) -> None:
    _suspend(app)
    result = _cli(
        "resume", str(app), "--session", "s", "--store", "s.sqlite", "--reject", "call_1_0=too much"
    )
    assert result.exit_code == 0, result.output
    assert "· pay_refund [call_1_0]: rejected by cli" in result.stderr
    assert _effects() == []
    tool_messages = [m for m in _transcript("s") if m.role == "tool"]
    assert [(m.tool_call_id, m.text) for m in tool_messages] == [("call_1_0", "too much")]


def test_edit_is_checked_against_the_tool_and_runs_the_new_arguments(app: Path) -> None:
    _suspend(app)
    store = ("--session", "s", "--store", "s.sqlite")
    not_json = _cli("resume", str(app), *store, "--edit", "call_1_0={amount: 5}")
    assert not_json.exit_code == 1
    assert "error: --edit call_1_0: the arguments are not valid JSON" in not_json.stderr
    ill = 'call_1_0={"order": "A1", "amount": "x"}'
    ill_typed = _cli("resume", str(app), *store, "--edit", ill)
    assert ill_typed.exit_code == 1
    assert "the edited arguments of call 'call_1_0' do not fit 'pay_refund'" in ill_typed.stderr
    assert _effects() == []
    good = _cli("resume", str(app), *store, "--edit", 'call_1_0={"order": "A1", "amount": 5}')
    assert good.exit_code == 0, good.output
    assert _effects() == ["refund A1 5"]


def test_partial_decisions_leave_the_run_suspended(here: Path) -> None:
    app = _app(here, TWO_CALLS)
    store = ("--session", "s", "--store", "s.sqlite")
    assert _cli("run", str(app), "refund both", *store).exit_code == 3
    first = _cli("resume", str(app), *store, "--approve", "r1")
    assert first.exit_code == 3, first.output
    assert "waiting for a decision: 1 call" in first.stdout
    assert "decided: approved by cli (it runs once every call is decided)" in first.stdout
    assert "--approve r2@" in first.stdout and "--approve r1" not in first.stdout
    assert _effects() == []
    twice = _cli("resume", str(app), *store, "--approve", "r2", "--reject", "r2")
    assert twice.exit_code == 1
    assert "error: call 'r2' is decided twice (approve and reject)" in twice.stderr
    rest = _cli("resume", str(app), *store, "--all-reject", "not today")
    assert rest.exit_code == 0, rest.output
    assert _effects() == ["refund A1 30"]
    results = {m.tool_call_id: m.text for m in _transcript("s") if m.role == "tool"}
    assert results == {"r1": "refunded 30 on A1", "r2": "not today"}


def test_a_new_message_to_a_session_with_pending_calls_is_refused(app: Path) -> None:
    _suspend(app)
    result = _cli("run", str(app), "another thing", "--session", "s", "--store", "s.sqlite")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "error: session 's' has calls waiting for a decision: call_1_0 (pay_refund); "
        "decide them before sending a new message",
        f"hint: `seamkit resume {app} --session s --store s.sqlite` decides the waiting calls "
        "(it asks on a terminal, or lists them with the commands that decide them) or "
        "continues a run a crash cut short; then send your message again",
    ]
    assert _effects() == []


def test_resume_with_nothing_to_continue_says_so(app: Path) -> None:
    result = _cli("resume", str(app), "--session", "nobody", "--store", "s.sqlite")
    assert result.exit_code == 1
    assert "error: session 'nobody' has nothing to continue" in result.stderr
    assert "Traceback" not in result.output


# --- on a terminal ----------------------------------------------------------------


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Standard input and output count as a terminal."""
    monkeypatch.setattr(_pending, "is_terminal", lambda no_input: not no_input)


@pytest.mark.usefixtures("terminal")
def test_run_on_a_terminal_asks_and_goes_on_when_approved(app: Path) -> None:
    session = ("--session", "s", "--store", "s.sqlite")
    result = _cli("run", str(app), "refund A1", *session, input="a\n")
    assert result.exit_code == 0, result.output
    assert "? waiting for approval:" in result.stderr
    assert f"    digest: {DIGEST}" in result.stderr
    assert "approve, reject or edit? [a/r/e]: " in result.stderr
    assert result.stdout == "Done.\n"
    assert _effects() == ["refund A1 30"]


@pytest.mark.usefixtures("terminal")
def test_reject_on_a_terminal_asks_for_the_reason(app: Path) -> None:
    result = _cli(
        "run", str(app), "refund A1", "--session", "s", "--store", "s.sqlite", input="r\nno way\n"
    )
    assert result.exit_code == 0, result.output
    assert _effects() == []
    assert [m.text for m in _transcript("s") if m.role == "tool"] == ["no way"]


@pytest.mark.usefixtures("terminal")
def test_edit_on_a_terminal_opens_the_editor_until_the_arguments_fit(
    app: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The "editor" writes, in turn: JSON that does not parse, arguments the
    # tool refuses, then good ones; it records the text it was opened on.
    editor = tmp_path / "editor.py"
    editor.write_text(
        "import json, sys, pathlib\n"
        "count = pathlib.Path('edits')\n"
        "n = len(count.read_text().splitlines()) if count.exists() else 0\n"
        "with count.open('a') as seen: seen.write(json.dumps(open(sys.argv[1]).read()) + '\\n')\n"
        'texts = [\'{bad\', \'{"order": "A1", "amount": "lots"}\', '
        '\'{"order": "A1", "amount": 5}\']\n'
        "open(sys.argv[1], 'w').write(texts[n])\n"
    )
    monkeypatch.setenv("EDITOR", f"{sys.executable} {editor}")
    monkeypatch.delenv("VISUAL", raising=False)
    result = _cli(
        "run", str(app), "refund A1", "--session", "s", "--store", "s.sqlite", input="e\ne\ne\n"
    )
    assert result.exit_code == 0, result.output
    assert "the arguments are not valid JSON" in result.stderr
    assert "the arguments do not fit 'pay_refund'" in result.stderr
    assert '  edited: pay_refund({"order": "A1", "amount": 5})' in result.stderr
    opened = Path("edits").read_text().splitlines()
    assert json.loads(json.loads(opened[0])) == {"order": "A1", "amount": 30}
    assert json.loads(opened[1]).strip() == "{bad"  # edit opens what was written last
    assert _effects() == ["refund A1 5"]


@pytest.mark.usefixtures("terminal")
def test_resume_without_flags_asks_on_a_terminal(app: Path) -> None:
    _cli("run", str(app), "refund A1", "--session", "s", "--store", "s.sqlite", "--no-input")
    result = _cli("resume", str(app), "--session", "s", "--store", "s.sqlite", input="a\n")
    assert result.exit_code == 0, result.output
    assert _effects() == ["refund A1 30"]


@pytest.mark.usefixtures("terminal")
def test_stopping_at_the_prompt_decides_nothing(app: Path) -> None:
    result = _cli("run", str(app), "refund A1", "--session", "s", "--store", "s.sqlite", input="")
    assert result.exit_code == 3
    assert "[nothing decided: the calls still wait; `seamkit resume" in result.stderr
    assert _effects() == []
    assert _cli("resume", str(app), "--session", "s", "--store", "s.sqlite").exit_code == 3


def test_a_real_terminal_is_asked(app: Path) -> None:
    """In a pseudo-terminal, as a person would run it: the prompt shows, the
    answer goes in, the run goes on."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: seamkit on the terminal
        argv = [str(SEAMKIT), "run", str(app), "refund A1", "--session", "s", "--store", "s.sqlite"]
        os.execv(argv[0], argv)
    seen = b""
    answered = False
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                seen += chunk
            if not answered and seen.endswith(b"[a/r/e]: "):
                os.write(fd, b"a\n")
                answered = True
        else:
            os.kill(pid, signal.SIGKILL)
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    text = seen.decode(errors="replace")
    assert answered, text
    assert os.waitstatus_to_exitcode(status) == 0, text
    assert "call_1_0  pay_refund" in text and "Done." in text
    assert _effects() == ["refund A1 30"]


# --- a run a crash cut short ------------------------------------------------------


@pytest.mark.parametrize("tool", ["ship", "charge"])
def test_resume_continues_a_run_killed_mid_tool(tmp_path: Path, tool: str) -> None:
    """The tool kills its own process (SIGKILL) the first time it runs;
    ``seamkit resume`` continues from the journal: an ``idempotent`` tool
    runs again with its first key, a ``once`` tool is not run again."""
    _app(tmp_path, [{"name": f"pay_{tool}", "arguments": {"order": "A1"}}])
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEAMKIT_")}

    def seamkit_cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(SEAMKIT), *args, "--session", "s", "--store", "s.sqlite"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=120,
        )

    killed = seamkit_cli("run", "app.yaml", "go")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    resumed = seamkit_cli("resume", "app.yaml")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout == "Done.\n"
    assert "· continued from the journal: 1 model turn reused, 0 tool results recovered" in (
        resumed.stderr
    )
    effects = (tmp_path / "effects.log").read_text().splitlines()
    if tool == "ship":
        first, second = (line.split() for line in effects)
        assert first[:2] == second[:2] == ["ship", "A1"]
        assert first[2] == second[2]  # the same idempotency key
        assert (first[3], second[3]) == ("1", "2")
    else:
        assert effects == ["charge A1"]
        assert "? pay_charge [call_1_0]: in doubt" in resumed.stderr
    again = seamkit_cli("resume", "app.yaml")
    assert again.returncode == 1 and "has nothing to continue" in again.stderr
