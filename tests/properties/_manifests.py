"""Shared by the manifest fuzzer and the reading laws: real manifests to
mutate, the mutations (as hypothesis strategies), and the one check every
outcome must pass.

A mutated manifest either loads, or is rejected with a `ManifestError` whose
every problem has a line and a column inside the file and a message a person
can act on. Anything else (another exception, a crash, a hang) is a bug.
"""

from __future__ import annotations

import copy
import json
import os
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, settings, strategies as st
from seamkit import AppConfig, ManifestError, Problem

from tests.conftest import ROOT

DEEP = os.environ.get("HYPOTHESIS_PROFILE") == "deep"
"""The deep profile: 100,000 examples, each allowed 2 s."""

SLOW_INPUTS = [
    HealthCheck.too_slow,
    HealthCheck.data_too_large,
    HealthCheck.large_base_example,
    HealthCheck.filter_too_much,
]


def scaled(examples: int | None = None) -> settings:
    """``examples`` (by default the profile's: 1,000 in CI) in CI and
    locally; 100,000 under the deep profile, where each example must also
    finish within 2 s (a hang is a failure there)."""
    default = settings.default.max_examples
    return settings(
        max_examples=100_000 if DEEP else examples or default,
        deadline=2000 if DEEP else None,
        suppress_health_check=SLOW_INPUTS,
    )


# --- the manifests mutated -----------------------------------------------------

RICH = """\
# Every part a manifest has: the mutations start from here too.
name: fuzz
model: scripted:script.yaml
preamble: "Hello ${env:SEAMKIT_FUZZ_UNSET:-world}, costs $${literal}"
tools:
  - kind: function
    ref: tools_module
    toolset: calc
hooks:
  - kind: tool_call
    name: memories
    event: on_request_start
    toolset_name: memory
    tool_name: get_memories
    arguments: {user: "{{ context.user }}", limit: 5, tags: [a, b]}
    refresh_condition: {kind: ttl, ttl_minutes: 30}
  - kind: tool_call
    event: on_completion
    tool_name: save
    arguments:
      text: "{{ output }}"
settings:
  max_turns: 4
  tool_concurrency: 2
  placement: stable
sessions:
  store: sqlite:///tmp/fuzz.sqlite
"""

SEED_TEXTS: list[str] = [RICH] + [
    p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs" / "examples").glob("*/app.yaml"))
]
SEED_DATA: list[dict[str, Any]] = [yaml.safe_load(t) for t in SEED_TEXTS]


@dataclass(frozen=True)
class Case:
    """One file to load: its bytes and its name's suffix."""

    data: bytes
    suffix: str = ".yaml"

    def __repr__(self) -> str:  # hypothesis prints it for a failing example
        shown = self.data if len(self.data) <= 2000 else self.data[:2000] + b"..."
        return f"Case({shown!r}, {self.suffix!r}, {len(self.data)} bytes)"


# --- checking an outcome -------------------------------------------------------


def line_count(data: bytes) -> int:
    """Lines in ``data`` as YAML counts them (every kind of line break)."""
    text = data.decode("utf-8", errors="replace")
    breaks = sum(text.count(b) for b in ("\n", "\r", "\x85", "\u2028", "\u2029"))
    return breaks + 1


def load(path: Path) -> list[Problem]:
    """Load ``path``; the problems of its rejection (empty when it loads),
    each checked: located inside the file, worded for a person. Any other
    exception than `ManifestError` goes up: it fails the test."""
    try:
        AppConfig.load(path)
    except ManifestError as exc:
        check_rejection(exc, path)
        return list(exc.problems)
    return []


def check_rejection(exc: ManifestError, path: Path) -> None:
    """Every problem of ``exc`` has a line and column inside ``path`` and a
    message a person can act on; the first line of each names the file."""
    assert exc.source == str(path), exc.source
    assert exc.problems
    lines = line_count(path.read_bytes())
    for p in exc.problems:
        assert p.line is not None and p.column is not None, f"unplaced: {p}"
        assert 1 <= p.line <= lines and p.column >= 1, f"outside the file: {p} ({lines} lines)"
        assert p.message.strip(), p
        for leak in ("Traceback", " object at 0x", "<unicode string>", "\n"):
            assert leak not in p.message, f"{leak!r} in {p.message!r}"
        assert len(p.message) <= 600, f"a message of {len(p.message)} characters"
        head = p.format(str(path)).splitlines()[0]
        assert head.startswith(f"{path}:{p.line}:{p.column}: "), head


# --- mutations -------------------------------------------------------------------

_KEY_TEXT = st.text(
    st.characters(exclude_categories=("Cs",)), min_size=0, max_size=12
)  # no lone surrogates: they cannot be written as UTF-8
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | _KEY_TEXT
    | st.dates(min_value=date(1, 1, 1))
    | st.sampled_from(["on_request_start", "tool_call", "ttl", "${env:HOME}", "{{ output }}"])
)
VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(_KEY_TEXT | st.integers(-3, 3) | st.booleans(), inner, max_size=3)
    ),
    max_leaves=8,
)

YAML_SNIPPETS = [
    "[",
    "]",
    "{",
    "}",
    ":",
    ": ",
    "- ",
    ",",
    "&a ",
    "*a",
    "&b ",
    "*b",
    "!!int ",
    "!!float ",
    "!!binary ",
    "!!timestamp ",
    "!!set ",
    "!!omap ",
    "!foo ",
    "!!python/object:os.system ",
    "? ",
    "---\n",
    "...\n",
    "# c\n",
    '"',
    "'",
    "|\n",
    ">-\n",
    "\t",
    "\n",
    "  ",
    "\r\n",
    "${env:",
    "${",
    "}",
    "$${",
    "${env:X}",
    "${secret:K:-d}",
    "<<: *a\n",
    "\x00",
    "\x7f",
    "\ufeff",
    "é",
    "\u2028",
    "\U0001f600",
    "%YAML 1.1\n",
    "@",
    "`",
    "~",
    "=",
    "9" * 5000,
    "2001-13-45",
    "0x_",
    "1e999",
    ".nan",
    "yes",
    "&a [*a]",
    "k: v\n",
    "name: again\n",
]
PLACEHOLDER_PIECES = [
    "$",
    "{",
    "}",
    ":",
    "-",
    ":-",
    "env",
    "secret",
    "ENV",
    "X",
    "1",
    "_",
    "${",
    "$${",
    " ",
    "a",
    "${env:X}",
    "${env:",
    "}}",
    "${{",
    "\\",
]


def _paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every location inside ``value`` (the root included), depth first."""
    out = [at]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*at, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*at, i))
    return out


def _get(value: Any, at: tuple[Any, ...]) -> Any:
    for part in at:
        value = value[part]
    return value


@st.composite
def _structural(draw: st.DrawFn) -> Case:
    """A seed's data with a few values deleted, replaced, renamed, wrapped or
    copied, written as block or flow YAML or as JSON."""
    data: Any = copy.deepcopy(draw(st.sampled_from(SEED_DATA)))
    for _ in range(draw(st.integers(1, 5))):
        at = draw(st.sampled_from(_paths(data)))
        op = draw(st.sampled_from(["replace", "delete", "rename", "add", "wrap", "copy"]))
        if not at:
            data = draw(VALUES) if op == "replace" else data
            continue
        parent, last = _get(data, at[:-1]), at[-1]
        if op == "replace":
            parent[last] = draw(VALUES)
        elif op == "delete":
            del parent[last]
        elif op == "rename" and isinstance(parent, dict):
            name = str(last)
            cut = draw(st.integers(0, len(name)))
            parent[name[:cut] + draw(st.sampled_from(["", "x", "_"])) + name[cut + 1 :]] = (
                parent.pop(last)
            )
        elif op == "add" and isinstance(parent, dict):
            parent[draw(_KEY_TEXT)] = draw(VALUES)
        elif op == "wrap":
            parent[last] = [parent[last]]
        elif op == "copy":
            parent[last] = copy.deepcopy(data)
    style = draw(st.sampled_from(["block", "flow", "json"]))
    if style == "json":
        return Case(json.dumps(data, default=str).encode(), ".json")
    text = yaml.safe_dump(data, default_flow_style=style == "flow", allow_unicode=True)
    return Case(text.encode())


@st.composite
def _textual(draw: st.DrawFn) -> Case:
    """A seed's text with snippets of YAML syntax inserted, ranges deleted,
    lines repeated or swapped."""
    text = draw(st.sampled_from(SEED_TEXTS))
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["insert", "insert", "delete", "repeat", "swap"]))
        at = draw(st.integers(0, len(text)))
        if op == "insert":
            text = text[:at] + draw(st.sampled_from(YAML_SNIPPETS)) + text[at:]
        elif op == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 40)) :]
        else:
            lines = text.splitlines(keepends=True)
            i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            if op == "repeat":
                lines.insert(j, lines[i])
            else:
                lines[i], lines[j] = lines[j], lines[i]
            text = "".join(lines)
    return Case(text.encode("utf-8", errors="surrogatepass"))


@st.composite
def _encoded(draw: st.DrawFn) -> Case:
    """A seed (with a non-ASCII letter) in another encoding, or with bytes
    that are not UTF-8 put in."""
    text = draw(st.sampled_from(SEED_TEXTS)).replace("Hello", "Héllo ☕")
    if draw(st.booleans()):
        codec = draw(st.sampled_from(["utf-16", "utf-16-le", "utf-32", "latin-1", "cp1252"]))
        return Case(text.encode(codec, errors="replace"))
    data = text.encode()
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.binary(min_size=1, max_size=4)) + data[at:]
    return Case(data)


def bomb(levels: int, width: int) -> str:
    """A YAML "billion laughs": each anchor a list of ``width`` aliases of
    the one before, ``levels`` deep (it expands to ``width ** levels`` values)."""
    out = ["a0: &a0 [lol]"]
    for i in range(1, levels + 1):
        out.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(out) + "\n"


@st.composite
def _aliased(draw: st.DrawFn) -> Case:
    """A seed with anchors and aliases put in: a bomb, a recursive alias, an
    alias of nothing, a merge key, an anchor defined twice."""
    base = draw(st.sampled_from(SEED_TEXTS))
    kind = draw(st.sampled_from(["bomb", "recursive", "undefined", "merge", "twice", "key"]))
    if kind == "bomb":
        extra = bomb(draw(st.integers(1, 12)), draw(st.integers(1, 10)))
        extra = "\n".join("  " + line for line in extra.splitlines())
        return Case((base + "x-extra:\n" + extra + "\n").encode())
    snippet = {
        "recursive": "x-loop: &r [1, *r]\n",
        "undefined": "x-alias: *nowhere\n",
        "merge": "x-base: &base {kind: ttl, ttl_minutes: 3}\nx-more: {<<: *base, a: 1}\n",
        "twice": "x-a: &same 1\nx-b: &same 2\n",
        "key": "x-k: &k name\nx-m: {*k : 1}\n",
    }[kind]
    return Case((base + snippet).encode())


def nested(depth: int, style: str) -> str:
    """A value nested ``depth`` levels deep, in one of the YAML styles."""
    if style == "flow-list":
        return "[" * depth + "1" + "]" * depth
    if style == "flow-map":
        return "{a: " * depth + "1" + "}" * depth
    if style == "block-list":
        return "\n" + "".join("  " + "- " * depth + "1\n")
    lines = "".join("  " + " " * i + "a:\n" for i in range(depth - 1))
    return "\n" + lines + "  " + " " * (depth - 1) + "a: 1\n"


@st.composite
def _deep(draw: st.DrawFn) -> Case:
    """A seed with a value nested up to 100,000 levels deep at one of its
    fields (block mappings, whose indentation grows, up to 2,000)."""
    style = draw(st.sampled_from(["flow-list", "flow-map", "block-list", "block-map"]))
    top = 2_000 if style == "block-map" else 100_000
    depth = draw(st.integers(1, 200) | st.integers(1, top))
    field = draw(st.sampled_from(["preamble", "settings", "x-deep", "sessions"]))
    base = draw(st.sampled_from(SEED_TEXTS))
    if draw(st.booleans()):
        return Case(
            (
                '{"name": "deep", "model": "scripted:s.yaml", "'
                + field
                + '": '
                + "[" * depth
                + "]" * depth
                + "}"
            ).encode(),
            ".json",
        )
    return Case((base + f"{field}: {nested(depth, style)}\n").encode())


@st.composite
def _large(draw: st.DrawFn) -> Case:
    """A seed with thousands of unknown keys, hooks, or one long key or value."""
    base = draw(st.sampled_from(SEED_TEXTS))
    kind = draw(st.sampled_from(["keys", "hooks", "long-key", "long-value"]))
    count = draw(st.integers(1, 2_000 if kind == "hooks" else 5_000))
    if kind == "keys":
        extra = "".join(f"unknown_{i}: {i}\n" for i in range(count))
    elif kind == "hooks":
        extra = "x-hooks:\n" + "".join(
            f"  - {{kind: tool_call, event: on_request_start, tool_name: t{i}, timeout: {i}}}\n"
            for i in range(count)
        )
    elif kind == "long-key":
        extra = "k" * count * 10 + ": 1\n"
    else:
        extra = "x-long: " + "v" * count * 200 + "\n"
    return Case((base + extra).encode())


@st.composite
def placeholder_texts(draw: st.DrawFn) -> str:
    """Text made of the pieces placeholders are made of, well-formed or not."""
    return "".join(draw(st.lists(st.sampled_from(PLACEHOLDER_PIECES), max_size=12)))


@st.composite
def _placeholders(draw: st.DrawFn) -> Case:
    """A seed whose string fields hold text made of placeholder pieces."""
    data: Any = copy.deepcopy(draw(st.sampled_from(SEED_DATA)))
    strings = [at for at in _paths(data) if at and isinstance(_get(data, at), str)]
    for at in draw(st.lists(st.sampled_from(strings), min_size=1, max_size=3)):
        _get(data, at[:-1])[at[-1]] = draw(placeholder_texts())
    return Case(yaml.safe_dump(data, allow_unicode=True).encode())


MUTATIONS = {
    "structure": _structural(),
    "text": _textual(),
    "encoding": _encoded(),
    "aliases": _aliased(),
    "depth": _deep(),
    "size": _large(),
    "placeholders": _placeholders(),
}
"""Every kind of mutation the fuzzer draws from, by name."""

MUTATED = st.one_of(*MUTATIONS.values())
