"""``seamkit resume``: continue a session's run that waits for decisions
(given as flags, or asked on a terminal) or that a crash cut short, with
every option of ``seamkit run`` that still applies (defined there: see
`seamkit._cli._commands`)."""

from __future__ import annotations

import click

from ._commands import (
    Invocation,
    context_option,
    json_option,
    model_option,
    no_input_option,
    session_option,
    store_option,
    trace_option,
)
from ._pending import decision_flags, decisions_from_flags

__all__ = ["resume_command"]


@click.command("resume")
@click.argument("app", type=click.Path(dir_okay=False))
@session_option(required=True, help="The session whose run to continue.")
@decision_flags
@json_option
@store_option
@model_option
@context_option
@trace_option
@no_input_option
def resume_command(
    app: str,
    session: str,
    approvals: tuple[str, ...],
    rejections: tuple[str, ...],
    edits: tuple[str, ...],
    all_reject: str | None,
    as_json: bool,
    store: str | None,
    model_spec: str | None,
    context_items: tuple[str, ...],
    trace: bool,
    no_input: bool,
) -> None:
    """Continue the run of session NAME: decide the calls that wait for
    approval and go on, or go on with a run a crash cut short.

    With decision flags, the decisions are stored and the run goes on once
    every waiting call is decided. Without any, a run a crash cut short
    continues from its journal; calls that wait are asked about on a
    terminal, as `seamkit run` does, or listed with the commands that
    decide them. A decision for a call that does not wait, or a digest that
    does not match, is refused and nothing runs.

    The exit status is that of `seamkit run`: 0 when the run completed, 3
    when calls (still) wait for a decision, 1 when it failed or nothing
    could be continued.
    """
    decisions = decisions_from_flags(approvals, rejections, edits, all_reject)
    invocation = Invocation(
        app, session, store, model_spec, context_items, as_json, trace, no_input
    )
    invocation.execute(decisions)
