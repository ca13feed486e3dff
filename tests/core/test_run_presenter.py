"""`seamkit.plugins.RunPresenter` prints what ``seamkit run`` prints: a run's
events recorded by an observer, then its result, fed to a presenter give the
same standard output, standard error and exit status, byte for byte, as
``seamkit run`` (and ``seamkit resume``) on the same app, with and without
``--json``. The apps are the examples, on their scripted models: tools and a
text answer (hello), hooks that fire and end the run (guarded), calls that
wait for approval and their decision (refund), a declared output answered
wrong first (extract). Each run has its own copy of the app; tool calls are
timed by a clock that ticks a quarter second per reading."""

from __future__ import annotations

import asyncio
import shutil
import sys
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import click
import pytest
import seamkit
from click.testing import CliRunner, Result
from seamkit import stream as S
from seamkit._cli import _present
from seamkit._cli._group import cli
from seamkit.plugins import DecideCommand, RunPresenter

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
NOW = "2026-11-22T09:00:00+00:00"
REFUND_DIGEST = "b0df0a7854259cb491339f0f"


def _ticks() -> Callable[[], float]:
    """A monotonic clock that advances 0.25 s each time it is read."""
    readings = iter(range(1_000_000))
    return lambda: next(readings) * 0.25


@dataclass(frozen=True)
class Case:
    example: str
    manifest: str
    message: str
    session: str | None = None
    modules: tuple[str, ...] = ()


CASES = [
    Case("hello", "app.yaml", "What is 2 + 3?", modules=("hello_tools",)),
    Case("guarded", "app.yaml", "How do returns work?", "d", ("guarded_tools",)),
    Case("refund", "app.yaml", "Please refund order A1", "d", ("refund_tools",)),
    Case("refund", "app.yaml", "Please refund order A1", None, ("refund_tools",)),
    Case("extract", "app-tool.yaml", "Ada bought two notebooks and a pen", None, ("invoice",)),
]


@pytest.fixture(autouse=True)
def _fixed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """One instant for every run, a ticking clock for ``seamkit run``'s
    presenter, and the examples' modules forgotten afterwards."""
    monkeypatch.setenv("SEAMKIT_NOW", NOW)
    monkeypatch.setattr(_present, "time", types.SimpleNamespace(monotonic=_ticks()))
    yield
    for case in CASES:
        for module in case.modules:
            sys.modules.pop(module, None)


def _copy(case: Case, where: Path) -> Path:
    """A fresh copy of the example in ``where`` (its own session store)."""
    folder = where / case.example
    shutil.copytree(
        EXAMPLES / case.example, folder, ignore=shutil.ignore_patterns("*.sqlite*", "__pycache__")
    )
    return folder


class _Tape:
    """Every event a run's observers see, in order (what a side channel carries)."""

    def __init__(self) -> None:
        self.events: list[S.ObservedEvent] = []

    @seamkit.hookimpl
    def on_run_event(self, ctx: seamkit.HookContext, event: S.ObservedEvent) -> None:
        self.events.append(event)


@dataclass
class _Recorded:
    events: list[S.ObservedEvent]
    result: seamkit.RunResult
    output: seamkit.Output[object] | None


def _record(manifest: str, given: str | seamkit.Decisions, session: str | None) -> _Recorded:
    """The run in process, streamed as ``seamkit run`` streams it (working
    directory: the app's copy), its observers' events recorded."""
    tape = _Tape()
    now = datetime.fromisoformat(NOW).astimezone(UTC)

    async def go() -> _Recorded:
        async with await seamkit.Agent.load(manifest, hooks=[tape], clock=lambda: now) as agent:
            async for event in agent.stream(given, session=session):
                if isinstance(event, S.RunFinished):
                    return _Recorded(tape.events, event.result, agent.output)
        raise AssertionError("the run's stream ended without its RunFinished")

    return asyncio.run(go())


def _present_run(
    recorded: _Recorded,
    *,
    as_json: bool,
    decide: DecideCommand | None,
    live: bool = True,
) -> Result:
    """What a presenter prints for the recorded run (``live=False``: no
    events, only the result), as a command whose exit status is the run's."""

    @click.command()
    def show() -> None:
        presenter = RunPresenter(
            as_json=as_json, output=recorded.output, decide=decide, clock=_ticks()
        )
        if live:
            for event in recorded.events:
                presenter.show(event)
        else:
            presenter.note("[live events unavailable: showing the result when it ends]")
        result = recorded.result
        presenter.finish(result)
        if isinstance(result.outcome, seamkit.Suspended) and not as_json:
            presenter.print_pending(result.outcome.pending)
        sys.exit(presenter.exit_code(result))

    return CliRunner().invoke(show, [])


def _seamkit(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def _options(session: str | None, as_json: bool) -> list[str]:
    return [*(["--session", session] if session else []), *(["--json"] if as_json else [])]


def _same(shown: Result, printed: Result) -> None:
    assert printed.exception is None or isinstance(printed.exception, SystemExit), printed.output
    assert (shown.stdout_bytes, shown.stderr_bytes, shown.exit_code) == (
        printed.stdout_bytes,
        printed.stderr_bytes,
        printed.exit_code,
    )


def _decide(case: Case) -> DecideCommand | None:
    if case.session is None:
        return None
    return DecideCommand(("seamkit", "resume", case.manifest, "--session", case.session))


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize(
    "case", CASES, ids=[f"{c.example}-{'session' if c.session else 'none'}" for c in CASES]
)
def test_the_presenter_prints_what_seamkit_run_prints(
    case: Case, as_json: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(_copy(case, tmp_path / "recorded"))
    recorded = _record(case.manifest, case.message, case.session)
    shown = _present_run(recorded, as_json=as_json, decide=_decide(case))

    monkeypatch.chdir(_copy(case, tmp_path / "cli"))
    printed = _seamkit("run", case.manifest, case.message, *_options(case.session, as_json))

    _same(shown, printed)
    assert shown.exit_code == {"hello": 0, "guarded": 0, "refund": 3, "extract": 0}[case.example]
    assert shown.stdout and shown.stderr.rstrip().endswith("out tokens]") != as_json


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_decision_applied_is_shown_as_seamkit_resume_shows_it(
    as_json: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = CASES[2]
    approve = f"call_refund@{REFUND_DIGEST}"
    runs: list[Result] = []
    for side in ("recorded", "cli"):
        monkeypatch.chdir(_copy(case, tmp_path / side))
        waiting = _seamkit("run", case.manifest, case.message, "--session", "d", "--json")
        assert waiting.exit_code == 3, waiting.output
        if side == "recorded":
            decisions = seamkit.Decisions(
                {"call_refund": seamkit.Approve(digest=REFUND_DIGEST)}, by="cli"
            )
            recorded = _record(case.manifest, decisions, "d")
            runs.append(_present_run(recorded, as_json=as_json, decide=_decide(case)))
        else:
            options = ["--json"] if as_json else []
            runs.append(
                _seamkit("resume", case.manifest, "--session", "d", "--approve", approve, *options)
            )
    shown, printed = runs
    _same(shown, printed)
    assert shown.exit_code == 0
    if not as_json:
        assert "· refund [call_refund]: approved by cli" in shown.stderr


def _events(recorded: _Recorded, kinds: Sequence[type]) -> list[S.ObservedEvent]:
    return [e for e in recorded.events if type(e) in kinds]


def test_without_live_events_the_answer_still_shows_when_the_run_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = CASES[0]
    monkeypatch.chdir(_copy(case, tmp_path / "recorded"))
    recorded = _record(case.manifest, case.message, None)
    assert _events(recorded, [S.TextDelta])  # (the answer did stream)
    shown = _present_run(recorded, as_json=False, decide=None, live=False)
    monkeypatch.chdir(_copy(case, tmp_path / "cli"))
    printed = _seamkit("run", case.manifest, case.message)
    assert shown.stdout == printed.stdout == "2 + 3 = 5.\n"
    assert shown.stderr.splitlines() == [
        "[live events unavailable: showing the result when it ends]",
        printed.stderr.splitlines()[-1],
    ]
    assert shown.exit_code == printed.exit_code == 0


def test_the_result_after_its_run_finished_event_prints_nothing_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A front end that gets the result twice (from the events and from
    where the run ran) prints the end once."""
    monkeypatch.chdir(_copy(CASES[0], tmp_path))
    recorded = _record(CASES[0].manifest, CASES[0].message, None)
    once = _present_run(recorded, as_json=False, decide=None)
    assert once.stderr.count("out tokens]") == 1
    assert once.stdout.count("2 + 3 = 5.") == 1


def test_a_decide_command_quotes_its_words_and_binds_approval_to_the_digest() -> None:
    decide = DecideCommand(
        ("seamkit", "temporal", "decide", "--address", "127.0.0.1:7233", "--session", "my run")
    )
    pending = seamkit.PendingCall(
        call_id="c1",
        tool="refund",
        arguments={"amount": 5},
        digest="abc",
        reason="big",
        requested_at=datetime.fromisoformat(NOW),
    )
    assert decide.approve(pending) == (
        "seamkit temporal decide --address 127.0.0.1:7233 --session 'my run' --approve c1@abc"
    )
    assert decide.reject(pending).endswith("--session 'my run' --reject c1")


@pytest.mark.parametrize(
    ("kind", "code"),
    [
        (seamkit.Completed(), 0),
        (seamkit.Terminated(reason="r"), 0),
        (seamkit.Failed(error="e"), 1),
        (seamkit.Cancelled(), 130),
    ],
)
def test_exit_codes_are_seamkit_runs(kind: seamkit.Outcome, code: int) -> None:
    assert RunPresenter.exit_code(seamkit.RunResult(outcome=kind)) == code
