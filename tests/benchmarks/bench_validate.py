"""Manifest validation time against file size (issue 17): linear, not worse.

The subject is ``AppConfig.load(path)`` (read the bytes, parse the YAML with
its limits and duplicate-key check, interpolate, validate against every
installed kind, and place each problem at its line) on generated manifests
of 1,000 and 10,000 lines, as a user's would grow: ``tool_call`` hooks with
arguments, ``{{ context.* }}`` and ``${env:...:-...}`` placeholders, a TTL
refresh condition, and ``function`` tool entries (8 lines an entry).

Two shapes, each at both sizes:

- ``valid``: the manifest loads;
- ``invalid``: every tenth hook has an unknown field, so one problem in ten
  entries is reported with its line and column (placing problems used to
  parse the whole file again per problem: 4,000 took minutes).

The figures are seconds per load, the median of rounds that interleave
every variant (one warm-up round discarded), garbage collection on as in a
real process. A 10,000-line figure's ratio is taken against ten times the
1,000-line median of the same shape measured in the same run (extra key
``baselines`` names it ``10x <shape>/1k``): 1.0 is exactly linear.

Target: at most 1.5 for both shapes. Not 1.0: CPython itself is not quite
linear here, as the reference shows. ``yaml.load`` with libyaml's safe loader
on the same texts (the parse alone, reported without a target) comes out near
1.2 on this machine, the cost of the collector walking ten times as many live
objects; the loader adds its own work at the same rate. Anything quadratic
(the old placement of problems: 4,000 took minutes) is off this scale.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml
from seamkit import AppConfig, ManifestError

from tests.benchmarks._harness import figure, print_figures, result

FULL_ROUNDS = 15
QUICK_ROUNDS = 2
WARMUP_ROUNDS = 1
FULL_LINES = (1_000, 10_000)
QUICK_LINES = (100, 1_000)
TARGET = 1.5

HEAD = """\
name: big
model: scripted:script.yaml
preamble: "You help ${env:BENCH_USER_NAME:-someone} with their orders."
settings:
  max_turns: 6
  tool_concurrency: 2
"""


def manifest(lines: int, *, invalid: bool) -> str:
    """A manifest of about ``lines`` lines (8 a hook or tool entry)."""
    entries = max(1, (lines - HEAD.count("\n") - 2) // 8)
    tools = ["tools:\n"]
    hooks = ["hooks:\n"]
    for i in range(entries):
        if i % 10 == 9:
            tools.append(
                f"  - kind: function\n    ref: tools_{i}\n    toolset: set_{i}\n"
                "    # a comment line, as people write them\n\n\n\n\n"
            )
            continue
        wrong = "    timeout: 3\n" if invalid and i % 10 == 0 else "    on_error: skip\n"
        hooks.append(
            "  - kind: tool_call\n"
            f"    name: hook_{i}\n"
            "    event: on_request_start\n"
            f"    tool_name: tool_{i}\n"
            f"    arguments: {{user: '{{{{ context.user }}}}', n: {i}, tag: '${{env:T{i}:-x}}'}}\n"
            "    refresh_condition: {kind: ttl, ttl_minutes: 30}\n"
            "    frequency: append_if_changed\n" + wrong
        )
    return HEAD + "".join(tools) + "".join(hooks)


def _load(path: Path) -> None:
    with contextlib.suppress(ManifestError):
        AppConfig.load(path)


def _parse(text: str) -> None:
    yaml.load(text, Loader=yaml.CSafeLoader)


def _time(fn: Any, arg: Any, reps: int) -> float:
    start = time.perf_counter()
    for _ in range(reps):
        fn(arg)
    return (time.perf_counter() - start) / reps


def main(quick: bool = False) -> dict[str, Any]:
    rounds = QUICK_ROUNDS if quick else FULL_ROUNDS
    small, large = QUICK_LINES if quick else FULL_LINES
    folder = Path(tempfile.mkdtemp(prefix="bench_validate_"))
    files: dict[str, Path] = {}
    for shape in ("valid", "invalid"):
        for lines, label in ((small, "1k"), (large, "10k")):
            path = folder / f"{shape}_{label}.yaml"
            path.write_text(manifest(lines, invalid=shape == "invalid"), encoding="utf-8")
            files[f"{shape}/{label}"] = path
    problems = {}
    for name, path in files.items():  # what each file gives, checked once
        try:
            AppConfig.load(path)
            problems[name] = 0
        except ManifestError as exc:
            problems[name] = len(exc.problems)
    assert problems["valid/1k"] == problems["valid/10k"] == 0, problems
    assert problems["invalid/10k"] > problems["invalid/1k"] > 0, problems
    texts = {size: files[f"valid/{size}"].read_text(encoding="utf-8") for size in ("1k", "10k")}
    line_counts = {name: p.read_text(encoding="utf-8").count("\n") for name, p in files.items()}

    print(
        f"validate: AppConfig.load on {small:,}- and {large:,}-line manifests "
        f"(valid, and one unknown field in ten entries), {WARMUP_ROUNDS} warm-up + {rounds} "
        f"rounds interleaved; problems per file: {problems}"
    )
    pydantic = metadata.version("pydantic")
    print(f"python {sys.version.split()[0]}, pydantic {pydantic}, {os.cpu_count()} cpus")

    reps = {"1k": 10 if not quick else 2, "10k": 1}
    variants: list[tuple[str, Any, Any, int]] = [
        (name, _load, path, reps[name.split("/")[1]]) for name, path in files.items()
    ]
    variants += [(f"yaml.load/{size}", _parse, texts[size], reps[size]) for size in ("1k", "10k")]
    samples: dict[str, list[float]] = {name: [] for name, *_ in variants}
    for i in range(WARMUP_ROUNDS + rounds):
        shift = i % len(variants)
        for name, fn, arg, n in variants[shift:] + variants[:shift]:
            elapsed = _time(fn, arg, n)
            if i >= WARMUP_ROUNDS:
                samples[name].append(elapsed)

    figures: list[dict[str, Any]] = []
    baselines: dict[str, str] = {}
    for shape in ("valid", "invalid", "yaml.load"):
        base = statistics.median(samples[f"{shape}/1k"])
        for size in ("1k", "10k"):
            name = f"{shape}/{size}"
            lines = line_counts[f"valid/{size}" if shape == "yaml.load" else name]
            command = (
                f"yaml.load(valid, {lines:,} lines, Loader=CSafeLoader)"
                if shape == "yaml.load"
                else f"AppConfig.load({shape}, {lines:,} lines)"
            )
            big = size == "10k"
            figures.append(
                figure(
                    name,
                    command,
                    samples[name],
                    10 * base if big else base,
                    target=TARGET if big and shape != "yaml.load" else None,
                )
            )
            baselines[name] = f"10x {shape}/1k" if big else f"{shape}/1k"
    res = result(
        "validate",
        quick=quick,
        baseline="valid/1k",
        figures=figures,
        baselines=baselines,
        lines=line_counts,
        problems=problems,
        rounds=rounds,
    )
    print_figures(figures, baselines)
    print(f"validate: {'all targets met' if res['all_met'] else 'SOME TARGETS NOT MET'}")
    return res


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
