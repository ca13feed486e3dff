"""seamkit's benchmarks.

Each benchmark is a module ``bench_<name>.py`` in this package exposing
``main(quick: bool = False) -> dict``. ``main`` measures the subject and its
baseline in the same run, prints its figures with the ratio to that baseline,
and returns a result built by :func:`tests.benchmarks._harness.result`::

    {
        "benchmark": "<name>",
        "quick": bool,
        "baseline": "<name of the baseline figure>",
        "figures": [
            {"name", "command", "unit", "median", "min", "n", "ratio", "target", "met"},
            ...
        ],
        "all_met": bool,           # every figure with a target met it
        "python": "3.11.7",        # the interpreter and the CPU count it ran on
        "cpus": int,
        ...                        # anything else the benchmark wants to report
    }

``target`` is the largest ratio allowed (``None`` for a figure reported without
a target, the baseline included) and ``met`` is ``ratio <= target`` (``None``
without a target).

``python -m tests.benchmarks [NAME ...]`` runs them in full mode; the pytest
suite (``test_benchmarks.py``) runs each once with tiny counts and checks only
the shape of the result, never the targets.
"""
