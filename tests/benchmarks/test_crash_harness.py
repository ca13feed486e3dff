"""The crash harness (``bench_crash``): a slow run with small counts on both
stores, and proof that its checks catch what they claim to (a harness that
cannot fail proves nothing)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from tests.benchmarks import bench_crash
from tests.benchmarks._crash_check import NOTHING, Dump, Kill, check_trial, moment_phase


@pytest.mark.slow
def test_sixty_sqlite_and_twenty_postgres_trials_keep_every_promise() -> None:
    res = bench_crash.run({"sqlite": 60, "postgres": 20}, quick=True)
    assert set(res["stores"]) == {"sqlite", "postgres"}, res["notes"]
    for kind, store in res["stores"].items():
        assert store["clean"] == store["trials"] and store["violations"] == [], kind
        counts = store["counts"]
        assert counts.get("once_duplicates", 0) == 0
        assert counts.get("decisions_lost", 0) == 0
        assert counts.get("decisions_recorded_twice", 0) == 0
        assert counts.get("once_effects_not_as_decided", 0) == 0
        assert counts["once_rejected_results"] == counts["once_reject"] > 0
        assert counts["once_approve"] > 0 and counts["once_edit"] > 0
        assert counts["decisions_sent_edit"] > 0 and counts["edits_refused"] > 0
        assert counts.get("turns_asked_again_after_recorded", 0) == 0
        assert counts.get("idempotent_key_changes", 0) == 0
        assert counts["in_doubt_reported"] == counts.get("in_doubt_expected", 0)
        assert counts["sessions_loadable"] == counts["transcripts_well_formed"] == store["trials"]
        killed = sum(k["killed"] for k in store["kill_points"].values())
        assert killed >= store["point_trials"], "every trial's first step is killed"
        moments = store["moments"]
        assert moments["trials"] + store["point_trials"] == store["trials"]
        assert moments["killed"] >= moments["trials"] - moments["first_step_outlived"] > 0
        assert sum(k["killed"] for k in store["moment_phases"].values()) == moments["killed"]


@pytest.fixture(scope="module")
def clean_trial(tmp_path_factory: pytest.TempPathFactory) -> bench_crash.Trial:
    """One trial killed once, inside a refund after its effect, then resumed."""
    tmp = tmp_path_factory.mktemp("crash")
    trial = bench_crash.Trial(0, "test", "sqlite", "s", tmp / "trial", 1, "all")
    with bench_crash.zygotes(1, postgres=False) as pool:
        bench_crash.run_trial(
            trial,
            str(tmp / "trial" / "sessions.sqlite"),
            lambda _rng, step, _kills: Kill("tool_after:refund", 2) if step == 0 else None,
            pool,
        )
    return trial


DECISIONS: dict[str, dict[str, Any]] = {
    "call_2_0": {"action": "reject", "reason": "too much"},
    "call_3_0": {
        "action": "edit",
        "arguments": {"order": "B", "amount": 20},
        "bad": {"order": "B", "amount": "lots"},
    },
    "call_3_1": {"action": "approve"},
}


@pytest.fixture(scope="module")
def decided_trial(tmp_path_factory: pytest.TempPathFactory) -> bench_crash.Trial:
    """One trial deciding one call per run (reject A, edit B after a bad
    edit, approve C), killed once right after the edit was recorded."""
    tmp = tmp_path_factory.mktemp("crash")
    trial = bench_crash.Trial(0, "test", "sqlite", "s", tmp / "trial", 1, "one")
    trial.decisions = copy.deepcopy(DECISIONS)
    with bench_crash.zygotes(1, postgres=False) as pool:
        bench_crash.run_trial(
            trial,
            str(tmp / "trial" / "sessions.sqlite"),
            lambda _rng, step, _kills: Kill("decision_after", 2) if step == 0 else None,
            pool,
        )
    return trial


@pytest.fixture(scope="module")
def moment_trial(tmp_path_factory: pytest.TempPathFactory) -> bench_crash.Trial:
    """One trial whose first step the zygote kills 15 ms after its fork."""
    tmp = tmp_path_factory.mktemp("crash")
    trial = bench_crash.Trial(0, "test", "sqlite", "s", tmp / "trial", 3, "all", "moment")
    trial.decisions = copy.deepcopy(DECISIONS)
    with bench_crash.zygotes(1, postgres=False) as pool:
        bench_crash.run_trial(
            trial,
            str(tmp / "trial" / "sessions.sqlite"),
            lambda _rng, step, _kills: Kill(after=0.015) if step == 0 else None,
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
    return check_trial(trial.steps, events, effects, trial.dump, trial.decisions).violations


def _ended(trial: bench_crash.Trial) -> list[dict[str, Any]]:
    return [{k: v for k, v in s.status.items() if k not in ("pid", "seconds")} for s in trial.steps]


def test_a_killed_and_resumed_trial_is_clean(clean_trial: bench_crash.Trial) -> None:
    assert _ended(clean_trial) == [{"signal": 9}, {"exit": 0}]
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
    assert "seed 'test'" in text and "kill at tool_after:refund #2" in text
    assert '"ev":"killed"' in text and '"ev":"refund"' in text
    session = json.loads(text[text.index("session:\n") + len("session:\n") :].split("\nstep ")[0])
    assert session["transcript"][0]["role"] == "user" and session["journal"] == []


# --- decisions other than approve ----------------------------------------------------


def test_a_trial_that_rejects_edits_and_approves_is_clean(
    decided_trial: bench_crash.Trial,
) -> None:
    assert _ended(decided_trial) == [{"signal": 9}, {"exit": 0}]
    v = decided_trial.verdict
    assert v.violations == [] and v.kills == ["decision_after"]
    assert v.counts["edits_refused"] == 1
    assert v.counts["once_reject"] == v.counts["once_rejected_results"] == 1
    assert v.counts["once_effects_as_decided"] == 2
    events, effects = _logs(decided_trial)
    refunds = {e["call"]: (e["order"], e["amount"]) for e in effects if e["ev"] == "refund"}
    assert refunds == {"call_3_0": ("B", 20), "call_3_1": ("C", 5)}
    assert decided_trial.dump is not None and decided_trial.dump.transcript is not None
    results = {m.get("tool_call_id"): m["content"] for m in decided_trial.dump.transcript}
    assert results["call_2_0"] == "too much" and results["call_3_0"] == "refunded B 20"
    assert not any(e["ev"] == "decide" and "call_3_0" in e["calls"] for e in events[-40:]), (
        "the recorded edit is not asked for again after the kill"
    )


def test_a_rejected_call_that_acted_is_caught(decided_trial: bench_crash.Trial) -> None:
    events, effects = _logs(decided_trial)
    extra = {"pid": 1, "ev": "refund", "call": "call_2_0", "key": "k", "order": "A", "amount": 30}
    found = _violations(decided_trial, events, [*effects, extra])
    assert any("call_2_0 (reject) acted" in v for v in found), found
    assert any("(rejected): started 0 times, acted 1 times" in v for v in found), found


def test_a_rejected_call_answered_otherwise_is_caught(decided_trial: bench_crash.Trial) -> None:
    events, effects = _logs(decided_trial)
    trial = copy.deepcopy(decided_trial)
    assert trial.dump is not None and trial.dump.transcript is not None
    for m in trial.dump.transcript:
        if m.get("tool_call_id") == "call_2_0":
            m["content"] = "refunded A 30"
    found = _violations(trial, events, effects)
    assert any("(rejected)" in v and "'refunded A 30'" in v for v in found), found


def test_an_edited_call_acting_with_the_model_s_arguments_is_caught(
    decided_trial: bench_crash.Trial,
) -> None:
    events, effects = _logs(decided_trial)
    changed = [dict(e, amount=70) if e.get("call") == "call_3_0" else e for e in effects]
    found = _violations(decided_trial, events, changed)
    assert any("call_3_0 (edit) acted with {'order': 'B', 'amount': 70}" in v for v in found)


def test_an_approved_call_acting_with_other_arguments_is_caught(
    decided_trial: bench_crash.Trial,
) -> None:
    events, effects = _logs(decided_trial)
    changed = [dict(e, amount=6) if e.get("call") == "call_3_1" else e for e in effects]
    found = _violations(decided_trial, events, changed)
    assert any("call_3_1 (approve) acted with" in v for v in found), found


def test_a_decision_recorded_other_than_made_or_twice_is_caught(
    decided_trial: bench_crash.Trial,
) -> None:
    events, effects = _logs(decided_trial)
    at = next(i for i, e in enumerate(events) if e["ev"] == "jdecided" and e["call"] == "call_3_0")
    recorded = events[at]
    edited = {"order": "B", "amount": 70}
    other = dict(recorded, decision=dict(recorded["decision"], arguments=edited))
    found = _violations(decided_trial, [*events[:at], other, *events[at + 1 :]], effects)
    assert any("not the edited" in v for v in found), found
    found = _violations(decided_trial, [*events[: at + 1], recorded, *events[at + 1 :]], effects)
    assert any("recorded 2 times" in v for v in found), found


def test_a_bad_edit_accepted_is_caught(decided_trial: bench_crash.Trial) -> None:
    events, effects = _logs(decided_trial)
    accepted = {"pid": events[0]["pid"], "ev": "accepted", "call": "call_3_0", "arguments": {}}
    found = _violations(decided_trial, [*events, accepted], effects)
    assert any("was accepted" in v for v in found), found


# --- kills at random moments -------------------------------------------------------------


def test_a_kill_at_a_random_moment_is_counted_and_placed(
    moment_trial: bench_crash.Trial,
) -> None:
    first = moment_trial.steps[0]
    assert first.status["signal"] == 9 and first.status["moment"] is True
    assert moment_trial.verdict.violations == []
    assert moment_trial.verdict.kills == [] and len(moment_trial.verdict.moments) == 1
    assert moment_trial.verdict.moments[0].startswith(bench_crash.PHASES)
    text = bench_crash._details(moment_trial)
    assert "at a random moment, 15.0 ms after the fork" in text
    assert f"a random moment landed: {moment_trial.verdict.moments[0]}" in text


def test_a_sigkill_at_a_moment_nobody_chose_is_caught(moment_trial: bench_crash.Trial) -> None:
    events, effects = _logs(moment_trial)
    trial = copy.deepcopy(moment_trial)
    trial.steps[0].kill = None
    found = _violations(trial, events, effects)
    assert any("killed at a moment nobody chose" in v for v in found), found


def _ev(ev: str, **data: Any) -> dict[str, Any]:
    return {"pid": 7, "ev": ev, **data}


def _entry(kind: str, call: str | None = None) -> dict[str, Any]:
    return {"run_id": "r", "kind": kind, "call_id": call, "data": {}}


@pytest.mark.parametrize(
    ("mine", "effects", "after", "phase"),
    [
        ([], [], NOTHING, "starting: before the step began"),
        ([_ev("begin"), _ev("input")], [], NOTHING, "starting: the run loading the session"),
        ([_ev("begin"), _ev("ask"), _ev("at", point="stream")], [], NOTHING, "mid model stream"),
        (
            [_ev("ask"), _ev("jwrite", entries=[["start", None], ["turn", None]])],
            [],
            Dump(None, None, [_entry("start"), _entry("turn")]),
            "mid journal write: turn (committed)",
        ),
        (
            [_ev("ask"), _ev("jwrite", entries=[["start", None], ["turn", None]])],
            [],
            NOTHING,
            "mid journal write: turn (not committed)",
        ),
        (
            [_ev("jwrite", entries=[["decided", "c"]]), _ev("jdecided", call="c")],
            [],
            NOTHING,
            "after a journal write: decided",
        ),
        (
            [_ev("at", point="tool_before:refund", call="c")],
            [],
            NOTHING,
            "in refund, before its effect",
        ),
        (
            [_ev("at", point="tool_before:refund", call="c")],
            [_ev("refund", call="c"), {"pid": 8, "ev": "refund", "call": "d"}],
            NOTHING,
            "in refund, after its effect",
        ),
        (
            [_ev("at", point="tool_before:lookup", order="A")],
            [{"pid": 8, "ev": "lookup", "order": "A"}],
            NOTHING,
            "in lookup, before its effect",
        ),
        (
            [_ev("saving", messages=2, pending=[])],
            [],
            Dump([{"role": "user"}, {"role": "assistant"}], {}, []),
            "mid save (committed)",
        ),
        (
            [_ev("saving", messages=2, pending=[])],
            [],
            Dump([{"role": "user"}], {}, [_entry("turn")]),
            "mid save (not committed)",
        ),
        ([_ev("decide", calls=["c"])], [], NOTHING, "deciding (sent, not yet recorded)"),
        ([_ev("outcome", kind="suspended")], [], NOTHING, "after the run returned (suspended)"),
    ],
)
def test_where_a_random_moment_landed_is_read_from_the_log(
    mine: list[dict[str, Any]], effects: list[dict[str, Any]], after: Dump, phase: str
) -> None:
    assert moment_phase(mine, effects, after) == phase
    assert phase.startswith(bench_crash.PHASES)


def test_an_in_doubt_call_found_by_a_run_that_returned_needs_its_diagnostic(
    clean_trial: bench_crash.Trial,
) -> None:
    events, effects = _logs(clean_trial)
    assert any(e["ev"] == "diagnostic" for e in events)
    silent = [e for e in events if e["ev"] != "diagnostic"]
    found = _violations(clean_trial, silent, effects)
    assert any("in doubt without a diagnostic" in v for v in found), found
    # A process killed (at a random moment) before its run returned could not tell.
    at = max(i for i, e in enumerate(silent) if e["ev"] == "outcome")
    cut = [e for i, e in enumerate(silent) if i < at or e["pid"] != silent[at]["pid"]]
    found = _violations(clean_trial, cut, effects)
    assert not any("in doubt without a diagnostic" in v for v in found), found
