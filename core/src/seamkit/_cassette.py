"""The model-protocol cassette: a run's model exchanges as JSON Lines.

The first line is the header::

    {"cassette": 1, "seamkit": "0.x", "model": {"provider": ..., "name": ...},
     "output_modes": ["native", "tool"], "created": "2026-..."}

and each further line one exchange, appended as it ends (so a crash leaves
every exchange that ended before it)::

    {"seq": 0, "call": "stream", "request": <ModelRequest>,
     "deltas": [{"text": "Hel"}, {"args": {"index": 0, "id": ..., "name": ..., "text": ...}}],
     "turn": <ModelTurn>}
    {"seq": 1, "call": "complete", "request": <ModelRequest>,
     "error": {"class": "ContextLengthExceeded", "message": ..., "provider": ..., "hint": ...}}
    {"seq": 2, "call": "stream", "request": <ModelRequest>, "deltas": [...], "closed": true}

(the last: a stream its reader closed before the turn, as when a text
guard stops the run).

`normalized` masks what legitimately differs between two runs of the same
app (an injected pair's expiry, run and session ids, and a replay's
``ignore`` patterns) and `differences` lists, field by field, how two
requests differ.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import JsonValue, ValidationError

from ._errors import ModelError
from ._types import ModelTurn, ToolArgumentsDelta

__all__ = [
    "MARK",
    "MASK",
    "VERSION",
    "Cassette",
    "Exchange",
    "delta_json",
    "delta_of",
    "differences",
    "masked_text",
    "matches",
    "normalized",
    "plain",
    "plain_text",
    "read_cassette",
]

VERSION = 1
"""The cassette format's version (the header's ``cassette``)."""

Call = Literal["stream", "complete"]

_EXPIRY = re.compile(r"\b(synth_[0-9a-f]{18})_[0-9a-f]{8,}\b")
"""An injected pair's id with its expiry tail (`seamkit.injection`); an
``_r{n}`` tail is kept: it counts refreshes, which do not drift with time."""
_ID32 = re.compile(r"\b[0-9a-f]{32}\b")
"""A run or session id (a uuid4's hex)."""
_SHOWN = 60
"""The longest text a difference shows whole."""
_CONTEXT = 24
"""Characters shown either side of where a long text starts to differ."""


@dataclass(frozen=True, slots=True)
class Exchange:
    """One recorded model call: its request (as JSON), and the deltas and
    turn it streamed, or the error it raised, or (``closed``) the deltas
    streamed before its reader closed the stream."""

    seq: int
    call: Call
    request: JsonValue
    deltas: tuple[str | ToolArgumentsDelta, ...]
    turn: ModelTurn | None
    error: Mapping[str, JsonValue] | None
    closed: bool = False


@dataclass(frozen=True, slots=True)
class Cassette:
    """A cassette as read: its header and its exchanges, in file order."""

    path: Path
    header: Mapping[str, JsonValue]
    exchanges: tuple[Exchange, ...]


def delta_json(delta: str | ToolArgumentsDelta) -> dict[str, JsonValue]:
    """A stream delta as a cassette line holds it."""
    if isinstance(delta, str):
        return {"text": delta}
    return {"args": {"index": delta.index, "id": delta.id, "name": delta.name, "text": delta.text}}


def delta_of(value: object) -> str | ToolArgumentsDelta:
    """The delta a cassette line's ``deltas`` item holds. Raises `ValueError`."""
    if isinstance(value, dict):
        if isinstance(value.get("text"), str) and len(value) == 1:
            return str(value["text"])
        args = value.get("args")
        if isinstance(args, dict) and len(value) == 1:
            index, id_, name, text = (args.get(k) for k in ("index", "id", "name", "text"))
            if (
                isinstance(index, int)
                and isinstance(text, str)
                and (id_ is None or isinstance(id_, str))
                and (name is None or isinstance(name, str))
            ):
                return ToolArgumentsDelta(index, id_, name, text)
    raise ValueError(f"not a delta: {json.dumps(value)[:_SHOWN]}")


def read_cassette(path: Path) -> Cassette:
    """The cassette at ``path``. A last line cut short (a crash while it was
    written) is left out; any other line that is not an exchange is an error.
    Raises `ModelError` naming the file (and the line)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ModelError(
            f"cannot read replay cassette {str(path)!r}: {exc.strerror}",
            provider="replay",
            hint="model: replay:<a cassette `seamkit run --record FILE` wrote>",
        ) from None
    except UnicodeDecodeError:
        raise _bad(path, 1, "it is not UTF-8 text") from None
    lines = text.split("\n")
    complete = text.endswith("\n")
    if not complete:
        lines = lines[:-1]  # cut short mid-line: what came before still plays
    elif lines and lines[-1] == "":
        lines = lines[:-1]
    if not lines:
        raise _bad(path, 1, "it is empty (no header line)")
    header = _json_line(path, 1, lines[0])
    if not isinstance(header, dict) or header.get("cassette") != VERSION:
        raise _bad(path, 1, f"the first line is not a cassette header (version {VERSION})")
    exchanges: list[Exchange] = []
    for number, line in enumerate(lines[1:], start=2):
        exchanges.append(_exchange(path, number, _json_line(path, number, line)))
    return Cassette(path, header, tuple(exchanges))


def _json_line(path: Path, number: int, line: str) -> JsonValue:
    try:
        value: JsonValue = json.loads(line)
    except ValueError:
        raise _bad(path, number, "it is not JSON") from None
    return value


def _exchange(path: Path, number: int, value: JsonValue) -> Exchange:
    if not isinstance(value, dict):
        raise _bad(path, number, "an exchange must be a JSON object")
    seq, call, request = value.get("seq"), value.get("call"), value.get("request")
    error, turn, deltas = value.get("error"), value.get("turn"), value.get("deltas", [])
    closed = value.get("closed", False)
    if not isinstance(seq, int) or call not in ("stream", "complete"):
        raise _bad(path, number, "an exchange needs 'seq' (an integer) and 'call'")
    if not isinstance(request, dict):
        raise _bad(path, number, "an exchange needs 'request' (a ModelRequest)")
    if not isinstance(closed, bool) or (closed and call != "stream"):
        raise _bad(path, number, "'closed' is true (a stream closed early) or absent")
    if [turn is not None, error is not None, closed].count(True) != 1 or (
        error is not None and not isinstance(error, dict)
    ):
        raise _bad(
            path, number, "an exchange has either 'turn', 'error' (a mapping) or 'closed': true"
        )
    if not isinstance(deltas, list):
        raise _bad(path, number, "'deltas' must be a list")
    try:
        played = tuple(delta_of(plain(item)) for item in deltas)
    except ValueError as exc:
        raise _bad(path, number, str(exc)) from None
    kind: Call = "stream" if call == "stream" else "complete"
    told = plain(error) if isinstance(error, dict) else None
    if isinstance(told, dict):
        for key in ("class", "message", "provider", "hint"):
            item = told.get(key)
            if not isinstance(item, str) and (item is not None or key in ("class", "message")):
                raise _bad(path, number, f"the error's {key!r} must be a string")
    return Exchange(
        seq,
        kind,
        request,
        played,
        None if turn is None else _turn(path, number, plain(turn)),
        told if isinstance(told, dict) else None,
        closed,
    )


def _turn(path: Path, number: int, value: JsonValue) -> ModelTurn:
    try:
        return ModelTurn.model_validate(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(turn)"
        raise _bad(path, number, f"'turn' is not a ModelTurn: {where}: {first['msg']}") from None


def _bad(path: Path, number: int, what: str) -> ModelError:
    return ModelError(
        f"replay cassette {str(path)!r} line {number}: {what}",
        provider="replay",
        hint="record it again with `seamkit run APP MESSAGE --record FILE` "
        "(or seamkit.testing.record)",
    )


def normalized(value: JsonValue, ignore: Iterable[re.Pattern[str]] = ()) -> JsonValue:
    """``value`` with every text's injected-pair expiry masked
    (``synth_<18 hex>_<expiry>``), its run and session ids (32 hex digits)
    masked as ``<id32>``, and what each ``ignore`` pattern matches as
    ``<ignored>``; nothing else changes."""
    patterns = tuple(ignore)

    def walk(item: JsonValue) -> JsonValue:
        if isinstance(item, str):
            text = _ID32.sub("<id32>", _EXPIRY.sub(r"\1_<expiry>", item))
            for pattern in patterns:
                text = pattern.sub("<ignored>", text)
            return text
        if isinstance(item, list):
            return [walk(part) for part in item]
        if isinstance(item, dict):
            return {key: walk(part) for key, part in item.items()}
        return item

    return walk(value)


_ABSENT = object()
MASK = "***"
"""What a secret is written as (`seamkit.redact`)."""
MARK = "\x00"
"""Written before each mask in a cassette's texts (JSON shows it as
``\\u0000***``), so that a ``***`` the run carried (markdown, say) stays
text; a NUL the run carried is written twice."""


def masked_text(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """``text`` as a cassette writes it: each run of overlapping ``spans``
    (a secret's places, `seamkit.Redactor.spans`) as `MARK` + `MASK`, the
    rest as it is but for each `MARK` written twice."""
    pieces: list[str] = []
    done = 0
    for start, end in sorted(spans):
        if end <= done:
            continue
        if start >= done:
            pieces += (text[done:start].replace(MARK, MARK * 2), MARK + MASK)
        done = end
    pieces.append(text[done:].replace(MARK, MARK * 2))
    return "".join(pieces)


def _parts(text: str) -> list[str | None]:
    """A cassette text's pieces: its texts, and ``None`` for each mask."""
    parts: list[str | None] = []
    current: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == MARK and text.startswith(MARK, i + 1):
            current.append(MARK)
            i += 2
        elif text[i] == MARK and text.startswith(MASK, i + 1):
            parts += ("".join(current), None)
            current = []
            i += 1 + len(MASK)
        else:
            current.append(text[i])
            i += 1
    parts.append("".join(current))
    return parts


def plain_text(text: str) -> str:
    """A cassette text as the run saw it, each secret as ``***``."""
    if MARK not in text:
        return text
    return "".join(MASK if part is None else part for part in _parts(text))


def plain(value: JsonValue) -> JsonValue:
    """``value`` (a recorded turn, error...) with every text `plain_text`."""
    if isinstance(value, str):
        return plain_text(value)
    if isinstance(value, list):
        return [plain(item) for item in value]
    if isinstance(value, dict):
        return {plain_text(key): plain(item) for key, item in value.items()}
    return value


def matches(recorded: JsonValue, now: JsonValue) -> bool:
    """Whether ``now`` is the request ``recorded`` (both normalised): equal,
    but for a secret masked at the recording, which stands for any text at
    its place (a ``***`` the run carried is text like any other)."""
    if isinstance(recorded, str) and isinstance(now, str):
        if MARK not in recorded:
            return recorded == now
        return _masked(recorded).fullmatch(now) is not None
    if isinstance(recorded, dict) and isinstance(now, dict):
        return recorded.keys() == now.keys() and all(matches(recorded[k], now[k]) for k in recorded)
    if isinstance(recorded, list) and isinstance(now, list):
        return len(recorded) == len(now) and all(map(matches, recorded, now))
    return recorded == now


def _masked(text: str) -> re.Pattern[str]:
    return re.compile(
        "".join(".+?" if part is None else re.escape(part) for part in _parts(text)), re.DOTALL
    )


def differences(recorded: JsonValue, now: JsonValue) -> list[str]:
    """How ``now`` differs from ``recorded``, field by field:
    ``messages[3].content: recorded 'a' ≠ now 'b'``, in document order; a
    long text shows where it starts to differ (and a line diff when it has
    several lines)."""
    out: list[str] = []
    _walk("", recorded, now, out)
    return out


def _walk(path: str, recorded: object, now: object, out: list[str]) -> None:
    if recorded == now or (
        isinstance(recorded, str) and isinstance(now, str) and matches(recorded, now)
    ):
        return
    if isinstance(recorded, dict) and isinstance(now, dict):
        for key in [*recorded, *(k for k in now if k not in recorded)]:
            _walk(
                f"{path}.{key}" if path else str(key),
                recorded.get(key, _ABSENT),
                now.get(key, _ABSENT),
                out,
            )
        return
    if isinstance(recorded, list) and isinstance(now, list):
        for index in range(min(len(recorded), len(now))):
            _walk(f"{path}[{index}]", recorded[index], now[index], out)
        if len(recorded) != len(now):
            out.append(
                f"{path or '(request)'}: recorded {len(recorded)} items ≠ now {len(now)} items"
            )
        return
    where = path or "(request)"
    if isinstance(recorded, str) and isinstance(now, str) and _long(recorded, now):
        out.append(f"{where}: {_text_difference(plain_text(recorded), now)}")
        return
    shown = plain_text(recorded) if isinstance(recorded, str) else recorded
    out.append(f"{where}: recorded {_shown(shown)} ≠ now {_shown(now)}")


def _long(*texts: str) -> bool:
    return any(len(t) > _SHOWN or "\n" in t for t in texts)


def _text_difference(recorded: str, now: str) -> str:
    """Where two long texts start to differ, each around it; with a line
    diff (`difflib`) when they have several lines."""
    import difflib  # lazy: only a failing replay shows a difference

    matcher = difflib.SequenceMatcher(None, recorded, now, autojunk=False)
    _, i1, i2, j1, j2 = next(op for op in matcher.get_opcodes() if op[0] != "equal")
    start = max(0, min(i1, j1) - _CONTEXT)
    before = recorded[start : i2 + _CONTEXT]
    after = now[start : j2 + _CONTEXT]
    text = (
        f"at character {min(i1, j1)}: recorded {_clip(before, start, recorded)} "
        f"≠ now {_clip(after, start, now)}"
    )
    if "\n" in recorded or "\n" in now:
        lines = difflib.unified_diff(
            recorded.splitlines(), now.splitlines(), "recorded", "now", lineterm="", n=0
        )
        shown = [_clipped(line) for line in list(lines)[2:14]]
        text += " | " + " | ".join(shown)
    return text


def _clip(part: str, start: int, whole: str) -> str:
    lead = "…" if start > 0 else ""
    tail = "…" if start + len(part) < len(whole) else ""
    return repr(f"{lead}{part[: 2 * _SHOWN]}{tail}")


def _clipped(line: str) -> str:
    return line if len(line) <= 2 * _SHOWN else line[: 2 * _SHOWN - 1] + "…"


def _shown(value: object) -> str:
    if value is _ABSENT:
        return "(absent)"
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"
