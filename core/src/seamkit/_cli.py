"""The ``seamkit`` command: the group, its error handling and logging
options, ``seamkit plugins``, and the commands that read an app (schema,
validate, tools, run, from `seamkit._commands`) or a session store
(``seamkit sessions``, from `seamkit._session_commands`), loaded only when
one of them is invoked, so that ``seamkit plugins`` and ``seamkit
--version`` start fast."""

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
    "new": "_scaffold:new_command",
    "run": "_commands:run_command",
    "schema": "_commands:schema_command",
    "sessions": "_session_commands:sessions_command",
    "tools": "_commands:tools_command",
    "validate": "_commands:validate_command",
}
"""Commands defined in other modules, by name (``module:attribute``):
imported on first use."""


class _Group(click.Group):
    """A click group that turns seamkit errors into one line plus a hint, and
    loads the app commands when they are asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_APP_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        where = _APP_COMMANDS.get(cmd_name)
        if where is None or cmd_name in self.commands:
            return super().get_command(ctx, cmd_name)
        module, _, attribute = where.partition(":")
        command: click.Command = getattr(
            importlib.import_module(f".{module}", __package__), attribute
        )
        return command

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except KeyboardInterrupt:  # Ctrl-C outside a run (which handles it itself)
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo("[cancelled: SIGINT]", err=True)
            ctx.exit(130)
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
@click.option(
    "--debug",
    is_flag=True,
    help="Show tracebacks instead of one-line errors, and seamkit's debug log.",
)
@click.option(
    "--debug-all",
    is_flag=True,
    help="--debug, and the debug log of every library too (may print credentials).",
)
@click.pass_context
def cli(ctx: click.Context, debug: bool, debug_all: bool) -> None:
    """seamkit: run LLM agents whose hooks, tools and models come from plugins."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug or debug_all
    if debug or debug_all:
        _debug_logging(everything=debug_all)


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


def _debug_logging(*, everything: bool) -> None:
    """DEBUG for seamkit's loggers (``seamkit``, ``seamkit.*``) and the
    plugins' (``seamkit_*``, by package), the rest at WARNING; with
    ``everything``, DEBUG for every logger (third-party libraries log
    headers and URLs at DEBUG: credentials among them)."""
    if everything:
        logging.basicConfig(level=logging.DEBUG)
    else:
        logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(name)s: %(message)s")
    packages = {name.partition(".")[0] for name in sys.modules if name.startswith("seamkit_")}
    for name in ("seamkit", *sorted(packages)):
        logging.getLogger(name).setLevel(logging.DEBUG)


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
