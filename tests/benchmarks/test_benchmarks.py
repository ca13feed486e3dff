"""Every benchmark runs once with tiny counts, so they keep working.

Only the shape of the result is checked (keys present, numbers positive and finite),
never the timing targets: CI machines are too noisy for that. The figures and their
targets come from ``python -m tests.benchmarks``.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import io
import math
from typing import Any

import pytest

from tests.benchmarks._harness import PACKAGE, discover, figure, problems, result

BENCHMARKS = discover()
SLOW = {"bench_gateway", "bench_temporal_faults"}
"""Benchmarks whose quick run installs a distribution (LiteLLM's proxy) into
a fresh virtual environment, or waits out Temporal's time-outs after killed
workers (about 40 s)."""
QUICK_RUNS = [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in BENCHMARKS]


@functools.cache
def _quick(name: str) -> tuple[dict[str, Any], str]:
    """``main(quick=True)`` of benchmark module ``name`` and what it printed, once a session."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        res: dict[str, Any] = importlib.import_module(f"{PACKAGE}.{name}").main(quick=True)
    return res, out.getvalue()


def test_benchmarks_are_discovered() -> None:
    assert "bench_cold_start" in BENCHMARKS


@pytest.mark.parametrize("name", QUICK_RUNS)
def test_benchmark_runs_quick(name: str) -> None:
    res, printed = _quick(name)
    assert problems(res) == []
    assert res["benchmark"] == name.removeprefix("bench_")
    assert res["quick"] is True
    assert "baseline" in printed, "a benchmark prints its figures and their ratio to the baseline"


@pytest.mark.parametrize("name", QUICK_RUNS)
def test_each_ratio_is_taken_against_a_baseline_of_the_same_run(name: str) -> None:
    """A ratio is the figure's median over its baseline's median measured in the
    same run, and ``met`` says whether it is within the target."""
    res, _ = _quick(name)
    medians = {f["name"]: f["median"] for f in res["figures"]}
    for f in res["figures"]:
        base = res.get("baselines", {}).get(f["name"], res["baseline"])
        if base in medians:
            assert f["ratio"] == pytest.approx(f["median"] / medians[base]), f["name"]
        if f["target"] is not None:
            assert f["met"] is (f["ratio"] <= f["target"]), f["name"]


def test_the_cold_start_and_dispatch_targets_are_measured() -> None:
    """The figures that carry the issue's targets exist and have one."""
    cold, _ = _quick("bench_cold_start")
    targeted = {f["name"] for f in cold["figures"] if f["target"] is not None}
    assert {"import_seamkit", "seamkit_plugins"} <= targeted
    dispatch, _ = _quick("bench_dispatch")
    targeted = {f["name"] for f in dispatch["figures"] if f["target"] is not None}
    assert targeted and all(name.endswith("/seamkit") for name in targeted)
    events = {name.split("/")[0] for name in targeted}
    assert len(events) >= 3, "one event of each composition mode is measured"


def test_problems_catches_a_bad_result() -> None:
    good = result(
        "x",
        quick=True,
        baseline="b",
        figures=[figure("b", "b", [1.0], 1.0), figure("y", "y", [2.0, 3.0], 1.0, target=5.0)],
    )
    assert problems(good) == []
    assert good["all_met"] is True
    bad = dict(good, figures=[dict(good["figures"][0], median=math.nan)])
    assert problems(bad)
    assert problems({"benchmark": "x"})


def test_stable_placement_keeps_the_prefix_in_the_quick_run_too() -> None:
    """Unlike the timings, the prefix benchmark counts bytes: deterministic, so
    its target is checked here (the benchmark itself raises when a pair is
    stale or the tool is called off schedule)."""
    res, _ = _quick("bench_prefix")
    shares = res["prefix_stable"]
    assert shares["stable"] == 1.0 and shares["history"] < 1.0
    assert res["all_met"] is True and res["resent_bytes"]["stable"] == 0


def test_the_openai_provider_targets_are_measured_and_every_concurrent_run_completes() -> None:
    """The provider's four targets each have a figure; whether every concurrent
    run completed is a count, not a timing, so it is checked in the quick run too."""
    res, _ = _quick("bench_openai")
    targeted = {f["name"] for f in res["figures"] if f["target"] is not None}
    assert targeted == {
        "text/seamkit",
        "tools/seamkit",
        "concurrent/started",
        "memory/rss_end",
        "import/seamkit_openai",
    }
    concurrency = res["concurrency"]
    assert concurrency["completed"] == concurrency["started"] > 0, concurrency["errors"]


def test_the_anthropic_provider_targets_are_measured() -> None:
    """The provider's CPU (text and tools, against the official SDK on the
    same stream) and import targets each have a figure (the clients' checks
    of the text and the calls run in the quick run too: ``main`` raises)."""
    res, _ = _quick("bench_anthropic")
    targeted = {f["name"] for f in res["figures"] if f["target"] is not None}
    assert targeted == {"text/seamkit", "tools/seamkit", "import/seamkit_anthropic"}


def test_the_anthropic_cache_target_is_met_in_the_quick_run_too() -> None:
    """The caching benchmark counts tokens with a simulator: deterministic, so
    its target is checked here (``main`` raises when the provider's usage is
    not the simulator's or a hook's answer is stale): stable placement with
    the provider's breakpoints reads at least 90 % from turn 3 on, more than
    one system breakpoint or history placement does; a 6-minute pause
    empties a 5-minute cache and not a 1-hour one."""
    res, printed = _quick("bench_anthropic_cache")
    summary = res["summary"]
    assert res["all_met"] is True and summary["stable/auto"]["min"] >= 0.9
    assert summary["stable/system"]["mean"] < summary["stable/auto"]["mean"]
    assert summary["history/auto"]["min"] < summary["stable/auto"]["min"]
    gap = res["gap_share"]
    assert gap["stable/auto, 6 min gap, ttl 5m"] == 0.0
    assert gap["stable/auto, 6 min gap, ttl 1h"] >= 0.9
    assert "stable/system" in printed


def test_the_serve_targets_are_measured_and_no_request_or_message_is_lost() -> None:
    """The serve benchmark's targets each have a figure; errors and lost
    messages are counts, not timings, so the quick run checks them too."""
    res, _ = _quick("bench_serve")
    targeted = {f["name"] for f in res["figures"] if f["target"] is not None}
    assert {"latency/seamkit", "sqlite/rss_end"} <= targeted
    assert {"stateless/sent", "sqlite/sent", "sqlite/messages"} <= targeted
    counted = {f["name"]: f["median"] for f in res["figures"]}
    assert counted["stateless/sent"] == counted["stateless/answered"] > 0
    assert counted["sqlite/sent"] == counted["sqlite/answered"] > 0
    assert counted["sqlite/messages"] == counted["sqlite/stored"] > 0
    assert res["problems"] == []


def test_the_tool_service_targets_are_measured_and_no_reply_is_dropped() -> None:
    """The tool-service benchmark's three targets each have a figure; every
    reply is checked while measuring, and a dropped reply is a count, so the
    quick run checks it too."""
    res, _ = _quick("bench_tool_service")
    targeted = {f["name"] for f in res["figures"] if f["target"] is not None}
    assert targeted == {
        "nats/sequential/added",
        "nats/64_in_flight/seamkit",
        "http/sequential/seamkit",
    }
    assert res["dropped"] == {"stray": 0, "duplicate": 0}
    assert res["problems"] == []


def test_the_mcp_target_is_measured_and_the_build_is_reported() -> None:
    """The MCP benchmark's one target (a tool call through seamkit against
    the raw SDK's ``call_tool``) has a figure; the agent build is reported
    beside the raw ``initialize`` + ``tools/list`` without one."""
    res, _ = _quick("bench_mcp")
    targeted = {f["name"] for f in res["figures"] if f["target"] is not None}
    assert targeted == {"call/seamkit"}
    names = {f["name"] for f in res["figures"]}
    assert {"build_open/raw", "build_open/seamkit", "build_total/seamkit"} <= names
    assert res["problems"] == []


def test_the_crash_harness_runs_both_stores_and_every_trial_keeps_every_promise() -> None:
    """The crash harness' verdicts are counts, not timings: the quick run
    checks them too (``main`` raises on any violation; the slow test and
    ``python -m tests.benchmarks crash`` run more trials)."""
    res, printed = _quick("bench_crash")
    assert set(res["stores"]) == {"sqlite", "postgres"}, res["notes"]
    for kind, store in res["stores"].items():
        assert store["trials"] == store["clean"] > 0 and store["violations"] == [], kind
        assert store["counts"].get("once_duplicates", 0) == 0
        killed = sum(k["killed"] for k in store["kill_points"].values())
        assert killed >= store["point_trials"]
        assert killed + store["moments"]["killed"] > 0
    assert "kill point" in printed and "killed at a random moment" in printed


def test_the_output_target_is_measured_and_no_bad_answer_breaks_the_retry_bound() -> None:
    """The output benchmark's targets (a structured answer streamed by the
    openai provider from a server, against the same stream without output)
    have figures, the scripted ("kernel only") ones none; the generated bad answers
    are counts, not timings: the quick run checks there is no violation
    (``main`` raises on one) and that both ends happen."""
    res, printed = _quick("bench_output")
    targeted = {f["name"] for f in res["figures"] if f["target"] is not None}
    assert targeted == {"output/provider/partials"}
    assert {"output/kernel/native", "output/kernel/model"} <= {f["name"] for f in res["figures"]}
    partials = res["provider"]["partials"]  # over the openai provider and a server
    assert partials["plain"] == 0 and partials["model"] > 0 and partials["schema"] > 0
    assert partials["quiet"] == 0  # partials=False: no partial parsing
    retries = res["output_retries"]
    assert retries["violations"] == 0 and retries["other"] == 0
    assert retries["completed"] > 0 and retries["failed"] > 0
    assert retries["completed"] + retries["failed"] == retries["sequences"]
    assert retries["max_calls_over_budget"] <= 1.0
    assert "output_retries" in printed


@pytest.mark.slow
def test_the_gateway_targets_are_measured_against_litellm_and_the_floors() -> None:
    """The gateway benchmark's two targets (seamkit serve against LiteLLM's
    proxy, and against the forwarding floor) have figures, every server
    answered every request (a wrong answer raises), and the p95s are there."""
    res, _ = _quick("bench_gateway")
    targeted = {f["name"]: f["target"] for f in res["figures"] if f["target"] is not None}
    assert targeted == {"p50/seamkit_vs_litellm": 0.5, "p50/seamkit": 2.0}
    names = {f["name"] for f in res["figures"]}
    servers = {"seamkit", "litellm", "litellm_mock", "forward", "floor"}
    assert {f"p95/{s}" for s in servers} | {"p50/seamkit_vs_floor"} <= names
    assert set(res["requests"]) == servers
    assert len(set(res["requests"].values())) == 1, "the same number of requests each"


def test_the_temporal_overhead_is_reported_per_activity_kind() -> None:
    """The Temporal benchmark reads every timed workflow's history back: the
    floor's W(0, 8) is 2 model activities and 8 tool activities a run, each
    timed from the server's timestamps; seamkit's are 2 model activities and 8 tool
    activities (local ones with ``effects: none``, counted from their markers) and
    its tool sources' refresh, a local activity; a variant that is not measured
    (pydantic-ai outside the benchmark's environment) says why."""
    res, printed = _quick("bench_temporal")
    rows = {r["name"]: r for r in res["activities"]["floor"]["rows"]}
    assert rows["model"]["per_run"] == 2 and rows["model"]["kind"] == "model"
    assert rows["add"]["per_run"] == 8 and rows["add"]["kind"] == "tool"
    assert rows["add"]["total_ms"] >= rows["add"]["ran_ms"] > 0
    assert rows["(workflow)"]["per_run"] == 1
    for variant, tool_kind in (("seamkit", "tool"), ("seamkit_none", "local tool")):
        kinds = {r["name"]: (r["kind"], r["per_run"]) for r in res["activities"][variant]["rows"]}
        assert kinds["seamkit.model"] == ("model", 2), variant
        assert kinds["seamkit.tool"] == (tool_kind, 8), variant
        assert kinds["seamkit.refresh"] == ("local other", 1), variant
    names = {f["name"] for f in res["figures"]}
    assert "seamkit" not in res["not_measured"] and "seamkit_none" not in res["not_measured"]
    for variant in ("pydantic_ai", "pydantic_ai_durability", "seamkit", "seamkit_none"):
        assert (f"temporal/{variant}" in names) != (variant in res["not_measured"]), variant
    if "temporal/seamkit" in names and "temporal/pydantic_ai" in names:
        targeted = {f["name"]: f["target"] for f in res["figures"] if f["target"] is not None}
        assert targeted == {"temporal/seamkit": 1.0}
    assert "activity type" in printed
