"""Resolving ``function`` tool entries: import what ``ref`` names.

``package.module:function`` gives that one function (a plain function becomes
a tool with its defaults); ``package.module`` gives every ``@seamkit.tool`` of
the module, in the order the module defines them. Relative to the manifest's directory when the
module is not importable otherwise. Errors name the entry and say what is wrong.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path
from typing import Any

from ._errors import SeamkitError
from ._function_kind import FunctionToolConfig

__all__ = ["resolve_ref"]


def resolve_ref(config: FunctionToolConfig, base_dir: str | None = None) -> list[Any]:
    """The callables ``config.ref`` names. Raises `SeamkitError` naming the ref."""
    module_name, _, attr = config.ref.partition(":")
    module = _import(module_name, config.ref, base_dir)
    if attr:
        target: Any = module
        for part in attr.split("."):
            target = getattr(target, part, None)
            if target is None:
                raise SeamkitError(
                    f"function tool {config.ref!r}: module {module_name!r} has no {attr!r}",
                    hint=f"check the name after ':' in ref (functions in the module: "
                    f"{', '.join(_functions(module)) or 'none'})",
                )
        if not callable(target):
            raise SeamkitError(f"function tool {config.ref!r}: {attr!r} is not callable")
        return [target]
    from ._tool import Tool

    marked = [obj for obj in vars(module).values() if isinstance(obj, Tool)]
    if not marked:
        raise SeamkitError(
            f"function tool {config.ref!r}: module {module_name!r} has no @seamkit.tool function",
            hint="mark functions with @seamkit.tool, or name one with 'module:function'",
        )
    return marked


def _import(name: str, ref: str, base_dir: str | None) -> Any:
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
                f"function tool {ref!r}: no module named {name!r}{where}",
                hint="install the package that provides it, or fix the module path in ref",
            ) from None
        raise SeamkitError(f"function tool {ref!r}: importing {name!r} failed: {exc}") from exc
    except Exception as exc:
        raise SeamkitError(
            f"function tool {ref!r}: importing {name!r} failed: {type(exc).__name__}: {exc}"
        ) from exc
    finally:
        if added:
            sys.path.remove(base_dir)  # type: ignore[arg-type]


def _functions(module: Any) -> list[str]:
    from ._tool import Tool

    names = [
        name
        for name, obj in vars(module).items()
        if isinstance(obj, Tool) or (inspect.isfunction(obj) and obj.__module__ == module.__name__)
    ]
    return sorted(names)
