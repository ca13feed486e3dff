"""`seamkit.plugins.lazy_module`: one table of public names behind `__all__`,
each module imported the first time one of its names is used."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from textwrap import dedent

import pytest
import seamkit
from seamkit.plugins import LazyModule, lazy_module

ENTRY = """
from seamkit.plugins import lazy_module
import seamkit

__getattr__, __dir__, __all__ = lazy_module(
    __name__,
    {
        "Heavy": "._heavy",
        "helper": "._heavy",
        "sub": "",
        "computed": lambda: 6 * 7,
        "Shared": "._inner._deep",
    },
    defined=["register_things"],
)


@seamkit.hookimpl
def register_things(register):
    pass


@seamkit.hookimpl
def on_completion(ctx, result):  # a hookimpl left out of __all__ by mistake
    pass
"""

PLAIN = """
from seamkit.plugins import lazy_module

__getattr__, __dir__, __all__ = lazy_module(__name__, {"Heavy": "._heavy"})
"""


@pytest.fixture
def package(tmp_path: Path) -> Iterator[str]:
    """A package ``lazy_pkg`` whose entry module uses `lazy_module`."""
    root = tmp_path / "lazy_pkg"
    (root / "_inner").mkdir(parents=True)
    (root / "__init__.py").write_text(ENTRY)
    (root / "_heavy.py").write_text("class Heavy: ...\n\ndef helper():\n    return 'help'\n")
    (root / "sub.py").write_text("VALUE = 1\n")
    (root / "plain.py").write_text(PLAIN)
    (root / "_inner" / "__init__.py").write_text("")
    (root / "_inner" / "_deep.py").write_text("from .._heavy import Heavy as Shared\n")
    sys.path.insert(0, str(tmp_path))
    try:
        yield "lazy_pkg"
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m == "lazy_pkg" or m.startswith("lazy_pkg.")]:
            del sys.modules[name]


def test_names_load_on_first_use_and_stay(package: str) -> None:
    module = importlib.import_module(package)
    assert f"{package}._heavy" not in sys.modules
    heavy = module.Heavy
    assert f"{package}._heavy" in sys.modules
    assert heavy is sys.modules[f"{package}._heavy"].Heavy
    assert vars(module)["Heavy"] is heavy  # kept: the next use is a plain look-up
    assert module.helper() == "help"


def test_a_submodule_a_computed_value_and_a_deeper_module(package: str) -> None:
    module = importlib.import_module(package)
    assert module.sub is sys.modules[f"{package}.sub"]
    assert module.computed == 42
    assert module.Shared is module.Heavy


def test_all_is_the_table_and_the_defined_names_sorted(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__all__ == sorted(
        ["Heavy", "Shared", "computed", "helper", "register_things", "sub"]
    )


def test_dir_adds_every_hookimpl_so_that_pluggy_finds_it(package: str) -> None:
    module = importlib.import_module(package)
    assert dir(module) == sorted([*module.__all__, "on_completion"])


def test_an_unknown_name_is_an_attribute_error_naming_the_module(package: str) -> None:
    module = importlib.import_module(package)
    with pytest.raises(AttributeError, match=r"module 'lazy_pkg' has no attribute 'Nope'"):
        module.Nope  # noqa: B018
    assert not hasattr(module, "Nope")


def test_a_module_that_is_not_a_package_resolves_against_its_package(package: str) -> None:
    module = importlib.import_module(f"{package}.plain")
    assert module.Heavy is importlib.import_module(f"{package}._heavy").Heavy


def test_it_returns_a_typed_triple() -> None:
    lazy = lazy_module(__name__, {"sys": ""}, defined=["test_it_returns_a_typed_triple"])
    assert isinstance(lazy, LazyModule)
    assert lazy.all == ["sys", "test_it_returns_a_typed_triple"]
    assert "test_it_returns_a_typed_triple" in lazy.dir()


def test_the_kernel_packages_use_it() -> None:
    import seamkit.plugins
    import seamkit.testing

    for module in (seamkit, seamkit.plugins, seamkit.testing):
        hook = vars(module)["__getattr__"]
        assert hook.__qualname__.startswith("lazy_module."), module.__name__


def test_version_is_computed_on_first_use() -> None:
    from importlib.metadata import version

    assert seamkit.__version__ == version("seamkit")


_IMPORT = dedent(
    """
    import sys
    import {module}
    print(",".join(sorted(m for m in sys.modules if m.startswith("seamkit"))))
    """
)


def test_import_seamkit_loads_the_helper_and_nothing_else_of_seamkit() -> None:
    import subprocess

    out = subprocess.run(
        [sys.executable, "-c", _IMPORT.format(module="seamkit")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert out.split(",") == ["seamkit", "seamkit._lazy"]
