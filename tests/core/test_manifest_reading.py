"""The reading path's errors as a user reads them (``seamkit validate``), for
each case issue 17 named: the exact words, place and hint. The classes
behind them are proved with generated inputs in
``tests/properties/test_manifest_reading_laws.py`` and the fuzzer."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from seamkit import AppConfig, ManifestError
from seamkit._cli._group import cli
from seamkit._document import ALIAS_VARIABLE, DEPTH_VARIABLE

from tests.properties._manifests import bomb

HEAD = "name: demo\nmodel: scripted:s.yaml\n"


def validate(path: Path) -> list[str]:
    """What ``seamkit validate`` prints for ``path`` (exit status 1)."""
    result = CliRunner().invoke(cli, ["validate", str(path)])
    assert result.exit_code == 1, result.output
    return result.output.splitlines()


def written(tmp_path: Path, text: str | bytes, name: str = "app.yaml") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def test_nesting_30000_deep_is_one_located_error(tmp_path: Path) -> None:
    path = written(tmp_path, HEAD + "settings: " + "[" * 30_000 + "]" * 30_000 + "\n")
    assert validate(path)[:2] == [
        f"{path}:3:110: settings[0][0][0]: nested more than 100 levels deep",
        f"  hint: flatten this value; {DEPTH_VARIABLE} raises the limit (at most 200)",
    ]


def test_the_depth_limit_is_a_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = written(tmp_path, HEAD + "x: " + "[" * 150 + "]" * 150 + "\n")
    with pytest.raises(ManifestError, match="nested more than 100 levels deep"):
        AppConfig.load(path)
    monkeypatch.setenv(DEPTH_VARIABLE, "160")
    with pytest.raises(ManifestError, match="unknown field 'x'"):
        AppConfig.load(path)


def test_a_billion_laughs_stops_at_the_alias_past_the_budget(tmp_path: Path) -> None:
    text = HEAD + "x:\n" + "".join(f"  {line}\n" for line in bomb(8, 10).splitlines())
    path = written(tmp_path, text)
    assert validate(path)[:2] == [
        f"{path}:8:27: x.a4[3]: YAML aliases repeat more than 10,000 values in all "
        "(*a3 here repeats 2,111)",
        "  hint: write the values out, or nest fewer aliases inside each other; "
        f"{ALIAS_VARIABLE} raises the limit",
    ]


def test_an_alias_budget_of_zero_forbids_aliases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ALIAS_VARIABLE, "0")
    path = written(tmp_path, HEAD + "x: &a 1\ny: *a\n")
    with pytest.raises(ManifestError, match="YAML aliases repeat more than 0 values"):
        AppConfig.load(path)


def test_thousands_of_unknown_keys_are_each_placed(tmp_path: Path) -> None:
    path = written(tmp_path, HEAD + "".join(f"k{i}: {i}\n" for i in range(4_000)))
    lines = [line for line in validate(path) if not line.startswith("  hint")]
    assert lines[0] == f"{path}:3:1: k0: unknown field 'k0'"
    assert lines[3_999] == f"{path}:4002:1: k3999: unknown field 'k3999'"
    assert lines[-1] == f"{path}: 4000 errors"


def test_a_file_that_is_not_utf8_names_the_byte_and_its_place(tmp_path: Path) -> None:
    path = written(tmp_path, HEAD.encode() + "preamble: café\n".encode("latin-1"))
    assert validate(path)[:2] == [
        f"{path}:3:14: the file is not UTF-8 text: byte 0xe9 here cannot be read "
        "(invalid continuation byte)",
        "  hint: save the file as UTF-8; text in another encoding (Latin-1, Windows-1252) "
        "must be converted first",
    ]


def test_a_duplicate_key_is_an_error_at_the_second(tmp_path: Path) -> None:
    path = written(tmp_path, HEAD + "settings:\n  max_turns: 3\n  max_turns: 4\n")
    assert validate(path)[:2] == [
        f"{path}:5:3: settings.max_turns: duplicate key 'max_turns' (first at line 4, column 3)",
        "  hint: a mapping takes each key once: remove one of them, or merge their values",
    ]


@pytest.mark.parametrize(
    ("value", "message", "fix"),
    [
        (
            "${env:X:default}",
            "is missing the '-' of ':-' before its default",
            "write ${env:X:-default}",
        ),
        ("${env:}", "names no variable", "write ${env:NAME}"),
        ("${env:1BAD}", "does not name a variable", "a variable's name is letters"),
        ("${env:X", "is not closed", "end it with }"),
        ("${env:A:-${env:B}}", "holds another placeholder", "placeholders do not nest"),
        ("${foo}", "has an unknown scheme 'foo'", "the forms are"),
    ],
)
def test_each_malformed_placeholder_of_the_issue_is_an_error_of_its_field(
    tmp_path: Path, value: str, message: str, fix: str
) -> None:
    path = written(tmp_path, HEAD + f"preamble: '{value}'\n")
    first, hint = validate(path)[:2]
    shown = value if value != "${env:A:-${env:B}}" else "${env:A:-${env:B}"
    assert first == f"{path}:3:11: preamble: malformed placeholder '{shown}': it {message}"
    assert hint.startswith(f"  hint: {fix}")
    assert hint.endswith(
        "${env:NAME}, ${env:NAME:-default}, ${secret:NAME} or ${secret:NAME:-default}; "
        "write $${ for a literal ${"
    )


def test_a_misspelt_tool_call_argument_is_placed_at_its_key(tmp_path: Path) -> None:
    (tmp_path / "lookups.py").write_text(
        "import seamkit\n\n\n@seamkit.tool\ndef search(query: str, limit: int = 5) -> str:\n"
        '    """Search."""\n    return "ok"\n'
    )
    (tmp_path / "s.yaml").write_text("- text: ok\n")
    path = written(
        tmp_path,
        HEAD
        + "tools: [{kind: function, ref: lookups}]\n"
        + "hooks:\n  - kind: tool_call\n    event: on_request_start\n    tool_name: search\n"
        + "    arguments: {qeury: '{{ user_message }}', limit: ten}\n",
    )
    assert validate(path) == [
        f"{path}:8:17: hooks[0].arguments.qeury: unknown argument 'qeury' of tool 'search'",
        "  hint: did you mean 'query'? its arguments: limit, query",
        f"{path}:8:16: hooks[0].arguments: missing required argument 'query' of tool 'search'",
        "  hint: did you mean 'query' where it says 'qeury'?",
        f"{path}:8:53: hooks[0].arguments.limit: does not fit tool 'search': 'ten' is not of "
        "type 'integer'",
        '  hint: the tool\'s schema here: {"default": 5, "type": "integer"}',
        f"{path}: 3 errors",
    ]


def test_a_limit_that_is_not_a_number_names_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ALIAS_VARIABLE, "many")
    path = written(tmp_path, HEAD)
    with pytest.raises(ManifestError) as info:
        AppConfig.load(path)
    assert info.value.format() == (
        f"{path}: environment variable {ALIAS_VARIABLE} must be a whole number of at least 0, "
        "not 'many'\n  hint: unset it for the default (10000)"
    )
    assert os.environ[ALIAS_VARIABLE] == "many"


def test_json_manifests_get_the_same_limits_and_checks(tmp_path: Path) -> None:
    path = written(tmp_path, '{"name": "a", "model": "scripted:s",\n "name": "b"}', "app.json")
    assert validate(path)[0] == (
        f"{path}:2:2: name: duplicate key 'name' (first at line 1, column 2)"
    )
    deep = "[" * 300 + "]" * 300
    path = written(
        tmp_path, '{"name": "a", "model": "scripted:s",\n "x": ' + deep + "}", "app.json"
    )
    assert validate(path)[0] == f"{path}:2:106: x[0][0][0]: nested more than 100 levels deep"


@pytest.mark.parametrize("value", ["${secret:KEY:sk-live-123}", "${secret:sk-live-123}"])
def test_a_malformed_secret_placeholder_never_shows_its_text(tmp_path: Path, value: str) -> None:
    path = written(tmp_path, HEAD + f"preamble: '{value}'\n")
    output = "\n".join(validate(path))
    assert "malformed placeholder '${secret:" in output
    assert "live-123" not in output
