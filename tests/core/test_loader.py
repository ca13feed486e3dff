"""Discovery in-process: isolation of failures, enable/disable, duplicates, API version.

(The test that installs real distributions is tests/test_distributions.py.)
"""

from __future__ import annotations

import logging

import pytest
from seamkit import AppConfig, ManifestError
from seamkit.plugins import load_plugins

from tests.conftest import entry_point, installed_entry_points

pytestmark = pytest.mark.usefixtures("fixture_plugins")

ALL = [
    entry_point("note", "seamkit_fixture_note"),
    entry_point("broken", "seamkit_fixture_broken"),
    entry_point("ttl_dupe", "seamkit_fixture_dupe"),
    entry_point("future", "seamkit_fixture_future"),
]


def load(*extra_names: str) -> object:
    eps = installed_entry_points() + [e for e in ALL if e.name in extra_names]
    return load_plugins(entry_points=eps)


def test_a_plugin_that_fails_to_import_is_recorded_and_others_load(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="seamkit"):
        registry = load("note", "broken")
    broken = registry.plugins["broken"]
    assert broken.error is not None and "ModuleNotFoundError" in broken.error
    assert "seamkit_dependency_that_is_not_installed" in broken.error
    assert registry.plugins["note"].loaded and registry.kind("hook", "note") is not None
    assert registry.kind("refresh", "ttl") is not None
    warnings = [r for r in caplog.records if "broken" in r.getMessage()]
    assert len(warnings) == 1


def test_a_duplicate_kind_is_a_load_error_of_the_later_plugin() -> None:
    registry = load("ttl_dupe")
    assert registry.kind("refresh", "ttl").plugin == "ttl"  # type: ignore[union-attr]
    error = registry.plugins["ttl_dupe"].error or ""
    assert "'ttl' is already registered by plugin 'ttl'" in error


def test_an_api_mismatch_is_a_load_error_not_a_half_loaded_plugin() -> None:
    registry = load("future")
    assert "__seamkit_api__ = 2" in (registry.plugins["future"].error or "")
    assert registry.kind("hook", "future") is None
    names = [registry.plugin_manager.get_name(p) for p in registry.plugin_manager.get_plugins()]
    assert "future" not in names


def test_seamkit_plugins_loads_only_the_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEAMKIT_PLUGINS", "note")
    registry = load("note", "broken")
    assert set(registry.plugins) == {"seamkit", "note"}
    assert registry.kind("tool", "function") is not None  # built-ins always load


def test_seamkit_disable_plugins_skips(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEAMKIT_DISABLE_PLUGINS", "broken, ttl")
    registry = load("note", "broken")
    assert "broken" not in registry.plugins and "ttl" not in registry.plugins
    assert registry.plugins["note"].loaded


def test_manifest_using_a_kind_of_a_failed_plugin_says_which_and_why() -> None:
    registry = load("broken", "note")
    data = {
        "name": "a",
        "model": "scripted:x",
        "hooks": [{"kind": "broken", "event": "on_request_start"}],
    }
    with pytest.raises(ManifestError) as info:
        AppConfig.load(data, registry=registry)
    problem = info.value.problems[0]
    assert problem.path == "hooks[0].kind"
    assert "plugin 'broken'" in problem.message and "failed to load" in problem.message
    assert "ModuleNotFoundError" in problem.message


def test_hookimpls_are_listed_and_unknown_hook_names_rejected() -> None:
    registry = load("note")
    assert registry.plugins["note"].hookimpls == ["on_completion"]

    class Typo:
        from seamkit import hookimpl

        @hookimpl
        def on_pre_llmm(self, ctx, request):  # type: ignore[no-untyped-def]
            return None

    from seamkit.plugins import PluginInfo, add_plugin

    info = add_plugin(registry, Typo(), PluginInfo(name="typo"))  # type: ignore[arg-type]
    assert "no hookspec of that name" in (info.error or "")


def test_a_plugin_that_raises_while_registering_registers_nothing() -> None:
    from typing import Literal

    import seamkit
    from seamkit.plugins import PluginInfo, add_plugin

    class HalfConfig(seamkit.HookConfig):
        kind: Literal["half"] = "half"

    class Half:
        @seamkit.hookimpl
        def register_hook_kinds(self, register):  # type: ignore[no-untyped-def]
            register(HalfConfig, lambda c, a: None, events={"on_pre_llm"})
            raise RuntimeError("boom")

    registry = load()
    info = add_plugin(registry, Half(), PluginInfo(name="half"))
    assert "RuntimeError: boom" in (info.error or "")
    assert registry.kind("hook", "half") is None


def test_bad_registrations_are_reported() -> None:
    from typing import Literal

    import seamkit
    from seamkit.plugins import PluginInfo, add_plugin

    class NotLiteral(seamkit.HookConfig):
        kind: str = "x"

    class Plugin:
        @seamkit.hookimpl
        def register_hook_kinds(self, register):  # type: ignore[no-untyped-def]
            register(NotLiteral, lambda c, a: None, events={"on_pre_llm"})

    registry = load()
    info = add_plugin(registry, Plugin(), PluginInfo(name="p"))
    assert "must be a Literal" in (info.error or "")

    class NoEvents(seamkit.HookConfig):
        kind: Literal["noev"] = "noev"

    class Plugin2:
        @seamkit.hookimpl
        def register_hook_kinds(self, register):  # type: ignore[no-untyped-def]
            register(NoEvents, lambda c, a: None, events={"on_nothing"})

    info = add_plugin(registry, Plugin2(), PluginInfo(name="p2"))
    assert "on_nothing" in (info.error or "")
