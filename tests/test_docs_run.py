"""Docs that are run: every shell command of the documents below is executed
and its shown output compared with the real one (conventions: tests/docs_run.py).

A failure names the document's file and line; to see every mismatch of a
document at once, or to look at its working directory afterwards:

    python -m tests.docs_run docs/guide.md [--keep /tmp/docs-run]
    python -m tests.docs_run --list README.md docs/guide.md   # what is not run, and why
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import docs_run
from tests.docs_run import Command, DocsRunError, WriteFile, matches, normalise, parse

ROOT = docs_run.ROOT

# The documents whose commands are run, each in its own fresh directory.
MAIN_DOCUMENTS = ("README.md", "docs/guide.md", "docs/plugin-tutorial.md")
"""The documents the issue names: most of what they show must run."""

DOCUMENTS = [
    *MAIN_DOCUMENTS,
    *sorted(
        str(path.relative_to(ROOT))
        for pattern in ("plugins/*/README.md", "contrib/*/README.md", "docs/examples/*/README.md")
        for path in ROOT.glob(pattern)
    ),
]


@pytest.mark.parametrize("document", DOCUMENTS)
def test_the_document_runs_as_shown(document: str) -> None:
    problems = docs_run.check_file(ROOT / document)
    assert not problems, "\n\n".join(problems)


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_command_not_run_says_why(document: str) -> None:
    """Parsing refuses a marker without a reason; this lists them (-rP shows it)."""
    doc = docs_run.parse_file(ROOT / document)
    print("\n".join(docs_run.not_run_report(doc)))
    for command in doc.not_run:
        assert command.not_run and command.not_run.strip(), command
    if document in MAIN_DOCUMENTS:  # a short README may show only what cannot run here
        assert len(doc.not_run) < len(doc.commands), "nothing of the document runs"


# --- the parser --------------------------------------------------------------------------


def _problems(text: str) -> list[str]:
    with pytest.raises(DocsRunError) as caught:
        parse(text, "doc.md")
    return caught.value.problems


def test_console_commands_their_outputs_and_continuations() -> None:
    doc = parse(
        "intro\n\n```console\n$ echo a \\\n    b\na b\n$ true\n$ printf 'x\\ny\\n'\nx\ny\n```\n",
        "doc.md",
    )
    first, second, third = doc.commands
    assert (first.line, first.text, first.expected) == (4, "echo a \\\n    b", ("a b",))
    assert (second.line, second.expected) == (7, ())
    assert (third.line, third.expected, third.kind) == (8, ("x", "y"), "console")


def test_sh_commands_skip_comments_and_join_continuations() -> None:
    doc = parse("```sh\n# set up\nmkdir a \\\n  b\n\ncd a   # go there\n```\n", "doc.md")
    assert [(c.line, c.text, c.kind, c.expected) for c in doc.commands] == [
        (3, "mkdir a \\\n  b", "sh", None),
        (6, "cd a   # go there", "sh", None),
    ]


def test_not_run_markers_on_a_command_and_on_a_block() -> None:
    doc = parse(
        "```sh\nserve   # not run: a server left running\nls\n```\n"
        "```console\n# not run: needs a key\n$ call\nanswer\n$ again\n```\n"
        "```bash\nOTEL=1 \\\n  run   # not run: needs a collector\n```\n",
        "doc.md",
    )
    assert [(c.line, c.not_run) for c in doc.commands] == [
        (2, "a server left running"),
        (3, None),
        (7, "needs a key"),
        (9, "needs a key"),
        (12, "needs a collector"),
    ]
    assert doc.commands[2].expected == ("answer",)


@pytest.mark.parametrize(
    "block",
    [
        "```sh\nserve   # not run:\n```\n",
        "```sh\nserve   # not run\n```\n",
        "```console\n$ serve   # not run:   \n```\n",
        "```console\n# not run:\n$ serve\n```\n",
        "```bash\n# not run\nserve\n```\n",
    ],
)
def test_a_not_run_marker_without_a_reason_is_refused(block: str) -> None:
    (problem,) = _problems(block)
    assert problem.startswith("doc.md:2: ") and "needs a reason" in problem


def test_a_stray_marker_and_a_prompt_in_a_text_block_are_refused() -> None:
    problems = _problems("```sh\nls\n# not run: why\n```\n\n```text\n$ seamkit run x\n```\n")
    assert problems[0].startswith("doc.md:3: ") and "ends a command" in problems[0]
    assert problems[1].startswith("doc.md:7: ") and "text block is never run" in problems[1]


@pytest.mark.parametrize("info", ["shell-session", "zsh", "", "terminal"])
def test_a_prompt_in_any_block_that_is_not_data_is_refused(info: str) -> None:
    (problem,) = _problems(f"```{info}\n$ seamkit run x\n```\n")
    assert problem.startswith("doc.md:2: ") and "is never run" in problem
    parse("```yaml\n$ 5: price\n```\n```python\n$ = 1\n```\n", "doc.md")  # data: fine


def test_a_failing_command_inside_a_pipeline_fails_the_command() -> None:
    _, found = _run("```sh\nfalse | cat\n```\n")
    assert len(found) == 1 and "exit status 1" in found[0]


def test_directives_env_file_append_and_run() -> None:
    doc = parse(
        "<!-- docs-run: env A=1 'B=two words' -->\n"
        "```console\n$ echo $A\n1\n```\n"
        "```sh\necho $A\n```\n"
        "<!-- docs-run: file conf/app.yaml -->\n\n"
        "```yaml\nname: x\n```\n"
        "<!-- docs-run: append conf/app.yaml -->\n```yaml\nmodel: y\n```\n"
        "<!-- docs-run: file hidden.txt\nline one\n  two\n-->\n"
        "<!-- docs-run: run touch made -->\n"
        "<!-- docs-run: run\nmkdir d\n# a comment\ncd d \\\n  && pwd\n-->\n",
        "doc.md",
    )
    assert [type(step).__name__ for step in doc.steps] == [
        "Command",
        "Command",
        "WriteFile",
        "WriteFile",
        "WriteFile",
        "Command",
        "Command",
        "Command",
    ]
    console, sh, yaml, more, hidden_file, *hidden = doc.steps
    assert isinstance(console, Command) and console.env == (("A", "1"), ("B", "two words"))
    assert isinstance(sh, Command) and sh.env == ()
    assert yaml == WriteFile(9, "conf/app.yaml", "name: x\n")
    assert more == WriteFile(14, "conf/app.yaml", "model: y\n", append=True)
    assert hidden_file == WriteFile(18, "hidden.txt", "line one\n  two\n")
    assert [(c.line, c.text, c.kind) for c in hidden if isinstance(c, Command)] == [
        (22, "touch made", "hidden"),
        (24, "mkdir d", "hidden"),
        (26, "cd d \\\n  && pwd", "hidden"),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("<!-- docs-run: frobnicate -->\n```sh\nls\n```\n", "unknown directive"),
        ("<!-- docs-run: env A=1 -->\nprose\n```sh\nls\n```\n", "not directly before a block"),
        ("<!-- docs-run: env A=1 -->\n", "not directly before a block"),
        ("<!-- docs-run: env nope -->\n```sh\nls\n```\n", "is not NAME=VALUE"),
        ("<!-- docs-run: file ../out.txt -->\n```text\nx\n```\n", "relative path inside"),
        ("<!-- docs-run: file /etc/x -->\n```text\nx\n```\n", "relative path inside"),
        ("<!-- docs-run: run\nls\n", "not closed"),
        ("<!-- docs-run: run -->\n", "needs a command"),
    ],
)
def test_malformed_directives_are_refused(text: str, message: str) -> None:
    (problem,) = _problems(text)
    assert problem.startswith("doc.md:1: ") and message in problem


# --- comparing outputs -------------------------------------------------------------------


def test_ellipsis_lines_match_any_lines() -> None:
    assert matches(["a", "...", "z"], ["a", "b", "c", "z"])
    assert matches(["a", "...", "z"], ["a", "z"])
    assert matches(["..."], [])
    assert matches(["...", "b", "..."], ["a", "b", "c"])
    assert not matches(["a", "...", "z"], ["a", "b"])
    assert not matches(["a"], ["a", "b"])
    assert not matches(["a ... z"], ["a b z"])  # whole lines only
    assert matches(["a ... z"], ["a ... z"])


def test_normalise_durations_bars_run_ids_paths_and_colours() -> None:
    real = (
        "\x1b[2m← calc_add (0.01s): 5\x1b[0m   \n"
        "hello · run 0f1e2d3c · completed\n"
        "run      ▕██████  ▏  12.40 ms\n"
        "  tool   ▕   ██   ▏    340 µs\n"
        "session 'ann' in /tmp/x/home/seamkit/sessions.sqlite: 2 messages\n"
        "\n\n"
    )
    assert normalise(real, paths=[("/tmp/x/home", "/home/ann")]) == [
        "← calc_add (<duration>): 5",
        "hello · run <id> · completed",
        "run      ▕…▏ <duration>",
        "  tool   ▕…▏ <duration>",
        "session 'ann' in /home/ann/seamkit/sessions.sqlite: 2 messages",
    ]
    assert normalise("took 3.12 ms, 2 steps, 10s timeout, v1.2s") == [
        "took <duration>, 2 steps, <duration> timeout, v1.2s"
    ]


# --- running -----------------------------------------------------------------------------


def _run(text: str) -> tuple[docs_run.Run, list[str]]:
    result = docs_run.run(parse(text, "doc.md"), timeout=60)
    return result, docs_run.failures(result, timeout=60)


def test_one_shell_per_document_state_carries_and_env_is_per_block() -> None:
    result, found = _run(
        "<!-- docs-run: file notes/a.txt -->\n```text\nhello\n```\n"
        "<!-- docs-run: append notes/a.txt -->\n```text\nagain\n```\n"
        "```sh\ncd notes\nexport KEPT=yes\n```\n"
        "<!-- docs-run: env ONLY=here -->\n"
        "```console\n$ cat a.txt\nhello\n\nagain\n"
        "$ false\n$ echo $? ${ONLY-unset} $KEPT\n1 here yes\n"
        "$ printf 'no newline'\nno newline\n```\n"
        "```console\n$ echo ${ONLY-unset} $(basename $PWD)\nunset notes\n"
        "$ ls ../docs/examples\n...\nhello\n...\n$ echo $HOME $SEAMKIT_HOME\n"
        "/home/ann /home/ann/.local/share/seamkit\n"
        "$ cat </dev/stdin; echo read\nread\n```\n"
    )
    assert not found, "\n\n".join(found)
    assert [o.status for o in result.outcomes] == [0, 0, 0, 1, 0, 0, 0, 0, 0, 0]


def test_a_mismatch_names_the_line_and_shows_a_diff() -> None:
    _, found = _run(
        "# Title\n\n```console\n$ echo one; echo two\none\n2\n$ echo fine\nfine\n```\n"
        "```sh\nls\nexit_code() { return 3; }; exit_code\n```\n"
    )
    assert len(found) == 2
    assert found[0].startswith("doc.md:4: $ echo one; echo two\n  output differs:")
    assert "\n    -2\n    +two" in found[0]
    assert found[1].startswith("doc.md:12: exit_code() { return 3; }; exit_code\n  exit status 3")


def test_a_shell_that_ends_early_names_the_commands_never_run() -> None:
    _, found = _run("```sh\necho bye; exit 0\necho after\n```\n")
    assert len(found) == 2
    assert "doc.md:2: echo bye; exit 0" in found[0] and "shell ended" in found[0]
    assert "doc.md:3: echo after" in found[1]


def test_commands_not_run_are_not_run(tmp_path: Path) -> None:
    flag = tmp_path / "ran"
    result, found = _run(f"```sh\ntouch {flag}   # not run: testing the marker\n```\n")
    assert not found and result.outcomes == [] and not flag.exists()


def test_a_document_that_hangs_is_stopped_and_named() -> None:
    result = docs_run.run(
        parse("```sh\necho started\nsleep 30\necho after\n```\n", "doc.md"), timeout=1
    )
    found = docs_run.failures(result, timeout=1)
    assert result.timed_out and [o.status for o in result.outcomes] == [0, None, None]
    assert found[0].startswith("doc.md:3: sleep 30\n  did not finish within 1s")
