"""The public surface: one `__all__`, everything in it importable, private
modules behind underscores."""

from __future__ import annotations

import importlib
import pkgutil

import seamkit

PUBLIC_MODULES = {
    "seamkit",
    "seamkit.flow",
    "seamkit.hookspecs",
    "seamkit.injection",
    "seamkit.plugins",
    "seamkit.stream",
    "seamkit.testing",
}


def test_every_name_in_all_resolves() -> None:
    for name in seamkit.__all__:
        assert getattr(seamkit, name) is not None, name


def test_all_is_what_dir_offers_and_nothing_else_is_public() -> None:
    assert sorted(dir(seamkit)) == sorted(seamkit.__all__)


def test_plugin_author_names_live_in_submodules_not_the_top_level() -> None:
    for name in (
        "Dispatched",
        "ConfiguredHook",
        "resolve_tools",
        "Registry",
        "BuildContext",
        "load_plugins",
        "synthetic_id",
    ):
        assert name not in seamkit.__all__, name
    from seamkit import flow, injection, plugins

    assert "Dispatched" in flow.__all__
    assert {"BuildContext", "ConfiguredHook", "Registry", "load_plugins"} <= set(plugins.__all__)
    assert {"inject_tool_result", "synthetic_id", "is_fresh", "remember"} <= set(injection.__all__)


def test_all_is_sorted_and_unique() -> None:
    assert len(set(seamkit.__all__)) == len(seamkit.__all__)
    assert list(seamkit.__all__) == sorted(seamkit.__all__)


def test_modules_other_than_the_public_ones_are_private() -> None:
    for info in pkgutil.walk_packages(seamkit.__path__, "seamkit."):
        parts = info.name.split(".")
        public = info.name in PUBLIC_MODULES or any(
            info.name.startswith(p + ".") for p in PUBLIC_MODULES - {"seamkit"}
        )
        assert public or parts[-1].startswith("_"), f"{info.name} should be private"


def test_public_modules_declare_all() -> None:
    for name in PUBLIC_MODULES - {"seamkit"}:
        module = importlib.import_module(name)
        assert hasattr(module, "__all__"), name
        for item in module.__all__:
            assert hasattr(module, item), f"{name}.{item}"


def test_unknown_attribute_is_an_attribute_error() -> None:
    try:
        seamkit.DoesNotExist  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "DoesNotExist" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_importing_seamkit_does_not_import_heavy_modules() -> None:
    import subprocess
    import sys

    code = (
        "import sys, seamkit; heavy = [m for m in ('click', 'yaml', 'pydantic', 'httpx') "
        "if m in sys.modules]; print(','.join(heavy))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == ""
