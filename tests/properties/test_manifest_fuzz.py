"""The manifest fuzzer: real manifests (the rich one in `_manifests` and
every example app), mutated in structure, types, encodings, aliases, depth,
size and placeholders, then loaded as a user's file would be.

The law: no internal error, no crash, no hang. A mutated manifest loads, or
is rejected with a `ManifestError` whose every problem has a line and
column inside the file and a one-line message (see `_manifests.load`).

CI runs 2,000 examples; ``HYPOTHESIS_PROFILE=deep`` runs 100,000 and fails
any example that takes more than 2 s. A crash of the interpreter (the
C loader recursing 30,000 levels deep used to end the process with signal
11) is checked in a child process, where it cannot take the suite down.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from tests.properties._manifests import (
    DEEP,
    MUTATED,
    MUTATIONS,
    SLOW_INPUTS,
    Case,
    load,
    nested,
    scaled,
)

# The deep profile runs for much longer than pytest-timeout allows a test;
# each example has its own 2 s deadline there instead.
# The fuzzer is the suite's heaviest property (minutes in CI): `slow`, so that
# `-m "not slow"` is a quick loop; CI runs everything.
pytestmark = [pytest.mark.slow, *([pytest.mark.timeout(0)] if DEEP else [])]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where each example's file is written (one folder for all of them)."""
    return tmp_path_factory.mktemp("fuzz")


def write(folder: Path, case: Case) -> Path:
    path = folder / f"app{case.suffix}"
    path.write_bytes(case.data)
    return path


@scaled(2_000)
@given(case=MUTATED)
def test_a_mutated_manifest_loads_or_is_rejected_in_place(folder: Path, case: Case) -> None:
    load(write(folder, case))


@pytest.mark.parametrize("kind", sorted(MUTATIONS))
def test_each_kind_of_mutation_is_rejected_somewhere(folder: Path, kind: str) -> None:
    """The mutations reach the reading path: each kind, drawn a few dozen
    times, gets at least one manifest rejected (so the fuzzer is not only
    feeding valid files)."""
    rejected: list[bool] = []

    @settings(max_examples=60, deadline=None, suppress_health_check=SLOW_INPUTS, database=None)
    @given(case=MUTATIONS[kind])
    def draw(case: Case) -> None:
        rejected.append(bool(load(write(folder, case))))

    draw()
    assert any(rejected), f"no {kind} mutation was rejected in {len(rejected)} examples"


_CHILD = """
import sys
from seamkit import AppConfig, ManifestError
try:
    AppConfig.load(sys.argv[1])
except ManifestError as exc:
    print(exc.format())
    sys.exit(1)
"""


@settings(max_examples=4, deadline=None, suppress_health_check=SLOW_INPUTS, database=None)
@given(
    depth=st.integers(30_000, 100_000),
    style=st.sampled_from(["flow-list", "flow-map", "block-list"]),
)
def test_nesting_that_crashed_the_interpreter_is_a_located_error_in_a_child(
    folder: Path, depth: int, style: str
) -> None:
    path = write(folder, Case(f"name: d\nmodel: scripted:s\nx: {nested(depth, style)}\n".encode()))
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, (done.returncode, done.stderr[-2000:])
    line = 4 if style == "block-list" else 3  # a block list starts on the next line
    assert done.stdout.startswith(f"{path}:{line}:"), done.stdout
    assert "nested more than 100 levels deep" in done.stdout
