"""The pytest plugin of ``seamkit.testing`` (entry point ``pytest11``).

It imports nothing heavy at load time: hypothesis is imported only when one of
its fixtures is used, so it costs nothing to a user who never asks for it.
"""

from __future__ import annotations
