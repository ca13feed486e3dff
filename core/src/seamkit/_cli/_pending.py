"""What ``seamkit run`` and ``seamkit resume`` do with the calls of a
suspended run: list them (as text, or as JSON for ``--json``) with the
command lines that decide them (`print_pending`, `pending_json`; a
`DecideCommand`, for ``seamkit run`` the ``seamkit resume`` one that
`resume_command` makes), ask about each one on a terminal (`ask`), and read
the decisions given as ``--approve``, ``--reject``, ``--edit`` and
``--all-reject`` (`decisions_from_flags`). Every decision made here carries
``by="cli"``."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from .._approval import Approve, Decision, Decisions, Edit, PendingCall, Reject
from .._errors import InvalidToolCall, SeamkitError
from .._toolmap import ToolMap

__all__ = [
    "BY",
    "DecideCommand",
    "ask",
    "decided",
    "decisions_from_flags",
    "is_terminal",
    "pending_json",
    "print_pending",
    "resume_command",
    "waiting",
]

BY = "cli"
"""Who decided, as the decisions made on the command line say it."""


def is_terminal(no_input: bool) -> bool:
    """Whether a person can be asked: standard input and output are both
    terminals, and ``--no-input`` was not given."""
    return not no_input and sys.stdin.isatty() and sys.stdout.isatty()


def waiting(pending: Sequence[PendingCall]) -> list[PendingCall]:
    """The calls of ``pending`` that no decision has settled yet."""
    return [p for p in pending if p.decision is None]


@dataclass(frozen=True, slots=True)
class DecideCommand:
    """The command line that decides the calls of a suspended run, as shell
    words before the decision flags: ``seamkit resume APP --session S`` for
    ``seamkit run``, or another front end's (``seamkit temporal decide
    --address A --session S``). The command takes ``--approve ID@DIGEST`` and
    ``--reject ID[=REASON]`` as ``seamkit resume`` does."""

    words: tuple[str, ...]
    """The command and its options, unquoted (``("seamkit", "resume", ...)``)."""

    def command(self, *flags: str) -> str:
        """The command line with ``flags`` added, quoted for a POSIX shell."""
        return shlex.join([*self.words, *flags])

    def approve(self, pending: PendingCall) -> str:
        """The command that approves ``pending`` as shown (bound to its digest)."""
        return self.command("--approve", f"{pending.call_id}@{pending.digest}")

    def reject(self, pending: PendingCall) -> str:
        """The command that rejects ``pending`` (``=REASON`` tells the model why)."""
        return self.command("--reject", pending.call_id)


def resume_command(
    app: str,
    session: str,
    store: str | None = None,
    model: str | None = None,
    context: Sequence[str] = (),
) -> DecideCommand:
    """The ``seamkit resume`` command that continues a session, with the
    options its run was given (store, model, context)."""
    words = ["seamkit", "resume", app, "--session", session]
    if store is not None:
        words += ["--store", store]
    if model is not None:
        words += ["--model", model]
    for item in context:
        words += ["--context", item]
    return DecideCommand(tuple(words))


def _json(arguments: object) -> str:
    return json.dumps(arguments, ensure_ascii=False, default=str)


def _call_lines(pending: PendingCall) -> list[str]:
    """One pending call: what it would run, why it waits, who asked, its digest."""
    lines = [
        f"{pending.call_id}  {pending.tool}({_json(pending.arguments)})",
        f"  reason: {pending.reason}",
    ]
    if pending.hook is not None:
        lines.append(f"  hook:   {pending.hook}")
    lines.append(f"  digest: {pending.digest}")
    return lines


def decided(decision: Decision) -> str:
    """A decision in words: ``approved by cli``, ``rejected: too much``."""
    by = f" by {decision.by}" if decision.by else ""
    if isinstance(decision, Reject):
        return f"rejected{by}: {decision.reason}"
    if isinstance(decision, Edit):
        return f"approved{by} with the arguments {_json(decision.arguments)}"
    return f"approved{by}"


def print_pending(pending: Sequence[PendingCall], decide: DecideCommand | None) -> None:
    """The calls of a suspended run on standard output: each one's id, tool,
    arguments, reason, hook and digest, and, for a run with a session, the
    command lines that approve or reject it (``decide``'s: ``seamkit resume``
    for ``seamkit run``); a decided call says what was decided. Without a
    session (``decide`` is ``None``), why the command line cannot continue
    the run."""
    undecided = waiting(pending)
    count = len(undecided)
    click.echo(f"waiting for a decision: {count} call{'' if count == 1 else 's'}")
    for call in pending:
        for line in _call_lines(call):
            click.echo(line)
        if call.decision is not None:
            click.echo(f"  decided: {decided(call.decision)} (it runs once every call is decided)")
        elif decide is not None:
            click.echo(f"  approve: {decide.approve(call)}")
            click.echo(f"  reject:  {decide.reject(call)}")
    if decide is None:
        click.echo(
            "this run has no session, so the command line cannot continue it: "
            "run it with --session NAME to decide its calls with `seamkit resume`"
        )


def pending_json(
    pending: Sequence[PendingCall], decide: DecideCommand | None
) -> list[dict[str, Any]]:
    """The calls of a suspended run for ``--json``: each `PendingCall`'s
    fields and, for an undecided call of a run with a session, the command
    lines that approve and reject it (``approve_command``, ``reject_command``)."""
    rows: list[dict[str, Any]] = []
    for call in pending:
        row = call.model_dump(mode="json")
        if call.decision is None and decide is not None:
            row["approve_command"] = decide.approve(call)
            row["reject_command"] = decide.reject(call)
        rows.append(row)
    return rows


# --- asking on a terminal ---------------------------------------------------------

_CHOICES = {"a": "approve", "approve": "approve", "r": "reject", "reject": "reject"}
_CHOICES |= {"e": "edit", "edit": "edit"}


def ask(pending: Sequence[PendingCall], tools: ToolMap | None) -> Decisions:
    """Ask, on the terminal, about each call of ``pending`` that waits:
    approve it as shown, reject it (with a reason the model gets), or edit
    its arguments (in ``$EDITOR``, as JSON; checked against the tool's schema
    when ``tools`` has it, asked again when they do not fit). Raises
    `click.Abort` when the person stops (Ctrl-C, end of input)."""
    undecided = waiting(pending)
    chosen: dict[str, Decision] = {}
    for number, call in enumerate(undecided, 1):
        of = f" ({number} of {len(undecided)})" if len(undecided) > 1 else ""
        click.echo(f"? waiting for approval{of}:", err=True)
        for line in _call_lines(call):
            click.echo(f"  {line}", err=True)
        chosen[call.call_id] = _ask_one(call, tools)
    return Decisions(chosen, by=BY)


def _ask_one(call: PendingCall, tools: ToolMap | None) -> Decision:
    draft = json.dumps(call.arguments, indent=2, ensure_ascii=False, default=str) + "\n"
    while True:
        answer = click.prompt(
            "approve, reject or edit? [a/r/e]",
            type=click.Choice(sorted(_CHOICES), case_sensitive=False),
            show_choices=False,
            err=True,
        )
        action = _CHOICES[answer.lower()]
        if action == "approve":
            return Approve(digest=call.digest)
        if action == "reject":
            reason = click.prompt(
                "reason (the model gets it as the call's result)", default="rejected", err=True
            )
            return Reject(reason)
        edited = click.edit(draft, extension=".json")
        if not isinstance(edited, str):
            click.echo("not saved: the arguments are unchanged", err=True)
            continue
        draft = edited
        arguments, problem = _edited(edited, call.tool, tools)
        if arguments is None:
            click.echo(f"{problem}; choose again (edit opens what you wrote)", err=True)
            continue
        click.echo(f"  edited: {call.tool}({_json(arguments)})", err=True)
        return Edit(arguments, digest=call.digest)


def _edited(text: str, tool: str, tools: ToolMap | None) -> tuple[dict[str, Any] | None, str]:
    """The arguments an edit gave, or ``None`` and what is wrong with them:
    not JSON, not a JSON object, or not what the tool takes."""
    try:
        arguments = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"the arguments are not valid JSON: {exc.msg} (line {exc.lineno})"
    if not isinstance(arguments, dict):
        return None, f"the arguments must be a JSON object, not {type(arguments).__name__}"
    found = tools.get(tool) if tools is not None else None
    if found is not None:
        try:
            found.validate(arguments)
        except InvalidToolCall as exc:
            return None, f"the arguments do not fit {tool!r}: {exc.message}"
    return arguments, ""


# --- decisions as flags -----------------------------------------------------------

_C = TypeVar("_C", bound=Callable[..., Any])

_DECISION_FLAGS = (
    click.option(
        "--approve",
        "approvals",
        multiple=True,
        metavar="ID[@DIGEST]",
        help="Approve call ID as it was shown; with @DIGEST, only if its arguments still have "
        "that digest (repeatable).",
    ),
    click.option(
        "--reject",
        "rejections",
        multiple=True,
        metavar="ID[=REASON]",
        help="Reject call ID: the model gets REASON (default: rejected) as its result "
        "(repeatable).",
    ),
    click.option(
        "--edit",
        "edits",
        multiple=True,
        metavar="ID=JSON",
        help="Run call ID with these arguments instead (a JSON object, checked against the "
        "tool's schema); ID@DIGEST=JSON binds it to the digest shown (repeatable).",
    ),
    click.option(
        "--all-reject",
        metavar="REASON",
        help="Reject every waiting call no other flag decides, with REASON.",
    ),
)


def decision_flags(command: _C) -> _C:
    """The decision flags of ``seamkit resume`` (``--approve``, ``--reject``,
    ``--edit``, ``--all-reject``) on a click command, which receives them as
    ``approvals``, ``rejections``, ``edits`` and ``all_reject``: read them
    with `decisions_from_flags`. For another front end's decide command."""
    for flag in reversed(_DECISION_FLAGS):
        command = flag(command)
    return command


def decisions_from_flags(
    approvals: Sequence[str],
    rejections: Sequence[str],
    edits: Sequence[str],
    all_reject: str | None,
) -> Decisions | None:
    """The `seamkit.Decisions` that ``seamkit resume``'s decision flags give.

    The flags, shared by every command that decides as it does (``seamkit
    temporal decide``): ``--approve ID[@DIGEST]``, ``--reject ID[=REASON]``,
    ``--edit ID[@DIGEST]=JSON`` and ``--all-reject REASON`` (every call the
    others leave out); the decisions carry ``by="cli"``. ``None`` when no
    flag was given. A flag that cannot be read, or two decisions for one
    call, is a `seamkit.SeamkitError` naming it (with a hint)."""
    if not (approvals or rejections or edits or all_reject is not None):
        return None
    chosen: dict[str, Decision] = {}

    def put(flag: str, raw: str, call_id: str, decision: Decision) -> None:
        if not call_id:
            raise SeamkitError(
                f"{flag} {raw!r} names no call",
                hint=f"give the call's id, as the pending calls list it: {flag} call_1_0...",
            )
        if call_id in chosen:
            raise SeamkitError(
                f"call {call_id!r} is decided twice ({chosen[call_id].action} and "
                f"{decision.action})",
                hint="give one decision per call",
            )
        chosen[call_id] = decision

    for raw in approvals:
        call_id, digest = _id_and_digest(raw)
        put("--approve", raw, call_id, Approve(digest=digest))
    for raw in rejections:
        call_id, _, reason = raw.partition("=")
        put("--reject", raw, call_id, Reject(reason) if reason else Reject())
    for raw in edits:
        key, sep, text = raw.partition("=")
        if not sep:
            raise SeamkitError(
                f"--edit {raw!r} is not ID=JSON",
                hint="""e.g. --edit 'call_1_0={"amount": 50}'""",
            )
        call_id, digest = _id_and_digest(key)
        put("--edit", raw, call_id, Edit(_edit_arguments(call_id, text), digest=digest))
    rest = Reject(all_reject) if all_reject else (Reject() if all_reject is not None else None)
    return Decisions(chosen, rest=rest, by=BY)


def _id_and_digest(text: str) -> tuple[str, str | None]:
    """``ID@DIGEST`` or ``ID`` as the call id and the digest (``None``: none given)."""
    call_id, sep, digest = text.rpartition("@")
    if not sep:
        return text, None
    return call_id, digest or None


def _edit_arguments(call_id: str, text: str) -> dict[str, Any]:
    try:
        arguments = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SeamkitError(
            f"--edit {call_id}: the arguments are not valid JSON: {exc.msg} "
            f"(column {exc.colno} of {text!r})",
            hint="""quote the JSON for the shell: --edit 'call_1_0={"amount": 50}'""",
        ) from None
    if not isinstance(arguments, dict):
        raise SeamkitError(
            f"--edit {call_id}: the arguments must be a JSON object, not "
            f"{type(arguments).__name__}",
            hint="""give every argument the call runs with: --edit 'call_1_0={"amount": 50}'""",
        )
    return arguments
