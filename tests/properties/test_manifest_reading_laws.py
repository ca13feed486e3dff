"""The laws of reading a manifest, one class of input at a time, each with
an oracle computed from the generated input: where the problem must be, and
what it must say.

- nesting: deeper than the limit is one problem at the first collection past
  it; up to the limit, nothing about depth (whatever the style, however deep);
- aliases: rejected exactly when the values they repeat add up past the limit,
  at the alias that goes past it;
- duplicate keys: every repeat of a key (as YAML reads it: ``1`` and
  ``0x1`` are one key) is a problem at the repeat, naming the first;
- encodings: bytes that are not UTF-8 are one problem at the first such byte;
- placeholders: well-formed ones interpolate to what they say, anything else
  starting with ``${`` is a problem naming the field;
- placement: each of thousands of problems is at its own line, from one parse.

CI runs 1,000 examples a law (100 for placement, whose examples are large);
``HYPOTHESIS_PROFILE=deep`` runs 100,000, each within 2 s.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from hypothesis import assume, given, strategies as st
from seamkit import Problem
from seamkit._document import ALIAS_VARIABLE, DEPTH_VARIABLE
from seamkit._manifest._interpolate import interpolate

from tests.properties._manifests import DEEP, bomb, load, nested, scaled

# The deep profile runs for much longer than pytest-timeout allows a test;
# each example has its own 2 s deadline there instead.
pytestmark = [pytest.mark.timeout(0)] if DEEP else []

HEAD = "name: demo\nmodel: scripted:s.yaml\n"  # two lines: what is tested starts on line 3


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("laws")


def written(folder: Path, data: bytes | str, suffix: str = ".yaml") -> Path:
    path = folder / f"app{suffix}"
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


@contextmanager
def environ(**values: str | None) -> Iterator[None]:
    """``os.environ`` with ``values`` set (``None``: unset) for the block."""
    saved = {k: os.environ.get(k) for k in values}
    try:
        for key, value in values.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def only_unknown(problems: list[Problem], key: str) -> bool:
    """Whether the one problem is the unknown top-level field ``key`` (what a
    manifest with an extra field that reads well gets)."""
    return [p.message for p in problems] == [f"unknown field '{key}'"]


# --- nesting -------------------------------------------------------------------


def deepest_start(style: str, level: int) -> tuple[int, int]:
    """Line and column where the collection at ``level`` of ``x: <nested>``
    starts (level 1 is the manifest's own mapping, 2 the value of ``x``)."""
    k = level - 1  # the k-th collection of the value
    if style == "flow-list":
        return 3, 3 + k  # "x: [[[" : the first '[' is column 4
    if style == "flow-map":
        return 3, 4 + 4 * (k - 1)  # "x: {a: {a: "
    if style == "block-list":
        return 4, 3 + 2 * (k - 1)  # "  - - - 1"
    return 3 + k, 2 + k  # "  a:" then one more space each line


@scaled()
@given(
    style=st.sampled_from(["flow-list", "flow-map", "block-list", "block-map"]),
    depth=st.integers(1, 210) | st.integers(1, 100_000),
    limit=st.none() | st.integers(1, 200),
    data=st.data(),
)
def test_nesting_past_the_limit_is_one_problem_at_the_first_collection_past_it(
    folder: Path, style: str, depth: int, limit: int | None, data: st.DataObject
) -> None:
    if style == "block-map":
        depth = data.draw(st.integers(1, 1_000), label="block depth")  # the text grows as n^2
    with environ(**{DEPTH_VARIABLE: None if limit is None else str(limit)}):
        problems = load(written(folder, HEAD + f"x: {nested(depth, style)}\n"))
    allowed = 100 if limit is None else limit
    if 1 + depth <= allowed:
        assert only_unknown(problems, "x"), problems
        return
    (problem,) = problems
    assert problem.message == f"nested more than {allowed} levels deep"
    assert (problem.line, problem.column) == deepest_start(style, allowed + 1), problem
    assert DEPTH_VARIABLE in (problem.hint or "") or allowed == 200


def test_an_out_of_range_limit_is_a_problem_naming_the_variable(folder: Path) -> None:
    for value in ("0", "201", "lots", "-3"):
        with environ(**{DEPTH_VARIABLE: value}), pytest.raises(Exception) as info:
            load(written(folder, HEAD))
        assert f"environment variable {DEPTH_VARIABLE} must be a whole number from 1 to 200" in (
            str(info.value)
        )


# --- aliases -------------------------------------------------------------------


def bomb_oracle(levels: int, width: int, limit: int) -> tuple[int, int, int] | None:
    """Where a `bomb` under ``x:`` (indented two spaces, from line 4) goes
    past ``limit`` values repeated: ``(line, column, total)``; ``None`` if it
    never does. An anchor ``a{i}`` holds ``1 + width * size(a{i-1})``."""
    size = 2  # a0: [lol]
    total = 0
    for level in range(1, levels + 1):
        for j in range(width):
            total += size
            if total > limit:
                prefix = f"  a{level}: &a{level} ["
                column = len(prefix) + j * len(f"*a{level - 1}, ") + 1
                return 4 + level, column, total
        size = 1 + width * size
    return None


@scaled()
@given(
    levels=st.integers(1, 12),
    width=st.integers(1, 10),
    limit=st.none() | st.integers(0, 20_000),
)
def test_aliases_are_rejected_exactly_when_they_repeat_too_much(
    folder: Path, levels: int, width: int, limit: int | None
) -> None:
    text = HEAD + "x:\n" + "".join("  " + line + "\n" for line in bomb(levels, width).splitlines())
    with environ(**{ALIAS_VARIABLE: None if limit is None else str(limit)}):
        problems = load(written(folder, text))
    allowed = 10_000 if limit is None else limit
    expected = bomb_oracle(levels, width, allowed)
    if expected is None:
        assert only_unknown(problems, "x"), problems
        return
    (problem,) = problems
    assert problem.message.startswith(f"YAML aliases repeat more than {allowed:,} values")
    assert (problem.line, problem.column) == expected[:2], (problem, expected)


@scaled()
@given(
    form=st.sampled_from(["[1, *r]", "{a: *r}", "[[*r]]", "{k: [1, {j: *r}]}"]),
    where=st.integers(0, 5),
)
def test_an_alias_inside_what_it_repeats_is_a_problem_at_the_alias(
    folder: Path, form: str, where: int
) -> None:
    text = HEAD + "x: " + "[" * where + f"&r {form}" + "]" * where + "\n"
    (problem,) = load(written(folder, text))
    assert problem.message.startswith("alias *r is inside the value it repeats")
    assert (problem.line, problem.column) == (3, text.splitlines()[2].index("*r") + 1)


# --- duplicate keys ----------------------------------------------------------------

KEYS = ["a", "b", "name", "1", "0x1", "01", "true", "yes", "on", "null", "~", "'a'", '"b"']


@scaled()
@given(keys=st.lists(st.sampled_from(KEYS), min_size=1, max_size=25), nested_in=st.booleans())
def test_every_repeated_key_is_a_problem_at_the_repeat(
    folder: Path, keys: list[str], nested_in: bool
) -> None:
    indent = "  " if nested_in else ""
    body = "".join(f"{indent}{k}: {i}\n" for i, k in enumerate(keys))
    text = "x:\n" + body if nested_in else body
    first = 1 if nested_in else 0  # keys start on line 1 (or 2, under x:)
    seen: dict[object, int] = {}
    expected = []
    for i, key in enumerate(keys):
        value = next(iter(yaml.safe_load(f"{key}: 0")))  # the key as YAML reads it
        line = first + i + 1
        if value in seen:
            shown = key.strip("'\"")
            expected.append(
                (
                    f"duplicate key '{shown}' (first at line {seen[value]}, "
                    f"column {len(indent) + 1})",
                    line,
                    len(indent) + 1,
                )
            )
        else:
            seen[value] = line
    problems = load(written(folder, text))
    if not expected:
        assert all(not p.message.startswith("duplicate key") for p in problems)
        return
    assert [(p.message, p.line, p.column) for p in problems] == expected


# --- encodings ---------------------------------------------------------------------


@scaled()
@given(
    text=st.text(st.characters(exclude_categories=("Cs",)), max_size=200),
    junk=st.binary(min_size=1, max_size=6),
    at=st.integers(0, 10_000),
)
def test_bytes_that_are_not_utf8_are_one_problem_at_the_first_of_them(
    folder: Path, text: str, junk: bytes, at: int
) -> None:
    data = (HEAD + "preamble: |\n  " + text.replace("\n", "\n  ")).encode()
    at = at % (len(data) + 1)
    data = data[:at] + junk + data[at:]
    try:
        data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        start = exc.start
    else:
        load(written(folder, data))  # it is UTF-8 after all: any located outcome
        return
    (problem,) = load(written(folder, data))
    if data.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")):  # UTF-16/32 marks
        assert "text, not UTF-8" in problem.message and (problem.line, problem.column) == (1, 1)
        return
    if data.count(0) * 4 > len(data):  # mostly NULs: UTF-16 or UTF-32 without a mark
        assert "UTF-16 or UTF-32" in problem.message and (problem.line, problem.column) == (1, 1)
        return
    line = data.count(b"\n", 0, start) + 1
    before = data[data.rfind(b"\n", 0, start) + 1 : start]
    column = len(before.removeprefix(b"\xef\xbb\xbf").decode("utf-8", errors="replace")) + 1
    assert problem.message.startswith("the file is not UTF-8 text: byte ")
    assert (problem.line, problem.column) == (line, column)


@scaled()
@given(codec=st.sampled_from(["utf-16", "utf-16-le", "utf-16-be", "utf-32"]))
def test_a_file_in_utf16_or_utf32_is_a_problem_at_its_start(folder: Path, codec: str) -> None:
    (problem,) = load(written(folder, (HEAD + "preamble: héllo\n").encode(codec)))
    assert "not UTF-8" in problem.message and (problem.line, problem.column) == (1, 1)


# --- placeholders --------------------------------------------------------------------

_NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
_PLAIN = st.text(st.characters(exclude_characters="$}", exclude_categories=("Cs",)), max_size=6)
_BAD = [
    "${env:{n}:{d}}",  # no '-' before the default
    "${env:}",
    "${secret:}",
    "${env}",
    "${}",
    "${:{n}}",
    "${env:1{n}}",
    "${env:{n}-x}",
    "${ENV:{n}}",
    "${foo:{n}}",
    "${env:{n}:-${env:{n}}}",  # nested
    "${secret:{n}:-a${b}",
]


@st.composite
def placeholder_text(draw: st.DrawFn) -> tuple[str, str | None, bool, list[str]]:
    """A string of literal text, ``$${`` escapes and placeholders, some
    malformed: ``(text, expected value or None when malformed, secret?,
    unset variables without a default)``."""
    env = {"SET_A": "alpha", "SET_B": ""}
    pieces, value, secret, unset = [], "", False, []
    bad = False
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["plain", "escape", "env", "secret", "bad"]))
        if kind == "plain":
            text = draw(_PLAIN)
            pieces.append(text)
            value += text
        elif kind == "escape":
            pieces.append("$${")
            value += "${"
        elif kind in ("env", "secret"):
            name = draw(st.sampled_from(["SET_A", "SET_B"]) | _NAMES)
            default = draw(st.none() | _PLAIN)
            pieces.append(f"${{{kind}:{name}" + ("" if default is None else f":-{default}") + "}")
            secret = secret or kind == "secret"
            got = env.get(name, default)
            if got is None:
                unset.append(name)
                got = ""
            value += got
        else:
            template = draw(st.sampled_from(_BAD))
            pieces.append(template.replace("{n}", draw(_NAMES)).replace("{d}", draw(_PLAIN)))
            bad = True
    if draw(st.booleans()):  # an unclosed one can only end the text
        pieces.append("${env:" + draw(_NAMES))
        bad = True
    return "".join(pieces), None if bad else value, secret, unset


@scaled()
@given(case=placeholder_text())
def test_placeholders_interpolate_to_what_they_say_or_are_a_problem_of_the_field(
    case: tuple[str, str | None, bool, list[str]],
) -> None:
    text, expected, secret, unset = case
    names = [n for n in unset if n not in ("SET_A", "SET_B")]
    assume(not any(n in os.environ for n in names))
    data, problems = interpolate({"f": [text]}, {"SET_A": "alpha", "SET_B": ""})
    assert all(p.location == ("f", 0) for p in problems)
    if expected is None:
        assert problems and all(
            p.message.startswith("malformed placeholder '${") for p in problems
        ), problems
        assert data["f"][0] == text
        return
    assert [p.message for p in problems] == [f"environment variable {n} is not set" for n in unset]
    got = data["f"][0]
    if secret:
        assert got.get_secret_value() == expected
    else:
        assert got == expected


@scaled()
@given(case=placeholder_text(), field=st.sampled_from(["name", "preamble"]))
def test_a_malformed_placeholder_in_a_file_is_placed_at_its_field(
    folder: Path, case: tuple[str, str | None, bool, list[str]], field: str
) -> None:
    text, expected, _, _ = case
    assume(expected is None)
    body = {"name": "demo", "model": "scripted:s.yaml", field: text}
    problems = load(written(folder, yaml.safe_dump(body, width=10_000)))
    located = [p for p in problems if p.message.startswith("malformed placeholder")]
    assert located and all(p.location == (field,) for p in located)
    line = 1 + sorted(body).index(field)  # safe_dump sorts the keys, one a line
    assert all((p.line, p.column) == (line, len(field) + 3) for p in located), located


# --- placement -------------------------------------------------------------------------


@scaled(100)  # up to 4,000 problems an example
@given(count=st.integers(1, 4_000), where=st.sampled_from(["top", "settings"]))
def test_every_problem_of_thousands_is_at_its_own_line(
    folder: Path, count: int, where: str
) -> None:
    indent = "  " if where == "settings" else ""
    head = HEAD + ("settings:\n" if where == "settings" else "")
    first = head.count("\n") + 1
    text = head + "".join(f"{indent}unknown_{i}: {i}\n" for i in range(count))
    problems = load(written(folder, text))
    assert [(p.line, p.column) for p in problems] == [
        (first + i, len(indent) + 1) for i in range(count)
    ]
