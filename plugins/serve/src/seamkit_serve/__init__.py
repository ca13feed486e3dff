"""seamkit plugin: the ``serve`` command and the ``serve:`` manifest section.

``seamkit serve APP`` serves the app as an OpenAI-compatible endpoint; the
web stack (Starlette, uvicorn) loads only when the command runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import seamkit
from seamkit.plugins import lazy_module

if TYPE_CHECKING:
    import click
    from seamkit.plugins import RegisterSection

    from ._app import ServerOptions as ServerOptions, create_app as create_app
    from ._config import ServeConfig as ServeConfig

__getattr__, __dir__, __all__ = lazy_module(
    __name__,
    {"ServeConfig": "._config", "ServerOptions": "._app", "create_app": "._app"},
    defined=["register_commands", "register_manifest_sections"],
)
__seamkit_api__ = 1


@seamkit.hookimpl
def register_commands(cli: click.Group) -> None:
    """Add ``seamkit serve``."""
    from ._command import serve_command  # lazy: click options only, no web stack

    cli.add_command(serve_command)


@seamkit.hookimpl
def register_manifest_sections(register: RegisterSection) -> None:
    """Add the ``serve:`` section."""
    from ._config import ServeConfig  # lazy: pydantic loads on registration

    register("serve", ServeConfig)
