"""``seamkit run APP MESSAGE``: run an app once, streaming what happens."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from datetime import datetime
from typing import Any

import click

from ._errors import SeamkitError

__all__ = ["run_command"]

_EXIT = {"completed": 0, "terminated": 0, "max_turns": 1, "failed": 1, "cancelled": 130}


@click.command("run")
@click.argument("app", type=click.Path(dir_okay=False))
@click.argument("message")
@click.option("--json", "as_json", is_flag=True, help="Print the RunResult as JSON, no streaming.")
@click.option("--session", metavar="NAME", help="Keep the conversation under NAME between runs.")
@click.option(
    "--store",
    type=click.Path(dir_okay=False),
    metavar="PATH",
    help="The session store (SQLite); default: sessions.sqlite in the user's data directory.",
)
@click.option(
    "--context",
    "context_items",
    multiple=True,
    metavar="KEY=VALUE",
    help="A property of the run's ActionContext (repeatable).",
)
def run_command(
    app: str,
    message: str,
    as_json: bool,
    session: str | None,
    store: str | None,
    context_items: tuple[str, ...],
) -> None:
    """Run APP on MESSAGE: stream the answer to standard output, and show each
    hook that fired and each tool call on standard error.

    The exit status is 0 when the run completed or a hook ended it on
    purpose, 1 when it failed or hit max_turns, 130 when it was cancelled.
    SEAMKIT_NOW (an ISO 8601 instant) fixes the agent's clock.
    """
    context = _parse_context(context_items)
    clock = _clock_from_env()
    outcome = asyncio.run(_run(app, message, as_json, session, store, context, clock))
    sys.exit(_EXIT.get(outcome, 1))


async def _run(
    app: str,
    message: str,
    as_json: bool,
    session: str | None,
    store_path: str | None,
    context: dict[str, str],
    clock: Callable[[], datetime] | None,
) -> str:
    from ._agent import Agent
    from ._sessions import SessionStore

    store = SessionStore(store_path) if session is not None else None
    async with await Agent.load(app, clock=clock) as agent:
        if as_json:
            result = await agent.run(message, context=context, session=session, store=store)
            click.echo(result.model_dump_json(indent=2, exclude_none=True))
            return result.outcome.kind
        printer = _Printer()
        async for event in agent.stream(message, context=context, session=session, store=store):
            printer.show(event)
        return printer.outcome


class _Printer:
    """Text to standard output as it streams; hooks and tools, compactly, to
    standard error."""

    def __init__(self) -> None:
        self.outcome = "failed"
        self._open_line = False
        self._turn = 0
        self._turn_text = ""

    def _note(self, text: str) -> None:
        if self._open_line:
            click.echo()
            self._open_line = False
        click.secho(text, err=True, dim=True)

    def show(self, event: Any) -> None:
        from . import stream as S

        if isinstance(event, S.TextDelta):
            if event.turn != self._turn:
                self._turn, self._turn_text = event.turn, ""
            self._turn_text += event.text
            click.echo(event.text, nl=False)
            self._open_line = True
        elif isinstance(event, S.HookFired):
            by = f" by {event.hook}" if event.hook else ""
            self._note(f"· {event.event}: {', '.join(event.hooks)} → {event.flow}{by}")
        elif isinstance(event, S.ToolExecutionStart):
            self._note(f"→ {event.call.name}({_short(event.call.raw_arguments)})")
        elif isinstance(event, S.ToolCompleted):
            mark = "✗" if event.result.is_error else "←"
            self._note(f"{mark} {event.call.name}: {_short(event.result.content)}")
        elif isinstance(event, S.RunFinished):
            result = event.result
            self.outcome = result.outcome.kind
            if self._open_line:
                click.echo()
                self._open_line = False
            if result.outcome.kind == "completed" and result.output not in (None, self._turn_text):
                click.echo(result.output)  # a terminal tool's result: never streamed
            self._note(_summary(result))


def _summary(result: Any) -> str:
    outcome = result.outcome
    detail = {
        "terminated": lambda: (
            f": {outcome.reason}" + (f" (hook {outcome.hook})" if outcome.hook else "")
        ),
        "failed": lambda: f": {outcome.error}",
    }.get(outcome.kind, lambda: "")()
    usage = result.usage
    return (
        f"[{outcome.kind}{detail} · {usage.requests} model call"
        f"{'' if usage.requests == 1 else 's'} · {usage.input_tokens} in / "
        f"{usage.output_tokens} out tokens]"
    )


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _parse_context(items: tuple[str, ...]) -> dict[str, str]:
    context: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SeamkitError(
                f"--context {item!r} is not KEY=VALUE", hint="e.g. --context user_id=ann"
            )
        context[key] = value
    return context


def _clock_from_env() -> Callable[[], datetime] | None:
    raw = os.environ.get("SEAMKIT_NOW")
    if not raw:
        return None
    try:
        now = datetime.fromisoformat(raw)
    except ValueError:
        raise SeamkitError(
            f"SEAMKIT_NOW={raw!r} is not an ISO 8601 instant",
            hint="e.g. SEAMKIT_NOW=2026-11-22T09:00:00+01:00",
        ) from None
    if now.tzinfo is None:
        raise SeamkitError(
            f"SEAMKIT_NOW={raw!r} has no UTC offset",
            hint="add one, e.g. 2026-11-22T09:00:00Z or +01:00",
        )
    return lambda: now
