"""seamkit plugin: the ``daily`` refresh condition.

``{kind: daily, at: "06:00", timezone: "Europe/Berlin"}`` keeps an injected
result fresh until the next 06:00 on the clocks of Berlin, then it goes stale.

Daylight saving time:

* a time of day that does not exist on a day (it falls in the gap when the
  clocks go forward) means the first instant after the gap: ``at: "02:30"`` in
  Europe/Berlin on 2026-03-29 is 03:00 CEST;
* a time of day that happens twice on a day (the clocks go back) means its
  first occurrence: ``at: "02:30"`` in Europe/Berlin on 2026-10-25 is 02:30
  CEST, not 02:30 CET an hour later.

Written against seamkit's public API only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import seamkit
from seamkit.plugins import lazy_module

if TYPE_CHECKING:
    from seamkit.plugins import RegisterRefreshCondition

    from ._config import DailyRefresh as DailyRefresh

__getattr__, __dir__, __all__ = lazy_module(
    __name__, {"DailyRefresh": "._config"}, defined=["register_refresh_conditions"]
)
__seamkit_api__ = 1


@seamkit.hookimpl
def register_refresh_conditions(register: RegisterRefreshCondition) -> None:
    """Register the ``daily`` kind."""
    from ._config import DailyRefresh  # lazy: pydantic and zoneinfo load on registration

    register(DailyRefresh)
