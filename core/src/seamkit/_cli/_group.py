"""The ``seamkit`` command: the group, its error handling and logging
options, ``seamkit plugins``, and the commands that read an app (schema,
validate, tools, run, from `seamkit._cli._commands`; resume, from
`seamkit._cli._resume`) or a session store
(``seamkit sessions``, from `seamkit._cli._session_commands`), loaded only when
one of them is invoked, so that ``seamkit plugins`` and ``seamkit
--version`` start fast.

The commands plugins add are listed apart in ``seamkit --help``, each with
the distribution that added it. A standard output closed by its reader
(``seamkit plugins | head -2``) ends any command quietly with status 141, as
a process killed by SIGPIPE would."""

from __future__ import annotations

import importlib
import json
import logging
import os
import select
import sys
import textwrap
from traceback import format_exception
from typing import Any, NoReturn

import click

from .._errors import ManifestError, SeamkitError
from .._loader import get_registry, kernel_version
from .._registry import Registry

__all__ = ["cli", "main"]

_APP_COMMANDS = {
    "new": "_scaffold:new_command",
    "resume": "_resume:resume_command",
    "run": "_commands:run_command",
    "schema": "_commands:schema_command",
    "sessions": "_session_commands:sessions_command",
    "tools": "_commands:tools_command",
    "validate": "_commands:validate_command",
}
"""Commands defined in other modules, by name (``module:attribute``):
imported on first use."""


_PIPE_CLOSED = 141
"""The exit status when standard output's reader went away: 128 + SIGPIPE,
what a shell reports for a process killed by SIGPIPE (``yes | head``)."""


class _Group(click.Group):
    """A click group that turns seamkit errors into one line plus a hint,
    loads the app commands when they are asked for, lists the commands
    plugins added apart in its help, says which variable keeps out the plugin
    an unknown command presumably belongs to, and ends quietly when standard
    output is closed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.plugin_commands: dict[str, str] = {}
        """The commands plugins added, by name: the distribution (or, without
        one, the plugin) that added each, for ``--help``."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The kernel's commands under "Commands:", those plugins added under
        "Plugin commands:", each with the distribution that added it."""
        kernel: list[tuple[str, str]] = []
        plugin: list[tuple[str, str]] = []
        shown: list[tuple[str, click.Command]] = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                shown.append((name, command))
        if not shown:
            return
        width = max(len(name) for name, _ in shown)
        limit = formatter.width - 6 - width
        for name, command in shown:
            owner = self.plugin_commands.get(name)
            if owner is None:
                kernel.append((name.ljust(width), command.get_short_help_str(limit)))
            else:
                prefix = f"({owner}) "
                text = command.get_short_help_str(max(limit - len(prefix), 20))
                plugin.append((name.ljust(width), prefix + text))
        for title, rows in (("Commands", kernel), ("Plugin commands", plugin)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:  # ``--help`` and ``--version`` write while the arguments are parsed
            return super().parse_args(ctx, args)
        except BrokenPipeError:
            if _stdout_is_closed():
                _stdout_closed(ctx)
            raise

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

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """Click's, except that an unknown command named like an installed
        plugin that ``SEAMKIT_PLUGINS`` / ``SEAMKIT_DISABLE_PLUGINS`` keeps
        out (``seamkit serve`` with ``serve`` disabled) is one line naming the
        plugin and the variable, plus a hint; exit status 2, as click's."""
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError:
            name = args[0] if args else ""
            if not name or name.startswith("-") or self.get_command(ctx, name) is not None:
                raise
            off = next((p for p in get_registry().skipped.values() if p.owns(name)), None)
            if off is None:
                raise
            click.echo(
                f"error: no such command '{name}'; plugin '{off.name}' ({off.label}) is "
                f"installed but {off.reason}",
                err=True,
            )
            click.echo(f"hint: to load it, {off.how_to_enable}", err=True)
            ctx.exit(2)

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
            if isinstance(exc, BrokenPipeError) and _stdout_is_closed():
                _stdout_closed(ctx)
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(f"error: {type(exc).__name__}: {exc}", err=True)
            click.echo("hint: run with --debug for the full traceback", err=True)
            ctx.exit(2)


def _stdout_is_closed() -> bool:
    """Whether standard output's reader went away, so that a BrokenPipeError
    came from it (not from a plugin's pipe or socket): polling its descriptor
    reports an error or a hang-up."""
    try:
        fd = sys.stdout.fileno()
        poller = select.poll()
    except (AttributeError, OSError, ValueError):  # no descriptor, or no poll() (Windows)
        return False
    poller.register(fd, select.POLLOUT)
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


def _stdout_closed(ctx: click.Context) -> NoReturn:
    """Standard output's reader went away (``seamkit plugins | head -2``):
    exit with `_PIPE_CLOSED`, saying nothing. Standard output is pointed at
    the null device first, so that flushing it at exit raises no second
    BrokenPipeError."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)
    except (OSError, ValueError):  # not a file descriptor (a test runner's output)
        pass
    ctx.exit(_PIPE_CLOSED)


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
@click.option(
    "--all",
    "with_skipped",
    is_flag=True,
    help="With --json, list the plugins SEAMKIT_PLUGINS or SEAMKIT_DISABLE_PLUGINS "
    "kept from loading too (the table always lists them, under 'disabled:').",
)
@click.option(
    "--check", is_flag=True, help="Exit 1 when a plugin failed to load (after the listing)."
)
@click.pass_context
def plugins_command(ctx: click.Context, as_json: bool, with_skipped: bool, check: bool) -> None:
    """List the plugins found, their kinds, hookimpls and load errors."""
    registry = get_registry()
    debug = bool(ctx.obj and ctx.obj.get("debug"))
    if as_json:
        listed = [p.as_dict() for p in registry.plugins.values()]
        if with_skipped:
            listed += [p.as_dict() for p in registry.skipped.values()]
        # Tracebacks only with --debug, as in the table: what a plugin raised
        # while it loaded (chained exceptions too) may quote its credentials.
        if not debug:
            for entry in listed:
                entry["traceback"] = None
        click.echo(json.dumps(listed, indent=2))
    else:
        _print_plugins(registry, debug=debug)
    if check and registry.failed_plugins():
        ctx.exit(1)


def _print_plugins(registry: Registry, *, debug: bool) -> None:
    """The table of ``seamkit plugins``, then its load errors (with their
    tracebacks when ``debug``) and the plugins that were not loaded."""
    rows = [p.as_dict() for p in registry.plugins.values()]
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
            if debug and r["traceback"]:
                click.echo(textwrap.indent(r["traceback"].rstrip("\n"), "    "))
        traced = sum(1 for r in failed if r["traceback"])
        if traced and not debug:
            noun = "traceback" if traced == 1 else "tracebacks"
            click.echo(f"hint: run `seamkit --debug plugins` for the {noun}")
    if registry.skipped:
        click.echo("\ndisabled:")
        for skipped in registry.skipped.values():
            click.echo(f"  {skipped.name} ({skipped.label}): {skipped.reason}")


def _add_plugin_commands(group: click.Group) -> dict[str, str]:
    """Let each plugin add its commands; one that fails, or that would replace
    a kernel command, is reported (in ``seamkit plugins``) and the rest go on.

    Returns the commands added, by name: the distribution (or plugin) that
    added each; a `_Group` keeps them too, for its ``--help``.
    """
    registry = get_registry()
    pm = registry.plugin_manager
    kernel = {*group.commands, *_APP_COMMANDS}
    added: dict[str, str] = {}
    for impl in pm.hook.register_commands.get_hookimpls():
        name = pm.get_name(impl.plugin) or "?"
        info = registry.plugins.get(name)
        before = dict(group.commands)
        message = trace = None
        try:
            impl.function(**{k: group for k in impl.argnames})
        except Exception as exc:
            message = f"register_commands failed: {type(exc).__name__}: {exc}"
            trace = "".join(format_exception(exc))
        taken = sorted(c for c in kernel if group.commands.get(c) is not before.get(c))
        if taken:
            group.commands.clear()
            group.commands.update(before)
            message = f"register_commands tried to replace the kernel's {', '.join(taken)} command"
            trace = None
        owner = (info.distribution if info is not None else None) or name
        for command, value in group.commands.items():
            if value is not before.get(command):
                added[command] = owner
        if message is not None:
            if info is not None:
                info.error = message
                info.traceback = trace
            logging.getLogger("seamkit").warning("seamkit plugin %r: %s", name, message)
    if isinstance(group, _Group):
        group.plugin_commands.update(added)
    return added


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
