"""The ``seamkit`` command: plugins, schema, validate, run, and plugin commands."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from ._errors import ManifestError, SeamkitError
from ._loader import get_registry
from ._version import __version__

__all__ = ["cli", "main"]


class _Group(click.Group):
    """A click group that turns seamkit errors into one line plus a hint."""

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
@click.version_option(__version__, "--version", prog_name="seamkit")
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """seamkit: run LLM agents whose hooks, tools and models come from plugins."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug
    if debug:
        import logging

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


@cli.command("schema")
@click.option("--indent", default=2, show_default=True, help="JSON indentation.")
def schema_command(indent: int) -> None:
    """Print the JSON Schema of the app manifest, with every installed kind."""
    from ._schema import manifest_schema

    click.echo(json.dumps(manifest_schema(get_registry()), indent=indent))


@cli.command("validate")
@click.argument("app", type=click.Path(dir_okay=False))
def validate_command(app: str) -> None:
    """Check an app manifest and resolve its tools; print every error with its
    location (exit 1 on any)."""
    config, tools = _load_with_tools(app)
    entries, hooks = len(config.tools), len(config.hooks)
    click.echo(
        f"{app}: ok ({entries} tool {'entry' if entries == 1 else 'entries'} giving "
        f"{len(tools)} tool{'' if len(tools) == 1 else 's'}, "
        f"{hooks} hook{'' if hooks == 1 else 's'})"
    )


@cli.command("tools")
@click.argument("app", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the tools as JSON.")
def tools_command(app: str, as_json: bool) -> None:
    """List the tools an app resolves to, as the model sees them."""
    _, tools = _load_with_tools(app)
    if as_json:
        rows = [
            {
                **t.spec.model_dump(),
                "origin": tools.origin(name),
                "tags": sorted(t.tags),
                "terminal": t.terminal,
                "timeout_seconds": t.timeout_seconds,
            }
            for name, t in tools.items()
        ]
        click.echo(json.dumps(rows, indent=2))
        return
    for name, t in tools.items():
        args = ", ".join(t.parameters.get("properties", {}))
        summary = t.description.splitlines()[0] if t.description else ""
        click.echo(f"{name}({args})  [{tools.origin(name)}]")
        if summary:
            click.echo(f"    {summary}")


def _load_with_tools(app: str) -> tuple[Any, Any]:
    """The manifest and its resolved tools (the agent is built, so the model
    and the hooks are checked too); every problem printed, exit 1 on any."""
    import asyncio

    from ._agent import Agent

    async def build() -> tuple[Any, Any]:
        async with await Agent.load(app) as agent:
            return agent.config, agent.tools

    try:
        return asyncio.run(build())
    except ManifestError as exc:
        click.echo(exc.format(), err=True)
        count = len(exc.problems)
        click.echo(f"{app}: {count} error{'s' if count != 1 else ''}", err=True)
        sys.exit(1)


def _add_plugin_commands(group: click.Group) -> None:
    registry = get_registry()
    pm = registry.plugin_manager
    for impl in pm.hook.register_commands.get_hookimpls():
        name = pm.get_name(impl.plugin) or "?"
        try:
            impl.function(**{k: group for k in impl.argnames})
        except Exception as exc:
            info = registry.plugins.get(name)
            message = f"register_commands failed: {type(exc).__name__}: {exc}"
            if info is not None:
                info.error = message
            import logging

            logging.getLogger("seamkit").warning("seamkit plugin %r: %s", name, message)


def _setup_logging() -> None:
    import logging

    logger = logging.getLogger("seamkit")
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s: %(message)s"))
        logger.addHandler(handler)
        logger.propagate = False


from ._cli_run import run_command  # noqa: E402  (registers `seamkit run`)

cli.add_command(run_command)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``seamkit`` console script."""
    args = sys.argv[1:] if argv is None else argv
    _setup_logging()
    if args[:1] != ["--version"]:
        _add_plugin_commands(cli)
    cli.main(args=args, prog_name="seamkit")
