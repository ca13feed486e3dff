"""Docs that are run: every shell command a document shows is executed, and
the output it shows is compared with the real one.

``tests/test_docs_run.py`` runs each document of its ``DOCUMENTS`` list
(README.md, docs/guide.md, ...) through this module. By hand, for one
document or several: ``python -m tests.docs_run docs/guide.md`` prints every
mismatch as a diff, and ``--list`` prints the commands that are not run.

Conventions (how a document is written)
=======================================

Blocks
------

A fenced block whose info string is ``console`` is a terminal session:

- a line starting with ``$ `` is a command; a command whose line ends with
  ``\\`` goes on on the next line (as in the shell);
- the lines after a command, up to the next ``$ `` line or the end of the
  block, are its expected output: standard output and standard error merged,
  in the order a terminal shows them;
- the exit status is not checked: the output is. Where the status matters,
  the document shows it with ``$ echo $?``, which works as a reader expects
  because every command runs in one shell (below).

A fenced block whose info string is ``sh``, ``bash`` or ``shell`` is a list of
commands whose output is not shown: each line (joined with the next ones
while it ends with ``\\``) is a command, blank lines and lines holding only a
``# comment`` are not. Each command must exit with status 0.

Every other block (``yaml``, ``json``, ``python``, ``text``, ...) is not run;
a ``docs-run: file`` directive (below) can write it to a file. A ``$ `` line
in any other block but data (``yaml``, ``json``, ``python``, ``toml``...)
is refused: a command shown is a ``console``
block, with ``# not run:`` if it cannot run. Here-documents and prompts for
continuation lines (``> ``) are not supported.

Commands that are not run
-------------------------

A command that cannot run in the test (the test command itself, a server
left running, one that needs a live key, the package index or another
machine) carries a visible marker, at the end of the command::

    seamkit serve app.yaml --port 8000   # not run: a server left running

or, for the whole block, as its first line: ``# not run: <reason>``. The
reason must not be empty. A console command that is not run keeps its shown
output, which is not compared.

Hidden directives
-----------------

HTML comments, which rendered markdown does not show, set things up. Each is
``<!-- docs-run: NAME ARGS -->`` on one line, or a multi-line comment whose
first line is ``<!-- docs-run: NAME ARGS`` and whose last line is ``-->``
(the lines between are its body). Blank lines may separate a directive from
the block it belongs to, nothing else may.

``<!-- docs-run: env NAME=VALUE ... -->``
    The next block's commands run with these environment variables (shell
    words: quote a value with spaces; no expansion). Only that block: the
    variables are restored after it.
``<!-- docs-run: file PATH -->``
    Write the next block's text (of any language; the block is then not run)
    to ``PATH``, relative to the working directory, before the commands that
    follow. With a body, the body is the file's text and no block is
    consumed: use that for a file the document does not show.
``<!-- docs-run: append PATH -->``
    The same, appended to the file (a blank line apart), for a file a
    document builds up block by block.
``<!-- docs-run: run COMMAND -->``
    Run ``COMMAND`` at this point, hidden (a multi-line body: one command a
    line). It must exit with status 0; its output is not compared. It runs
    in the document's shell, so ``export`` and ``cd`` last.

How a document runs
-------------------

All commands of one document run in document order in ONE ``bash`` process
(state carries through the document: files, ``cd``, ``export``, ``$?``),
with standard input from ``/dev/null`` and standard error merged into
standard output (seamkit flushes each line, so the order is a terminal's).
Each document gets a fresh temporary directory: ``HOME`` is in it, and the
working directory is ``$HOME/seamkit``, as a clone would be, holding a copy
of ``docs/examples`` (without the files the examples write), so
``seamkit validate docs/examples/hello/app.yaml`` works and nothing writes
into the repository. The environment is built from scratch: ``PATH`` with
this interpreter's directory (the dev venv's ``bin``) first, so ``seamkit``
and ``python3`` are the dev install; ``SEAMKIT_HOME`` at
``$HOME/.local/share/seamkit`` (seamkit's default on Linux, on every
platform); ``TZ=UTC``, ``LANG=C.UTF-8``, ``PYTHONIOENCODING=utf-8``,
``PYTHONDONTWRITEBYTECODE=1``, ``TERM=dumb``; for hidden set-up,
``DOCS_RUN_ROOT`` (this checkout) and ``DOCS_RUN_PYTHON`` (this
interpreter), so that a document can make a fresh virtual environment with
seamkit from the checkout (the plugin tutorial does); nothing else of the outer
environment: no ``SEAMKIT_*`` variable, no ``COLUMNS`` (so 80 columns, as in
a pipe), no API key. A command must not ``exit`` the shell, nor leave a
process running (``&``). A document has 240 s in all.

How outputs are compared
------------------------

Both the shown and the real output are normalised, then compared line by
line:

- the home directory becomes ``/home/ann``, so the working directory is
  ``/home/ann/seamkit`` and seamkit's data directory
  ``/home/ann/.local/share/seamkit``;
- terminal colours are dropped, and trailing spaces and trailing blank lines;
- a duration (``0.00s``, ``3.12 ms``, ``340 µs``) becomes ``<duration>``,
  the spaces before it one space; a bar of the ``--trace`` timeline
  (``▕██  ▏``) becomes ``▕…▏``; a run id (``run a59d35d3``) becomes
  ``run <id>``;
- a line ``...`` in the shown output matches any number of lines, none
  included (as doctest's ELLIPSIS, for whole lines only).

A mismatch is reported with the document's file and line of the command and
a unified diff of the normalised outputs.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "docs" / "examples"
BIN = Path(sys.executable).parent  # not resolved: the venv's bin, not the base interpreter's

SHELL_LANGS = frozenset({"sh", "bash", "shell"})
DATA_LANGS = frozenset({"yaml", "yml", "json", "python", "py", "toml", "ini", "diff"})
"""Blocks whose ``$ `` lines are data, not commands; in any other block that
is not run (``text``, plain, ``shell-session``, ``zsh``...) one is refused."""
HOME_PLACEHOLDER = "/home/ann"  # the home directory, as outputs show it
WORK_NAME = "seamkit"  # the working directory: $HOME/seamkit, as a clone would be
DEFAULT_TIMEOUT = 240.0

# Files the examples write when they run: never copied from the repository.
_EXAMPLE_IGNORE = shutil.ignore_patterns(
    "__pycache__",
    "*.pyc",
    "*.sqlite",
    "*.sqlite-*",
    "calls.log",
    "memories.json",
    "*.cassette.jsonl",
)

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\s`]*)")
_DIRECTIVE = re.compile(r"^[ \t]*<!--[ \t]*docs-run:(?P<rest>.*)$")
_NOT_RUN = re.compile(r"(?:^|\s)#\s*not run\b(?P<colon>\s*:)?(?P<reason>.*)$")
_ENV_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_DIRECTIVES = ("env", "file", "append", "run")
_NO_REASON = "'# not run' needs a reason: '# not run: <reason>'"


class DocsRunError(Exception):
    """A document breaks the conventions; ``problems`` are ``file:line: message``."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = list(problems)


# --- the parsed document -------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    """One command of a document, in document order."""

    line: int  # 1-based line of its first line
    text: str  # as the shell gets it: continuation lines joined by "\\\n"
    kind: Literal["console", "sh", "hidden"]
    expected: tuple[str, ...] | None = None  # console: the shown output lines
    not_run: str | None = None  # the reason, when it is not run
    env: tuple[tuple[str, str], ...] = ()

    @property
    def shown(self) -> str:
        """The command as a message names it."""
        first, *more = self.text.split("\n")
        prompt = {"console": "$ ", "sh": "", "hidden": "(docs-run: run) "}[self.kind]
        return prompt + first + (" ..." if more else "")


@dataclass(frozen=True)
class WriteFile:
    """A ``docs-run: file`` or ``append`` directive."""

    line: int
    path: str
    text: str
    append: bool = False


Step = Command | WriteFile


@dataclass
class Document:
    path: Path
    steps: list[Step] = field(default_factory=list)

    @property
    def name(self) -> str:
        try:
            return self.path.resolve().relative_to(ROOT).as_posix()
        except ValueError:
            return str(self.path)

    @property
    def commands(self) -> list[Command]:
        return [step for step in self.steps if isinstance(step, Command)]

    @property
    def not_run(self) -> list[Command]:
        return [c for c in self.commands if c.not_run is not None]


# --- parsing -----------------------------------------------------------------------------


@dataclass
class _Directive:
    line: int
    name: str
    args: str
    body: list[str] | None  # None: a one-line directive


@dataclass
class _Block:
    line: int  # of the opening fence
    info: str
    lines: list[str]  # the content; lines[i] is at line + 1 + i


def _not_run(text: str) -> tuple[bool, str | None]:
    """``(has a marker, its reason)`` of a command's last line or a comment line."""
    match = _NOT_RUN.search(text)
    if match is None:
        return False, None
    reason = match["reason"].strip() if match["colon"] else ""
    return True, reason or None


def _join(lines: Sequence[str], start: int) -> tuple[str, int]:
    """The command starting at ``lines[start]`` with its ``\\`` continuations,
    and the index after it."""
    parts = [lines[start]]
    i = start
    while parts[-1].endswith("\\") and i + 1 < len(lines):
        i += 1
        parts.append(lines[i])
    return "\n".join(parts), i + 1


def _is_prompt(line: str) -> bool:
    return line.startswith("$ ") or line == "$"


def parse(text: str, path: Path | str = "<document>") -> Document:
    """The document's steps; raises ``DocsRunError`` listing every problem."""
    return _Parser(Path(path)).parse(text)


class _Parser:
    def __init__(self, path: Path) -> None:
        self.doc = Document(path)
        self.name = self.doc.name
        self.problems: list[str] = []

    def problem(self, line: int, message: str) -> None:
        self.problems.append(f"{self.name}:{line}: {message}")

    def parse(self, text: str) -> Document:
        lines = text.splitlines()
        pending: list[_Directive] = []
        i = 0
        while i < len(lines):
            if _DIRECTIVE.match(lines[i]):
                directive, i = self.directive(lines, i)
                if directive is None:
                    pass
                elif directive.name == "run":
                    self.doc.steps.extend(self.hidden(directive))
                elif directive.name in ("file", "append") and directive.body is not None:
                    self.doc.steps.append(self.write(directive, "\n".join(directive.body)))
                else:
                    pending.append(directive)
                continue
            fence = _FENCE.match(lines[i])
            if fence is not None:
                block, i = self.block(lines, i, fence)
                self.block_steps(block, pending)
                pending = []
                continue
            if lines[i].strip():
                self.orphans(pending)
                pending = []
            i += 1
        self.orphans(pending)
        if self.problems:
            raise DocsRunError(self.problems)
        return self.doc

    def orphans(self, pending: list[_Directive]) -> None:
        for d in pending:
            self.problem(d.line, f"docs-run: {d.name} is not directly before a block")

    def directive(self, lines: list[str], i: int) -> tuple[_Directive | None, int]:
        match = _DIRECTIVE.match(lines[i])
        assert match is not None
        rest = match["rest"].strip()
        body: list[str] | None = None
        end = i + 1
        if rest.endswith("-->"):
            rest = rest[:-3].strip()
        else:
            body = []
            while end < len(lines) and lines[end].strip() != "-->":
                body.append(lines[end])
                end += 1
            if end == len(lines):
                self.problem(i + 1, "docs-run: the comment is not closed by a line '-->'")
                return None, end
            end += 1
        word, _, args = rest.partition(" ")
        if word not in _DIRECTIVES:
            self.problem(
                i + 1, f"unknown directive 'docs-run: {word}' (there are: {', '.join(_DIRECTIVES)})"
            )
            return None, end
        return _Directive(i + 1, word, args.strip(), body), end

    @staticmethod
    def block(lines: list[str], i: int, fence: re.Match[str]) -> tuple[_Block, int]:
        indent, mark = fence["indent"], fence["fence"]
        closing = re.compile(rf"^[ \t]*{re.escape(mark[0])}{{{len(mark)},}}[ \t]*$")
        content: list[str] = []
        j = i + 1
        while j < len(lines) and not closing.match(lines[j]):
            raw = lines[j]
            content.append(raw[len(indent) :] if raw.startswith(indent) else raw.lstrip())
            j += 1
        return _Block(i + 1, fence["info"].lower(), content), j + 1

    def words(self, d: _Directive) -> list[str]:
        try:
            return shlex.split(d.args)
        except ValueError as exc:
            self.problem(d.line, f"docs-run: {d.name}: {exc}")
            return []

    def write(self, d: _Directive, text: str) -> WriteFile:
        words = self.words(d)
        target = words[0] if len(words) == 1 else ""
        if not target or Path(target).is_absolute() or ".." in Path(target).parts:
            self.problem(
                d.line,
                f"docs-run: {d.name} takes one relative path inside the working directory, "
                f"got {d.args!r}",
            )
        if text and not text.endswith("\n"):
            text += "\n"
        return WriteFile(d.line, target, text, append=d.name == "append")

    def hidden(self, d: _Directive) -> list[Command]:
        if d.body is None:
            if not d.args:
                self.problem(d.line, "docs-run: run needs a command")
                return []
            return [Command(d.line, d.args, "hidden")]
        if d.args:
            self.problem(d.line, "docs-run: run takes a command or a body, not both")
        commands = []
        k = 0
        while k < len(d.body):
            if not d.body[k].strip() or d.body[k].lstrip().startswith("#"):
                k += 1
                continue
            text, after = _join(d.body, k)
            commands.append(Command(d.line + 1 + k, text, "hidden"))
            k = after
        return commands

    def block_steps(self, block: _Block, pending: list[_Directive]) -> None:
        env: list[tuple[str, str]] = []
        written = False
        for d in pending:
            if d.name == "env":
                words = self.words(d)
                if d.body is not None or not words:
                    self.problem(d.line, "docs-run: env takes NAME=VALUE words on its line")
                for word in words:
                    if not _ENV_WORD.match(word):
                        self.problem(d.line, f"docs-run: env: {word!r} is not NAME=VALUE")
                    key, _, value = word.partition("=")
                    env.append((key, value))
            else:  # file or append on one line: writes this block
                if written:
                    self.problem(d.line, "docs-run: two directives write this block")
                written = True
                self.doc.steps.append(self.write(d, "\n".join(block.lines)))
        if written:
            if env:
                self.problem(block.line, "docs-run: env before a block that is written, not run")
        elif block.info == "console":
            self.doc.steps.extend(self.console(block, tuple(env)))
        elif block.info in SHELL_LANGS:
            self.doc.steps.extend(self.sh(block, tuple(env)))
        else:
            if env:
                self.problem(block.line, f"docs-run: env before a {block.info or 'plain'} block")
            if block.info not in DATA_LANGS:
                for k, line in enumerate(block.lines):
                    if _is_prompt(line):
                        self.problem(
                            block.line + 1 + k,
                            f"a '$ ' command in a {block.info or 'plain'} block is never run: "
                            "make the block 'console' (with '# not run: <reason>' if it "
                            "cannot run)",
                        )

    def marker(self, block: _Block) -> tuple[list[str], int, str | None]:
        """The block's lines without a first-line ``# not run:`` marker, the
        line of the first of them, and the marker's reason."""
        if block.lines and block.lines[0].lstrip().startswith("#"):
            marked, reason = _not_run(block.lines[0])
            if marked:
                if reason is None:
                    self.problem(block.line + 1, _NO_REASON)
                return block.lines[1:], block.line + 2, reason or "?"
        return block.lines, block.line + 1, None

    def command_marker(self, line: int, text: str, whole: str | None) -> str | None:
        """The not-run reason of a command: the block's, else its own marker's."""
        marked, reason = _not_run(text.rsplit("\n", 1)[-1])
        if marked and reason is None:
            self.problem(line, _NO_REASON)
        return whole if whole is not None else (reason or "?") if marked else None

    def console(self, block: _Block, env: tuple[tuple[str, str], ...]) -> list[Command]:
        lines, first, whole = self.marker(block)
        commands: list[Command] = []
        k = 0
        while k < len(lines):
            if not _is_prompt(lines[k]):
                if lines[k].strip():
                    self.problem(first + k, "console block: output before any '$ ' command")
                k += 1
                continue
            text, after = _join([lines[k][2:], *lines[k + 1 :]], 0)
            end = after = after + k
            while end < len(lines) and not _is_prompt(lines[end]):
                end += 1
            not_run = self.command_marker(first + k, text, whole)
            expected = tuple(lines[after:end])
            commands.append(Command(first + k, text, "console", expected, not_run, env))
            k = end
        return commands

    def sh(self, block: _Block, env: tuple[tuple[str, str], ...]) -> list[Command]:
        lines, first, whole = self.marker(block)
        commands: list[Command] = []
        k = 0
        while k < len(lines):
            stripped = lines[k].strip()
            if not stripped or stripped.startswith("#"):
                if _not_run(stripped)[0]:
                    self.problem(
                        first + k,
                        "a '# not run:' marker ends a command or is the block's first line",
                    )
                k += 1
                continue
            text, after = _join(lines, k)
            not_run = self.command_marker(first + k, text, whole)
            commands.append(Command(first + k, text, "sh", not_run=not_run, env=env))
            k = after
        return commands


def parse_file(path: Path) -> Document:
    return parse(path.read_text(encoding="utf-8"), path)


# --- normalising ---------------------------------------------------------------------


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_DURATION = re.compile(r"[ \t]*(?<![\w.])\d+(?:\.\d+)?[ \t]?(?:ms|µs|us|ns|s)\b")
_BAR = re.compile(r"▕[^▏\n]*▏")
_RUN_ID = re.compile(r"\brun [0-9a-f]{8}\b")


def normalise(text: str, *, paths: Sequence[tuple[str, str]] = ()) -> list[str]:
    """The lines of ``text`` as they are compared: ``paths`` are ``(real,
    placeholder)`` pairs replaced first (longest first)."""
    for real, placeholder in sorted(paths, key=lambda p: -len(p[0])):
        text = text.replace(real, placeholder)
    text = _ANSI.sub("", text)
    text = _BAR.sub("▕…▏", text)
    text = _DURATION.sub(lambda m: (" " if m.group(0)[:1] in " \t" else "") + "<duration>", text)
    text = _RUN_ID.sub("run <id>", text)
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def matches(expected: Sequence[str], actual: Sequence[str]) -> bool:
    """Whether ``actual`` fits ``expected``, where a line ``...`` matches any
    number of lines."""
    # reach[j]: expected[:i] can match actual[:j]
    reach = [True] + [False] * len(actual)
    for line in expected:
        if line == "...":
            seen = False
            for j in range(len(reach)):
                seen = seen or reach[j]
                reach[j] = seen
        else:
            reach = [False] + [reach[j] and actual[j] == line for j in range(len(actual))]
    return reach[-1]


# --- running -------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    command: Command
    output: str  # raw, merged stdout and stderr
    status: int | None  # None: it never finished (a time-out, or the shell ended)


@dataclass
class Run:
    document: Document
    outcomes: list[Outcome]
    work: Path
    home: Path
    stray: str = ""  # output after the last command, or of a shell that ended early
    timed_out: bool = False

    @property
    def paths(self) -> list[tuple[str, str]]:
        """``(real, placeholder)``: the home directory (which holds the working
        directory), as it is and resolved."""
        return [(str(self.home), HOME_PLACEHOLDER), (str(self.home.resolve()), HOME_PLACEHOLDER)]


_PRELUDE = r"""
set -o pipefail
__docs_run_mark() { local s=$?; printf '%s:%s:%s\n' "$__docs_run_token" "$1" "$s"; return $s; }
__docs_run_saved=()
__docs_run_env() {
  local s=$?
  if [ -n "$(eval "printf %s \"\${$1+x}\"")" ]; then
    __docs_run_saved+=("export $1=$(eval "printf %q \"\$$1\"")")
  else
    __docs_run_saved+=("unset $1")
  fi
  export "$1=$2"; return $s
}
__docs_run_restore() {
  local s=$? c
  for c in "${__docs_run_saved[@]}"; do eval "$c"; done
  __docs_run_saved=(); return $s
}
"""


def environment(home: Path) -> dict[str, str]:
    """The environment a document's shell starts with."""
    env = {
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', os.defpath)}",
        "HOME": str(home),
        "SEAMKIT_HOME": str(home / ".local" / "share" / "seamkit"),
        "TZ": "UTC",
        "LANG": "C.UTF-8",
        "PYTHONIOENCODING": "utf-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "TERM": "dumb",
        # For hidden set-up only (a document that needs a fresh environment
        # installs seamkit from this checkout with this Python):
        "DOCS_RUN_ROOT": str(ROOT),
        "DOCS_RUN_PYTHON": sys.executable,
    }
    if "TMPDIR" in os.environ:
        env["TMPDIR"] = os.environ["TMPDIR"]
    # How this machine reaches a package index (certificates, proxies, pip's
    # and uv's settings), and their caches, so that set-up is not slowed by
    # downloading what the machine already has.
    for name, value in os.environ.items():
        if name in _NETWORK or name.lower().endswith("_proxy") or name.startswith(("PIP_", "UV_")):
            env[name] = value
    outer = Path.home() / ".cache"
    env.setdefault("UV_CACHE_DIR", str(outer / "uv"))
    env.setdefault("PIP_CACHE_DIR", str(outer / "pip"))
    user_pip = Path.home() / ".config" / "pip" / "pip.conf"  # HOME moves: pip would miss it
    if user_pip.exists():  # (pip reads the global /etc/pip.conf wherever HOME is)
        env.setdefault("PIP_CONFIG_FILE", str(user_pip))
    return env


_NETWORK = frozenset(
    {"SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NIX_SSL_CERT_FILE"}
)


def script(doc: Document, token: str, work: Path) -> tuple[str, list[Command]]:
    """The bash script of a document and the commands it runs, in order."""
    parts = [_PRELUDE, f"__docs_run_token={token}", f"cd {shlex.quote(str(work))}"]
    ran: list[Command] = []
    active_env: tuple[tuple[str, str], ...] = ()
    for step in doc.steps:
        if isinstance(step, Command) and step.not_run is not None:
            continue
        env = step.env if isinstance(step, Command) else ()
        if env != active_env:
            if active_env:
                parts.append("__docs_run_restore")
            parts.extend(f"__docs_run_env {key} {shlex.quote(value)}" for key, value in env)
            active_env = env
        if isinstance(step, WriteFile):
            parts.append(_write_script(step, token))
            continue
        parts.append(step.text)
        parts.append(f"__docs_run_mark {len(ran)}")
        ran.append(step)
    if active_env:
        parts.append("__docs_run_restore")
    return "\n".join(parts) + "\n", ran


def _write_script(step: WriteFile, token: str) -> str:
    target = shlex.quote(step.path)
    lines = [f'mkdir -p "$(dirname {target})"']
    if step.append:
        lines.append(f"if [ -s {target} ]; then echo >> {target}; fi")
    if step.text:
        marker = f"__docs_run_eof_{token}"
        lines.append(f"cat {'>>' if step.append else '>'} {target} <<'{marker}'")
        lines.append(step.text + marker)
    else:
        lines.append(f": {'>>' if step.append else '>'} {target}")
    return "\n".join(lines)


def run(doc: Document, *, timeout: float = DEFAULT_TIMEOUT, keep: Path | None = None) -> Run:
    """Run a document's commands in a fresh temporary directory, or in ``keep``
    (which must not exist yet), left in place to look at."""
    if keep is None:
        root = Path(tempfile.mkdtemp(prefix="docs-run-"))
    else:
        root = keep
        root.mkdir(parents=True)
    home = root / "home"
    work = home / WORK_NAME
    try:
        shutil.copytree(EXAMPLES, work / "docs" / "examples", ignore=_EXAMPLE_IGNORE)
        token = uuid.uuid4().hex
        text, ran = script(doc, token, work)
        path = root / "script.sh"  # outside the working directory: no command sees it
        path.write_text(text, encoding="utf-8")
        proc = subprocess.Popen(
            ["bash", "--noprofile", "--norc", str(path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=work,
            env=environment(home),
            start_new_session=True,  # a time-out kills every process the commands started
        )
        timed_out = False
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
        with contextlib.suppress(ProcessLookupError):  # whatever a command left running
            os.killpg(proc.pid, signal.SIGKILL)
        return _split(doc, ran, out.decode("utf-8", "replace"), token, work, home, timed_out)
    finally:
        if keep is None:
            shutil.rmtree(root, ignore_errors=True)


def _split(
    doc: Document, ran: list[Command], out: str, token: str, work: Path, home: Path, timed_out: bool
) -> Run:
    pattern = re.compile(rf"{token}:(\d+):(\d+)\n")
    outcomes: list[Outcome] = []
    position = 0
    for match in pattern.finditer(out):
        index, status = int(match[1]), int(match[2])
        outcomes.append(Outcome(ran[index], out[position : match.start()], status))
        position = match.end()
    stray = out[position:]
    for command in ran[len(outcomes) :]:
        outcomes.append(Outcome(command, stray, None))
        stray = ""
    return Run(doc, outcomes, work, home, stray, timed_out)


# --- checking ------------------------------------------------------------------------


def failures(result: Run, *, timeout: float = DEFAULT_TIMEOUT) -> list[str]:
    """One message per command whose output or status is not what the
    document says, each naming ``file:line`` of the command."""
    name = result.document.name
    found: list[str] = []
    for outcome in result.outcomes:
        command = outcome.command
        where = f"{name}:{command.line}: {command.shown}"
        actual = normalise(outcome.output, paths=result.paths)
        if outcome.status is None:
            why = (
                f"did not finish within {timeout:g}s"
                if result.timed_out
                else "the shell ended before it finished (did a command `exit`?)"
            )
            found.append(f"{where}\n  {why}; its output so far:\n" + _indent(actual))
        elif command.kind == "console":
            assert command.expected is not None
            expected = normalise("\n".join(command.expected))
            if not matches(expected, actual):
                diff = difflib.unified_diff(
                    expected, actual, "shown in the document", "real output", lineterm=""
                )
                found.append(f"{where}\n  output differs:\n" + _indent(list(diff)))
        elif outcome.status != 0:
            found.append(
                f"{where}\n  exit status {outcome.status}; its output:\n" + _indent(actual)
            )
    if result.stray.strip():
        found.append(
            f"{name}: output after the last command:\n"
            + _indent(normalise(result.stray, paths=result.paths))
        )
    return found


def _indent(lines: Iterable[str]) -> str:
    return "\n".join(f"    {line}" for line in lines)


def not_run_report(doc: Document) -> list[str]:
    """``file:line: command  -- reason`` for every command that is not run."""
    return [f"{doc.name}:{c.line}: not run: {c.not_run}\n    {c.shown}" for c in doc.not_run]


def check_file(path: Path, *, timeout: float = DEFAULT_TIMEOUT) -> list[str]:
    """Parse and run one document: the problems found, none when it passes."""
    try:
        doc = parse_file(path)
    except DocsRunError as exc:
        return exc.problems
    return failures(run(doc, timeout=timeout), timeout=timeout)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.docs_run",
        description=__doc__.split("\n\n", 1)[0] if __doc__ else None,
    )
    parser.add_argument("documents", nargs="+", type=Path)
    parser.add_argument("--list", action="store_true", help="list the commands that are not run")
    parser.add_argument("--keep", type=Path, help="run in this new directory and leave it there")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT)
    args = parser.parse_args(argv)
    status = 0
    for path in args.documents:
        try:
            doc = parse_file(path)
        except DocsRunError as exc:
            print("\n".join(exc.problems))
            status = 1
            continue
        if args.list:
            print("\n".join(not_run_report(doc)))
            continue
        keep = args.keep / path.stem if args.keep else None
        problems = failures(run(doc, timeout=args.timeout, keep=keep), timeout=args.timeout)
        count = len(doc.commands) - len(doc.not_run)
        ok = f"{doc.name}: ok ({count} command{'' if count == 1 else 's'} run)"
        print("\n\n".join(problems) if problems else ok)
        status = status or (1 if problems else 0)
    return status


if __name__ == "__main__":
    sys.exit(main())
