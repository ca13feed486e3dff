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


@given(st.integers(1, 10**6), st.datetimes(timezones=st.just(UTC)))
def test_expiry_is_now_plus_the_minutes(minutes: int, now: datetime) -> None:
    try:
        expected = now + timedelta(minutes=minutes)
    except OverflowError:
        return
    assert TTLRefresh(ttl_minutes=minutes).expiry(now) == expected


def test_ttl_minutes_must_be_a_positive_integer() -> None:
    for bad in (0, -5, 1.5, "soon"):
        with pytest.raises(ValidationError):
            TTLRefresh(ttl_minutes=bad)  # type: ignore[arg-type]


def test_naive_datetimes_are_refused() -> None:
    with pytest.raises(ValueError, match="aware"):
        TTLRefresh(ttl_minutes=1).expiry(datetime(2026, 1, 1))
