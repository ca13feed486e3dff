"""The kernel's modules import without cycles, each on its own, and every import
inside a function says why it is there."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import seamkit

ROOT = Path(seamkit.__file__).parent


def _module_name(path: Path) -> str:
    parts = ["seamkit", *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> list[str]:
    """The seamkit modules one ``from ... import`` statement loads."""
    if node.level:
        base = module.split(".")
        base = base[: len(base) - node.level + (1 if is_package else 0)]
        target = ".".join([*base, node.module] if node.module else base)
    else:
        target = node.module or ""
    if not target.startswith("seamkit"):
        return []
    found = [target] if target in MODULES else []
    # ``from . import flow`` loads the submodule ``seamkit.flow``.
    found += [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in MODULES]
    return found


def _top_level_imports(module: str) -> set[str]:
    """Modules imported when ``module`` runs: module-level statements only,
    including those under ``if TYPE_CHECKING`` (a cycle there is still one
    for type checkers and readers)."""
    path = MODULES[module]
    tree = ast.parse(path.read_text())
    out: set[str] = set()
    nodes: list[ast.stmt] = list(tree.body)
    while nodes:
        node = nodes.pop()
        if isinstance(node, ast.If):
            nodes += [*node.body, *node.orelse]
        elif isinstance(node, ast.Try):
            nodes += [*node.body, *node.orelse, *node.finalbody]
            nodes += [stmt for handler in node.handlers for stmt in handler.body]
        elif isinstance(node, ast.With):
            nodes += node.body
        elif isinstance(node, ast.ImportFrom):
            out.update(_resolve(module, path.name == "__init__.py", node))
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in MODULES)
    # A package has run its ``__init__`` before any of its submodules runs, so
    # an import of an enclosing package is no edge.
    return {m for m in out if m != module and not module.startswith(m + ".")}


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_module_graph_has_no_cycle() -> None:
    graph = {m: _top_level_imports(m) for m in MODULES}
    assert _find_cycle(graph) is None, " -> ".join(_find_cycle(graph) or [])


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": set()}) is None


_IMPORT_EACH = """
import importlib, sys, traceback
failed = []
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m == "seamkit" or m.startswith("seamkit.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception:
        failed.append(name + ":\\n" + traceback.format_exc())
print("\\n".join(failed))
"""


def test_every_module_imports_on_its_own() -> None:
    # Each module is imported into an interpreter holding no seamkit module,
    # so one that only works after another has been imported fails here.
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_EACH, *sorted(MODULES)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == ""


def unexplained_imports(path: Path, label: str) -> list[str]:
    """``label:line: import`` for each import inside a function of the file
    at ``path`` whose line gives no ``# lazy: <reason>`` (plugins and contrib
    packages are held to it too, in ``tests/test_plugin_shape.py``)."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    unexplained = []
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.Import | ast.ImportFrom):
                line = lines[inner.lineno - 1]
                if "# lazy:" not in line:
                    unexplained.append(f"{label}:{inner.lineno}: {line.strip()}")
    return unexplained


def test_every_import_inside_a_function_gives_its_reason() -> None:
    unexplained = [line for m, path in MODULES.items() for line in unexplained_imports(path, m)]
    assert not unexplained, "\n".join(unexplained)


_RUN_IN_CODE = """
import sys
from seamkit import Agent
from seamkit.testing import ScriptedModel

agent = Agent(ScriptedModel([{"text": "hi"}]), plugin_hooks=False)
assert agent.run_sync("go").output == "hi"
print(" ".join(sorted(
    m for m in sys.modules
    if m == "yaml" or m.startswith(("yaml.", "seamkit._manifest", "seamkit._document"))
)))
"""


def test_a_run_of_an_agent_built_in_code_reads_no_manifest_and_no_yaml() -> None:
    # The run engine (agent, drive loop, batch, dispatch, parts) loads the
    # manifest machinery and PyYAML only for Agent.load: a fresh interpreter
    # that builds an agent in code and runs it has neither.
    done = subprocess.run(
        [sys.executable, "-c", _RUN_IN_CODE], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "", done.stdout
