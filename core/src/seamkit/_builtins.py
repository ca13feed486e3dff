"""The kernel's own built-ins, registered through the same hookspecs as plugins."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._function_kind import FunctionToolConfig, resolve_function_tools
from ._markers import hookimpl

__seamkit_api__ = 1


@hookimpl
def register_tool_kinds(register: Callable[..., None]) -> None:
    """The ``function`` tool kind."""
    register(FunctionToolConfig, resolve_function_tools)


def _scripted(name: str, **options: Any) -> Any:
    from ._scripted import ScriptedModel

    return ScriptedModel.from_spec(name, **options)


@hookimpl
def register_models(register: Callable[..., None]) -> None:
    """The ``scripted`` model, which plays turns from a YAML or JSON script."""
    register("scripted", _scripted)
