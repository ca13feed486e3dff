"""Render a plugin's templates into a directory."""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from string import Template

from ._plan import PluginPlan

__all__ = ["write_plugin"]

_SUFFIX = ".tmpl"


def write_plugin(plan: PluginPlan, target: Path) -> list[Path]:
    """Write the common files and the kind's files under ``target``; return
    the paths written, in order. ``__package__`` in a template path becomes
    the package name; every ``$placeholder`` in a file its value."""
    root = resources.files(__package__).joinpath("templates")
    values = plan.substitutions()
    written: list[Path] = []
    for folder in ("common", plan.kind):
        for source, relative in _walk(root.joinpath(folder), ()):
            parts = (part.replace("__package__", plan.package) for part in relative)
            path = target.joinpath(*parts)
            path = path.with_name(path.name.removesuffix(_SUFFIX))
            path.parent.mkdir(parents=True, exist_ok=True)
            text = Template(source.read_text(encoding="utf-8")).substitute(values)
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written


_Found = list[tuple[Traversable, tuple[str, ...]]]


def _walk(node: Traversable, relative: tuple[str, ...]) -> _Found:
    """Every template under ``node`` (sorted), with its path relative to it."""
    found: _Found = []
    for child in sorted(node.iterdir(), key=lambda c: c.name):
        if child.is_dir():
            if child.name != "__pycache__":
                found.extend(_walk(child, (*relative, child.name)))
        elif child.name.endswith(_SUFFIX):
            found.append((child, (*relative, child.name)))
    return found
