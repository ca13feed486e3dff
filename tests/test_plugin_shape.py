"""Plugins of one shape (issue 26): every entry module offers its names from
one `seamkit.plugins.lazy_module` table, which its ``if TYPE_CHECKING:``
block spells out; every import inside a function gives its reason; every
exception is a `seamkit.SeamkitError`; config models (what a manifest
validates) live in ``_config.py``;
and what serving plugins share (the socket, trace context) and the Secret to
JSON fallback come from the kernel, never from a copy."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import seamkit
from pydantic import BaseModel

from tests.core.test_module_graph import unexplained_imports

ROOT = Path(__file__).resolve().parent.parent
KERNEL = ROOT / "core" / "src" / "seamkit"
DISTRIBUTIONS = sorted(
    [
        *ROOT.glob("libs/*/pyproject.toml"),
        *ROOT.glob("plugins/*/pyproject.toml"),
        *ROOT.glob("contrib/*/pyproject.toml"),
    ]
)

NOT_PLUGINS = {
    # No `seamkit` entry point: discovery never imports them, so a lazy entry
    # module would save nothing; memory-server does not even depend on seamkit.
    "joke-service": "a tool service run with `seamkit tool-service serve`",
    "memory-server": "a stand-alone MCP server on the MCP SDK alone",
    "http": "a library the model providers share (libs/http), which registers nothing",
}


def _project(pyproject: Path) -> dict[str, object]:
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    assert isinstance(project, dict)
    return project


def _entry_points(pyproject: Path) -> dict[str, str]:
    groups = _project(pyproject).get("entry-points", {})
    assert isinstance(groups, dict)
    found = groups.get("seamkit", {})
    assert isinstance(found, dict)
    return found


def _package_dirs() -> dict[str, Path]:
    """Every plugin and contrib package: import name -> its folder."""
    return {
        init.parent.name: init.parent
        for pyproject in DISTRIBUTIONS
        for init in sorted((pyproject.parent / "src").glob("*/__init__.py"))
    }


def _plugin_entry_modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for pyproject in DISTRIBUTIONS:
        for target in _entry_points(pyproject).values():
            module = target.split(":")[0]
            out[module] = pyproject.parent / "src" / Path(*module.split(".")) / "__init__.py"
    return out


ENTRY_MODULES = {
    "seamkit": KERNEL / "__init__.py",
    "seamkit.plugins": KERNEL / "plugins.py",
    "seamkit.testing": KERNEL / "testing" / "__init__.py",
    "seamkit_http": ROOT / "libs" / "http" / "src" / "seamkit_http" / "__init__.py",
    **_plugin_entry_modules(),
}


def _lazy_call(tree: ast.Module) -> ast.Call:
    """The one ``__getattr__, __dir__, __all__ = lazy_module(__name__, ...)``."""
    found = []
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        names = [t.id for t in ast.walk(node.targets[0]) if isinstance(t, ast.Name)]
        if "__all__" in names or "__getattr__" in names:
            found.append(node)
    assert len(found) == 1, "one assignment makes __getattr__, __dir__ and __all__"
    (node,) = found
    target = node.targets[0]
    assert isinstance(target, ast.Tuple)
    assert [t.id for t in target.elts if isinstance(t, ast.Name)] == [
        "__getattr__",
        "__dir__",
        "__all__",
    ]
    call = node.value
    assert isinstance(call, ast.Call)
    assert isinstance(call.func, ast.Name) and call.func.id == "lazy_module"
    assert isinstance(call.args[0], ast.Name) and call.args[0].id == "__name__"
    return call


def _table(tree: ast.Module) -> dict[str, str | None]:
    """The table's names and where each comes from (``None``: computed)."""
    table = _lazy_call(tree).args[1]
    if isinstance(table, ast.Name):  # the kernel's `_PUBLIC`, assigned above
        table = next(
            n.value
            for n in tree.body
            if isinstance(n, ast.AnnAssign | ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == table.id for t in _targets(n))
        )
    assert isinstance(table, ast.Dict)
    out: dict[str, str | None] = {}
    for key, value in zip(table.keys, table.values, strict=True):
        assert isinstance(key, ast.Constant) and isinstance(key.value, str)
        is_text = isinstance(value, ast.Constant) and isinstance(value.value, str)
        out[key.value] = value.value if is_text else None  # type: ignore[union-attr]
    return out


def _targets(node: ast.AnnAssign | ast.Assign) -> list[ast.expr]:
    return [node.target] if isinstance(node, ast.AnnAssign) else list(node.targets)


def _type_checking_names(tree: ast.Module) -> dict[str, str | None]:
    """What the ``if TYPE_CHECKING:`` block re-exports (``from M import X as
    X``): name -> module, ``""`` for ``from . import sub as sub``, ``None`` for
    a bare annotation."""
    out: dict[str, str | None] = {}
    for node in tree.body:
        if not (isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"):
            continue
        for stmt in node.body:
            if isinstance(stmt, ast.ImportFrom):
                module = "." * stmt.level + (stmt.module or "")
                for alias in stmt.names:
                    if alias.asname == alias.name:
                        out[alias.name] = "" if module == "." else module
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                out[stmt.target.id] = None
    return out


@pytest.mark.parametrize("name", sorted(ENTRY_MODULES))
def test_every_entry_module_offers_its_names_from_one_lazy_table(name: str) -> None:
    tree = ast.parse(ENTRY_MODULES[name].read_text(encoding="utf-8"))
    assert _table(tree)
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert not {"__getattr__", "__dir__"} & defined
    module = importlib.import_module(name)
    assert vars(module)["__getattr__"].__qualname__.startswith("lazy_module.")
    assert module.__all__ == sorted(module.__all__)
    for public in module.__all__:
        assert getattr(module, public) is not None, f"{name}.{public}"


@pytest.mark.parametrize("name", sorted(ENTRY_MODULES))
def test_the_type_checking_block_spells_out_the_table(name: str) -> None:
    tree = ast.parse(ENTRY_MODULES[name].read_text(encoding="utf-8"))
    assert _type_checking_names(tree) == _table(tree)


@pytest.mark.parametrize("name", sorted(ENTRY_MODULES))
def test_importing_an_entry_module_imports_nothing_its_table_names(name: str) -> None:
    tree = ast.parse(ENTRY_MODULES[name].read_text(encoding="utf-8"))
    module = importlib.import_module(name)
    package = module.__package__ or name
    behind = sorted(
        {importlib.util.resolve_name(where, package) for where in _table(tree).values() if where}
    )
    code = f"import sys, {name}; print([m for m in {behind!r} if m in sys.modules])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_every_distribution_registers_with_seamkit_or_says_why_not() -> None:
    names = {pyproject.parent.name: bool(_entry_points(pyproject)) for pyproject in DISTRIBUTIONS}
    assert {name for name, plugin in names.items() if not plugin} == set(NOT_PLUGINS)


def test_every_import_inside_a_function_in_plugins_and_contrib_gives_its_reason() -> None:
    unexplained = [
        line
        for folder in _package_dirs().values()
        for path in sorted(folder.rglob("*.py"))
        for line in unexplained_imports(path, str(path.relative_to(ROOT)))
    ]
    assert not unexplained, "\n".join(unexplained)


def _classes() -> list[tuple[str, type]]:
    """Every class the plugin and contrib packages define, with its module."""
    found: list[tuple[str, type]] = []
    for name, folder in _package_dirs().items():
        modules = [name] + [
            info.name
            for info in pkgutil.walk_packages([str(folder)], f"{name}.")
            if not info.name.endswith(".__main__")
        ]
        for module_name in modules:
            module = importlib.import_module(module_name)
            found += [
                (module_name, value)
                for value in vars(module).values()
                if inspect.isclass(value) and value.__module__ == module_name
            ]
    return found


def test_every_exception_a_plugin_defines_is_a_seamkit_error() -> None:
    wrong = [
        f"{module}.{cls.__name__}"
        for module, cls in _classes()
        if issubclass(cls, BaseException) and not issubclass(cls, seamkit.SeamkitError)
    ]
    assert not wrong


def test_config_models_live_in_config_modules() -> None:
    """What a manifest validates (a kind's config, a plugin's section) lives
    in ``_config.py``; other pydantic models (what a plugin sends over a
    wire) live with the code that sends them."""
    sections = {info.model for info in seamkit.plugins.get_registry().sections.values()}
    wrong = [
        f"{module}.{cls.__name__}"
        for module, cls in _classes()
        if issubclass(cls, BaseModel)
        and (issubclass(cls, seamkit.KindConfig | seamkit.ModelConfig) or cls in sections)
        and module.rsplit(".", 1)[-1] != "_config"
    ]
    assert not wrong
    configs = [cls for module, cls in _classes() if module.rsplit(".", 1)[-1] == "_config"]
    assert any(issubclass(cls, seamkit.KindConfig) for cls in configs)  # (the check sees them)


def test_no_plugin_binds_a_socket_or_carries_trace_context_itself() -> None:
    copies = []
    for folder in _package_dirs().values():
        for path in sorted(folder.rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            for needle in ("setsockopt(", "opentelemetry.propagate", "opentelemetry.baggage"):
                if needle in text:
                    copies.append(f"{path.relative_to(ROOT)}: {needle}")
    assert not copies


def test_plugins_write_secrets_through_secret_json() -> None:
    from seamkit_http import _endpoint  # lazy: this test alone reads the private helper
    from seamkit_otel import _content  # lazy: this test alone reads the private helper

    canary = seamkit.Secret("canary-7f3e9b21d4")
    assert _endpoint._ON_THE_WIRE(canary) == "canary-7f3e9b21d4"  # the request body carries it
    assert _endpoint._ON_THE_WIRE.func is seamkit.secret_json
    assert _content.to_json({"k": canary}) == '{"k":"***"}'  # telemetry masks it
