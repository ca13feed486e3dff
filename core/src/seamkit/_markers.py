"""The pluggy markers of the ``seamkit`` project."""

from __future__ import annotations

import pluggy

__all__ = ["PROJECT", "hookimpl", "hookspec"]

PROJECT = "seamkit"
"""The pluggy project name, which is also the entry-point group plugins use."""

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)
"""Marks a function or method as a seamkit hookimpl (``@seamkit.hookimpl``)."""
