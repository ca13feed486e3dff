"""seamkit plugin: the ``ttl`` refresh condition.

``{kind: ttl, ttl_minutes: 30}`` keeps an injected result fresh for 30 minutes
after it was obtained.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Literal

import seamkit
from pydantic import Field

__all__ = ["TTLRefresh"]
__seamkit_api__ = 1


class TTLRefresh(seamkit.RefreshCondition):
    """Fresh for ``ttl_minutes`` minutes after the result was obtained."""

    kind: Literal["ttl"] = "ttl"
    ttl_minutes: int = Field(gt=0, description="Minutes a result stays fresh (an integer > 0).")

    def expiry(self, now: datetime) -> datetime:
        """``now`` plus the time-to-live, in real time (computed in UTC: adding
        to a zoned ``now`` would add wall-clock time, an hour off across a
        daylight-saving change); the last representable instant when that
        lies beyond the year 9999."""
        if now.tzinfo is None:
            raise ValueError("expiry() needs an aware datetime")
        try:
            return now.astimezone(UTC) + timedelta(minutes=self.ttl_minutes)
        except OverflowError:
            return datetime.max.replace(tzinfo=UTC)


@seamkit.hookimpl
def register_refresh_conditions(register: Callable[..., None]) -> None:
    """Register the ``ttl`` kind."""
    register(TTLRefresh)
