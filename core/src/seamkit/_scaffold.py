"""``seamkit new plugin NAME``: write a complete plugin distribution to start from."""

from __future__ import annotations

import click

__all__ = ["new_command"]


@click.group("new")
def new_command() -> None:
    """Start something new from a template: ``seamkit new plugin NAME``."""
