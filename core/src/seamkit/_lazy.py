"""`lazy_module`: the one way an entry module (the kernel's packages, every
plugin's) offers its public names from one table and imports the module
behind a name only when the name is first used (PEP 562).

It imports nothing but what Python has loaded at start-up, so that
``import seamkit`` and loading a plugin stay cheap.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple

__all__ = ["LazyModule", "lazy_module"]

_HOOKIMPL_MARK = "seamkit_impl"
"""The attribute ``@seamkit.hookimpl`` puts on a function (pluggy's marker)."""


class LazyModule(NamedTuple):
    """What `lazy_module` gives an entry module, unpacked as its
    ``__getattr__``, ``__dir__`` and ``__all__``."""

    getattr: Callable[[str], object]
    dir: Callable[[], list[str]]
    all: list[str]


def lazy_module(
    name: str,
    table: Mapping[str, str | Callable[[], object]],
    *,
    defined: Iterable[str] = (),
) -> LazyModule:
    """The ``__getattr__``, ``__dir__`` and ``__all__`` of an entry module
    whose public names come from one table, each loaded on first use (PEP 562).

    ::

        __getattr__, __dir__, __all__ = lazy_module(
            __name__, {"NoteConfig": "._config", "NoteHook": "._hook"},
            defined=["register_hook_kinds"],
        )

    ``table`` maps each public name to where it comes from: a module relative
    to the package (``"._config"``; ``".._errors"`` reaches up), ``""`` for
    the package's submodule of that name, or a function that computes the
    value. A name is imported the first time it is asked for and then kept
    in the module, so later uses cost a plain attribute look-up. ``defined``
    names what the module itself defines and offers (its hookimpls, say).
    ``__all__`` is the table's names and ``defined``, sorted; ``dir()`` is
    ``__all__`` and every ``@seamkit.hookimpl`` the module defines, since
    pluggy finds hookimpls through ``dir()``. Spell the table out for type
    checkers in an ``if TYPE_CHECKING:`` block of ``from ... import X as X``.
    """
    module = sys.modules[name]
    namespace = vars(module)
    package = module.__package__ or name
    entries = dict(table)
    public = sorted({*entries, *defined})

    def __getattr__(attr: str) -> object:
        where = entries.get(attr)
        if where is None:
            raise AttributeError(f"module {name!r} has no attribute {attr!r}")
        if callable(where):
            value = where()
        elif where == "":
            value = importlib.import_module(f".{attr}", package)
        else:
            value = getattr(importlib.import_module(where, package), attr)
        namespace[attr] = value
        return value

    def __dir__() -> list[str]:
        marked = [n for n, v in list(namespace.items()) if hasattr(v, _HOOKIMPL_MARK)]
        return sorted({*public, *marked})

    return LazyModule(__getattr__, __dir__, public)
