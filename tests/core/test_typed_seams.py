"""A plugin typed with the per-seam flow aliases and the register protocols is
checked by ``mypy --strict``: a correct one passes, and each mistake in the
wrong one (a flow its seam does not accept, a factory that takes another
config model) is reported on its line."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).parent.parent / "fixtures" / "typed"


def _mypy(path: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(cache), str(path)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def test_a_plugin_typed_with_the_aliases_passes_mypy_strict(tmp_path: Path) -> None:
    done = _mypy(FIXTURES / "good_plugin.py", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_strict_reports_each_wrong_flow_and_wrong_factory(tmp_path: Path) -> None:
    path = FIXTURES / "wrong_flow.py"
    marked = {
        number
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if "# error:" in line
    }
    done = _mypy(path, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    reported = {int(n) for n in re.findall(rf"{re.escape(path.name)}:(\d+): error", done.stdout)}
    assert reported == marked, done.stdout
    assert 'got "RewriteArgs", expected "Continue | RewriteResult | Terminate | None"' in (
        done.stdout
    )
