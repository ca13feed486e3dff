"""Shared helpers of the benchmarks: discovery, result building, printing, validation."""

from __future__ import annotations

import math
import os
import pkgutil
import statistics
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

PACKAGE = __name__.rpartition(".")[0]
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

FIGURE_KEYS = ("name", "command", "unit", "median", "min", "n", "ratio", "target", "met")
RESULT_KEYS = ("benchmark", "quick", "baseline", "figures", "all_met")


def discover() -> list[str]:
    """The names of the benchmark modules (``bench_*``) of this package, sorted."""
    return sorted(
        info.name
        for info in pkgutil.iter_modules([str(HERE)])
        if info.name.startswith("bench_") and not info.ispkg
    )


def figure(
    name: str,
    command: str,
    samples: Sequence[float],
    baseline_median: float,
    *,
    unit: str = "s",
    target: float | None = None,
) -> dict[str, Any]:
    """One measured figure: median and min of ``samples``, its ratio to the baseline's median."""
    if not samples:
        raise ValueError(f"no samples for {name}")
    med = statistics.median(samples)
    ratio = med / baseline_median
    return {
        "name": name,
        "command": command,
        "unit": unit,
        "median": med,
        "min": min(samples),
        "n": len(samples),
        "ratio": ratio,
        "target": target,
        "met": None if target is None else ratio <= target,
    }


def result(
    benchmark: str,
    *,
    quick: bool,
    baseline: str,
    figures: list[dict[str, Any]],
    **extra: Any,
) -> dict[str, Any]:
    """The dict a benchmark's ``main`` returns (see the package docstring),
    with the interpreter's version and the CPU count it ran on."""
    return {
        "benchmark": benchmark,
        "quick": quick,
        "baseline": baseline,
        "figures": figures,
        "all_met": all(f["met"] for f in figures if f["target"] is not None),
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        **extra,
    }


def _fmt(value: float, unit: str) -> str:
    return f"{value:.4f}" if unit == "s" else f"{value:.3g}"


def print_table(res: Mapping[str, Any]) -> None:
    """Print a result's figures: command, median, min, ratio to baseline, target, met."""
    header = ("command", "median", "min", "ratio", "target", "met")
    rows = [header]
    for f in res["figures"]:
        unit = f["unit"]
        rows.append(
            (
                f["command"],
                f"{_fmt(f['median'], unit)} {unit}",
                f"{_fmt(f['min'], unit)} {unit}",
                "1.00 (baseline)" if f["name"] == res["baseline"] else f"{f['ratio']:.2f}x",
                "-" if f["target"] is None else f"<= {f['target']:g}x",
                "-" if f["met"] is None else ("met" if f["met"] else "NOT MET"),
            )
        )
    print_rows(rows)
    print(f"{res['benchmark']}: {verdict(res)} (median of {res['figures'][0]['n']} each)")


def print_rows(rows: Sequence[tuple[str, ...]]) -> None:
    """Print rows of text as aligned columns; the first row is the header."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for i, r in enumerate(rows):
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))


def verdict(res: Mapping[str, Any]) -> str:
    """``all targets met`` or ``SOME TARGETS NOT MET``."""
    return "all targets met" if res["all_met"] else "SOME TARGETS NOT MET"


def _positive_finite(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


def problems(res: Any) -> list[str]:
    """What is wrong with the shape of a benchmark's result (empty when it is sane).

    Checks keys and that every number is positive and finite; never the targets.
    """
    if not isinstance(res, dict):
        return [f"result is {type(res).__name__}, not dict"]
    out = [f"missing key {k!r}" for k in RESULT_KEYS if k not in res]
    if out:
        return out
    figures = res["figures"]
    if not isinstance(figures, list) or not figures:
        return ["'figures' is not a non-empty list"]
    names = [f.get("name") for f in figures if isinstance(f, dict)]
    if res["baseline"] not in names:
        out.append(f"baseline {res['baseline']!r} is not one of the figures {names}")
    if not isinstance(res["all_met"], bool):
        out.append("'all_met' is not a bool")
    for f in figures:
        if not isinstance(f, dict):
            out.append(f"figure {f!r} is not a dict")
            continue
        label = f.get("name", "?")
        out += [f"figure {label}: missing key {k!r}" for k in FIGURE_KEYS if k not in f]
        if any(k not in f for k in FIGURE_KEYS):
            continue
        for k in ("median", "min", "ratio"):  # a count or a share may be zero
            if not (_positive_finite(f[k]) or f[k] == 0):
                out.append(f"figure {label}: {k} = {f[k]!r} is not non-negative and finite")
        if not (isinstance(f["n"], int) and f["n"] > 0):
            out.append(f"figure {label}: n = {f['n']!r} is not a positive int")
        if f["target"] is None:
            if f["met"] is not None:
                out.append(f"figure {label}: met is {f['met']!r} without a target")
        else:
            if not _positive_finite(f["target"]):
                out.append(f"figure {label}: target = {f['target']!r} is not positive and finite")
            if not isinstance(f["met"], bool):
                out.append(f"figure {label}: met = {f['met']!r} is not a bool")
    return out


def print_figures(figures: Sequence[Mapping[str, Any]], baselines: Mapping[str, str]) -> None:
    """The figures as a table, each with the baseline its ratio is taken
    against (``baselines`` maps a figure's name to its baseline's name)."""
    rows: list[tuple[str, ...]] = [("figure", "median", "min", "ratio", "to", "target", "met")]
    for f in figures:
        base = baselines[f["name"]]
        unit = f["unit"]
        rows.append(
            (
                f["command"],
                f"{f['median']:.4g} {unit}",
                f"{f['min']:.4g} {unit}",
                "1.00 (baseline)" if base == f["name"] else f"{f['ratio']:.3f}x",
                "" if base == f["name"] else base,
                "-" if f["target"] is None else f"<= {f['target']:.3g}x",
                "-" if f["met"] is None else ("met" if f["met"] else "NOT MET"),
            )
        )
    print_rows(rows)
