"""The generated manifest reference (docs/manifest-reference.md) is current.

If ``test_the_committed_reference_is_current`` fails, regenerate the page:

    python docs/gen_reference.py
"""

from __future__ import annotations

import importlib.util
import re
import tomllib
from importlib import metadata
from pathlib import Path
from types import ModuleType

import pytest
from seamkit.plugins import Registry, load_plugins

from tests.conftest import entry_point

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "docs" / "manifest-reference.md"


def _first_party() -> frozenset[str]:
    """Entry-point names (group ``seamkit``) of the distributions under plugins/."""
    names: set[str] = set()
    for pyproject in sorted((ROOT / "plugins").glob("*/pyproject.toml")):
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
        names |= set(project.get("entry-points", {}).get("seamkit", {}))
    return frozenset(names)


FIRST_PARTY = _first_party()


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_reference", ROOT / "docs" / "gen_reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen = _generator()


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SEAMKIT_PLUGINS", "SEAMKIT_DISABLE_PLUGINS", "SEAMKIT_ENABLE_PREVIEW"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def first_party(clean_env: None) -> Registry:
    """The kernel's built-ins and the first-party plugins, nothing else installed."""
    eps = [ep for ep in metadata.entry_points(group="seamkit") if ep.name in FIRST_PARTY]
    return load_plugins(entry_points=eps)


def _kind_sections(text: str) -> dict[str, str]:
    """``anchor -> body`` of every kind section (tool, hook and refresh kinds)."""
    parts = re.split(r'^<a id="([^"]+)"></a>$', text, flags=re.M)
    return {
        anchor: body
        for anchor, body in zip(parts[1::2], parts[2::2], strict=True)
        if re.match(r"(?:tool|hook|refresh)-", anchor) and body.startswith("\n### `")
    }


def test_the_generator_agrees_on_the_first_party_plugins() -> None:
    assert gen.first_party_names() == FIRST_PARTY
    assert FIRST_PARTY, "no plugins found under plugins/"


def test_every_first_party_plugin_is_installed_and_loads(first_party: Registry) -> None:
    missing = FIRST_PARTY - set(first_party.plugins)
    assert not missing, f"first-party plugins not installed (run `uv sync`): {sorted(missing)}"
    assert not first_party.failed_plugins(), [p.as_dict() for p in first_party.failed_plugins()]


def test_the_committed_reference_is_current(first_party: Registry) -> None:
    fresh = gen.render(first_party)
    committed = REFERENCE.read_text(encoding="utf-8") if REFERENCE.exists() else ""
    assert committed == fresh, (
        "docs/manifest-reference.md is stale; regenerate it with `python docs/gen_reference.py`"
    )


def test_the_reference_says_it_is_generated_and_how(first_party: Registry) -> None:
    first_line = gen.render(first_party).splitlines()[0]
    assert "generated" in first_line.lower() and "python docs/gen_reference.py" in first_line


def test_every_installed_kind_has_a_section_with_its_kind_row(first_party: Registry) -> None:
    sections = _kind_sections(gen.render(first_party))
    expected = {
        f"{category}-{name}"
        for category in ("tool", "hook", "refresh")
        for name in first_party.kinds_of(category, preview=False)
    }
    assert set(sections) == expected
    for anchor, body in sections.items():
        name = anchor.split("-", 1)[1]
        assert f"| `kind` | `{name}` | required |" in body, anchor


def test_the_output_is_deterministic(first_party: Registry, clean_env: None) -> None:
    again = load_plugins(
        entry_points=[ep for ep in metadata.entry_points(group="seamkit") if ep.name in FIRST_PARTY]
    )
    assert gen.render(first_party) == gen.render(again)


@pytest.mark.usefixtures("fixture_plugins", "clean_env")
def test_a_hook_kind_gets_its_events_common_fields_and_refresh_union() -> None:
    eps = [ep for ep in metadata.entry_points(group="seamkit") if ep.name in FIRST_PARTY]
    registry = load_plugins(entry_points=[*eps, entry_point("note", "seamkit_fixture_note")])
    text = gen.render(registry)
    note = _kind_sections(text)["hook-note"]
    assert "`kind: note`" in note and "events: `on_request_start`" in note
    assert "| `kind` | `note` | required |" in note
    assert "| `event` | one of: `on_request_start` | required, unless `events` is given |" in note
    assert (
        "| `events` | list of: `on_request_start` (at least one, each at most once) "
        "| instead of `event` |"
    ) in note
    for common in ("name", "timeout_seconds", "on_error", "match"):
        assert f"| `{common}` |" in note
    assert "| `on_error` | one of: `skip`, `fail` (or null) |" in note
    assert "| `text` | string | required |" in note
    assert "any [refresh condition](#refresh-conditions) or null" in note
    assert "| `hooks` | list of any [hook kind](#hook-kinds) |" in text
    # ttl is now reachable from the schema, so the "not in the schema" note is gone.
    assert "does not appear in `seamkit schema`" not in _kind_sections(text)["refresh-ttl"]


def test_check_mode_reports_a_stale_file(tmp_path: Path, clean_env: None) -> None:
    target = tmp_path / "reference.md"
    assert gen.main(["--check", "--output", str(target)]) == 1
    assert gen.main(["--output", str(target)]) == 0
    assert gen.main(["--check", "--output", str(target)]) == 0
    target.write_text(target.read_text(encoding="utf-8") + "edited\n", encoding="utf-8")
    assert gen.main(["--check", "--output", str(target)]) == 1


# --- the guide's API index and module map ----------------------------------------


def _api_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_api", ROOT / "docs" / "gen_api.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_api_index_is_current_and_covers_every_public_name() -> None:
    gen_api = _api_generator()
    assert gen_api.main(["--check"]) == 0, "regenerate it with `python docs/gen_api.py`"
    guide = (ROOT / "docs" / "guide.md").read_text(encoding="utf-8")
    for module_name in gen_api.MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            assert f"| `{name}` |" in guide, f"{module_name}.{name} is not in the API index"


def test_an_undocumented_public_name_fails_the_generator() -> None:
    gen_api = _api_generator()
    undocumented = ModuleType("fake")
    undocumented.thing = 42  # type: ignore[attr-defined]
    with pytest.raises(gen_api.Undocumented, match=r"fake\.thing"):
        gen_api._doc(undocumented, "thing")


def test_the_module_map_lists_every_kernel_module() -> None:
    guide = (ROOT / "docs" / "guide.md").read_text(encoding="utf-8")
    section = guide.split("### Module map", 1)[1].split("\n### ", 1)[0]
    package = ROOT / "core" / "src" / "seamkit"
    for path in sorted(package.glob("_*.py")):
        if path.name != "__init__.py":
            assert f"| `{path.stem}` |" in section, f"{path.stem} is not in the module map"
    for path in sorted((package / "_manifest").glob("_*.py")):
        if path.name != "__init__.py":
            assert f"`{path.stem}`" in section, f"_manifest/{path.stem} is not in the module map"
