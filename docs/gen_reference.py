"""Generate docs/manifest-reference.md from the JSON Schema of the app manifest.

    python docs/gen_reference.py           # (re)write docs/manifest-reference.md
    python docs/gen_reference.py --check   # exit 1 if the file is stale

The reference covers the kernel's built-in kinds and the first-party plugins:
the distributions under plugins/, found by reading their pyproject.toml files.
Other installed plugins are ignored, so the output does not depend on what
else happens to be installed. ``render(registry)`` takes any registry.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tomllib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from seamkit import Registry
    from seamkit.plugins import Category

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "docs" / "manifest-reference.md"
COMMAND = "python docs/gen_reference.py"

_CATEGORIES: tuple[Category, ...] = ("tool", "hook", "refresh")
_HEADINGS = {"tool": "Tool kinds", "hook": "Hook kinds", "refresh": "Refresh conditions"}
_SINGULAR = {"tool": "tool kind", "hook": "hook kind", "refresh": "refresh condition"}
_SECTION_ANCHOR = {"tool": "tool-kinds", "hook": "hook-kinds", "refresh": "refresh-conditions"}
_LIST_CATEGORY = {"tools": "tool", "hooks": "hook"}
_ENV = ("SEAMKIT_PLUGINS", "SEAMKIT_DISABLE_PLUGINS", "SEAMKIT_ENABLE_PREVIEW")


# --- which plugins ---------------------------------------------------------


def first_party_names(root: Path = ROOT) -> set[str]:
    """Entry-point names (group ``seamkit``) of the distributions under plugins/."""
    names: set[str] = set()
    for pyproject in sorted((root / "plugins").glob("*/pyproject.toml")):
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        names |= set(data.get("project", {}).get("entry-points", {}).get("seamkit", {}))
    return names


@contextmanager
def _clean_environment() -> Iterator[None]:
    saved = {name: os.environ.pop(name) for name in _ENV if name in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


def first_party_registry() -> Registry:
    """A registry with the kernel's built-ins and the first-party plugins only."""
    from seamkit.plugins import load_plugins

    names = first_party_names()
    eps = [ep for ep in metadata.entry_points(group="seamkit") if ep.name in names]
    with _clean_environment():
        return load_plugins(entry_points=eps)


# --- text helpers ----------------------------------------------------------


def _prose(text: str | None) -> str:
    """A docstring or description as Markdown: RST literals and roles become code."""
    if not text:
        return ""
    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"`\1`", text)
    text = text.replace("``", "`")
    text = re.sub(r"(?<![\w`])'([^'\s`]+)'(?![\w`])", r"`\1`", text)
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text.strip())]
    return "\n\n".join(p for p in paragraphs if p)


def _escape_html(text: str) -> str:
    """``<`` and ``&`` outside code spans, so ``<name>`` is not taken for a tag."""
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(
        p if p.startswith("`") else p.replace("&", "&amp;").replace("<", "&lt;") for p in parts
    )


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return _escape_html(" ".join(text.split())).replace("|", "\\|")


def _code(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return f"`{text}`"


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# --- the model of the page --------------------------------------------------


class _Page:
    """The schema's definitions, sorted into sections, and how to name each."""

    def __init__(self, registry: Registry) -> None:
        from seamkit._manifest import manifest_schema

        self.registry = registry
        self.schema = manifest_schema(registry, preview=False)
        self.defs: dict[str, Any] = dict(self.schema.get("$defs", {}))
        settings_ref = self.schema["properties"].get("settings", {}).get("$ref", "")
        self.settings_def = settings_ref.rsplit("/", 1)[-1] if settings_ref else None
        # (category, kind name) -> (definition name, registry info, found in schema)
        self.kinds: dict[tuple[str, str], tuple[str, Any, bool]] = {}
        self._sort_kinds()
        self.anchors: dict[str, str] = {}
        if self.settings_def:
            self.anchors[self.settings_def] = "settings"
        for (category, name), (def_name, _, _) in self.kinds.items():
            self.anchors[def_name] = f"{category}-{name}"
        self.others = sorted(
            name
            for name, d in self.defs.items()
            if name not in self.anchors and "enum" not in d and d.get("type") == "object"
        )
        for name in self.others:
            self.anchors[name] = "type-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")

    def _sort_kinds(self) -> None:
        by_const: dict[str, list[str]] = {}
        for def_name, d in self.defs.items():
            const = d.get("properties", {}).get("kind", {}).get("const")
            if isinstance(const, str):
                by_const.setdefault(const, []).append(def_name)
        for category in _CATEGORIES:
            for name, info in sorted(self.registry.kinds_of(category, preview=False).items()):
                candidates = by_const.get(name, [])
                exact = [c for c in candidates if self.defs[c].get("title") == info.model.__name__]
                chosen = (exact or candidates)[0] if (exact or candidates) else None
                if chosen is not None and self._category_of(chosen) in (category, None):
                    self.kinds[(category, name)] = (chosen, info, True)
                    continue
                # Not reachable from the manifest's schema (e.g. a refresh condition
                # while no installed hook kind takes one): take the model's own schema.
                try:
                    own = info.model.model_json_schema(
                        mode="validation", ref_template="#/$defs/{model}"
                    )
                except Exception as exc:  # a field type with no JSON Schema
                    own = {
                        "description": f"(No JSON Schema: {type(exc).__name__}.)",
                        "properties": {"kind": {"const": name}},
                        "required": ["kind"],
                    }
                for sub_name, sub in own.pop("$defs", {}).items():
                    self.defs.setdefault(sub_name, sub)
                def_name = info.model.__name__
                while def_name in self.defs:
                    def_name += "_"
                self.defs[def_name] = own
                self.kinds[(category, name)] = (def_name, info, False)

    def _category_of(self, def_name: str) -> str | None:
        for (category, _), (chosen, _, _) in self.kinds.items():
            if chosen == def_name:
                return category
        return None

    def link(self, def_name: str, text: str | None = None) -> str:
        return f"[{text or def_name}](#{self.anchors[def_name]})"

    # --- types ------------------------------------------------------------

    def type_of(self, s: dict[str, Any]) -> str:
        """A field's type in words: "integer > 0", "list of string", ..."""
        if "$ref" in s:
            return self._ref(s["$ref"].rsplit("/", 1)[-1])
        if "const" in s:
            return _code(s["const"])
        if "enum" in s:
            return "one of: " + ", ".join(_code(v) for v in s["enum"])
        if s.get("not") == {}:
            return "nothing (no kind of this category is installed)"
        union = s.get("oneOf") or s.get("anyOf") or s.get("allOf")
        if union is not None:
            return self._union(union)
        kind = s.get("type")
        if isinstance(kind, list):
            return " or ".join(self.type_of({**s, "type": k}) for k in kind)
        if kind == "string":
            return self._string(s)
        if kind in ("integer", "number"):
            return f"{kind}{self._bounds(s)}"
        if kind == "boolean":
            return "boolean"
        if kind == "null":
            return "null"
        if kind == "array":
            items = s.get("items")
            text = "list of " + (self.type_of(items) if items else "any value")
            return text + self._sizes(s, "items")
        if kind == "object":
            extra = s.get("additionalProperties")
            if isinstance(extra, dict) and extra:
                return "mapping of string to " + self.type_of(extra)
            return "mapping"
        return "any value"

    def _ref(self, def_name: str) -> str:
        d = self.defs.get(def_name, {})
        if "enum" in d:
            return "one of: " + ", ".join(_code(v) for v in d["enum"])
        if def_name in self.anchors:
            return self.link(def_name)
        return self.type_of(d)

    def _union(self, members: Sequence[dict[str, Any]]) -> str:
        nullable = any(m.get("type") == "null" for m in members)
        rest = [m for m in members if m.get("type") != "null"]
        categories = {self._category_of(m["$ref"].rsplit("/", 1)[-1]) for m in rest if "$ref" in m}
        if (
            rest
            and all("$ref" in m for m in rest)
            and len(categories) == 1
            and None not in categories
        ):
            (category,) = categories
            assert category is not None
            parts = [f"any [{_SINGULAR[category]}](#{_SECTION_ANCHOR[category]})"]
        else:
            parts = [self._member(m) for m in rest]
        text = " or ".join(dict.fromkeys(parts))
        if nullable:
            return f"{text} (or null)" if text.startswith("one of:") else f"{text} or null"
        return text

    def _member(self, s: dict[str, Any]) -> str:
        inner = s.get("oneOf") or s.get("anyOf")
        return self._union(inner) if inner is not None else self.type_of(s)

    def _string(self, s: dict[str, Any]) -> str:
        text = "string"
        if "format" in s:
            text += f" ({s['format']})"
        text += self._sizes(s, "characters", prefix="Length")
        if "pattern" in s:
            text += f" matching {_code(s['pattern'])}"
        return text

    @staticmethod
    def _bounds(s: dict[str, Any]) -> str:
        parts = []
        for key, op in (
            ("exclusiveMinimum", ">"),
            ("minimum", "≥"),
            ("exclusiveMaximum", "<"),
            ("maximum", "≤"),
        ):
            if key in s:
                parts.append(f"{op} {_number(s[key])}")
        if "multipleOf" in s:
            parts.append(f"a multiple of {_number(s['multipleOf'])}")
        return (" " + " and ".join(parts)) if parts else ""

    @staticmethod
    def _sizes(s: dict[str, Any], unit: str, prefix: str = "Items") -> str:
        low, high = s.get(f"min{prefix}"), s.get(f"max{prefix}")
        if low is not None and high is not None:
            return f" ({low} to {high} {unit})"
        if low is not None:
            return f" (at least {low} {unit})"
        if high is not None:
            return f" (at most {high} {unit})"
        return ""

    # --- tables -----------------------------------------------------------

    def table(
        self, d: dict[str, Any], *, kind_section: bool, events: Sequence[str] = ()
    ) -> list[str]:
        properties: dict[str, Any] = d.get("properties", {})
        required = set(d.get("required", ()))
        names = list(properties)
        if "kind" in names:
            names.remove("kind")
            names.insert(0, "kind")
        lines = ["| Field | Type | Required / default | Description |", "|---|---|---|---|"]
        for name in names:
            prop = properties[name]
            if kind_section and name == "kind":
                status = "required"
                description = "Selects this kind."
            else:
                if events and name in _ONE_OF_EVENT:
                    status = _ONE_OF_EVENT[name]
                elif name in required:
                    status = "required"
                elif "default" in prop:
                    status = f"default `{json.dumps(prop['default'])}`"
                else:
                    status = "optional"
                description = _prose(prop.get("description"))
                if not description and events and name == "event":
                    description = "The event this hook runs at."
                ref = prop.get("$ref", "").rsplit("/", 1)[-1]
                if not description and ref in self.anchors:
                    description = f"See {self.link(ref)}."
            type_text = self.type_of(prop)
            if events and name == "event":
                # The schema allows every event; validation allows the kind's own.
                type_text = "one of: " + ", ".join(_code(e) for e in events)
            if events and name == "events":
                listed = ", ".join(_code(e) for e in events)
                type_text = f"list of: {listed} (at least one, each at most once)"
            category = _LIST_CATEGORY.get(name)
            if category and prop.get("items") == {"not": {}}:
                type_text = (
                    f"list of any [{_SINGULAR[category]}](#{_SECTION_ANCHOR[category]}) "
                    "(none installed)"
                )
            lines.append(
                f"| `{name}` | {_cell(type_text)} | {_cell(status)} | {_cell(description) or '—'} |"
            )
        return lines


# --- the page ---------------------------------------------------------------


def _anchor(anchor: str) -> str:
    return f'<a id="{anchor}"></a>'


def _plugin_label(registry: Registry, plugin: str) -> str:
    info = registry.plugins.get(plugin)
    if info is None:
        return f"`{plugin}`"
    if info.builtin:
        return f"`{plugin}` (built into the kernel)"
    if info.distribution:
        return f"`{plugin}` (distribution `{info.distribution}`)"
    return f"`{plugin}`"


def render(registry: Registry) -> str:
    """The whole reference page for the kinds installed in ``registry``."""
    page = _Page(registry)
    out: list[str] = [
        f"<!-- Generated by docs/gen_reference.py. Do not edit; run `{COMMAND}`. -->",
        "",
        "# Manifest reference",
        "",
        "*This page is generated from the JSON Schema of the app manifest (what "
        "`seamkit schema` prints) with the kernel and the first-party plugins installed. "
        f"Do not edit it by hand: regenerate it with `{COMMAND}`.*",
        "",
        "Plugins covered: "
        + ", ".join(_plugin_label(registry, p) for p in sorted(registry.plugins))
        + ". Any other plugin you install adds its kinds to `seamkit schema`; "
        "preview kinds and events are not listed. The [user guide](guide.md) explains "
        "how the fields are used.",
        "",
        "Contents:",
        "",
        "- [App manifest](#app)",
    ]
    if page.settings_def:
        out.append("- [Settings](#settings)")
    for category in _CATEGORIES:
        out.append(f"- [{_HEADINGS[category]}](#{_SECTION_ANCHOR[category]})")
        for (cat, name), (def_name, _, _) in page.kinds.items():
            if cat == category:
                out.append(f"  - {page.link(def_name, f'`{name}`')}")
    out.append("- [Model providers](#model-providers)")
    if page.others:
        out.append("- [Other types](#other-types)")

    out += ["", _anchor("app"), "## App manifest", ""]
    out += [_prose(page.schema.get("description")), ""]
    out += page.table(page.schema, kind_section=False)

    if page.settings_def:
        settings = page.defs[page.settings_def]
        out += ["", _anchor("settings"), "## Settings", ""]
        out += [f"The `settings:` mapping. {_prose(settings.get('description'))}", ""]
        out += page.table(settings, kind_section=False)

    for category in _CATEGORIES:
        out += ["", _anchor(_SECTION_ANCHOR[category]), f"## {_HEADINGS[category]}", ""]
        out.append(_CATEGORY_INTRO[category])
        entries = [(n, v) for (c, n), v in page.kinds.items() if c == category]
        if not entries:
            out += ["", f"No {_SINGULAR[category]} is installed with the first-party plugins."]
        for name, (def_name, info, in_schema) in entries:
            d = page.defs[def_name]
            out += ["", _anchor(page.anchors[def_name]), f"### `{name}`", ""]
            facts = [f"`kind: {name}`", "plugin " + _plugin_label(registry, info.plugin)]
            if category == "hook":
                facts.append("events: " + ", ".join(f"`{e}`" for e in sorted(info.events)))
                if info.preview_events:
                    preview = ", ".join(f"`{e}`" for e in sorted(info.preview_events))
                    facts.append(f"preview events: {preview} (need `SEAMKIT_ENABLE_PREVIEW=1`)")
                facts.append(f"default `on_error`: `{info.model.default_on_error}`")
            out += [" · ".join(facts), ""]
            description = _prose(d.get("description"))
            if description:
                out += [description, ""]
            if not in_schema:
                why = (
                    "No installed hook kind takes a refresh condition yet, so this kind "
                    if category == "refresh"
                    else "Pydantic left this kind out of the manifest's schema, so it "
                )
                out += [
                    why + "does not appear in `seamkit schema`; the table comes from its "
                    "config model.",
                    "",
                ]
            events = sorted(info.events) if category == "hook" else []
            out += page.table(d, kind_section=True, events=events)

    out += ["", _anchor("model-providers"), "## Model providers", ""]
    out.append(
        "The `model` field reads `<provider>:<name>`; the provider is one of these prefixes."
    )
    out.append("")
    models = sorted(registry.models.items())
    out += [f"- `{prefix}:` plugin {_plugin_label(registry, p.plugin)}" for prefix, p in models]
    if not models:
        out.append("No model provider is installed.")

    if page.others:
        out += ["", _anchor("other-types"), "## Other types", ""]
        out.append("Objects that fields above refer to.")
        for def_name in page.others:
            d = page.defs[def_name]
            out += ["", _anchor(page.anchors[def_name]), f"### {def_name}", ""]
            description = _prose(d.get("description"))
            if description:
                out += [description, ""]
            out += page.table(d, kind_section=False)
    return "\n".join(out) + "\n"


_ONE_OF_EVENT = {
    "event": "required, unless `events` is given",
    "events": "instead of `event`",
}
"""The status of a hook entry's ``event`` and ``events``: exactly one is given."""

_CATEGORY_INTRO = {
    "tool": "Entries of the `tools:` list. Every tool kind has the optional `toolset` field: "
    "when it is set, the names the model sees become "
    '`sanitize_toolname(f"{toolset}_{tool}")`. Every tool kind also has `approval`, '
    "`effects` and `stream_output`, which the kernel applies to the tools the entry "
    "yields: one value for all of them, or a map by the tools' own names (`effects: "
    "{refund: once, lookup: none}`; a name the entry does not yield is an error). A `ref` "
    "that names one function takes one value; a `{when: ...}` under `approval` is a rule, "
    "not a map.",
    "hook": "Entries of the `hooks:` list. Every hook kind has the fields `event` (or "
    "`events`), `name`, `timeout_seconds`, `on_error` and `match`. An entry with "
    "`events: [a, b]` instead of `event` is the same as one entry per event written in its "
    "place, each checked against its event. `on_error` left unset takes the kind's "
    "default (always `skip` at `on_completion`, where `fail` is rejected); `match` is "
    "allowed only on `on_pre_tool_use`, `on_post_tool_use` and `on_invalid_tool_call`.",
    "refresh": "Values of a hook's `refresh_condition` field: when does an injected result "
    "go stale?",
}


# --- command line -------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    parser.add_argument("--output", type=Path, default=OUTPUT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    registry = first_party_registry()
    failed = registry.failed_plugins()
    if failed:
        for plugin in failed:
            print(f"error: plugin {plugin.name!r} failed to load: {plugin.error}", file=sys.stderr)
        print("hint: run `uv sync` so the first-party plugins are installed", file=sys.stderr)
        return 2
    missing = first_party_names() - set(registry.plugins)
    if missing:
        print(
            f"error: first-party plugins not installed: {', '.join(sorted(missing))}",
            file=sys.stderr,
        )
        print("hint: run `uv sync` so the first-party plugins are installed", file=sys.stderr)
        return 2

    text = render(registry)
    output: Path = args.output
    current = output.read_text(encoding="utf-8") if output.exists() else None
    if args.check:
        if current != text:
            print(f"{output} is stale; regenerate it with `{COMMAND}`", file=sys.stderr)
            return 1
        print(f"{output} is up to date")
        return 0
    if current != text:
        output.write_text(text, encoding="utf-8", newline="\n")
        print(f"wrote {output}")
    else:
        print(f"{output} is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
