"""The names a new plugin's parts take, from its NAME and kind."""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass

from ..._errors import SeamkitError
from ..._loader import kernel_version

__all__ = ["KINDS", "PluginPlan"]

KINDS = ("hook", "refresh", "tool", "model")
"""What ``seamkit new plugin --kind`` can make."""

_WHAT = {
    "hook": "hook kind",
    "refresh": "refresh condition",
    "tool": "tool kind",
    "model": "model provider",
}

_USAGE = {
    "hook": (
        "```yaml\nhooks:\n  - kind: {name}\n    event: on_post_tool_use\n"
        "    max_chars: 2000\n```\n\nTool results longer than `max_chars` are cut "
        "before the model sees them."
    ),
    "refresh": (
        "```yaml\nrefresh_condition: {{kind: {name}, minutes: 15}}\n```\n\nIn any hook "
        "kind that takes a `refresh_condition`: fresh until the next quarter hour (UTC)."
    ),
    "tool": (
        "```yaml\ntools:\n  - kind: {name}\n    greeting: Hello\n```\n\n"
        "The model gets a `greet(name)` tool."
    ),
    "model": (
        '```yaml\nmodel: {{provider: {name}, name: parrot, prefix: "> "}}\n```\n\n'
        "It answers with the user's last message: replace it with a real model."
    ),
}

_TAKEN = {
    "seamkit": "the built-in plugin's name",
    "function": "the built-in `function` tool kind",
    "scripted": "the built-in `scripted` model provider",
}
"""Names a new plugin cannot take: its entry point or kind would clash."""

_NAME = re.compile(r"^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$")


@dataclass(frozen=True, slots=True)
class PluginPlan:
    """Every name a template needs: the kind name (also the entry-point name),
    the distribution (``seamkit-NAME``), the package (``seamkit_NAME``), the
    class prefix (``CamelCase``) and the seamkit versions it depends on."""

    name: str
    kind: str
    distribution: str
    package: str
    title: str
    requirement: str

    @classmethod
    def for_name(cls, name: str, kind: str) -> PluginPlan:
        """The plan for ``seamkit new plugin NAME --kind KIND``; a NAME that
        cannot be a kind, an entry point and a package name is an error."""
        if kind not in KINDS:
            raise SeamkitError(f"unknown kind {kind!r}", hint="choose one of: " + ", ".join(KINDS))
        bare = name.removeprefix("seamkit-").removeprefix("seamkit_")
        if not _NAME.match(bare):
            raise SeamkitError(
                f"{name!r} cannot name a plugin",
                hint="use lower-case letters and digits, words joined by '-' or '_', "
                "starting with a letter (e.g. shout, tool-trim)",
            )
        package = "seamkit_" + bare.replace("-", "_")
        if keyword.iskeyword(bare):
            raise SeamkitError(f"{name!r} is a Python keyword", hint="choose another name")
        if bare in _TAKEN:
            raise SeamkitError(
                f"{bare!r} is taken by the kernel ({_TAKEN[bare]})",
                hint="choose another name; `seamkit plugins` lists the names in use",
            )
        title = "".join(part.capitalize() for part in re.split(r"[-_]", bare))
        return cls(
            name=bare,
            kind=kind,
            distribution=f"seamkit-{bare.replace('_', '-')}",
            package=package,
            title=title,
            requirement=_requirement(kernel_version()),
        )

    @property
    def what(self) -> str:
        """What the kind is called in prose: "hook kind", "refresh condition"..."""
        return _WHAT[self.kind]

    def substitutions(self) -> dict[str, str]:
        """What ``$name``-style placeholders in the templates stand for."""
        return {
            "name": self.name,
            "kind": self.kind,
            "what": self.what,
            "usage": _USAGE[self.kind].format(name=self.name),
            "distribution": self.distribution,
            "package": self.package,
            "Title": self.title,
            "requirement": self.requirement,
        }


def _requirement(version: str) -> str:
    """``>=X.Y,<X.(Y+1)``: the minor series of the running seamkit (any 0.x
    minor may change the plugin API; from 1.0 the major series), from the
    running version itself when it is a pre-release; no bound from a source
    tree."""
    match = re.match(r"^(\d+)\.(\d+)(?:\.\d+)*(.*)$", version)
    if match is None:
        return ""
    major, minor, rest = int(match[1]), int(match[2]), match[3]
    upper = f"{major}.{minor + 1}" if major == 0 else f"{major + 1}"
    pre_release = re.match(r"^[.-]?(a|b|rc|dev|alpha|beta|c|pre)", rest)
    lower = version if pre_release else f"{major}.{minor}"
    return f">={lower},<{upper}"
