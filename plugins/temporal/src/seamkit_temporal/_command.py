"""``seamkit temporal``: the command group for durable runs on Temporal.

- ``worker APP``: serve APP's runs from a task queue (`seamkit_temporal._work`;
  ``--workers N``: `seamkit_temporal._fleet`);
- ``run APP MESSAGE``: start a run and print it as ``seamkit run`` does;
- ``decide --session S``: deliver ``seamkit resume``'s decision flags to a
  suspended run and print the run they continue
  (both `seamkit_temporal._follow`).

Errors are printed as the ``seamkit`` commands print them (a manifest's
problems, or ``error:`` and ``hint:`` lines), never as a traceback (but with
``seamkit --debug``). This module imports click and seamkit only: the
``temporalio`` SDK loads when a command runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import traceback
from collections.abc import Callable, Coroutine
from typing import NoReturn

import click
import seamkit
from seamkit.plugins import decision_flags

__all__ = ["temporal_group"]


@click.group("temporal")
def temporal_group() -> None:
    """Durable runs on Temporal: workers, runs and approval decisions."""


_address = click.option(
    "--address", required=True, metavar="HOST:PORT", help="The Temporal frontend."
)
_namespace = click.option("--namespace", default="default", show_default=True)
_task_queue = click.option("--task-queue", default="seamkit", show_default=True)


@temporal_group.command("worker")
@click.argument("app", type=click.Path(dir_okay=False))
@_address
@_namespace
@_task_queue
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(1),
    help="Worker processes (the command supervises them).",
)
@click.option("--ready-fd", type=int, hidden=True)
@click.pass_context
def worker_command(
    ctx: click.Context,
    app: str,
    address: str,
    namespace: str,
    task_queue: str,
    workers: int,
    ready_fd: int | None,
) -> None:
    """Serve APP's runs from a Temporal task queue.

    Says `serving APP on task queue Q at ADDRESS (...)` on standard error
    once it serves; SIGTERM or SIGINT stops it gracefully (exit 0). With
    --workers N, N worker processes, each this command with --workers 1;
    one that dies is started again, and stopping this process stops them.
    """
    if workers > 1:
        from ._fleet import supervise  # lazy: the supervisor needs no SDK either

        _conclude(
            ctx,
            lambda: supervise(
                app, address=address, namespace=namespace, task_queue=task_queue, workers=workers
            ),
        )
    from ._work import serve_one  # lazy: the SDK

    _conclude_async(
        ctx,
        lambda: serve_one(
            app, address=address, namespace=namespace, task_queue=task_queue, ready_fd=ready_fd
        ),
    )


@temporal_group.command("run")
@click.argument("app", type=click.Path(dir_okay=False))
@click.argument("message")
@_address
@_namespace
@_task_queue
@click.option("--session", metavar="NAME", help="Continue (or start) this session.")
@click.option(
    "--context",
    "context_items",
    multiple=True,
    metavar="KEY=VALUE",
    help="A property of the run's ActionContext (repeatable).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the RunResult as JSON, no streaming.")
@click.pass_context
def run_command(
    ctx: click.Context,
    app: str,
    message: str,
    address: str,
    namespace: str,
    task_queue: str,
    session: str | None,
    context_items: tuple[str, ...],
    as_json: bool,
) -> None:
    """Start a run of APP on MESSAGE on Temporal's workers and print it as
    `seamkit run` does: the answer on standard output as it streams, hooks,
    tool calls and the summary on standard error.

    The exit status is that of `seamkit run`: 0 completed (or ended by a
    hook), 1 failed or max_turns, 3 when calls wait for a decision (listed
    with the `seamkit temporal decide` commands that decide them; nothing is
    asked), 130 cancelled. Ctrl-C stops following: the run goes on on its
    workers.
    """
    from ._follow import follow_run  # lazy: the SDK

    async def work() -> int:
        return await follow_run(
            app,
            message,
            address=address,
            namespace=namespace,
            task_queue=task_queue,
            session=session,
            context=_parse_context(context_items),
            as_json=as_json,
        )

    _conclude_async(ctx, work, follows=True)


@temporal_group.command("decide")
@_address
@_namespace
@click.option("--session", required=True, metavar="NAME", help="The suspended session.")
@decision_flags
@click.option("--json", "as_json", is_flag=True, help="Print the RunResult as JSON.")
@click.pass_context
def decide_command(
    ctx: click.Context,
    address: str,
    namespace: str,
    session: str,
    approvals: tuple[str, ...],
    rejections: tuple[str, ...],
    edits: tuple[str, ...],
    all_reject: str | None,
    as_json: bool,
) -> None:
    """Deliver decisions (the flags of `seamkit resume`) to the suspended
    run of session NAME, and print the run they continue as `seamkit temporal
    run` does (same exit status).

    A decision for a call that does not wait, or a digest that does not
    match, is refused (exit 1) and nothing changes. When no worker is up,
    Temporal keeps the decisions and the command waits for the run's result.
    """
    from seamkit.plugins import decisions_from_flags  # lazy: click's share of seamkit

    from ._follow import follow_decide  # lazy: the SDK

    async def work() -> int:
        decisions = decisions_from_flags(approvals, rejections, edits, all_reject)
        if decisions is None:
            raise click.UsageError(
                "give at least one decision: --approve, --reject, --edit or --all-reject", ctx
            )
        return await follow_decide(
            session, decisions, address=address, namespace=namespace, as_json=as_json
        )

    _conclude_async(ctx, work, follows=True)


def _parse_context(items: tuple[str, ...]) -> dict[str, str]:
    """``--context KEY=VALUE`` items as a mapping (as ``seamkit run`` reads them)."""
    context: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise seamkit.SeamkitError(
                f"--context {item!r} is not KEY=VALUE", hint="e.g. --context user_id=ann"
            )
        context[key] = value
    return context


def _conclude_async(
    ctx: click.Context,
    work: Callable[[], Coroutine[None, None, int]],
    *,
    follows: bool = False,
) -> NoReturn:
    """`_conclude` for a coroutine, run on its own event loop; with
    ``follows``, SIGINT and SIGTERM cancel it (the run's workers go on)."""

    async def main() -> int:
        task = asyncio.current_task()
        if follows and task is not None:
            loop = asyncio.get_running_loop()
            for number in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(number, _interrupt, task, number)
        return await work()

    _conclude(ctx, lambda: asyncio.run(main()))


_CAUGHT: list[signal.Signals] = []
"""The signal that stopped a command following a run."""


def _interrupt(task: asyncio.Task[int], number: signal.Signals) -> None:
    if not _CAUGHT:
        _CAUGHT.append(number)
        task.cancel()


def _conclude(ctx: click.Context, body: Callable[[], int]) -> NoReturn:
    """Run ``body``, print what stopped it as the ``seamkit`` commands do
    (a signal that stopped a command following a run: a note, exit 130 or
    143), and end the process with its exit status."""
    root = ctx.find_root().obj
    debug = bool(isinstance(root, dict) and root.get("debug"))
    try:
        code = body()
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.ClickException as exc:
        exc.show()
        code = exc.exit_code
    except asyncio.CancelledError:
        if not _CAUGHT:
            raise
        click.secho(
            f"[stopped following on {_CAUGHT[0].name}: the run goes on on its workers]",
            err=True,
            dim=True,
        )
        code = 128 + _CAUGHT[0]
    except KeyboardInterrupt:
        click.echo("[cancelled: SIGINT]", err=True)
        code = 130
    except seamkit.ManifestError as exc:
        if debug:
            traceback.print_exc()
        click.echo(exc.format(), err=True)
        code = 1
    except seamkit.SeamkitError as exc:
        if debug:
            traceback.print_exc()
        click.echo(f"error: {exc.message}", err=True)
        if exc.hint:
            click.echo(f"hint: {exc.hint}", err=True)
        code = 1
    except Exception as exc:
        if debug:
            traceback.print_exc()
        click.echo(f"error: {type(exc).__name__}: {exc}", err=True)
        click.echo("hint: run with --debug for the full traceback", err=True)
        code = 2
    _exit(code)


def _exit(code: int) -> NoReturn:
    """End the process with ``code`` once its output is out.

    ``os._exit``, not ``sys.exit``: a process that used the Temporal SDK may
    abort while the interpreter shuts down (SIGABRT, status 134: the SDK's
    Rust runtime and its threads torn down at exit, temporalio/sdk-python#300),
    which would replace the command's status. Nothing is left to clean up by
    then: the runs' clients and workers are closed, the output flushed here.
    """
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # (its reader went away)
            stream.flush()
    os._exit(code)
