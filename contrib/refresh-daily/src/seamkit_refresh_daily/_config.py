"""The ``daily`` refresh condition's config model: fresh until the next time
a zone's clocks show a time of day (the daylight-saving rules are in the
package's docstring)."""

from __future__ import annotations

import difflib
import re
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

import seamkit
from pydantic import Field, field_validator

__all__ = ["DailyRefresh"]

_AT = re.compile(r"(\d{2}):(\d{2})")
_LOOSE_AT = re.compile(r"(\d{1,2})[:.h](\d{1,2})")
_AT_FORMAT = '"HH:MM" (24-hour clock, two digits each), e.g. "06:00" or "18:30"'


class DailyRefresh(seamkit.RefreshCondition):
    """Fresh until the next time the clocks of ``timezone`` show ``at``."""

    kind: Literal["daily"] = "daily"
    at: str = Field(
        description='Time of day, "HH:MM" on a 24-hour clock (quote it in YAML).',
        json_schema_extra={"pattern": r"^([01][0-9]|2[0-3]):[0-5][0-9]$", "examples": ["06:00"]},
    )
    timezone: str = Field(
        description='IANA time zone whose clocks `at` is read on, e.g. "Europe/Berlin".',
        json_schema_extra={"examples": ["Europe/Berlin", "America/New_York", "UTC"]},
    )

    @field_validator("at", mode="before")
    @classmethod
    def _check_at(cls, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 24 * 60:
            # YAML 1.1 reads an unquoted 12:30 as the base-60 number 750.
            hours, minutes = divmod(value, 60)
            raise ValueError(
                f"got the number {value}, not a time of day: YAML reads an unquoted "
                f'{hours}:{minutes:02d} as a number; quote it: at: "{hours:02d}:{minutes:02d}"'
            )
        if not isinstance(value, str):
            raise ValueError(f"expected a time of day {_AT_FORMAT}, got {value!r}")
        match = _AT.fullmatch(value)
        if match is None:
            loose = _LOOSE_AT.fullmatch(value.strip())
            suggestion = ""
            if loose is not None and int(loose[1]) < 24 and int(loose[2]) < 60:
                suggestion = f'; did you mean "{int(loose[1]):02d}:{int(loose[2]):02d}"?'
            raise ValueError(f"{value!r} is not a time of day {_AT_FORMAT}{suggestion}")
        if int(match[1]) > 23 or int(match[2]) > 59:
            raise ValueError(
                f"{value!r} is not a time of day: hours go from 00 to 23 and minutes from "
                f'00 to 59 (midnight is "00:00"); write {_AT_FORMAT}'
            )
        return value

    @field_validator("timezone")
    @classmethod
    def _check_timezone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            pass
        else:
            return value
        known = available_timezones()
        if not known:
            raise ValueError(
                f"unknown time zone {value!r}: this system has no time zone database; "
                "install the 'tzdata' package"
            )
        close = difflib.get_close_matches(value, sorted(known), n=1)
        suggestion = f' (did you mean "{close[0]}"?)' if close else ""
        raise ValueError(
            f"unknown time zone {value!r}: use an IANA time zone name such as "
            f'"Europe/Berlin", "America/New_York" or "UTC"{suggestion}'
        )

    @property
    def time_of_day(self) -> time:
        """``at`` as a :class:`datetime.time`."""
        hours, minutes = self.at.split(":")
        return time(int(hours), int(minutes))

    @property
    def zone(self) -> ZoneInfo:
        """``timezone`` as a :class:`zoneinfo.ZoneInfo`."""
        return ZoneInfo(self.timezone)

    def expiry(self, now: datetime) -> datetime:
        """The first occurrence of ``at`` in ``timezone`` strictly after ``now``, in UTC.

        ``now`` must be aware (in any zone). The result is an aware datetime in
        UTC (``tzinfo=datetime.UTC``); ``.astimezone(self.zone)`` shows it on
        the zone's clocks. When ``now`` is exactly an occurrence, the next one
        is returned.
        """
        if now.tzinfo is None or now.utcoffset() is None:
            raise ValueError(f"expiry() needs an aware datetime, got naive {now.isoformat()}")
        now = now.astimezone(UTC)
        zone = self.zone
        day = now.astimezone(zone).date() - timedelta(days=1)
        while True:
            candidate = self.occurrence(day, zone)
            if candidate > now:
                return candidate
            day += timedelta(days=1)

    def occurrence(self, day: date, zone: ZoneInfo | None = None) -> datetime:
        """The instant (in UTC) that ``at`` stands for on ``day`` in ``timezone``.

        A time in a daylight-saving gap gives the first instant after the gap;
        a time that occurs twice gives its first occurrence.
        """
        zone = self.zone if zone is None else zone
        wall = datetime.combine(day, self.time_of_day)
        first = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
        if first.astimezone(zone).replace(tzinfo=None) == wall:
            return first  # exists; fold=0 is the first of two occurrences
        # In a gap: fold=0 reads the wall time with the offset before the
        # transition, fold=1 with the one after; the transition lies between.
        other = wall.replace(tzinfo=zone, fold=1).astimezone(UTC)
        return _transition(min(first, other), max(first, other), zone)


def _transition(before: datetime, after: datetime, zone: ZoneInfo) -> datetime:
    """The instant in ``(before, after]`` at which ``zone``'s UTC offset changes.

    Transitions fall on whole seconds, and ``before``/``after`` are whole
    seconds apart, so bisecting on seconds finds the exact instant.
    """
    old = before.astimezone(zone).utcoffset()
    span = int((after - before).total_seconds())
    while span > 1:
        half = span // 2
        middle = before + timedelta(seconds=half)
        if middle.astimezone(zone).utcoffset() == old:
            before, span = middle, span - half
        else:
            after, span = middle, half
    return after
