"""Instants for the refresh-condition check: the hypothesis strategy of aware
``now`` values, and where a time zone's UTC offset changes.

Refresh conditions go wrong around daylight-saving changes, which random
instants rarely hit, so half of the default ``now`` values are drawn near one.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone, tzinfo
from functools import lru_cache
from itertools import pairwise
from typing import TYPE_CHECKING
from zoneinfo import available_timezones

if TYPE_CHECKING:
    from hypothesis.strategies import DrawFn, SearchStrategy

__all__ = ["EPOCH", "default_nows", "instant", "offset_changes", "offset_changes_between"]

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
FIRST, LAST = datetime(1970, 1, 2), datetime(2200, 12, 31)
"""The range of the default ``now`` values (naive bounds, as hypothesis takes them)."""

FIXED_ZONES: tuple[tzinfo, ...] = (
    UTC,
    timezone(timedelta(hours=5, minutes=30)),
    timezone(-timedelta(hours=9, minutes=30)),
    timezone(timedelta(hours=14)),
)
SECOND = timedelta(seconds=1)


def instant(moment: datetime) -> timedelta:
    """``moment`` (aware) as the time since 1970-01-01 UTC.

    Python compares and subtracts two datetimes that share a ``tzinfo`` by their
    wall clocks (``fold`` and daylight saving ignored); instants compare as they
    happen, and this never overflows, even at ``datetime.max``.
    """
    return moment - EPOCH


def _offset(moment: datetime, zone: tzinfo) -> timedelta | None:
    """``zone``'s UTC offset at the instant ``moment``, to find where it changes."""
    return moment.astimezone(zone).utcoffset()


@lru_cache(maxsize=4096)
def offset_changes(zone: tzinfo, year: int) -> tuple[datetime, ...]:
    """The instants (UTC, to the second) in ``year`` at which ``zone``'s UTC
    offset changes; at most one a month is found."""
    if isinstance(zone, timezone):
        return ()
    marks = [datetime(year, month, 1, tzinfo=UTC) for month in range(1, 13)]
    marks.append(datetime(year + 1, 1, 1, tzinfo=UTC))
    return tuple(
        _change_in(before, after, zone)
        for before, after in pairwise(marks)
        if _offset(before, zone) != _offset(after, zone)
    )


def _change_in(before: datetime, after: datetime, zone: tzinfo) -> datetime:
    """The first second in ``(before, after]`` with an offset other than at ``before``."""
    old = _offset(before, zone)
    while after - before > SECOND:
        middle = before + (after - before) // SECOND // 2 * SECOND
        if _offset(middle, zone) == old:
            before = middle
        else:
            after = middle
    return after


def offset_changes_between(zone: tzinfo, start: datetime, end: datetime) -> list[datetime]:
    """The offset changes of ``zone`` in ``(start, end]`` (aware bounds), looked
    for in at most three calendar years from ``start``."""
    first_year = max(start.astimezone(UTC).year, EPOCH.year)
    last_year = min(first_year + 2, datetime.max.year - 1)
    return [
        change
        for year in range(first_year, last_year + 1)
        for change in offset_changes(zone, year)
        if instant(start) < instant(change) <= instant(end)
    ]


def default_nows() -> SearchStrategy[datetime]:
    """Aware datetimes from 1970 to 2200 in fixed offsets and IANA zones, half of
    them within two days (most within two hours) of a change of the zone's offset."""
    from hypothesis import strategies as st  # lazy: hypothesis is a test-time dependency

    fixed: SearchStrategy[tzinfo] = st.sampled_from(FIXED_ZONES)
    if not available_timezones():  # no time-zone database (Windows without tzdata)
        return st.datetimes(min_value=FIRST, max_value=LAST, timezones=fixed)
    named = st.timezones()
    anywhere = st.datetimes(min_value=FIRST, max_value=LAST, timezones=st.one_of(fixed, named))
    wall_clocks = st.datetimes(min_value=FIRST, max_value=LAST)
    years = st.integers(FIRST.year, LAST.year)
    shifts = st.one_of(
        st.timedeltas(min_value=-timedelta(hours=2), max_value=timedelta(hours=2)),
        st.timedeltas(min_value=-timedelta(days=2), max_value=timedelta(days=2)),
    )

    @st.composite
    def near_a_change(draw: DrawFn) -> datetime:
        zone = draw(named)
        changes = offset_changes(zone, draw(years))
        if not changes:  # no daylight saving in that zone that year
            return draw(wall_clocks).replace(tzinfo=zone)
        return (draw(st.sampled_from(changes)) + draw(shifts)).astimezone(zone)

    return st.one_of(anywhere, near_a_change())
