"""seamkit plugin: the ``ttl`` refresh condition.

``{kind: ttl, ttl_minutes: 30}`` keeps an injected result fresh for 30 minutes
after it was obtained.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import seamkit
from seamkit.plugins import lazy_module

if TYPE_CHECKING:
    from seamkit.plugins import RegisterRefreshCondition

    from ._config import TTLRefresh as TTLRefresh

__getattr__, __dir__, __all__ = lazy_module(
    __name__, {"TTLRefresh": "._config"}, defined=["register_refresh_conditions"]
)
__seamkit_api__ = 1


@seamkit.hookimpl
def register_refresh_conditions(register: RegisterRefreshCondition) -> None:
    """Register the ``ttl`` kind."""
    from ._config import TTLRefresh  # lazy: pydantic loads on registration

    register(TTLRefresh)
