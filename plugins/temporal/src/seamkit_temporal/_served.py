"""What a worker process serves: its agents by app name, and the publisher
of their runs' live events.

This module is passed through the workflow sandbox (`PASSTHROUGH`): workflow
code and activities of one worker process see the same agents (the sandbox
would give a re-imported module an empty table).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import seamkit

if TYPE_CHECKING:
    from seamkit.stream import ObservedEvent

    from ._channel import Publisher, Route

__all__ = ["PASSTHROUGH", "agent_for", "publish", "serve_agent", "set_publisher"]

PASSTHROUGH = ("seamkit", "seamkit_temporal")
"""Modules the workflow sandbox passes through (with each plugin's module)."""

_AGENTS: dict[str, seamkit.Agent] = {}
_PUBLISHER: list[Publisher] = []


def serve_agent(agent: seamkit.Agent) -> None:
    """Make ``agent`` the one this process runs for its app name."""
    _AGENTS[agent.name] = agent


def agent_for(app: str) -> seamkit.Agent:
    """The agent this process serves as ``app``; `seamkit.SeamkitError`
    naming the apps it serves otherwise."""
    found = _AGENTS.get(app)
    if found is None:
        served = ", ".join(sorted(_AGENTS)) or "none"
        raise seamkit.SeamkitError(
            f"this worker does not serve app {app!r}",
            hint=f"it serves: {served}; start a worker for {app!r} on this task queue",
        )
    return found


def set_publisher(publisher: Publisher | None) -> None:
    """Where this process sends its runs' live events (``None``: nowhere)."""
    _PUBLISHER[:] = [] if publisher is None else [publisher]


def publish(route: Route | None, event: ObservedEvent, source: str, seq: int) -> None:
    """Send ``event`` to the run's caller (nothing without a route or a
    publisher), numbered ``seq`` from ``source``; never raises, never waits."""
    if route is not None and _PUBLISHER:
        _PUBLISHER[0].publish(route, event, source=source, seq=seq)
