"""The `daily` refresh condition of seamkit-refresh-daily (contrib), found through its
entry point and used only through seamkit's public API.

Stands alone (no helper from the repository's ``tests`` package): from this
folder, ``pip install -e ".[test]"`` then ``pytest``; from the repository root,
``.venv/bin/python -m pytest contrib/refresh-daily/tests``.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from functools import cache
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo

import pytest
import seamkit
from hypothesis import given, settings, strategies as st
from pydantic import ValidationError
from seamkit import AppConfig, ManifestError, RefreshCondition
from seamkit.plugins import Registry, load_plugins
from seamkit.testing import check_refresh_condition
from seamkit_refresh_daily import DailyRefresh

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")
MICRO = timedelta(microseconds=1)


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def daily(at: str, timezone: str = "Europe/Berlin") -> DailyRefresh:
    return DailyRefresh(at=at, timezone=timezone)


# --- discovery ---------------------------------------------------------------


def test_daily_is_discovered_through_its_entry_point() -> None:
    info = load_plugins().kind("refresh", "daily")
    assert info is not None and info.model is DailyRefresh and info.plugin == "daily"
    assert issubclass(DailyRefresh, RefreshCondition)


# --- the manifest, as a user reads it ------------------------------------------


class NoteConfig(seamkit.HookConfig):
    """A hook kind for these tests that takes a ``refresh_condition``, as
    ``tool_call`` does, without needing a tool."""

    kind: Literal["note"] = "note"
    text: str
    refresh_condition: seamkit.AnyRefreshCondition | None = None


def never_built(config: NoteConfig, build: object) -> object:
    raise AssertionError("these tests only read manifests")


@pytest.fixture
def registry() -> Registry:
    """The installed plugins (``daily`` among them) plus the hook kind ``note``."""
    plugins = load_plugins()
    batch = plugins.registrar("daily-tests")
    batch.hook_kind(NoteConfig, never_built, events={seamkit.HookEvent.ON_REQUEST_START})
    plugins.commit(batch)
    return plugins


def manifest(condition: dict[str, object]) -> dict[str, object]:
    return {
        "name": "a",
        "model": "scripted:s",
        "hooks": [
            {
                "kind": "note",
                "event": "on_request_start",
                "text": "x",
                "refresh_condition": condition,
            }
        ],
    }


def problems(registry: Registry, condition: dict[str, object]) -> list[tuple[str, str]]:
    with pytest.raises(ManifestError) as info:
        AppConfig.load(manifest(condition), registry=registry)
    return [(p.path, p.message) for p in info.value.problems]


def test_a_manifest_takes_a_daily_condition(registry: Registry) -> None:
    config = AppConfig.load(
        manifest({"kind": "daily", "at": "06:00", "timezone": "Europe/Berlin"}),
        registry=registry,
    )
    condition = config.hooks[0].refresh_condition  # type: ignore[attr-defined]
    assert isinstance(condition, DailyRefresh)  # the manifest's subclass of it
    assert (condition.at, condition.timezone) == ("06:00", "Europe/Berlin")
    assert condition.expiry(utc(2026, 6, 15, 10)) == utc(2026, 6, 16, 4)


@pytest.mark.parametrize(
    ("at", "says"),
    [
        ("25:00", "'25:00' is not a time of day: hours go from 00 to 23 and minutes from 00 to 59"),
        ("24:00", 'midnight is "00:00"'),
        ("06:60", "'06:60' is not a time of day"),
        ("noon", "'noon' is not a time of day \"HH:MM\" (24-hour clock, two digits each)"),
        ("9:30", 'did you mean "09:30"?'),
        ("06:00:00", "'06:00:00' is not a time of day"),
    ],
)
def test_a_bad_time_says_what_would_be_right(registry: Registry, at: str, says: str) -> None:
    [(path, message)] = problems(registry, {"kind": "daily", "at": at, "timezone": "UTC"})
    assert path == "hooks[0].refresh_condition.at"
    assert says in message
    assert '"HH:MM"' in message and '"06:00"' in message
    assert "Value error" not in message


def test_an_unquoted_yaml_time_is_explained(registry: Registry, tmp_path: Path) -> None:
    app = tmp_path / "app.yaml"
    app.write_text(
        "name: a\nmodel: scripted:s\nhooks:\n"
        "  - kind: note\n    event: on_request_start\n    text: x\n"
        "    refresh_condition: {kind: daily, at: 12:30, timezone: UTC}\n"
    )
    with pytest.raises(ManifestError) as info:
        AppConfig.load(app, registry=registry)
    lines = info.value.format().splitlines()
    assert lines[0].startswith(f"{app}:7:")
    assert lines[0].endswith(
        "hooks[0].refresh_condition.at: got the number 750, not a time of day: YAML reads an "
        'unquoted 12:30 as a number; quote it: at: "12:30"'
    )


def test_an_unknown_zone_is_named_with_an_example(registry: Registry) -> None:
    [(path, message)] = problems(
        registry, {"kind": "daily", "at": "06:00", "timezone": "Mars/Base"}
    )
    assert path == "hooks[0].refresh_condition.timezone"
    assert message.startswith("unknown time zone 'Mars/Base': use an IANA time zone name")
    assert '"Europe/Berlin"' in message


def test_a_misspelt_zone_gets_a_did_you_mean(registry: Registry) -> None:
    [(_, message)] = problems(
        registry, {"kind": "daily", "at": "06:00", "timezone": "Europe/Berln"}
    )
    assert message.endswith('(did you mean "Europe/Berlin"?)')


@pytest.mark.parametrize("zone", ["", "/etc/localtime", "../Europe/Berlin", "Europe/Berlin "])
def test_malformed_zone_names_are_unknown_zones(zone: str) -> None:
    with pytest.raises(ValidationError, match="unknown time zone"):
        daily("06:00", zone)


def test_both_fields_are_required(registry: Registry) -> None:
    assert problems(registry, {"kind": "daily"}) == [
        ("hooks[0].refresh_condition.at", "required field 'at' is missing"),
        ("hooks[0].refresh_condition.timezone", "required field 'timezone' is missing"),
    ]


def test_the_schema_describes_the_fields() -> None:
    properties = DailyRefresh.model_json_schema()["properties"]
    assert properties["at"]["pattern"] == r"^([01][0-9]|2[0-3]):[0-5][0-9]$"
    assert "HH:MM" in properties["at"]["description"]
    assert "Europe/Berlin" in properties["timezone"]["examples"]


# --- expiry: examples ----------------------------------------------------------


def test_an_ordinary_day_in_berlin() -> None:
    rule = daily("06:00")
    assert rule.expiry(utc(2026, 1, 15, 3)) == utc(2026, 1, 15, 5)  # 04:00 CET -> 06:00 CET
    assert rule.expiry(utc(2026, 6, 15, 10)) == utc(2026, 6, 16, 4)  # 12:00 CEST -> next 06:00


def test_an_ordinary_day_in_new_york() -> None:
    rule = daily("06:00", "America/New_York")
    assert rule.expiry(utc(2026, 7, 1, 12)) == utc(2026, 7, 2, 10)  # EDT, UTC-4
    assert rule.expiry(utc(2026, 1, 10, 3)) == utc(2026, 1, 10, 11)  # EST, UTC-5


def test_a_time_in_the_spring_gap_means_the_end_of_the_gap() -> None:
    rule = daily("02:30")
    expiry = rule.expiry(utc(2026, 3, 28, 12))
    assert expiry == utc(2026, 3, 29, 1)
    local = expiry.astimezone(BERLIN)
    assert (local.date(), local.time(), local.tzname()) == (date(2026, 3, 29), time(3), "CEST")
    # The next day 02:30 exists again.
    assert rule.expiry(expiry) == utc(2026, 3, 30, 0, 30)


def test_a_time_in_the_new_york_gap_means_the_end_of_the_gap() -> None:
    rule = daily("02:30", "America/New_York")
    assert rule.expiry(utc(2026, 3, 7, 12)) == utc(2026, 3, 8, 7)  # 03:00 EDT


def test_a_time_in_the_autumn_overlap_means_its_first_occurrence() -> None:
    rule = daily("02:30")
    expiry = rule.expiry(utc(2026, 10, 24, 12))
    assert expiry == utc(2026, 10, 25, 0, 30)
    local = expiry.astimezone(BERLIN)
    assert (local.time(), local.tzname(), local.fold) == (time(2, 30), "CEST", 0)
    # The second 02:30 (CET, an hour later) is not an occurrence.
    assert rule.expiry(expiry) == utc(2026, 10, 26, 1, 30)
    assert rule.expiry(utc(2026, 10, 25, 1, 30)) == utc(2026, 10, 26, 1, 30)


def test_a_time_in_the_new_york_overlap_means_its_first_occurrence() -> None:
    rule = daily("01:30", "America/New_York")
    assert rule.expiry(utc(2026, 10, 31, 12)) == utc(2026, 11, 1, 5, 30)  # 01:30 EDT


def test_now_exactly_at_the_occurrence_gives_the_next_day() -> None:
    rule = daily("06:00")
    assert rule.expiry(utc(2026, 1, 15, 5)) == utc(2026, 1, 16, 5)
    assert rule.expiry(utc(2026, 1, 15, 5) - MICRO) == utc(2026, 1, 15, 5)
    gap_end = utc(2026, 3, 29, 1)  # 02:30 falls in the gap: 03:00 CEST
    assert daily("02:30").expiry(gap_end) == utc(2026, 3, 30, 0, 30)


def test_now_inside_a_gap_or_overlap_still_gets_a_future_expiry() -> None:
    # 02:30 on 2026-03-29 does not exist in Berlin; as an aware datetime it is an instant.
    in_gap = datetime(2026, 3, 29, 2, 30, tzinfo=BERLIN)
    assert daily("02:30").expiry(in_gap) > in_gap
    assert daily("02:45").expiry(in_gap) > in_gap
    for fold in (0, 1):
        in_overlap = datetime(2026, 10, 25, 2, 45, tzinfo=BERLIN, fold=fold)
        expiry = daily("02:30").expiry(in_overlap)
        assert expiry > in_overlap and expiry == utc(2026, 10, 26, 1, 30)
    second_0215 = datetime(2026, 10, 25, 2, 15, tzinfo=BERLIN, fold=1)  # 01:15 UTC
    assert daily("02:30").expiry(second_0215) == utc(2026, 10, 26, 1, 30)
    first_0215 = datetime(2026, 10, 25, 2, 15, tzinfo=BERLIN, fold=0)  # 00:15 UTC
    assert daily("02:30").expiry(first_0215) == utc(2026, 10, 25, 0, 30)


def test_the_zone_of_now_does_not_matter_and_the_answer_is_in_utc() -> None:
    instant = utc(2026, 6, 15, 10)
    rule = daily("06:00")
    answers = {rule.expiry(instant.astimezone(zone)) for zone in (UTC, BERLIN, NEW_YORK)}
    assert answers == {utc(2026, 6, 16, 4)}
    assert rule.expiry(instant).tzinfo is UTC


def test_naive_datetimes_are_refused() -> None:
    with pytest.raises(ValueError, match="aware"):
        daily("06:00").expiry(datetime(2026, 1, 1))


# --- expiry: properties --------------------------------------------------------

ZONES = ("Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata", "UTC")
FIRST = datetime(2000, 1, 1)
LAST = datetime(2100, 12, 31, 23, 59, 59, 999_999)


@cache
def transitions(zone: str, year: int) -> tuple[datetime, ...]:
    """The instants (UTC) in ``year`` at which ``zone``'s offset changes."""
    tz = ZoneInfo(zone)
    found: list[datetime] = []
    start = utc(year, 1, 1)
    for day in range(366):
        lo, hi = start + timedelta(days=day), start + timedelta(days=day + 1)
        if lo.astimezone(tz).utcoffset() == hi.astimezone(tz).utcoffset():
            continue
        while hi - lo > timedelta(seconds=1):
            middle = lo + timedelta(seconds=(hi - lo) // timedelta(seconds=2))
            if middle.astimezone(tz).utcoffset() == lo.astimezone(tz).utcoffset():
                lo = middle
            else:
                hi = middle
        found.append(hi)
    return tuple(found)


def hhmm(value: time | datetime) -> str:
    return f"{value.hour:02d}:{value.minute:02d}"


any_time = st.builds(lambda h, m: f"{h:02d}:{m:02d}", st.integers(0, 23), st.integers(0, 59))
any_now = st.datetimes(min_value=FIRST, max_value=LAST, timezones=st.just(UTC))


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, str, datetime]:
    """``(timezone, at, now)``; half of them close to a daylight-saving change,
    with ``at`` near the wall time of the change, so gaps and overlaps are hit."""
    zone = draw(st.sampled_from(ZONES))
    changes = transitions(zone, draw(st.integers(2000, 2100)))
    if not changes or draw(st.booleans()):
        return zone, draw(any_time), draw(any_now)
    change = draw(st.sampled_from(changes))
    # Hours, minutes and the rest drawn apart: one wide integer would mostly be near 0.
    now = change + timedelta(
        hours=draw(st.integers(-26, 25)),
        minutes=draw(st.integers(0, 59)),
        microseconds=draw(st.integers(0, 60 * 10**6 - 1)),
    )
    if draw(st.booleans()):
        return zone, draw(any_time), now
    before = (change - MICRO).astimezone(ZoneInfo(zone)).utcoffset()
    assert before is not None
    wall = (change + before).replace(tzinfo=None)  # the clocks' reading as they change
    at = wall + timedelta(hours=draw(st.integers(-2, 2)), minutes=draw(st.integers(0, 59)))
    return zone, hhmm(at), now


def check_is_an_occurrence(rule: DailyRefresh, expiry: datetime) -> None:
    """The clocks show ``at`` (its first occurrence), or ``at`` fell in a gap
    that day and ``expiry`` is the gap's end."""
    zone = ZoneInfo(rule.timezone)
    at = time.fromisoformat(rule.at)
    local = expiry.astimezone(zone)
    if local.time() == at:
        assert local.fold == 0, "not the first occurrence"
        return
    just_before = (expiry - MICRO).astimezone(zone)
    assert just_before.utcoffset() != local.utcoffset(), f"{local} is not a transition"
    wall = datetime.combine(just_before.date(), at)
    assert just_before.replace(tzinfo=None) < wall < local.replace(tzinfo=None), (
        f"{rule.at} is not in the gap before {local}"
    )


def check_none_skipped(rule: DailyRefresh, now: datetime, expiry: datetime) -> None:
    """No day's occurrence lies strictly between ``now`` and ``expiry``."""
    zone = ZoneInfo(rule.timezone)
    at = time.fromisoformat(rule.at)
    today = now.astimezone(zone).date()
    for days in range(-1, 3):
        wall = datetime.combine(today + timedelta(days=days), at)
        first = wall.replace(tzinfo=zone).astimezone(UTC)
        if first.astimezone(zone).replace(tzinfo=None) == wall:
            assert not now < first < expiry, f"skipped {first}"
        else:  # a gap: its end lies in (fold=1 reading, fold=0 reading]
            other = wall.replace(tzinfo=zone, fold=1).astimezone(UTC)
            low, high = min(first, other), max(first, other)
            assert not (now <= low and high < expiry), f"skipped the gap after {low}"


# No deadline: the first example of a zone and year computes its transitions.
@settings(deadline=None)
@given(cases())
def test_expiry_is_the_next_occurrence(case: tuple[str, str, datetime]) -> None:
    zone, at, now = case
    rule = daily(at, zone)
    expiry = rule.expiry(now)
    assert expiry.tzinfo is UTC
    assert now < expiry <= now + timedelta(hours=26)
    check_is_an_occurrence(rule, expiry)
    check_none_skipped(rule, now, expiry)


@settings(deadline=None)
@given(cases())
def test_expiry_is_stable_before_and_moves_on_at_the_occurrence(
    case: tuple[str, str, datetime],
) -> None:
    zone, at, now = case
    rule = daily(at, zone)
    expiry = rule.expiry(now)
    assert rule.expiry(expiry - MICRO) == expiry
    following = rule.expiry(expiry)
    assert expiry < following <= expiry + timedelta(hours=26)
    check_is_an_occurrence(rule, following)
    check_none_skipped(rule, expiry, following)


def test_daily_keeps_the_laws_of_a_refresh_condition() -> None:
    # seamkit's own check: an aware expiry strictly after now that never moves
    # backwards, for nows in many zones, and a config that survives the manifest.
    check_refresh_condition(
        DailyRefresh,
        configs=st.builds(
            DailyRefresh,
            at=any_time,
            timezone=st.sampled_from(ZONES),
        ),
    )
    check_refresh_condition(
        DailyRefresh,
        configs=[
            {"at": "02:30", "timezone": "Europe/Berlin"},  # in the spring gap
            {"at": "01:30", "timezone": "America/New_York"},  # twice in the autumn
            {"at": "00:00", "timezone": "UTC"},
        ],
    )
