"""seamkit plugin: tools served by other processes and machines.

The ``tool_services:`` manifest section declares services (HTTP or NATS);
tool kind ``tool-service`` makes tools that call them; ``discover``
picks up services announced on NATS (``{allow, deny}`` says which ones).
Service authors subclass `DynamicToolService` and run it with
``seamkit tool-service serve``.

This module imports only seamkit: pydantic models load on registration,
httpx on the first call, nats-py only when a NATS service is used.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import seamkit
from seamkit.plugins import lazy_module

if TYPE_CHECKING:
    import click
    from seamkit.plugins import BuildContext, RegisterSection, RegisterToolKind

    from ._config import (
        Argument as Argument,
        ConfigParam as ConfigParam,
        DiscoverEntry as DiscoverEntry,
        DiscoverRules as DiscoverRules,
        HttpAuth as HttpAuth,
        HttpTls as HttpTls,
        NatsAuth as NatsAuth,
        NatsTls as NatsTls,
        ServedTool as ServedTool,
        ServiceDescriptor as ServiceDescriptor,
        ToolServiceConfig as ToolServiceConfig,
        ToolServicesConfig as ToolServicesConfig,
    )
    from ._discovery import DESCRIPTOR_KEY as DESCRIPTOR_KEY
    from ._envelope import (
        Reply as Reply,
        Request as Request,
        ServiceCall as ServiceCall,
        decode_reply as decode_reply,
        decode_request as decode_request,
        encode_reply as encode_reply,
        encode_request as encode_request,
    )
    from ._errors import EnvelopeError as EnvelopeError, ToolServiceError as ToolServiceError
    from ._kind import dropped_replies as dropped_replies
    from ._service import DynamicToolService as DynamicToolService
    from ._tools import USER_PROPERTY as USER_PROPERTY

__getattr__, __dir__, __all__ = lazy_module(
    __name__,
    {
        "Argument": "._config",
        "ConfigParam": "._config",
        "DESCRIPTOR_KEY": "._discovery",
        "DiscoverEntry": "._config",
        "DiscoverRules": "._config",
        "DynamicToolService": "._service",
        "EnvelopeError": "._errors",
        "HttpAuth": "._config",
        "HttpTls": "._config",
        "NatsAuth": "._config",
        "NatsTls": "._config",
        "Reply": "._envelope",
        "Request": "._envelope",
        "ServedTool": "._config",
        "ServiceCall": "._envelope",
        "ServiceDescriptor": "._config",
        "ToolServiceConfig": "._config",
        "ToolServiceError": "._errors",
        "ToolServicesConfig": "._config",
        "USER_PROPERTY": "._tools",
        "decode_reply": "._envelope",
        "dropped_replies": "._kind",
        "decode_request": "._envelope",
        "encode_reply": "._envelope",
        "encode_request": "._envelope",
    },
    defined=["register_commands", "register_manifest_sections", "register_tool_kinds"],
)
__seamkit_api__ = 1


async def _resolve_tool(config: ToolServiceConfig, build: BuildContext) -> Sequence[seamkit.Tool]:
    from ._kind import resolve_tool  # lazy: the transports load when an agent is built

    return await resolve_tool(config, build)


async def _resolve_section(
    section: ToolServicesConfig, build: BuildContext
) -> Sequence[seamkit.Tool] | seamkit.ToolSource:
    from ._kind import resolve_section  # lazy: see above

    return await resolve_section(section, build)


@seamkit.hookimpl
def register_manifest_sections(register: RegisterSection) -> None:
    """Add the ``tool_services:`` section (its discovered tools too)."""
    from ._config import ToolServicesConfig  # lazy: pydantic loads on registration

    register("tool_services", ToolServicesConfig, tools=_resolve_section)


@seamkit.hookimpl
def register_tool_kinds(register: RegisterToolKind) -> None:
    """Add the ``tool-service`` tool kind."""
    from ._config import ToolServiceConfig  # lazy: see above

    register(ToolServiceConfig, _resolve_tool)


@seamkit.hookimpl
def register_commands(cli: click.Group) -> None:
    """Add ``seamkit tool-service serve``."""
    from ._command import tool_service_group  # lazy: click options only

    cli.add_command(tool_service_group)
