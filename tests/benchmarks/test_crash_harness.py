"""The crash harness (``bench_crash``): a slow run with small counts on both
stores, and proof that its checks catch what they claim to (a harness that
cannot fail proves nothing)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from tests.benchmarks import bench_crash
from tests.benchmarks._crash_check import check_trial


@pytest.mark.slow
def test_forty_sqlite_and_ten_postgres_trials_keep_every_promise() -> None:
    res = bench_crash.run({"sqlite": 40, "postgres": 10}, quick=True)
    assert set(res["stores"]) == {"sqlite", "postgres"}, res["notes"]
    for kind, store in res["stores"].items():
        assert store["clean"] == store["trials"] and store["violations"] == [], kind
        counts = store["counts"]
        assert counts.get("once_duplicates", 0) == 0
        assert counts.get("decisions_lost", 0) == 0
        assert counts.get("turns_asked_again_after_recorded", 0) == 0
        assert counts.get("idempotent_key_changes", 0) == 0
        assert counts["in_doubt_reported"] == counts.get("in_doubt_expected", 0)
        assert counts["sessions_loadable"] == counts["transcripts_well_formed"] == store["trials"]
        killed = sum(k["killed"] for k in store["kill_points"].values())
        assert killed >= store["trials"], "every trial's first step is killed"


@pytest.fixture(scope="module")
def clean_trial(tmp_path_factory: pytest.TempPathFactory) -> bench_crash.Trial:
    """One trial killed once, inside a refund after its effect, then resumed."""
    tmp = tmp_path_factory.mktemp("crash")
    trial = bench_crash.Trial(0, "test", "sqlite", "s", tmp / "trial", 1, "all")
    with bench_crash.zygotes(1, postgres=False) as pool:
        bench_crash.run_trial(
            trial,
            str(tmp / "trial" / "sessions.sqlite"),
            lambda _rng, step, _kills: ("tool_after:refund", 2) if step == 0 else None,
            pool,
        )
    return trial


def _logs(trial: bench_crash.Trial) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    read = bench_crash._read_jsonl
    return read(trial.directory / "events.jsonl"), read(trial.directory / "effects.jsonl")


def _violations(
    trial: bench_crash.Trial, events: list[dict[str, Any]], effects: list[dict[str, Any]]
) -> list[str]:
    assert trial.dump is not None
    return check_trial(trial.steps, events, effects, trial.dump).violations


def test_a_killed_and_resumed_trial_is_clean(clean_trial: bench_crash.Trial) -> None:
    assert [s.status for s in clean_trial.steps] == [{"signal": 9}, {"exit": 0}]
    assert clean_trial.verdict.violations == []
    assert clean_trial.verdict.kills == ["tool_after:refund"]
    assert clean_trial.verdict.counts["in_doubt_reported"] == 1


def test_a_second_effect_of_a_once_call_is_caught(clean_trial: bench_crash.Trial) -> None:
    events, effects = _logs(clean_trial)
    refund = next(e for e in effects if e["ev"] == "refund")
    found = _violations(clean_trial, events, [*effects, refund])
    assert any("acted 2 times" in v for v in found), found


def test_a_model_turn_asked_again_once_recorded_is_caught(
    clean_trial: bench_crash.Trial,
) -> None:
    events, effects = _logs(clean_trial)
    last = max(i for i, e in enumerate(events) if e["ev"] == "ask")
    events.insert(last + 1, dict(events[last], turn=1))
    found = _violations(clean_trial, events, effects)
    assert any("model turn 1 was asked again" in v for v in found), found


def test_a_decision_asked_for_again_once_recorded_is_caught(
    clean_trial: bench_crash.Trial,
) -> None:
    events, effects = _logs(clean_trial)
    decided = next(e for e in events if e["ev"] == "jdecided")
    events.append({"pid": decided["pid"], "ev": "decide", "calls": [decided["call"]]})
    found = _violations(clean_trial, events, effects)
    assert any("decided again" in v for v in found), found


def test_an_in_doubt_call_must_be_reported_and_only_then(
    clean_trial: bench_crash.Trial,
) -> None:
    events, effects = _logs(clean_trial)
    trial = copy.deepcopy(clean_trial)
    assert trial.dump is not None and trial.dump.transcript is not None
    for m in trial.dump.transcript:  # the in-doubt call's result, as if it had been run again
        if str(m.get("content", "")).startswith("Error: InDoubt:"):
            m["content"] = "refunded B 70"
    found = _violations(trial, events, effects)
    assert any("started without its result recorded" in v for v in found), found


def test_an_idempotent_call_run_with_another_key_is_caught(
    clean_trial: bench_crash.Trial,
) -> None:
    events, effects = _logs(clean_trial)
    first = next(e for e in effects if e["ev"] == "reserve")
    found = _violations(clean_trial, events, [*effects, dict(first, key="other", attempt=2)])
    assert any("ran with keys" in v for v in found), found


def test_a_trial_s_details_name_its_seed_kill_points_logs_and_session(
    clean_trial: bench_crash.Trial,
) -> None:
    text = bench_crash._details(clean_trial)
    assert "seed 'test'" in text and "kill ('tool_after:refund', 2)" in text
    assert '"ev":"killed"' in text and '"ev":"refund"' in text
    session = json.loads(text[text.index("session:\n") + len("session:\n") :].split("\nstep ")[0])
    assert session["transcript"][0]["role"] == "user" and session["journal"] == []
