"""The ``seamkit`` command: the group, its error handling, ``seamkit plugins``,
and the commands that read an app (schema, validate, tools, run), loaded from
`seamkit._commands` only when one of them is invoked, so that ``seamkit
plugins`` and ``seamkit --version`` start fast."""

from __future__ import annotations

import importlib
import json
import logging
import sys
from typing import Any

import click

from ._errors import ManifestError, SeamkitError
from ._loader import get_registry, kernel_version

__all__ = ["cli", "main"]

_APP_COMMANDS = {
    "run": "run_command",
    "schema": "schema_command",
    "tools": "tools_command",
    "validate": "validate_command",
}
"""Commands defined in `seamkit._commands`, by name: imported on first use."""


class _Group(click.Group):
    """A click group that turns seamkit errors into one line plus a hint, and
    loads the app commands when they are asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_APP_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        attribute = _APP_COMMANDS.get(cmd_name)
        if attribute is None or cmd_name in self.commands:
            return super().get_command(ctx, cmd_name)
        command: click.Command = getattr(
            importlib.import_module("._commands", __package__), attribute
        )
        return command

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except ManifestError as exc:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(exc.format(), err=True)
            ctx.exit(1)
        except SeamkitError as exc:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(f"error: {exc.message}", err=True)
            if exc.hint:
                click.echo(f"hint: {exc.hint}", err=True)
            ctx.exit(1)
        except Exception as exc:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(f"error: {type(exc).__name__}: {exc}", err=True)
            click.echo("hint: run with --debug for the full traceback", err=True)
            ctx.exit(2)


@click.group(cls=_Group)
@click.version_option(kernel_version(), "--version", prog_name="seamkit")
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """seamkit: run LLM agents whose hooks, tools and models come from plugins."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug
    if debug:
        logging.basicConfig(level=logging.DEBUG)


@cli.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def plugins_command(as_json: bool) -> None:
    """List the plugins found, their kinds, hookimpls and load errors."""
    registry = get_registry()
    rows = [p.as_dict() for p in registry.plugins.values()]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    header = ("PLUGIN", "DISTRIBUTION", "VERSION", "KINDS", "HOOKIMPLS")
    table = [header] + [
        (
            r["name"],
            r["distribution"] or "-",
            r["version"] or "-",
            ", ".join(r["kinds"]) or "-",
            ", ".join(r["hookimpls"]) or "-",
        )
        for r in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    failed = [r for r in rows if r["error"]]
    if failed:
        click.echo("\nload errors:")
        for r in failed:
            click.echo(
                f"  {r['name']} ({r['distribution'] or '?'} {r['version'] or ''}): {r['error']}"
            )


def _add_plugin_commands(group: click.Group) -> None:
    """Let each plugin add its commands; one that fails, or that would replace
    a kernel command, is reported (in ``seamkit plugins``) and the rest go on."""
    registry = get_registry()
    pm = registry.plugin_manager
    kernel = {*group.commands, *_APP_COMMANDS}
    for impl in pm.hook.register_commands.get_hookimpls():
        name = pm.get_name(impl.plugin) or "?"
        before = dict(group.commands)
        message = None
        try:
            impl.function(**{k: group for k in impl.argnames})
        except Exception as exc:
            message = f"register_commands failed: {type(exc).__name__}: {exc}"
        taken = sorted(c for c in kernel if group.commands.get(c) is not before.get(c))
        if taken:
            group.commands.clear()
            group.commands.update(before)
            message = f"register_commands tried to replace the kernel's {', '.join(taken)} command"
        if message is not None:
            info = registry.plugins.get(name)
            if info is not None:
                info.error = message
            logging.getLogger("seamkit").warning("seamkit plugin %r: %s", name, message)


def _setup_logging() -> None:

    logger = logging.getLogger("seamkit")
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s: %(message)s"))
        logger.addHandler(handler)
        logger.propagate = False


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``seamkit`` console script."""
    args = sys.argv[1:] if argv is None else argv
    _setup_logging()
    if args[:1] != ["--version"]:
        _add_plugin_commands(cli)
    cli.main(args=args, prog_name="seamkit")
