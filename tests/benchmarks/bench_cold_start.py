"""Cold start (issue 2): ``import seamkit`` and ``seamkit plugins`` against pluggy + pydantic.

Every command runs as a fresh subprocess of ``sys.executable`` (the venv's python), in
rounds that interleave all the commands, rotating their order each round so drift and
order effects fall on every command alike. One warm-up round (byte-code compilation,
page cache) is discarded. The figure is the median wall time of the process, from
spawn to exit; the ratio is that median over the baseline's median in the same run.

Targets: ``import seamkit`` at most 1.5x the baseline, ``seamkit plugins`` at most 2.5x.
Reported without a target: the interpreter alone (``python -c pass``) and the import
once the public types are actually used (``import seamkit`` is lazy, PEP 562).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from importlib import metadata
from pathlib import Path
from typing import Any

from tests.benchmarks._harness import ROOT, figure, print_table, result

FULL_ROUNDS = 30
QUICK_ROUNDS = 2
WARMUP_ROUNDS = 1

BASELINE_CODE = "import pluggy; from pydantic import BaseModel"
PUBLIC_TYPES_CODE = "import seamkit; from seamkit import Message, HookConfig, AppConfig"


def _plugins_argv() -> tuple[list[str], str]:
    """``seamkit plugins``: the console script next to the interpreter, else ``python -c``."""
    bindir = Path(sys.executable).parent
    for script in (bindir / "seamkit", bindir / "seamkit.exe"):
        if script.is_file():
            return [str(script), "plugins"], "seamkit plugins"
    code = "from seamkit._cli._group import main; main(['plugins'])"
    return [sys.executable, "-c", code], f'python -c "{code}"'


def _commands() -> list[tuple[str, str, list[str], float | None]]:
    """(name, shown command, argv, target ratio) of every command measured."""
    py = sys.executable
    plugins_argv, plugins_shown = _plugins_argv()
    return [
        ("baseline", f'python -c "{BASELINE_CODE}"', [py, "-c", BASELINE_CODE], None),
        ("python", 'python -c "pass"', [py, "-c", "pass"], None),
        ("import_seamkit", 'python -c "import seamkit"', [py, "-c", "import seamkit"], 1.5),
        ("seamkit_plugins", plugins_shown, plugins_argv, 2.5),
        ("public_types", f'python -c "{PUBLIC_TYPES_CODE}"', [py, "-c", PUBLIC_TYPES_CODE], None),
    ]


def _child_env() -> dict[str, str]:
    """The environment without any SEAMKIT_* variable (so every plugin loads)
    and without PYTHONDONTWRITEBYTECODE, so the warm-up round leaves byte code
    behind as it would on a user's machine, and no round compiles sources."""
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("SEAMKIT_") and k != "PYTHONDONTWRITEBYTECODE"
    }


def _first_party_plugins() -> dict[str, str | None]:
    """Each first-party plugin distribution (plugins/*) and its installed version, or None."""
    found: dict[str, str | None] = {}
    for pyproject in sorted((ROOT / "plugins").glob("*/pyproject.toml")):
        name = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["name"]
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def _time(argv: list[str], env: dict[str, str], cwd: str) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(
            f"{argv!r} exited with {proc.returncode}:\n{proc.stdout}\n{proc.stderr}".rstrip()
        )
    return elapsed


def main(quick: bool = False) -> dict[str, Any]:
    rounds = QUICK_ROUNDS if quick else FULL_ROUNDS
    commands = _commands()
    env = _child_env()
    cwd = tempfile.gettempdir()  # not the repository: nothing importable from the cwd
    plugins = _first_party_plugins()
    missing = sorted(name for name, version in plugins.items() if version is None)

    print(f"cold start: {rounds} rounds of {len(commands)} fresh processes, {sys.executable}")
    print(
        "first-party plugins: "
        + ", ".join(f"{n} {v or 'NOT INSTALLED'}" for n, v in plugins.items())
    )
    if missing:
        print(f"WARNING: not installed, so not measured: {', '.join(missing)}")

    samples: dict[str, list[float]] = {name: [] for name, *_ in commands}
    for i in range(WARMUP_ROUNDS + rounds):
        shift = i % len(commands)
        for name, _shown, argv, _target in commands[shift:] + commands[:shift]:
            elapsed = _time(argv, env, cwd)
            if i >= WARMUP_ROUNDS:
                samples[name].append(elapsed)

    baseline = statistics.median(samples["baseline"])
    figures = [
        figure(name, shown, samples[name], baseline, target=target)
        for name, shown, _argv, target in commands
    ]
    res = result(
        "cold_start",
        quick=quick,
        baseline="baseline",
        figures=figures,
        rounds=rounds,
        executable=sys.executable,
        first_party_plugins=plugins,
        plugins_missing=missing,
    )
    print_table(res)
    return res


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
