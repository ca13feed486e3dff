"""seamkit plugin: durable runs on Temporal.

``seamkit temporal worker|run|decide`` will serve an app's runs on a fleet of
Temporal workers, start and follow runs, and deliver approval decisions (not
implemented yet: the commands say so and exit with status 2).

This module imports only seamkit (and click, for type checking): the
``temporalio`` SDK loads only when a command that needs it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import seamkit
from seamkit.plugins import lazy_module

if TYPE_CHECKING:
    import click

    from ._command import temporal_group as temporal_group

__getattr__, __dir__, __all__ = lazy_module(
    __name__, {"temporal_group": "._command"}, defined=["register_commands"]
)
__seamkit_api__ = 1


@seamkit.hookimpl
def register_commands(cli: click.Group) -> None:
    """Add ``seamkit temporal worker|run|decide``."""
    from ._command import temporal_group  # lazy: click options only, no temporalio

    cli.add_command(temporal_group)
