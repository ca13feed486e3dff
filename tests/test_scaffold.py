"""``seamkit new plugin NAME``: the distribution it writes is complete, its
tests pass as written, and it installs and shows in ``seamkit plugins``.

The fast tests run the generated tests against this checkout (the plugin on
``PYTHONPATH``, registered in-process by its own tests). The slow ones do what
a stranger does: generate, ``pip install`` into a fresh virtual environment,
run the generated tests there, and time it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from seamkit._cli._group import cli

from tests.conftest import ROOT

KINDS = {
    "hook": "hook:trim",
    "refresh": "refresh:trim",
    "tool": "tool:trim",
    "model": "model:trim",
}


def _new(tmp_path: Path, *args: str) -> tuple[int, str]:
    """``seamkit new plugin ARGS`` in ``tmp_path``; (exit code, output)."""
    cwd = Path.cwd()
    os.chdir(tmp_path)
    try:
        result = CliRunner().invoke(cli, ["new", "plugin", *args], catch_exceptions=False)
    finally:
        os.chdir(cwd)
    return result.exit_code, result.output


def _generated(tmp_path: Path, name: str) -> Path:
    return tmp_path / name


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("SEAMKIT_", "PYTEST_"))}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_kind_writes_a_whole_distribution(tmp_path: Path, kind: str) -> None:
    code, output = _new(tmp_path, "trim", "--kind", kind)
    assert code == 0, output
    root = _generated(tmp_path, "trim")
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    assert files == [
        "README.md",
        "pyproject.toml",
        "src/seamkit_trim/__init__.py",
        "tests/test_seamkit_trim.py",
    ]
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == "seamkit-trim"
    assert project["entry-points"]["seamkit"] == {"trim": "seamkit_trim"}
    assert project["dependencies"] == ["seamkit>=0.1,<0.2"]
    assert project["optional-dependencies"]["test"] == ["seamkit[testing]>=0.1,<0.2"]
    tests = (root / "tests" / "test_seamkit_trim.py").read_text(encoding="utf-8")
    assert "async def test_" in tests
    assert "check_" in tests or "@given(" in tests  # a property test
    for path in root.rglob("*"):
        if path.is_file():
            assert "$" not in path.read_text(encoding="utf-8").replace("${", ""), path
    assert "pip install" in output and "seamkit plugins" in output


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_generated_tests_pass_as_written(tmp_path: Path, kind: str) -> None:
    code, output = _new(tmp_path, "trim", "--kind", kind)
    assert code == 0, output
    root = _generated(tmp_path, "trim")
    env = {**_clean_env(), "PYTHONPATH": str(root / "src")}
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(root)],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    summary = out.stdout.strip().splitlines()[-1]
    assert "passed" in summary and "failed" not in summary and "skipped" not in summary, summary


def test_the_generated_code_is_formatted_linted_and_strictly_typed(tmp_path: Path) -> None:
    """What a new project's CI would run first: ruff format, ruff check (this
    repository's rule set) and mypy --strict, on every kind, with a long name."""
    bin_ = Path(sys.executable).parent
    roots = []
    for kind in sorted(KINDS):
        name = f"my-longer-name-{kind}"
        code, output = _new(tmp_path, name, "--kind", kind)
        assert code == 0, output
        roots.append(tmp_path / name)
    for root in roots:
        for check in (
            [str(bin_ / "ruff"), "format", "--check", "."],
            [str(bin_ / "ruff"), "check", "--select", "E,F,W,B,UP,SIM", "."],
        ):
            out = subprocess.run(check, capture_output=True, text=True, cwd=root)
            assert out.returncode == 0, f"{root.name}: {check[1]}\n{out.stdout}{out.stderr}"
    paths = [str(p) for root in roots for p in (root / "src", *sorted(root.glob("tests/*.py")))]
    mypy = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", *paths],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**_clean_env(), "MYPYPATH": os.pathsep.join(str(r / "src") for r in roots)},
    )
    assert mypy.returncode == 0, mypy.stdout + mypy.stderr


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("Trim", "cannot name a plugin"),
        ("2trim", "cannot name a plugin"),
        ("trim me", "cannot name a plugin"),
        ("class", "is a Python keyword"),
        ("seamkit", "is taken by the kernel"),
        ("function", "is taken by the kernel"),
    ],
)
def test_a_bad_name_is_one_line_and_writes_nothing(tmp_path: Path, name: str, message: str) -> None:
    code, output = _new(tmp_path, name)
    assert code == 1
    assert message in output and "hint:" in output
    assert "Traceback" not in output
    assert list(tmp_path.iterdir()) == []


def test_a_file_in_the_way_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "trim").write_text("mine", encoding="utf-8")
    code, output = _new(tmp_path, "trim")
    assert code == 1 and "exists and is not a folder" in output
    code, output = _new(tmp_path, "other", "--output", "trim/sub")
    assert code == 1 and "cannot write trim/sub" in output and "hint:" in output
    assert (tmp_path / "trim").read_text(encoding="utf-8") == "mine"


def test_the_next_steps_name_the_folder_written(tmp_path: Path) -> None:
    code, output = _new(tmp_path, "trim", "--output", str(tmp_path / "abs dir"))
    assert code == 0, output
    assert f"pip install -e '{tmp_path}/abs dir[test]'" in output
    assert f"pytest '{tmp_path}/abs dir'" in output
    code, output = _new(tmp_path, "trim2")
    assert "pip install -e './trim2[test]'" in output and "pytest trim2" in output


def test_an_existing_folder_is_never_overwritten(tmp_path: Path) -> None:
    (tmp_path / "trim").mkdir()
    (tmp_path / "trim" / "notes.txt").write_text("mine", encoding="utf-8")
    code, output = _new(tmp_path, "trim")
    assert code == 1
    assert "exists and is not empty" in output
    assert [p.name for p in (tmp_path / "trim").iterdir()] == ["notes.txt"]


def test_seamkit_prefix_and_output_folder(tmp_path: Path) -> None:
    code, output = _new(tmp_path, "seamkit-tool-trim", "--output", "plugins/tt")
    assert code == 0, output
    root = _generated(tmp_path, "plugins/tt")
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == "seamkit-tool-trim"
    assert project["entry-points"]["seamkit"] == {"tool-trim": "seamkit_tool_trim"}
    assert (root / "src" / "seamkit_tool_trim" / "__init__.py").is_file()


# --- a stranger's first ten minutes: generate, install, test -----------------


class FreshEnv:
    """A new virtual environment with seamkit[testing] from this checkout."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.bin = path / "bin"

    def run(self, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        env = {
            **_clean_env(),
            "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}",
            "VIRTUAL_ENV": str(self.path),
        }
        env.pop("PYTHONPATH", None)
        return subprocess.run(
            list(args), capture_output=True, text=True, env=env, cwd=cwd, timeout=600
        )


def _uv() -> str:
    found = Path(sys.executable).parent / "uv"
    assert found.exists(), "uv is a dev dependency: run `python3 -m uv sync`"
    return str(found)


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FreshEnv]:
    path = tmp_path_factory.mktemp("scaffold") / "venv"
    started = time.perf_counter()
    subprocess.run(
        [_uv(), "venv", "--quiet", "--seed", "--python", sys.executable, str(path)], check=True
    )
    env = FreshEnv(path)
    out = env.run(
        _uv(), "pip", "install", "--quiet", "--python", str(env.bin / "python"),
        f"{ROOT / 'core'}[testing]",
        cwd=path.parent,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    print(f"\nfresh environment with seamkit[testing]: {time.perf_counter() - started:.1f} s")
    yield env


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_generate_install_and_test_in_a_fresh_environment(
    fresh: FreshEnv, tmp_path: Path, kind: str
) -> None:
    name = f"trim-{kind}"
    started = time.perf_counter()
    new = fresh.run(str(fresh.bin / "seamkit"), "new", "plugin", name, "--kind", kind, cwd=tmp_path)
    assert new.returncode == 0, new.stdout + new.stderr
    install = fresh.run(
        str(fresh.bin / "python"), "-m", "pip", "install", "--quiet",
        "--disable-pip-version-check", f"./{name}",
        cwd=tmp_path,
    )  # fmt: skip
    assert install.returncode == 0, install.stdout + install.stderr
    tests = fresh.run(str(fresh.bin / "python"), "-m", "pytest", "-q", name, cwd=tmp_path)
    elapsed = time.perf_counter() - started
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "failed" not in tests.stdout and "skipped" not in tests.stdout
    print(f"\n{kind}: generated, installed and tested in {elapsed:.1f} s")
    listed = fresh.run(str(fresh.bin / "seamkit"), "plugins", "--json", cwd=tmp_path)
    plugins = {p["name"]: p for p in json.loads(listed.stdout)}
    assert plugins[name]["distribution"] == f"seamkit-{name}"
    assert plugins[name]["kinds"] == [KINDS[kind].replace("trim", name)]
    assert plugins[name]["error"] is None


@pytest.mark.slow
def test_a_project_on_pytest_asyncio_keeps_its_runner(fresh: FreshEnv, tmp_path: Path) -> None:
    """Last in this module: it installs pytest-asyncio into the shared environment."""
    new = fresh.run(str(fresh.bin / "seamkit"), "new", "plugin", "trim", cwd=tmp_path)
    assert new.returncode == 0, new.stderr
    install = fresh.run(
        _uv(), "pip", "install", "--quiet", "--python", str(fresh.bin / "python"),
        "pytest-asyncio>=0.23", "./trim",
        cwd=tmp_path,
    )  # fmt: skip
    assert install.returncode == 0, install.stderr
    pytest_ = [str(fresh.bin / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "trim"]
    # Strict mode (pytest-asyncio's default): it runs only tests marked for
    # it; the kit runs the unmarked ones, so the generated tests pass.
    strict = fresh.run(*pytest_, cwd=tmp_path)
    assert strict.returncode == 0, strict.stdout + strict.stderr
    # Auto mode: pytest-asyncio owns every async test (the kit steps aside),
    # and they pass too.
    auto = fresh.run(*pytest_, "-o", "asyncio_mode=auto", cwd=tmp_path)
    assert auto.returncode == 0, auto.stdout + auto.stderr
    # The kit switched off: in strict mode nobody runs the unmarked test.
    off = fresh.run(*pytest_, "-o", "seamkit_async=false", cwd=tmp_path)
    assert off.returncode != 0
    assert "test_the_model_sees_the_cut_result" in off.stdout
