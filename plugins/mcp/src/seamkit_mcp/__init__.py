"""seamkit plugin: the tools of MCP servers, tool kind ``mcp``.

```yaml
tools:
  - kind: mcp
    toolset: time                  # the model sees time_get_current_time
    command: mcp-server-time       # stdio; or url: http://127.0.0.1:8000/mcp
```

This module imports only seamkit: the MCP SDK (about a second to import)
loads when an app with an ``mcp`` entry is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import seamkit
from seamkit.plugins import lazy_module

if TYPE_CHECKING:
    from seamkit.plugins import BuildContext, RegisterToolKind

    from ._config import MCPToolConfig as MCPToolConfig
    from ._errors import MCPServerError as MCPServerError
    from ._results import to_result as to_result
    from ._toolset import USER_META_KEY as USER_META_KEY, MCPToolset as MCPToolset

__getattr__, __dir__, __all__ = lazy_module(
    __name__,
    {
        "MCPServerError": "._errors",
        "MCPToolConfig": "._config",
        "MCPToolset": "._toolset",
        "USER_META_KEY": "._toolset",
        "to_result": "._results",
    },
    defined=["register_tool_kinds"],
)
__seamkit_api__ = 1


async def _resolve(config: MCPToolConfig, build: BuildContext) -> MCPToolset:
    from ._kind import resolve  # lazy: the MCP SDK loads when an app uses MCP

    return await resolve(config, build)


@seamkit.hookimpl
def register_tool_kinds(register: RegisterToolKind) -> None:
    """Add the ``mcp`` tool kind."""
    from ._config import MCPToolConfig  # lazy: pydantic loads on registration

    register(MCPToolConfig, _resolve)
