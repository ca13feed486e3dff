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


@functools.cache
def _quick(name: str) -> tuple[dict[str, Any], str]:
    """``main(quick=True)`` of benchmark module ``name`` and what it printed, once a session."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        res: dict[str, Any] = importlib.import_module(f"{PACKAGE}.{name}").main(quick=True)
    return res, out.getvalue()


def test_benchmarks_are_discovered() -> None:
    assert "bench_cold_start" in BENCHMARKS


@pytest.mark.parametrize("name", BENCHMARKS)
def test_benchmark_runs_quick(name: str) -> None:
    res, printed = _quick(name)
    assert problems(res) == []
    assert res["benchmark"] == name.removeprefix("bench_")
    assert res["quick"] is True
    assert "baseline" in printed, "a benchmark prints its figures and their ratio to the baseline"


def test_cold_start_reports_its_targets() -> None:
    """The cold-start result names the figures and targets of issue 2 (values unchecked)."""
    res, _ = _quick("bench_cold_start")
    targets = {f["name"]: f["target"] for f in res["figures"]}
    assert targets == {
        "baseline": None,
        "python": None,
        "import_seamkit": 1.5,
        "seamkit_plugins": 2.5,
        "public_types": None,
    }


def test_dispatch_reports_its_targets() -> None:
    """The dispatch result has every event x N x variant, the targets of issue 2 on the
    dispatcher's sync figures only, and each ratio taken against raw pluggy at the same
    event and N (values unchecked)."""
    from tests.benchmarks import bench_dispatch as bench

    res, _ = _quick("bench_dispatch")
    targets = {f["name"]: f["target"] for f in res["figures"]}
    expected: dict[str, float | None] = {}
    for event in bench.MEASURED:
        mode = bench.EVENTS[event].composition.value
        for n in (1, 10, 100):
            for variant in ("plain", "pluggy", "seamkit", "async", "async_timeout", "thread"):
                target = None
                if variant == "seamkit":
                    target = 1.5 if mode == "first" else 2.0
                expected[f"{event.value}/N={n}/{variant}"] = target
    assert targets == expected
    measured_modes = {bench.EVENTS[e].composition.value for e in bench.MEASURED}
    assert measured_modes == {"first", "chain", "accumulate"}
    for name, base in res["baselines"].items():
        assert base == name.rpartition("/")[0] + "/pluggy"
    assert set(res["baselines"]) == set(targets)


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
