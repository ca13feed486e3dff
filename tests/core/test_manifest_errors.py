"""The errors of common manifest mistakes, checked as a user reads them."""

from __future__ import annotations

from pathlib import Path

import pytest
from seamkit import AppConfig, ManifestError, Secret
from seamkit.plugins import load_plugins

from tests.conftest import entry_point, installed_entry_points

pytestmark = pytest.mark.usefixtures("fixture_plugins")


@pytest.fixture
def registry():  # type: ignore[no-untyped-def]
    return load_plugins(
        entry_points=[*installed_entry_points(), entry_point("note", "seamkit_fixture_note")]
    )


def errors(tmp_path: Path, registry, text: str, monkeypatch=None) -> list[str]:  # type: ignore[no-untyped-def]
    path = tmp_path / "app.yaml"
    path.write_text(text)
    with pytest.raises(ManifestError) as info:
        AppConfig.load(path, registry=registry)
    return info.value.format().splitlines()


BASE = "name: demo\nmodel: scripted:s.yaml\n"


def test_unknown_kind_lists_the_installed_kinds(tmp_path, registry) -> None:  # type: ignore[no-untyped-def]
    lines = errors(tmp_path, registry, BASE + "hooks:\n  - kind: zzz\n    event: on_pre_llm\n")
    assert lines[0].endswith("app.yaml:4:11: hooks[0].kind: unknown hook kind 'zzz'")
    assert lines[1] == (
        "  hint: installed hook kinds: approval, guard, note, tool_call; "
        "`seamkit plugins` lists every installed plugin and its kinds"
    )


def test_close_kind_gets_a_did_you_mean(tmp_path, registry) -> None:  # type: ignore[no-untyped-def]
    lines = errors(tmp_path, registry, BASE + "hooks:\n  - kind: noet\n    event: on_pre_llm\n")
    assert "did you mean 'note'?" in lines[1]


def test_unsupported_event_lists_the_supported(tmp_path, registry) -> None:  # type: ignore[no-untyped-def]
    lines = errors(
        tmp_path, registry, BASE + "hooks:\n  - kind: note\n    event: on_pre_llm\n    text: hi\n"
    )
    assert lines[0].endswith(
        "app.yaml:5:12: hooks[0].event: hook kind 'note' does not support event on_pre_llm"
    )
    assert lines[1] == "  hint: it supports: on_request_start"


def test_wrong_type_says_what_was_given(tmp_path, registry) -> None:  # type: ignore[no-untyped-def]
    lines = errors(tmp_path, registry, BASE + "settings:\n  max_turns: lots\n")
    assert lines[0].endswith(
        "app.yaml:4:14: settings.max_turns: Input should be a valid integer, unable to parse "
        'string as an integer, got "lots"'
    )


def test_missing_field_names_it(tmp_path, registry) -> None:  # type: ignore[no-untyped-def]
    lines = errors(
        tmp_path, registry, BASE + "hooks:\n  - kind: note\n    event: on_request_start\n"
    )
    assert lines[0].endswith("app.yaml:4:5: hooks[0].text: required field 'text' is missing")
    assert lines[1] == "  hint: add 'text' to this entry"


def test_extra_field_suggests_the_right_one(tmp_path, registry) -> None:  # type: ignore[no-untyped-def]
    lines = errors(
        tmp_path,
        registry,
        BASE + "hooks:\n  - kind: note\n    event: on_request_start\n"
        "    text: hi\n    timeout: 3\n",
    )
    assert lines[0].endswith("app.yaml:7:5: hooks[0].timeout: unknown field 'timeout'")
    assert lines[1].startswith("  hint: did you mean 'timeout_seconds'? allowed fields: ")


def test_missing_environment_variable_is_named(tmp_path, registry, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("SEAMKIT_TEST_UNSET", raising=False)
    lines = errors(tmp_path, registry, "name: ${env:SEAMKIT_TEST_UNSET}\nmodel: scripted:s\n")
    assert lines[0].endswith(
        "app.yaml:1:7: name: environment variable SEAMKIT_TEST_UNSET is not set"
    )
    assert "${env:SEAMKIT_TEST_UNSET:-value}" in lines[1]


def test_every_problem_is_reported_at_once(tmp_path, registry) -> None:  # type: ignore[no-untyped-def]
    lines = errors(
        tmp_path,
        registry,
        "name: demo\nmodel: nowhere:x\nhooks:\n  - kind: nope\n    event: on_pre_llm\n"
        "settings:\n  max_turns: 0\n",
    )
    joined = "\n".join(lines)
    assert "model: unknown model provider 'nowhere'" in joined
    assert "hooks[0].kind: unknown hook kind 'nope'" in joined
    assert "settings.max_turns: Input should be greater than 0" in joined


def test_interpolation_defaults_and_secrets(registry, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("APP_NAME", "from-env")
    monkeypatch.setenv("TOKEN", "sk-canary")
    config = AppConfig.load(
        {
            "name": "${env:APP_NAME}",
            "model": "scripted:${env:NOPE:-s.yaml}",
            "preamble": "cost: $${env:X}",
        },
        registry=registry,
    )
    assert config.name == "from-env" and config.model.spec == "scripted:s.yaml"
    assert config.preamble == "cost: ${env:X}"
    from seamkit._manifest._interpolate import interpolate

    data, problems = interpolate({"args": {"key": "Bearer ${secret:TOKEN}"}})
    secret = data["args"]["key"]
    assert isinstance(secret, Secret) and not problems
    assert secret.get_secret_value() == "Bearer sk-canary"
    assert secret.source == "Bearer ${secret:TOKEN}"


def test_a_secret_in_a_plain_text_field_is_refused_without_leaking(registry, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("TOKEN", "sk-canary")
    with pytest.raises(ManifestError) as info:
        AppConfig.load({"name": "${secret:TOKEN}", "model": "scripted:s"}, registry=registry)
    text = info.value.format()
    assert "sk-canary" not in text and "use ${env:VAR}" in text


def test_refresh_condition_takes_the_installed_union(registry) -> None:  # type: ignore[no-untyped-def]
    config = AppConfig.load(
        {
            "name": "a",
            "model": "scripted:s",
            "hooks": [
                {
                    "kind": "note",
                    "event": "on_request_start",
                    "text": "x",
                    "refresh_condition": {"kind": "ttl", "ttl_minutes": 5},
                }
            ],
        },
        registry=registry,
    )
    assert type(config.hooks[0].refresh_condition).__name__ == "TTLRefresh"
    with pytest.raises(ManifestError) as info:
        AppConfig.load(
            {
                "name": "a",
                "model": "scripted:s",
                "hooks": [
                    {
                        "kind": "note",
                        "event": "on_request_start",
                        "text": "x",
                        "refresh_condition": {"kind": "hourly"},
                    }
                ],
            },
            registry=registry,
        )
    problem = info.value.problems[0]
    assert problem.path == "hooks[0].refresh_condition.kind"
    assert problem.message == "unknown refresh condition 'hourly'"
    assert problem.hint == (
        "installed refresh conditions: daily, ttl; "
        "`seamkit plugins` lists every installed plugin and its kinds"
    )


def test_common_hook_rules(registry) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ManifestError) as info:
        AppConfig.load(
            {
                "name": "a",
                "model": "scripted:s",
                "hooks": [
                    {"kind": "note", "event": "on_request_start", "text": "x", "match": ["a*"]},
                    {
                        "kind": "note",
                        "event": "on_request_start",
                        "text": "x",
                        "timeout_seconds": 0,
                    },
                ],
            },
            registry=registry,
        )
    by_path = {p.path: p for p in info.value.problems}
    match = by_path["hooks[0].match"]
    assert match.message == "'match' is only allowed on tool events, not on on_request_start"
    assert "on_pre_tool_use" in (match.hint or "")
    assert "greater than 0" in by_path["hooks[1].timeout_seconds"].message


def test_missing_variable_is_reported_once_with_a_scheme_matching_hint(registry, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.delenv("NOPE_TURNS", raising=False)
    monkeypatch.delenv("NOPE_KEY", raising=False)
    with pytest.raises(ManifestError) as info:
        AppConfig.load(
            {
                "name": "a",
                "model": "scripted:s",
                "settings": {"max_turns": "${env:NOPE_TURNS}"},
                "preamble": "${secret:NOPE_KEY}",
            },
            registry=registry,
        )
    problems = {p.path: p for p in info.value.problems}
    assert len(info.value.problems) == 2
    assert problems["settings.max_turns"].message == "environment variable NOPE_TURNS is not set"
    assert "${secret:NOPE_KEY:-value}" in (problems["preamble"].hint or "")


def test_preview_kinds_are_hidden_unless_enabled(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from typing import Literal

    import seamkit
    from seamkit._manifest import manifest_schema
    from seamkit.plugins import PluginInfo, add_plugin

    class BetaConfig(seamkit.HookConfig):
        kind: Literal["beta"] = "beta"

    class Plugin:
        @seamkit.hookimpl
        def register_hook_kinds(self, register):  # type: ignore[no-untyped-def]
            register(BetaConfig, lambda c, a: None, events={"on_pre_llm"}, preview=True)

    registry = load_plugins(entry_points=[])
    add_plugin(registry, Plugin(), PluginInfo(name="beta"))
    data = {"name": "a", "model": "scripted:s", "hooks": [{"kind": "beta", "event": "on_pre_llm"}]}
    monkeypatch.delenv("SEAMKIT_ENABLE_PREVIEW", raising=False)
    assert "BetaConfig" not in str(manifest_schema(registry))
    with pytest.raises(ManifestError) as info:
        AppConfig.load(data, registry=registry)
    assert info.value.problems[0].message == "hook kind 'beta' is a preview"
    assert "SEAMKIT_ENABLE_PREVIEW=1" in (info.value.problems[0].hint or "")
    monkeypatch.setenv("SEAMKIT_ENABLE_PREVIEW", "1")
    assert "BetaConfig" in str(manifest_schema(registry))
    assert AppConfig.load(data, registry=registry).hooks[0].kind == "beta"


def test_yaml_syntax_error_has_a_position(tmp_path, registry) -> None:  # type: ignore[no-untyped-def]
    lines = errors(tmp_path, registry, "name: [unclosed\nmodel: x\n")
    assert "invalid YAML" in lines[0] and "app.yaml:" in lines[0]


def test_json_manifest_errors_have_positions(tmp_path, registry) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "app.json"
    path.write_text(
        '{\n  "name": "a",\n  "model": "scripted:s",\n  "settings": {"max_turns": -1}\n}'
    )
    with pytest.raises(ManifestError) as info:
        AppConfig.load(path, registry=registry)
    assert info.value.problems[0].line == 4
