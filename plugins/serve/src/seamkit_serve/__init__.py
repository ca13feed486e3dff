"""seamkit plugin: the ``serve`` command and the ``serve:`` manifest section.

``seamkit serve APP`` serves the app as an OpenAI-compatible endpoint; the
web stack (Starlette, uvicorn) loads only when the command runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import seamkit

if TYPE_CHECKING:
    import click

    from ._app import ServerOptions as ServerOptions, create_app as create_app
    from ._config import ServeConfig as ServeConfig

__all__ = [
    "ServeConfig",
    "ServerOptions",
    "create_app",
    "register_commands",
    "register_manifest_sections",
]
__seamkit_api__ = 1

_LAZY = {"ServeConfig": "._config", "ServerOptions": "._app", "create_app": "._app"}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'seamkit_serve' has no attribute {name!r}")
    import importlib  # lazy: only when a public name is asked for

    return getattr(importlib.import_module(module, __name__), name)


def __dir__() -> list[str]:
    return list(__all__)


@seamkit.hookimpl
def register_commands(cli: click.Group) -> None:
    """Add ``seamkit serve``."""
    from ._command import serve_command  # lazy: click options only, no web stack

    cli.add_command(serve_command)


@seamkit.hookimpl
def register_manifest_sections(register: Callable[..., None]) -> None:
    """Add the ``serve:`` section."""
    from ._config import ServeConfig  # lazy: pydantic loads on registration

    register("serve", ServeConfig)
