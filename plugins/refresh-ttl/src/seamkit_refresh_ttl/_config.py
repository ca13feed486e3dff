"""The ``ttl`` refresh condition's config model: fresh for ``ttl_minutes``
after a result was obtained."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Literal

import seamkit
from pydantic import Field

__all__ = ["TTLRefresh"]


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
