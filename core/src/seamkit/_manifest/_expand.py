"""Hook entries that name several events: ``events: [a, b]`` instead of
``event: a``.

Before validation, such an entry becomes one entry per event, in its place,
exactly as if written out (so every per-event rule of the kind applies to
each); what validating the copies finds is reported back at the entry as
written: a problem with one of its events at ``events[j]``, a problem that
only some of its events have with the event named.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, get_args

from pydantic import ValidationError
from pydantic_core import ErrorDetails, InitErrorDetails, PydanticCustomError
from pydantic_core.core_schema import ErrorType

__all__ = ["Expansion", "expand_hooks", "names_events"]

_KNOWN_ERRORS = frozenset(get_args(ErrorType))
_EVENT_ERRORS = frozenset({"enum", "unsupported_event", "preview_event"})
"""Error types that concern the value of ``event`` itself (reported at ``events[j]``)."""


def names_events(entry: object) -> bool:
    """Whether a raw hook entry names ``events``."""
    return isinstance(entry, dict) and "events" in entry


@dataclass(slots=True)
class _Found:
    """One distinct problem of the copies, at its written entry, and which
    copies (indexes into `Expansion.hooks`) had it."""

    loc: tuple[str | int, ...]
    err: ErrorDetails
    copies: set[int] = field(default_factory=set)


@dataclass(slots=True)
class Expansion:
    """The hook entries to validate, one per event, and where each came from.

    ``origins[k]`` is the index of the written entry that ``hooks[k]`` came
    from; ``positions[k]`` its event's position in that entry's ``events``
    (``None`` for an entry written with ``event``).
    """

    entries: Sequence[object]
    hooks: list[object] = field(default_factory=list)
    origins: list[int] = field(default_factory=list)
    positions: list[int | None] = field(default_factory=list)
    problems: list[InitErrorDetails] = field(default_factory=list)
    """What is wrong with ``events`` itself, located at the written entry."""
    quiet: set[int] = field(default_factory=set)
    """Entries whose missing ``event`` is already explained by a problem here."""

    def error(
        self, title: str, exc: ValidationError | None, fields: Sequence[str]
    ) -> ValidationError:
        """One error with the problems found here and those of ``exc`` (found
        in the copies), every location on the entries as written: the hooks'
        in the order of their entries, the others' by ``fields`` (the
        manifest's field names in order), as validation reports them."""
        found = self._translate(exc.errors(include_url=False)) if exc is not None else []
        hooks = sorted(
            [(_entry_of(p["loc"]), 0, n, p) for n, p in enumerate(self.problems)]
            + [(_entry_of(p["loc"]), 1, n, p) for n, p in enumerate(found) if _in_hooks(p["loc"])],
            key=lambda item: item[:3],
        )
        rank = {name: n for n, name in enumerate(fields)}
        last = rank.get("hooks", len(rank))
        others = [p for p in found if not _in_hooks(p["loc"])]
        before = [p for p in others if p["loc"] and rank.get(str(p["loc"][0]), -1) < last]
        after = [p for p in others if p not in before]
        return ValidationError.from_exception_data(
            title, [*before, *(p for *_, p in hooks), *after]
        )

    def _translate(self, errors: list[ErrorDetails]) -> list[InitErrorDetails]:
        """The copies' errors at their written entries, one per distinct problem."""
        found: dict[tuple[Any, ...], _Found] = {}
        for err in errors:
            loc = err["loc"]
            copy = loc[1] if _in_hooks(loc) else None
            if not isinstance(copy, int):
                found.setdefault((loc, err["type"], err["msg"]), _Found(loc, err))
                continue
            index, position = self.origins[copy], self.positions[copy]
            entry = self.entries[index]
            tag = _tag_of(loc[2:], entry)
            rest = loc[2 + len(tag) :]
            if rest == ("event",) and position is not None and err["type"] in _EVENT_ERRORS:
                rest = ("events", position)
            elif rest == ("event",) and index in self.quiet and err["type"] == "missing":
                continue
            where = ("hooks", index, *tag, *rest)
            found.setdefault((where, err["type"], err["msg"]), _Found(where, err)).copies.add(copy)
        return [self._line(f) for f in found.values()]

    def _line(self, found: _Found) -> InitErrorDetails:
        """``found`` as a line of the error, naming the events that have it
        when only some of the entry's events do (and the message does not)."""
        err = found.err
        kind, message, ctx = err["type"], err["msg"], err.get("ctx")
        named = self._events_with(found)
        if named and not any(name in message for name in named):
            rest = {k: v for k, v in (ctx or {}).items() if k != "error"}
            note = f"{message} (for event {', '.join(named)})"
            return {
                "type": PydanticCustomError(kind, note, rest or None),
                "loc": found.loc,
                "input": err["input"],
            }
        line: InitErrorDetails = {
            "type": kind if kind in _KNOWN_ERRORS else PydanticCustomError(kind, message, ctx),
            "loc": found.loc,
            "input": err["input"],
        }
        if ctx is not None and kind in _KNOWN_ERRORS:
            line["ctx"] = ctx
        return line

    def _events_with(self, found: _Found) -> list[str]:
        """The events of an ``events:`` entry whose copies had ``found``, when
        not all of them did (else none)."""
        if not found.copies or "events" in found.loc:
            return []
        index = self.origins[next(iter(found.copies))]
        mine = [k for k, origin in enumerate(self.origins) if origin == index]
        if len(found.copies) == len(mine) or self.positions[mine[0]] is None:
            return []
        return [_event_of(self.hooks[k]) for k in sorted(found.copies)]


def expand_hooks(entries: Sequence[object]) -> Expansion:
    """The entries with each ``events:`` entry written out, one per event.

    An entry whose ``events`` is wrong (also given ``event``, not a list,
    empty) gets a problem, and is validated once as if it named only its
    ``event`` (or no event), so its other fields are still checked; an event
    listed twice gets a problem and is written out once.
    """
    out = Expansion(entries)
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or "events" not in entry:
            out.hooks.append(entry)
            out.origins.append(index)
            out.positions.append(None)
            continue
        events = entry["events"]
        rest = {k: v for k, v in entry.items() if k != "events"}
        listed = _check(index, entry, out.problems)
        if listed is None or "event" in entry:
            if "event" not in entry:
                out.quiet.add(index)
            out.hooks.append(rest)
            out.origins.append(index)
            out.positions.append(None)
            continue
        for position, event in enumerate(events):
            if position in listed:
                out.hooks.append({**rest, "event": event})
                out.origins.append(index)
                out.positions.append(position)
    return out


def _check(index: int, entry: dict[str, Any], problems: list[InitErrorDetails]) -> set[int] | None:
    """The positions of the distinct events an entry's ``events`` lists, or
    ``None`` when it lists none; problems with it added to ``problems``."""
    events = entry["events"]
    where: tuple[str | int, ...] = ("hooks", index)
    if "event" in entry:
        merged = [entry["event"], *(events if isinstance(events, list | tuple) else [])]
        shown = ", ".join(str(e) for e in dict.fromkeys(merged))
        problems.append(
            _problem(
                "event_and_events",
                "give 'event' or 'events', not both",
                (*where, "events"),
                events,
                f"for one event keep 'event: {entry['event']}'; for several write "
                f"'events: [{shown}]' and remove 'event'",
            )
        )
    if not isinstance(events, list | tuple):
        example = events if isinstance(events, str) else "on_request_start"
        problems.append(
            _problem(
                "events_not_a_list",
                "'events' must be a list of event names",
                (*where, "events"),
                events,
                f"write 'events: [{example}, ...]', or 'event: {example}' for one event",
            )
        )
        return None
    if not events:
        problems.append(
            _problem(
                "events_empty",
                "'events' lists no event",
                (*where, "events"),
                events,
                "list at least one, e.g. 'events: [on_request_start]', or write 'event:'",
            )
        )
        return None
    first: dict[str, int] = {}
    positions: set[int] = set()
    for position, event in enumerate(events):
        key = repr(event)
        if key in first:
            problems.append(
                _problem(
                    "duplicate_event",
                    "event {event} is listed twice (also at events[{first}])",
                    (*where, "events", position),
                    event,
                    "list each event once",
                    event=str(event),
                    first=first[key],
                )
            )
            continue
        first[key] = position
        positions.add(position)
    return positions


def _problem(
    kind: str,
    message: str,
    loc: tuple[str | int, ...],
    value: Any,
    hint: str,
    **ctx: Any,
) -> InitErrorDetails:
    return {
        "type": PydanticCustomError(kind, message, {**ctx, "hint": hint}),
        "loc": loc,
        "input": value,
    }


def _event_of(entry: object) -> str:
    """The ``event`` of a written-out entry, as text."""
    return str(entry.get("event")) if isinstance(entry, dict) else "?"


def _in_hooks(loc: tuple[str | int, ...]) -> bool:
    """Whether a location lies inside an entry of the ``hooks`` list."""
    return len(loc) >= 2 and loc[0] == "hooks" and isinstance(loc[1], int)


def _entry_of(loc: tuple[str | int, ...]) -> int:
    """The entry index of a location inside ``hooks``."""
    return loc[1] if isinstance(loc[1], int) else -1


def _tag_of(rest: tuple[Any, ...], entry: Any) -> tuple[Any, ...]:
    """The discriminator tag pydantic put first in ``rest``, if any."""
    if rest and isinstance(entry, dict) and rest[0] not in entry and rest[0] == entry.get("kind"):
        return rest[:1]
    return ()
