"""Tools for testing seamkit plugins and apps (extra ``seamkit[testing]``)."""

from __future__ import annotations

__all__: list[str] = []
