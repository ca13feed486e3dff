"""The tool kind ``tool-service`` and the tools of the ``tool_services:``
section (discovered services), resolved against one agent's build.

The tools of one agent share its connections (one HTTP pool, one NATS
connection per server list), closed with the agent.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from contextlib import AsyncExitStack

from seamkit import Agent, SeamkitError, Tool, ToolSource
from seamkit.plugins import BuildContext

from ._config import ToolServiceConfig, ToolServicesConfig, check_tool, secured
from ._discovery import Discovered
from ._tools import Connections, service_tool

__all__ = ["dropped_replies", "resolve_section", "resolve_tool"]

_CONNECTIONS: weakref.WeakKeyDictionary[AsyncExitStack, Connections] = weakref.WeakKeyDictionary()


def _connections(build: BuildContext) -> Connections:
    """The connections of the agent being built (closed with it)."""
    found = _CONNECTIONS.get(build.exit_stack)
    if found is None:
        found = _CONNECTIONS[build.exit_stack] = Connections()
        build.exit_stack.push_async_callback(found.aclose)
    return found


def dropped_replies(agent: Agent) -> dict[str, int]:
    """How many replies the tool-service transports of ``agent`` dropped:
    ``stray`` ones no call of theirs asked for (or carrying another call's
    id) and ``duplicate`` ones for a call that had its answer."""
    connections = _CONNECTIONS.get(agent.exit_stack)
    return connections.dropped() if connections else {"stray": 0, "duplicate": 0}


def _section(build: BuildContext) -> ToolServicesConfig:
    section = build.section("tool_services")
    return section if isinstance(section, ToolServicesConfig) else ToolServicesConfig()


async def resolve_tool(config: ToolServiceConfig, build: BuildContext) -> Sequence[Tool]:
    """The one tool of a ``tool-service`` entry. Raises `SeamkitError` when
    it names an unknown service or its config values do not fit."""
    services = _section(build).by_id
    issues = check_tool(config.name, config.service, config.config_values, services)
    if issues:
        raise SeamkitError("; ".join(i[2] for i in issues), hint=issues[0][3])
    base_dir = None if build.base_dir is None else str(build.base_dir)
    service = secured(services[config.service], _section(build), base_dir)
    return [
        service_tool(
            service,
            _connections(build),
            name=config.name,
            description=config.description,
            arguments=config.arguments,
            config=config.config_values,
            timeout_seconds=config.timeout_seconds,
        )
    ]


async def resolve_section(
    section: ToolServicesConfig, build: BuildContext
) -> Sequence[Tool] | ToolSource:
    """The tools of the services discovered on NATS (none without
    ``discover``), never one named like a tool the agent has already
    (``build.tools``: its manifest entries and code tools)."""
    if not section.discover:
        return []
    base_dir = None if build.base_dir is None else str(build.base_dir)
    reserved = {name: build.tools.origin(name) for name in build.tools}
    discovered = Discovered(section, _connections(build), reserved, base_dir=base_dir)
    build.exit_stack.push_async_callback(discovered.aclose)
    return discovered
