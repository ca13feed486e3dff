"""The kernel's built-ins, registered through the same hookspecs as plugins:
the ``function`` tool kind (tools from Python functions) and the ``scripted``
and ``replay`` model providers.

``{kind: function, ref: "package.module:function"}`` gives that one function
(a plain function becomes a tool with its defaults); ``ref: "package.module"``
gives every ``@seamkit.tool`` of the module, in the order the module defines
them. A module that is not importable otherwise is looked up next to the
manifest. Errors name the ref and say what is wrong.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from ._config import ModelConfig, ToolConfig
from ._errors import SeamkitError
from ._events import hookimpl
from ._registry import BuildContext, RegisterModel, RegisterToolKind
from ._replay_config import ReplayConfig
from ._scripted import ScriptedModel
from ._tool import Tool
from ._tool_settings import SETTING_FIELDS, PerTool
from ._types import Model

__all__ = ["FunctionToolConfig", "import_ref", "resolve_function_tools"]

__seamkit_api__ = 1


class FunctionToolConfig(ToolConfig):
    """``{kind: function, ref: "package.module:function"}`` for one tool, or
    ``ref: "package.module"`` for every ``@seamkit.tool`` function of the module."""

    kind: Literal["function"] = "function"
    ref: str = Field(
        description="'package.module:function' for one tool, 'package.module' for every "
        "@seamkit.tool function in the module.",
        pattern=r"^[A-Za-z_][\w.]*(:[A-Za-z_][\w.]*)?$",
    )
    timeout_seconds: float | None = Field(
        default=None, gt=0, description="Overrides the tools' own time-out."
    )

    @model_validator(mode="after")
    def _one_value_for_one_tool(self) -> FunctionToolConfig:
        """A ref that names one function yields one tool: ``approval``,
        ``effects`` and ``stream_output`` take one value there, not a map."""
        if ":" not in self.ref:
            return self
        issues = [
            InitErrorDetails(
                type=PydanticCustomError(
                    "one_tool",
                    f"ref '{self.ref}' names one function, so {field} takes one value, "
                    "not a map by tool name",
                    {
                        "hint": f"write the value itself (e.g. {_EXAMPLES[field]}); a map by "
                        "tool name is for a ref that names a module"
                    },
                ),
                loc=(field,),
                input=dict(value.by_name),
            )
            for field in SETTING_FIELDS
            if isinstance(value := getattr(self, field), PerTool) and value.every is None
        ]
        if issues:
            raise ValidationError.from_exception_data(type(self).__name__, issues)
        return self


_EXAMPLES = {
    "approval": "'approval: always'",
    "effects": "'effects: none'",
    "stream_output": "'stream_output: true'",
}


async def resolve_function_tools(config: FunctionToolConfig, build: BuildContext) -> list[Tool]:
    """Import the referenced function(s) and turn them into tools.

    Modules that are not importable otherwise are looked up next to the
    manifest (``build.base_dir``). ``timeout_seconds`` overrides the tools' own.
    """
    base_dir = build.base_dir
    tools = [
        Tool.from_function(obj)
        for obj in resolve_ref(config, None if base_dir is None else str(base_dir))
    ]
    if config.timeout_seconds is not None:
        tools = [t.replace(timeout_seconds=config.timeout_seconds) for t in tools]
    return tools


def resolve_ref(config: FunctionToolConfig, base_dir: str | None = None) -> list[Any]:
    """The callables ``config.ref`` names. Raises `SeamkitError` naming the ref."""
    if ":" in config.ref:
        target = import_ref(config.ref, base_dir, what="function tool")
        if not callable(target):
            attr = config.ref.partition(":")[2]
            raise SeamkitError(f"function tool {config.ref!r}: {attr!r} is not callable")
        return [target]
    module = _import(config.ref, config.ref, base_dir, "function tool")
    marked = [obj for obj in vars(module).values() if isinstance(obj, Tool)]
    if not marked:
        raise SeamkitError(
            f"function tool {config.ref!r}: module {config.ref!r} has no @seamkit.tool function",
            hint="mark functions with @seamkit.tool, or name one with 'module:function'",
        )
    return marked


def import_ref(ref: str, base_dir: str | None, *, what: str) -> object:
    """The object ``ref`` (``"package.module:name"``, ``name`` possibly
    dotted) names, its module imported as usual or, failing that, from
    ``base_dir`` (the manifest's directory). Raises `SeamkitError` that
    starts ``<what> '<ref>':`` and says what is wrong."""
    module_name, _, attr = ref.partition(":")
    module = _import(module_name, ref, base_dir, what)
    target: Any = module
    for part in attr.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise SeamkitError(
                f"{what} {ref!r}: module {module_name!r} has no {attr!r}",
                hint=f"check the name after ':' in ref (functions in the module: "
                f"{', '.join(_functions(module)) or 'none'})",
            )
    return target


def _import(name: str, ref: str, base_dir: str | None, what: str) -> Any:
    added = False
    if base_dir is not None and base_dir not in sys.path:
        sys.path.insert(0, base_dir)
        added = True
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and name.startswith(exc.name):
            where = f" (also looked in {Path(base_dir)})" if base_dir else ""
            raise SeamkitError(
                f"{what} {ref!r}: no module named {name!r}{where}",
                hint="install the package that provides it, or fix the module path in ref",
            ) from None
        raise SeamkitError(f"{what} {ref!r}: importing {name!r} failed: {exc}") from exc
    except Exception as exc:
        raise SeamkitError(
            f"{what} {ref!r}: importing {name!r} failed: {type(exc).__name__}: {exc}"
        ) from exc
    finally:
        if added:
            sys.path.remove(base_dir)  # type: ignore[arg-type]


def _functions(module: Any) -> list[str]:
    names = [
        name
        for name, obj in vars(module).items()
        if isinstance(obj, Tool) or (inspect.isfunction(obj) and obj.__module__ == module.__name__)
    ]
    return sorted(names)


@hookimpl
def register_tool_kinds(register: RegisterToolKind) -> None:
    """The ``function`` tool kind."""
    register(FunctionToolConfig, resolve_function_tools)


def _scripted(config: ModelConfig, build: BuildContext) -> Model:
    base_dir = None if build.base_dir is None else str(build.base_dir)
    return ScriptedModel.from_spec(config.name, base_dir=base_dir)


def _replay(config: ReplayConfig, build: BuildContext) -> Model:
    from ._replay import ReplayModel  # lazy: cassette reading (difflib) only when replaying

    return ReplayModel.load(config.name, base_dir=build.base_dir, ignore=tuple(config.ignore))


@hookimpl
def register_models(register: RegisterModel) -> None:
    """The ``scripted`` model, which plays turns from a YAML or JSON script,
    and the ``replay`` model, which plays a recorded cassette."""
    register("scripted", _scripted)
    register("replay", _replay, config=ReplayConfig)
