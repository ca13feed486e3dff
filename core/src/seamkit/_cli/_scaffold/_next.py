"""What ``seamkit new plugin`` tells its user to do next: make a virtual
environment of the plugin's own, install the kernel into it first (the
seamkit that wrote the plugin, with its testing kit), then the plugin, then
run its tests.

The kernel goes first because the plugin depends on ``seamkit``: installed
alone, it would fetch whatever the package index holds under that name,
which need not be the seamkit you ran (one from a clone, say).
"""

from __future__ import annotations

import json
import shlex
import subprocess
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path, PurePath, PurePosixPath, PureWindowsPath
from urllib.parse import unquote, urlparse
from urllib.request import url2pathname

__all__ = ["NextSteps", "kernel_requirement"]

_EXTRA = "testing"


@dataclass(frozen=True, slots=True)
class NextSteps:
    """The commands to print for a plugin written to ``target``, for a shell
    on ``windows`` or not; ``kernel`` is the argument list of the ``pip
    install`` that installs the kernel (`kernel_requirement`)."""

    target: PurePath
    kernel: tuple[str, ...]
    windows: bool = False

    @property
    def venv(self) -> PurePath:
        """The virtual environment: ``.venv`` in the plugin's folder."""
        return self.target / ".venv"

    def heading(self) -> str:
        """The line before the commands."""
        return f"next, in a new virtual environment ({self._path(self.venv)}):"

    def commands(self) -> list[str]:
        """The commands, in order, each a line a shell runs as it is."""
        quote = subprocess.list2cmdline if self.windows else shlex.join
        where = self._path(self.target)
        if not self.target.is_absolute():
            where = f".\\{where}" if self.windows else f"./{where}"
        if self.windows:
            python = "py"
            activate = [self._path(self.venv / "Scripts" / "activate")]
        else:
            python = "python3"
            activate = ["source", self._path(self.venv / "bin" / "activate")]
        kernel = quote(["pip", "install", *self.kernel])
        if not self.windows:  # cmd.exe has no end-of-line comments
            kernel += "  # the kernel first: this seamkit, with its testing kit"
        return [
            quote([python, "-m", "venv", self._path(self.venv)]),
            quote(activate),
            kernel,
            quote(["pip", "install", "-e", f"{where}[test]"]),
            quote(["pytest", self._path(self.target)]),
            "seamkit plugins",
        ]

    def _path(self, path: PurePath) -> str:
        return str(PureWindowsPath(path)) if self.windows else PurePosixPath(path).as_posix()


def kernel_requirement() -> tuple[str, ...]:
    """The ``pip install`` arguments that install the running seamkit with its
    testing kit: from the folder it was installed from (``-e`` if it was
    editable: a clone), from the archive or repository it came from, or else
    from the package index at its exact version."""
    try:
        dist = metadata.distribution("seamkit")
    except metadata.PackageNotFoundError:  # a source tree on sys.path
        return (f"seamkit[{_EXTRA}]",)
    return _from_direct_url(dist.read_text("direct_url.json"), dist.version)


def _from_direct_url(text: str | None, version: str) -> tuple[str, ...]:
    """`kernel_requirement` from the text of a PEP 610 ``direct_url.json``
    (``None``: installed from an index)."""
    index = (f"seamkit[{_EXTRA}]=={version}",)
    if not text:
        return index
    try:
        data = json.loads(text)
        url = str(data["url"])
    except (ValueError, KeyError, TypeError):
        return index
    if "dir_info" in data:
        parsed = urlparse(url)
        if parsed.scheme != "file":
            return index
        folder = Path(url2pathname(unquote(parsed.path)))
        if not (folder / "pyproject.toml").is_file():
            return index  # a folder that has gone (a build directory)
        editable = bool(data["dir_info"].get("editable"))
        return (*(("-e",) if editable else ()), f"{folder}[{_EXTRA}]")
    if "archive_info" in data:
        return (f"seamkit[{_EXTRA}] @ {url}",)
    vcs = data.get("vcs_info")
    if isinstance(vcs, dict) and "vcs" in vcs and "commit_id" in vcs:
        fragment = f"#subdirectory={data['subdirectory']}" if data.get("subdirectory") else ""
        return (f"seamkit[{_EXTRA}] @ {vcs['vcs']}+{url}@{vcs['commit_id']}{fragment}",)
    return index
