"""The `ttl` refresh condition of seamkit-refresh-ttl, found through its entry point."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, strategies as st
from pydantic import ValidationError
from seamkit import RefreshCondition
from seamkit.plugins import get_registry
from seamkit_refresh_ttl import TTLRefresh


def test_ttl_is_discovered_through_its_entry_point() -> None:
    info = get_registry().kind("refresh", "ttl")
    assert info is not None and info.model is TTLRefresh and info.plugin == "ttl"
    assert issubclass(TTLRefresh, RefreshCondition)


def test_expiry_is_the_minutes_after_now() -> None:
    now = datetime(2026, 3, 29, 0, 45, tzinfo=UTC)
    assert TTLRefresh(ttl_minutes=30).expiry(now) == datetime(2026, 3, 29, 1, 15, tzinfo=UTC)
    assert TTLRefresh(ttl_minutes=24 * 60).expiry(now) == datetime(2026, 3, 30, 0, 45, tzinfo=UTC)


@given(st.integers(1, 10**9), st.integers(1, 10**9), st.datetimes(timezones=st.just(UTC)))
def test_a_longer_ttl_never_expires_sooner_and_nothing_overflows(
    short: int, long: int, now: datetime
) -> None:
    short, long = sorted((short, long))
    first, second = (TTLRefresh(ttl_minutes=m).expiry(now) for m in (short, long))
    last = datetime.max.replace(tzinfo=UTC)
    assert now <= first <= second and (now < first or now == last)
    # Exact to the minute unless the instant lies past what a datetime holds.
    assert first - now == timedelta(minutes=short) or first == last


def test_an_expiry_past_the_year_9999_is_the_last_instant() -> None:
    now = datetime(9999, 12, 31, 23, 0, tzinfo=UTC)
    assert TTLRefresh(ttl_minutes=120).expiry(now) == datetime.max.replace(tzinfo=UTC)


def test_ttl_minutes_must_be_a_positive_integer() -> None:
    for bad in (0, -5, 1.5, "soon"):
        with pytest.raises(ValidationError):
            TTLRefresh(ttl_minutes=bad)  # type: ignore[arg-type]


def test_naive_datetimes_are_refused() -> None:
    with pytest.raises(ValueError, match="aware"):
        TTLRefresh(ttl_minutes=1).expiry(datetime(2026, 1, 1))
