"""``seamkit temporal``: the command group for durable runs on Temporal.

The commands exist so that their names and options are settled; each says
that it is not implemented yet and exits with status 2.
"""

from __future__ import annotations

import click

__all__ = ["NOT_IMPLEMENTED_STATUS", "temporal_group"]

NOT_IMPLEMENTED_STATUS = 2
"""The exit status of a command that is not implemented yet."""


def _not_implemented(ctx: click.Context) -> None:
    click.echo(f"{ctx.command_path}: not implemented yet", err=True)
    ctx.exit(NOT_IMPLEMENTED_STATUS)


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
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1))
@click.pass_context
def worker_command(
    ctx: click.Context, app: str, address: str, namespace: str, task_queue: str, workers: int
) -> None:
    """Serve APP's runs from a Temporal task queue."""
    _not_implemented(ctx)


@temporal_group.command("run")
@click.argument("app", type=click.Path(dir_okay=False))
@click.argument("message")
@_address
@_namespace
@_task_queue
@click.option("--session", metavar="NAME", help="Continue (or start) this session.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def run_command(
    ctx: click.Context,
    app: str,
    message: str,
    address: str,
    namespace: str,
    task_queue: str,
    session: str | None,
    as_json: bool,
) -> None:
    """Start a run of APP on Temporal and print it as ``seamkit run`` does."""
    _not_implemented(ctx)


@temporal_group.command("decide")
@_address
@_namespace
@click.option("--session", required=True, metavar="NAME", help="The suspended session.")
@click.option("--approve", "approvals", multiple=True, metavar="ID[@DIGEST]", help="As in resume.")
@click.option("--reject", "rejections", multiple=True, metavar="ID[=REASON]", help="As in resume.")
@click.option("--edit", "edits", multiple=True, metavar="ID=JSON", help="As in resume.")
@click.option("--all-reject", metavar="REASON", help="As in resume.")
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
) -> None:
    """Deliver decisions (the flags of ``seamkit resume``) to a suspended run's
    workflow; Temporal keeps them while no worker is up."""
    _not_implemented(ctx)
