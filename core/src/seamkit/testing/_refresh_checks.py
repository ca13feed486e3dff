"""A ready property check for refresh conditions: :func:`check_refresh_condition`.

The kernel uses a refresh condition one way: a hook (``tool_call``) calls
``config.expiry(now)`` when it obtains a result, and the result stays fresh
until that instant. The check holds a condition to what that use needs, and to
what the manifest needs of its config: it is written in a manifest and read
back from it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from .._config import RefreshCondition
from ._moments import EPOCH, default_nows, instant, offset_changes_between
from ._round_trip import ConfigLike, ManifestProbe, label

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

__all__ = ["ConfigLike", "check_refresh_condition"]

MICROSECOND = timedelta(microseconds=1)
STEP_SPANS = (timedelta(minutes=1), timedelta(days=1), timedelta(days=800))
"""How far after ``now`` the drawn ``now2`` lies: three scales, each from 0."""


def check_refresh_condition(
    cls: type[RefreshCondition],
    *,
    configs: Sequence[ConfigLike] | SearchStrategy[ConfigLike],
    nows: SearchStrategy[datetime] | None = None,
    max_examples: int | None = None,
) -> None:
    """Check the laws of the refresh condition ``cls`` for ``configs``.

    ``configs`` is a list of configs (manifest mappings, ``kind`` optional, or
    instances of ``cls``) or a hypothesis strategy drawing them. Each config is
    tried at hypothesis-drawn aware ``now`` values (``nows``; by default 1970
    to 2200 in fixed offsets and IANA zones, half of them near a
    daylight-saving change) and at later instants ``now2``: ``now`` plus up to
    800 days, half-way to ``expiry(now)``, the changes of ``now``'s UTC offset
    before it (and the microsecond before each), the microsecond before it,
    and the expiry itself. The laws:

    - ``config.expiry(now)`` is an aware datetime strictly after ``now``;
    - the expiry never moves backwards: ``expiry(now2) >= expiry(now)``;
    - the config round-trips: ``cls.model_validate(config.model_dump(mode="json"))``
      has the same field values; dumped as the ``refresh_condition`` of a hook
      in a manifest it fits the manifest's JSON Schema (``seamkit schema``
      with only ``cls`` installed), and loads back to the same values.

    Datetimes are compared as instants, never by their wall clocks. A broken
    law raises ``AssertionError`` naming the config and the law (hypothesis
    shrinks ``now`` first). A ``cls`` seamkit would not register fails the
    same way. Hypothesis runs without a deadline; ``max_examples`` defaults to
    the settings profile's.
    """
    from hypothesis import (  # lazy: hypothesis is a test-time dependency
        Phase,
        given,
        settings,
        strategies as st,
    )

    manifest = ManifestProbe(cls)
    moments = nows if nows is not None else default_nows()
    steps = st.one_of(
        *(st.timedeltas(min_value=timedelta(0), max_value=span) for span in STEP_SPANS)
    )
    quick_failures = settings(
        phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
        report_multiple_bugs=False,
        deadline=None,
        max_examples=max_examples or settings().max_examples,
    )

    if isinstance(configs, st.SearchStrategy):

        @given(configs, moments, steps)
        def drawn(raw: ConfigLike, now: datetime, step: timedelta) -> None:
            config = manifest.config(raw)
            manifest.check_round_trip(config)
            check_expiry(config, now, step)

        quick_failures(drawn)()
        return

    def expiry_laws_of(config: RefreshCondition) -> Callable[[], None]:
        @given(moments, steps)
        def expiry_laws(now: datetime, step: timedelta) -> None:
            check_expiry(config, now, step)

        run: Callable[[], None] = quick_failures(expiry_laws)
        return run

    given_configs = [manifest.config(raw) for raw in _as_list(configs)]
    for config in given_configs:
        manifest.check_round_trip(config)
    for config in given_configs:
        expiry_laws_of(config)()


def _as_list(configs: Sequence[ConfigLike]) -> list[ConfigLike]:
    """The ``configs`` given as a non-empty list, refusing one config passed alone."""
    if isinstance(configs, str | bytes | Mapping | RefreshCondition):
        raise TypeError("configs takes a list of configs (or a strategy), not one config")
    given_configs = list(configs)
    if not given_configs:
        raise ValueError("configs is empty: give at least one config to check")
    return given_configs


def check_expiry(config: RefreshCondition, now: datetime, step: timedelta) -> None:
    """``expiry(now)`` is aware and after ``now``, and no later ``now2`` (see
    :func:`later_nows`) gives an earlier expiry."""
    if now.utcoffset() is None:
        raise ValueError(f"nows must draw aware datetimes, got naive {now.isoformat()}")
    first = call_expiry(config, now)
    check_after(config, now, first)
    for now2 in later_nows(now, first, step):
        expiry2 = call_expiry(config, now2)
        if instant(expiry2) < instant(first):
            raise AssertionError(
                f"{label(config)}: the expiry moved backwards as now advanced: "
                f"expiry({show(now)}) = {show(first)} but "
                f"expiry({show(now2)}) = {show(expiry2)}"
            )
        check_after(config, now2, expiry2)


def later_nows(now: datetime, expiry: datetime, step: timedelta) -> list[datetime]:
    """Instants from ``now`` on, in ``now``'s zone, where an expiry that moves
    backwards shows: ``now + step``, half-way to ``expiry``, each change of the
    zone's offset before it and the microsecond before that, the microsecond
    before ``expiry`` and ``expiry`` itself (unless it is the last representable
    instant, as a saturating expiry is: nothing is after it)."""
    start, end = instant(now), instant(expiry)
    offsets = [start + step, start + (end - start) / 2]
    zone = now.tzinfo
    if zone is not None:
        with suppress(OverflowError):  # now or expiry at the edge of datetime's range
            for change in offset_changes_between(zone, now, expiry):
                offsets += [instant(change) - MICROSECOND, instant(change)]
    offsets.append(end - MICROSECOND)
    found: list[datetime] = []
    for offset in offsets:
        with suppress(OverflowError):  # past the year 9999: the others still count
            found.append((EPOCH + offset).astimezone(now.tzinfo))
    if expiry.replace(tzinfo=None) != datetime.max:
        found.append(expiry)
    return found


def call_expiry(config: RefreshCondition, now: datetime) -> datetime:
    """``config.expiry(now)``, held to raising nothing and being an aware datetime."""
    try:
        expiry: object = config.expiry(now)
    except Exception as exc:
        raise AssertionError(
            f"{label(config)}: expiry({show(now)}) raised {type(exc).__name__}: {exc}"
        ) from exc
    if not isinstance(expiry, datetime):
        raise AssertionError(
            f"{label(config)}: expiry({show(now)}) must return a datetime, got {expiry!r}"
        )
    if expiry.utcoffset() is None:
        raise AssertionError(
            f"{label(config)}: expiry({show(now)}) must return an aware datetime, "
            f"got naive {expiry.isoformat()}"
        )
    return expiry


def check_after(config: RefreshCondition, now: datetime, expiry: datetime) -> None:
    """The expiry is strictly after ``now``, as instants."""
    if not instant(expiry) > instant(now):
        raise AssertionError(
            f"{label(config)}: expiry({show(now)}) must be strictly after now, got {show(expiry)}"
        )


def show(moment: datetime) -> str:
    """An instant with its zone, for failure messages."""
    return f"{moment.isoformat()} [{moment.tzinfo}]"
