"""seamkit plugin: durable runs on Temporal.

Any seamkit app, unchanged, runs on a fleet of Temporal workers: one run is
one workflow (``seamkit.run``) that runs the kernel's own loop, its model
turns, tool bodies and hooks as activities; a run that waits for approval
waits in its workflow; its events reach the caller live over a side channel.

- ``seamkit temporal worker|run|decide``: serve an app's runs, start and
  follow one as ``seamkit run`` does, deliver decisions.
- `TemporalRunner`: the same from code (``run``, ``stream``, ``decide``,
  ``status``); `connect` opens a client with the payload converter it needs;
  `serve` runs a worker for an agent.
- `Inbox`, `Publisher`, `Route`: the side channel of live events;
  `encode_event` and `decode_event` its JSON.

This module imports only seamkit (and click, for type checking): the
``temporalio`` SDK loads only when a command or name that needs it is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import seamkit
from seamkit.plugins import lazy_module

if TYPE_CHECKING:
    import click

    from ._channel import Inbox as Inbox, Publisher as Publisher, Route as Route
    from ._codec import decode_event as decode_event, encode_event as encode_event
    from ._command import temporal_group as temporal_group
    from ._runner import (
        LIVE_EVENTS_UNAVAILABLE as LIVE_EVENTS_UNAVAILABLE,
        TemporalRunner as TemporalRunner,
        workflow_id as workflow_id,
    )
    from ._worker import connect as connect, serve as serve
    from ._workflow import RunStatus as RunStatus

__getattr__, __dir__, __all__ = lazy_module(
    __name__,
    {
        "Inbox": "._channel",
        "Publisher": "._channel",
        "Route": "._channel",
        "decode_event": "._codec",
        "encode_event": "._codec",
        "temporal_group": "._command",
        "LIVE_EVENTS_UNAVAILABLE": "._runner",
        "TemporalRunner": "._runner",
        "workflow_id": "._runner",
        "connect": "._worker",
        "serve": "._worker",
        "RunStatus": "._workflow",
    },
    defined=["register_commands"],
)
__seamkit_api__ = 1


@seamkit.hookimpl
def register_commands(cli: click.Group) -> None:
    """Add ``seamkit temporal worker|run|decide``."""
    from ._command import temporal_group  # lazy: click options only, no temporalio

    cli.add_command(temporal_group)
