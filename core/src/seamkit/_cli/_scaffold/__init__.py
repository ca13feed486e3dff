"""``seamkit new plugin NAME``: write a complete plugin distribution to start
from (`_plan` names its parts, `_write` renders the templates under
``templates/``, this module is the command)."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from ..._errors import SeamkitError
from ._plan import KINDS, PluginPlan
from ._write import write_plugin

__all__ = ["new_command"]


@click.group("new")
def new_command() -> None:
    """Start from a template: seamkit new plugin NAME [--kind KIND]."""


@new_command.command("plugin")
@click.argument("name")
@click.option(
    "--kind",
    type=click.Choice(KINDS),
    default="hook",
    show_default=True,
    help="What the plugin registers: a hook kind, a refresh condition, a tool kind "
    "or a model provider.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The directory to create (default: ./NAME).",
)
def plugin_command(name: str, kind: str, output: Path | None) -> None:
    """Write a plugin distribution into ./NAME: pyproject with the entry point,
    module, README and tests that pass. Install it with pip install ./NAME."""
    plan = PluginPlan.for_name(name, kind)
    target = output if output is not None else Path(name)
    if target.exists() and not target.is_dir():
        raise SeamkitError(
            f"{target} exists and is not a folder",
            hint="choose another NAME or --output directory; nothing was written",
        )
    if target.exists() and any(target.iterdir()):
        raise SeamkitError(
            f"{target} exists and is not empty",
            hint="choose another NAME or --output directory; nothing was written",
        )
    try:
        written = write_plugin(plan, target)
    except OSError as exc:
        raise SeamkitError(
            f"cannot write {target}: {exc.strerror or exc}",
            hint="check that the folder's parent exists and is writable",
        ) from exc
    click.echo(f"wrote {plan.distribution} ({plan.what} '{plan.name}') to {target}/:")
    for path in written:
        click.echo(f"  {path.relative_to(target).as_posix()}")
    where = target.as_posix() if target.is_absolute() else f"./{target.as_posix()}"
    click.echo("next:")
    click.echo(f"  pip install -e {shlex.quote(where + '[test]')}")
    click.echo(f"  pytest {shlex.quote(target.as_posix())}")
    click.echo("  seamkit plugins")
