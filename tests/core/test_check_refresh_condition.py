"""`check_refresh_condition`: the laws a refresh condition keeps (an aware
expiry after now that never moves backwards, a config that survives the
manifest), passed by the first-party conditions and failed by broken ones."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Literal
from zoneinfo import ZoneInfo

import pytest
from hypothesis import strategies as st
from pydantic import Field, field_serializer
from seamkit import AppConfig, RefreshCondition
from seamkit.testing import check_refresh_condition
from seamkit_refresh_daily import DailyRefresh
from seamkit_refresh_ttl import TTLRefresh

EXAMPLES = 60
BERLIN = ZoneInfo("Europe/Berlin")
CHICAGO = ZoneInfo("America/Chicago")

# --- the first-party conditions pass ------------------------------------------------


def test_ttl_passes_for_manifest_mappings_and_instances() -> None:
    check_refresh_condition(
        TTLRefresh,
        configs=[
            {"ttl_minutes": 1},
            {"kind": "ttl", "ttl_minutes": 90},
            TTLRefresh(ttl_minutes=10**9),
        ],
        max_examples=EXAMPLES,
    )


def test_ttl_passes_for_a_strategy_of_configs() -> None:
    check_refresh_condition(
        TTLRefresh,
        configs=st.builds(TTLRefresh, ttl_minutes=st.integers(1, 10**12)),
        max_examples=EXAMPLES,
    )


def test_daily_passes_in_zones_with_daylight_saving() -> None:
    check_refresh_condition(
        DailyRefresh,
        configs=[
            {"at": "06:00", "timezone": "Europe/Berlin"},
            {"at": "02:30", "timezone": "Europe/Berlin"},  # in the spring gap once a year
            {"at": "01:45", "timezone": "Australia/Lord_Howe"},  # half-hour shifts
            DailyRefresh(at="00:00", timezone="UTC"),
        ],
        max_examples=EXAMPLES,
    )


def test_daily_passes_for_a_config_read_from_a_manifest() -> None:
    # The manifest gives an instance of its own subclass of DailyRefresh.
    manifest = {
        "name": "a",
        "model": "scripted:s",
        "hooks": [
            {
                "kind": "tool_call",
                "event": "on_request_start",
                "tool_name": "news",
                "refresh_condition": {"kind": "daily", "at": "06:00", "timezone": "Asia/Tokyo"},
            }
        ],
    }
    condition = AppConfig.load(manifest).hooks[0].refresh_condition  # type: ignore[attr-defined]
    assert type(condition) is not DailyRefresh and isinstance(condition, DailyRefresh)
    check_refresh_condition(DailyRefresh, configs=[condition], max_examples=EXAMPLES)


def test_custom_nows_are_used() -> None:
    seen: list[datetime] = []

    class Spy(RefreshCondition):
        kind: Literal["spy"] = "spy"

        def expiry(self, now: datetime) -> datetime:
            seen.append(now)
            return now + timedelta(minutes=1)

    only_2030 = st.datetimes(
        min_value=datetime(2030, 1, 1), max_value=datetime(2030, 12, 31), timezones=st.just(UTC)
    )
    check_refresh_condition(Spy, configs=[{}], nows=only_2030, max_examples=EXAMPLES)
    assert seen and min(seen).year == 2030


# --- broken conditions fail, naming the config and the law ---------------------------


class NaiveExpiry(RefreshCondition):
    """Forgets the time zone."""

    kind: Literal["naive"] = "naive"
    minutes: int = 5

    def expiry(self, now: datetime) -> datetime:
        return (now + timedelta(minutes=self.minutes)).replace(tzinfo=None)


class StaleAtOnce(RefreshCondition):
    """Expires the moment the result is obtained."""

    kind: Literal["at_once"] = "at_once"

    def expiry(self, now: datetime) -> datetime:
        return now


class Countdown(RefreshCondition):
    """A deadline that comes sooner the later you ask: always after now in
    1970-2200, but it moves backwards."""

    kind: Literal["countdown"] = "countdown"

    def expiry(self, now: datetime) -> datetime:
        return datetime(2500, 1, 1, tzinfo=UTC) - (now - datetime(1970, 1, 1, tzinfo=UTC)) / 2


class HalfMinuteFlip(RefreshCondition):
    """An hour in the first half of each minute, a second in the second half."""

    kind: Literal["flip"] = "flip"

    def expiry(self, now: datetime) -> datetime:
        return now + (timedelta(hours=1) if now.second < 30 else timedelta(seconds=1))


class UtcOnly(RefreshCondition):
    """Refuses any zone but UTC."""

    kind: Literal["utc_only"] = "utc_only"

    def expiry(self, now: datetime) -> datetime:
        if now.utcoffset() != timedelta(0):
            raise ValueError("give me UTC")
        return now + timedelta(minutes=1)


def test_a_naive_expiry_fails() -> None:
    with pytest.raises(AssertionError, match="must return an aware datetime") as info:
        check_refresh_condition(NaiveExpiry, configs=[{"minutes": 5}], max_examples=EXAMPLES)
    assert "NaiveExpiry {'kind': 'naive', 'minutes': 5}" in str(info.value)


def test_an_expiry_equal_to_now_fails() -> None:
    with pytest.raises(AssertionError, match=r"StaleAtOnce .*must be strictly after now"):
        check_refresh_condition(StaleAtOnce, configs=[{}], max_examples=EXAMPLES)


def test_an_expiry_moving_backwards_fails() -> None:
    with pytest.raises(AssertionError, match=r"Countdown .*the expiry moved backwards"):
        check_refresh_condition(Countdown, configs=[{}], max_examples=EXAMPLES)


def test_hypothesis_finds_an_expiry_that_moves_backwards_now_and_then() -> None:
    with pytest.raises(AssertionError, match=r"HalfMinuteFlip .*the expiry moved backwards"):
        check_refresh_condition(HalfMinuteFlip, configs=[{}], max_examples=300)


def test_an_expiry_that_raises_for_an_aware_now_fails() -> None:
    with pytest.raises(AssertionError, match=r"UtcOnly .*raised ValueError: give me UTC"):
        check_refresh_condition(UtcOnly, configs=[{}], max_examples=EXAMPLES)


def test_a_broken_config_in_a_strategy_fails() -> None:
    with pytest.raises(AssertionError, match="must return an aware datetime"):
        check_refresh_condition(
            NaiveExpiry,
            configs=st.builds(NaiveExpiry, minutes=st.integers(1, 100)),
            max_examples=EXAMPLES,
        )


# --- daylight saving: instants, not wall clocks --------------------------------------


class WallClockMinutes(RefreshCondition):
    """Adds minutes to ``now``'s wall clock: across a change of the zone's
    offset that is an hour more or less than ``minutes`` of real time."""

    kind: Literal["wall_clock"] = "wall_clock"
    minutes: int = 60

    def expiry(self, now: datetime) -> datetime:
        return now + timedelta(minutes=self.minutes)


class RealMinutes(RefreshCondition):
    """Adds real minutes, and answers in ``now``'s zone."""

    kind: Literal["real"] = "real"
    minutes: int = 60

    def expiry(self, now: datetime) -> datetime:
        return (now.astimezone(UTC) + timedelta(minutes=self.minutes)).astimezone(now.tzinfo)


def test_wall_clock_minutes_move_the_expiry_backwards_when_the_clocks_go_back() -> None:
    # 01:30 CDT is 06:30 UTC: + 60 wall-clock minutes is 02:30 CST, 08:30 UTC. At
    # the change (07:00 UTC, 01:00 CST) the same rule gives 02:00 CST, 08:00 UTC.
    first_0130 = st.just(datetime(2026, 11, 1, 1, 30, tzinfo=CHICAGO))
    with pytest.raises(AssertionError) as info:
        check_refresh_condition(WallClockMinutes, configs=[{}], nows=first_0130, max_examples=5)
    message = str(info.value)
    assert (
        "WallClockMinutes {'kind': 'wall_clock', 'minutes': 60}: the expiry moved backwards"
        in message
    )
    assert "= 2026-11-01T02:30:00-06:00 [America/Chicago] but " in message
    assert (
        "expiry(2026-11-01T01:00:00-06:00 [America/Chicago]) = 2026-11-01T02:00:00-06:00" in message
    )


def test_the_default_nows_find_a_daylight_saving_bug() -> None:
    with pytest.raises(AssertionError, match=r"WallClockMinutes .*(backwards|strictly after now)"):
        check_refresh_condition(WallClockMinutes, configs=[{}], max_examples=300)


def test_an_expiry_in_an_overlap_is_compared_as_an_instant() -> None:
    # 02:45 CEST (00:45 UTC) + 30 minutes is 02:15 CET (01:15 UTC): later, though
    # its wall clock reads earlier. A wall-clock comparison would call it stale.
    first_0245 = st.just(datetime(2026, 10, 25, 2, 45, tzinfo=BERLIN))
    check_refresh_condition(RealMinutes, configs=[{"minutes": 30}], nows=first_0245, max_examples=5)


def test_real_minutes_pass_everywhere() -> None:
    check_refresh_condition(
        RealMinutes, configs=[{"minutes": 1}, {"minutes": 60}, {"minutes": 1440}], max_examples=200
    )


# --- configs that do not survive the manifest ---------------------------------------


class Good(RefreshCondition):
    """A correct expiry, so only the config's round trip can fail."""

    kind: Literal["good"] = "good"

    def expiry(self, now: datetime) -> datetime:
        return now.astimezone(UTC) + timedelta(minutes=1)


class DropsAField(Good):
    """``minutes`` is left out of the dump, so it comes back as its default."""

    kind: Literal["drops"] = "drops"  # type: ignore[assignment]
    minutes: int = Field(default=5, exclude=True)


class SchemaTooStrict(Good):
    """The model takes any positive ``minutes``; its schema says at most 60."""

    kind: Literal["strict_schema"] = "strict_schema"  # type: ignore[assignment]
    minutes: int = Field(gt=0, json_schema_extra={"maximum": 60})


class DumpsWhatItRefuses(Good):
    """Writes ``minutes`` as ``"90m"``, which it cannot read back."""

    kind: Literal["suffixed"] = "suffixed"  # type: ignore[assignment]
    minutes: int

    @field_serializer("minutes")
    def _suffix(self, value: int) -> str:
        return f"{value}m"


def test_a_field_left_out_of_the_dump_fails() -> None:
    message = re.escape(
        "DropsAField {'kind': 'drops'} does not round-trip through "
        "DropsAField.model_validate(model_dump()): minutes: 10 -> 5"
    )
    with pytest.raises(AssertionError, match=message):
        check_refresh_condition(DropsAField, configs=[{"minutes": 10}], max_examples=EXAMPLES)


def test_a_config_its_schema_refuses_fails() -> None:
    check_refresh_condition(SchemaTooStrict, configs=[{"minutes": 60}], max_examples=EXAMPLES)
    with pytest.raises(AssertionError) as info:
        check_refresh_condition(SchemaTooStrict, configs=[{"minutes": 90}], max_examples=EXAMPLES)
    message = str(info.value)
    assert message.startswith("SchemaTooStrict {'kind': 'strict_schema', 'minutes': 90}, dumped")
    assert "does not fit the manifest's JSON Schema" in message
    assert "hooks/0/refresh_condition/minutes: 90 is greater than the maximum of 60" in message


def test_a_dump_its_model_refuses_fails() -> None:
    with pytest.raises(AssertionError, match="does not validate its own model_dump"):
        check_refresh_condition(
            DumpsWhatItRefuses, configs=[{"minutes": 90}], max_examples=EXAMPLES
        )


# --- what the check refuses to start with -------------------------------------------


class NoExpiry(RefreshCondition):
    kind: Literal["no_expiry"] = "no_expiry"


def test_a_class_seamkit_would_not_register_fails() -> None:
    with pytest.raises(AssertionError, match=r"cannot be registered.*must implement expiry"):
        check_refresh_condition(NoExpiry, configs=[{}], max_examples=EXAMPLES)


def test_a_config_the_model_refuses_fails() -> None:
    with pytest.raises(AssertionError, match=r"TTLRefresh \{'kind': 'ttl', 'ttl_minutes': 0\} is"):
        check_refresh_condition(TTLRefresh, configs=[{"ttl_minutes": 0}], max_examples=EXAMPLES)


def test_configs_must_be_a_list_of_this_conditions_configs() -> None:
    with pytest.raises(TypeError, match="not one config"):
        check_refresh_condition(TTLRefresh, configs={"ttl_minutes": 1})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="configs is empty"):
        check_refresh_condition(TTLRefresh, configs=[])
    with pytest.raises(TypeError, match="a mapping or a TTLRefresh"):
        check_refresh_condition(TTLRefresh, configs=[DailyRefresh(at="06:00", timezone="UTC")])
