"""Run the benchmarks: ``python -m tests.benchmarks [--quick] [NAME ...]``.

Without NAME every ``bench_*.py`` module runs; with NAMEs only the modules whose name
(without ``bench_``) contains one of them, e.g. ``python -m tests.benchmarks cold_start``.
Full mode unless ``--quick``. Prints each benchmark's table, then a summary. The exit
status is 1 if a benchmark failed to run or no benchmark matched, 0 otherwise: a
missed target is reported, not an error.
"""

from __future__ import annotations

import importlib
import sys
import traceback
from typing import Any

from tests.benchmarks._harness import PACKAGE, discover


def _selected(filters: list[str]) -> list[str]:
    names = discover()
    if not filters:
        return names
    return [n for n in names if any(f in n.removeprefix("bench_") for f in filters)]


def run(argv: list[str]) -> int:
    quick = "--quick" in argv
    filters = [a for a in argv if a != "--quick"]
    names = _selected(filters)
    if not names:
        print(f"no benchmark matches {filters!r}; available: {', '.join(discover())}")
        return 1
    results: dict[str, dict[str, Any]] = {}
    failed: list[str] = []
    for name in names:
        print(f"\n=== {name} ({'quick' if quick else 'full'}) ===")
        try:
            module = importlib.import_module(f"{PACKAGE}.{name}")
            results[name] = module.main(quick=quick)
        except Exception:
            traceback.print_exc()
            failed.append(name)
    print("\n=== summary ===")
    for name, res in results.items():
        for f in res["figures"]:
            if f["target"] is None:
                continue
            verdict = "met" if f["met"] else "NOT MET"
            print(
                f"{name}: {f['name']}: {f['ratio']:.2f}x the baseline "
                f"(target <= {f['target']:g}x): {verdict}"
            )
    for name in failed:
        print(f"{name}: FAILED to run")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
