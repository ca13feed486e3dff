"""Recording a run's model exchanges to a cassette (`seamkit.testing.record`).

`record` wraps an agent's model in a `RecordingModel`, which passes every
call through and appends the exchange to the cassette as it ends (the
format is `seamkit._cassette`'s). Every text of a line is masked with the
secrets of the agent's manifest: a cassette can be shared.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING
from urllib.parse import urlsplit

from pydantic import BaseModel, JsonValue

from ._cassette import VERSION, Call, delta_json, masked_text
from ._errors import SeamkitError
from ._providers import shown_url
from ._secret import Redactor, secret_texts
from ._types import (
    Document,
    FunctionCall,
    Message,
    MessageToolCall,
    Model,
    ModelRequest,
    ModelTurn,
    OutputSpec,
    ToolArgumentsDelta,
    ToolSpec,
    Usage,
)

if TYPE_CHECKING:
    from ._engine._agent import Agent

__all__ = ["RecordingModel", "record"]


class RecordingModel:
    """A `Model` that answers with ``inner`` and writes each exchange (the
    request, the deltas streamed, the turn or the error) as one cassette
    line when it ends. It has ``inner``'s ``output_modes``, if any."""

    def __init__(
        self, inner: Model, sink: IO[str], redactor: Redactor, *, first_seq: int = 0
    ) -> None:
        self.inner = inner
        self._sink = sink
        self._redactor = redactor
        self._seq = first_seq
        self._lock = threading.Lock()
        modes: object = getattr(inner, "output_modes", None)
        if modes is not None:
            self.output_modes = modes
        spec: object = getattr(inner, "spec", None)
        if isinstance(spec, str):
            self.spec = spec

    @property
    def recorded(self) -> int:
        """How many exchanges this model has written."""
        return self._seq

    def _write(self, entry: dict[str, JsonValue]) -> None:
        with self._lock:
            line = _line({"seq": self._seq, **entry}, self._redactor)
            self._sink.write(line + "\n")
            self._sink.flush()
            self._seq += 1

    async def complete(self, request: ModelRequest) -> ModelTurn:
        """``inner``'s turn, recorded."""
        try:
            turn = await self.inner.complete(request)
        except Exception as exc:
            self._write(_failed("complete", request, exc, []))
            raise
        self._write(_answered("complete", request, [], turn))
        return turn

    async def stream(
        self, request: ModelRequest
    ) -> AsyncIterator[str | ToolArgumentsDelta | ModelTurn]:
        """``inner``'s deltas and turn, recorded when the turn comes (or the
        stream fails). A stream its reader closes before the turn (a text
        guard stopped the run, or it was cancelled) is recorded with the
        deltas read so far and ``"closed": true``."""
        deltas: list[str | ToolArgumentsDelta] = []
        written = False
        items = self.inner.stream(request)
        try:
            async for item in items:
                if isinstance(item, ModelTurn):
                    kept = _masked(deltas, self._redactor)
                    self._write(_answered("stream", request, kept, item))
                    written = True
                else:
                    deltas.append(item)
                yield item
        except Exception as exc:
            if not written:
                kept = _masked(deltas, self._redactor)
                self._write(_failed("stream", request, exc, kept))
            raise
        except BaseException:  # GeneratorExit, CancelledError: the reader stopped
            if not written:
                self._write(_closed(request, _masked(deltas, self._redactor)))
            raise
        finally:  # the inner stream (and its connection) closes now, not at GC
            close = getattr(items, "aclose", None)
            if close is not None:
                await close()


_FORMAT_KEYS = frozenset(
    {"cassette", "seamkit", "model", "output_modes", "created", "seq", "call", "request"}
    | {"deltas", "turn", "error", "text", "args", "index", "id", "name", "class", "message"}
    | {"provider", "hint", "closed"}
    | {
        key
        for kind in (
            ModelRequest,
            ModelTurn,
            Message,
            MessageToolCall,
            FunctionCall,
            ToolSpec,
            Document,
            OutputSpec,
            Usage,
        )
        for key in kind.model_fields
    }
)
"""The names the cassette format itself uses as keys: never masked, so that
a short secret (a PIN, a one-word password) cannot break a line's shape."""
_WORDS = frozenset({"role", "type", "call", "finish_reason", "mode", "class", "cassette"})
"""Fields whose values are the format's own words (``assistant``,
``tool_calls``...), not text a run carried: never masked either."""


def _line(entry: dict[str, JsonValue], redactor: Redactor) -> str:
    """``entry`` as one cassette line, every text in it (values, and keys
    that are not the format's own) masked with ``redactor`` as
    `seamkit._cassette.masked_text` writes it. (Masking the JSON text
    instead would mask a short secret inside the format's own keys,
    ``max_tokens`` for a secret ``k``, and break the line.)"""

    def text(value: str) -> str:
        return masked_text(value, redactor.spans(value) if redactor else ())

    def walk(value: JsonValue) -> JsonValue:
        if isinstance(value, str):
            return text(value)
        if isinstance(value, list):
            return [walk(item) for item in value]
        if isinstance(value, dict):
            return {
                key if key in _FORMAT_KEYS else text(key): (
                    item if key in _WORDS and isinstance(item, str) else walk(item)
                )
                for key, item in value.items()
            }
        return value

    return json.dumps(walk(entry), ensure_ascii=False)


def _masked(deltas: list[str | ToolArgumentsDelta], redactor: Redactor) -> list[JsonValue]:
    """``deltas`` as cassette items. A secret split over several deltas
    (which masking line by line would not see whole) is masked by joining
    the text deltas (or one call's argument fragments) into one delta
    (`_line` masks it)."""
    out: list[str | ToolArgumentsDelta] = []
    streams: dict[int | None, list[str | ToolArgumentsDelta]] = {}
    for delta in deltas:
        streams.setdefault(None if isinstance(delta, str) else delta.index, []).append(delta)
    merged: dict[int | None, str | ToolArgumentsDelta] = {}
    for key, parts in streams.items():
        pieces = [p if isinstance(p, str) else p.text for p in parts]
        joined = "".join(pieces)
        if "".join(redactor(p) for p in pieces) == redactor(joined):
            continue
        first = parts[0]
        merged[key] = (
            joined
            if isinstance(first, str)
            else ToolArgumentsDelta(first.index, first.id, first.name, joined)
        )
    placed: set[int | None] = set()
    for delta in deltas:
        key = None if isinstance(delta, str) else delta.index
        if key not in merged:
            out.append(delta)
        elif key not in placed:
            out.append(merged[key])
            placed.add(key)
    return [delta_json(d) for d in out]


def _answered(
    call: Call, request: ModelRequest, deltas: list[JsonValue], turn: ModelTurn
) -> dict[str, JsonValue]:
    return {
        "call": call,
        "request": request.model_dump(mode="json"),
        "deltas": deltas,
        "turn": turn.model_dump(mode="json"),
    }


def _closed(request: ModelRequest, deltas: list[JsonValue]) -> dict[str, JsonValue]:
    return {
        "call": "stream",
        "request": request.model_dump(mode="json"),
        "deltas": deltas,
        "closed": True,
    }


def _failed(
    call: Call, request: ModelRequest, exc: Exception, deltas: list[JsonValue]
) -> dict[str, JsonValue]:
    provider: object = getattr(exc, "provider", None)
    entry: dict[str, JsonValue] = {"call": call, "request": request.model_dump(mode="json")}
    if deltas:
        entry["deltas"] = deltas
    entry["error"] = {
        "class": type(exc).__name__,
        "message": exc.message if isinstance(exc, SeamkitError) else str(exc),
        "provider": provider if isinstance(provider, str) else None,
        "hint": exc.hint if isinstance(exc, SeamkitError) else None,
    }
    return entry


def _base_url(value: object) -> str | None:
    """A base URL as a header may show it (`shown_url`)."""
    return shown_url(value) if isinstance(value, str) else None


def _header_model(agent: Agent) -> dict[str, JsonValue]:
    """The header's ``model``: its provider and name, and its base URL
    (`_base_url`); nothing else of its config, which may hold keys in plain
    text (a header, an ``${env:...}`` value, ``extra_body``)."""
    provider, named, name = agent.model_spec.partition(":")
    model: dict[str, JsonValue] = (
        {"provider": provider, "name": name} if named else {"name": provider}
    )
    config = agent.config.model if agent.config is not None else None
    if config is not None and (not named or config.provider == provider):
        model = {"provider": config.provider, "name": getattr(config, "name", None)}
        url = _base_url(getattr(config, "base_url", None))
        if url is not None:
            model["base_url"] = url
    return model


def _model_secrets(inner: Model) -> list[str]:
    """What the model itself holds secret, beyond the manifest's secrets: its
    resolved config's keys (one read from ``ANTHROPIC_API_KEY``, say) and
    a password in its base URL."""
    config: object = getattr(inner, "config", None)
    if not isinstance(config, BaseModel):
        return []
    found = secret_texts(config)
    url: object = getattr(config, "base_url", None)
    if isinstance(url, str):
        password = urlsplit(url).password
        if password:
            found.append(password)
    return found


def _header(agent: Agent, inner: Model) -> dict[str, JsonValue]:
    from . import __version__  # lazy: the package's version, read from its metadata

    modes: object = getattr(inner, "output_modes", None)
    listed: JsonValue = None
    if isinstance(modes, Iterable):
        listed = [str(m) for m in sorted(str(m) for m in modes)]
    return {
        "cassette": VERSION,
        "seamkit": __version__,
        "model": _header_model(agent),
        "output_modes": listed,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def _continued(path: Path) -> int | None:
    """The next seq of the cassette at ``path`` (cutting a last line a crash
    left short), or ``None`` when there is none to continue (no file, an
    empty one, or a header a crash cut short). Raises `SeamkitError` when the
    file is not a cassette, or its last whole line is not an exchange."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise _not_continued(
            path, str(getattr(exc, "strerror", None) or "it is not UTF-8")
        ) from None
    if "\n" not in text:
        if text and not text.startswith('{"cassette"'):
            raise _not_continued(path, "it is not a cassette (no header line)")
        return None
    kept = text[: text.rindex("\n") + 1]
    lines = kept[:-1].split("\n")  # (not splitlines: a text may hold U+2028)
    try:
        header, last = json.loads(lines[0]), json.loads(lines[-1])
    except ValueError:
        raise _not_continued(path, "a line is not JSON") from None
    if not isinstance(header, dict) or header.get("cassette") != VERSION:
        raise _not_continued(path, f"its first line is not a cassette header (version {VERSION})")
    if len(lines) == 1:
        seq: object = -1
    else:
        seq = last.get("seq") if isinstance(last, dict) else None
    if not isinstance(seq, int):
        raise _not_continued(path, "its last line is not an exchange (no 'seq')")
    if kept != text:
        path.write_text(kept, encoding="utf-8")
    return seq + 1


def _not_continued(path: Path, why: str) -> SeamkitError:
    return SeamkitError(
        f"cannot append to the cassette {str(path)!r}: {why}",
        hint="name a cassette `seamkit run --record` wrote, or a new file",
    )


@contextmanager
def record(
    agent: Agent, path: str | os.PathLike[str], *, append: bool = False
) -> Iterator[RecordingModel]:
    """Record every model exchange of ``agent``'s runs to the cassette at
    ``path`` while the block runs.

    ::

        with seamkit.testing.record(agent, "run.cassette.jsonl"):
            await agent.run("Hello")

    The file gets a header line (the cassette version, seamkit's version,
    the model's provider, name and base URL, without its user, password or
    query, and its ``output_modes``), then one line per exchange as it ends:
    a crash leaves the exchanges before it readable. Every text in it is
    masked with the secrets of the agent's manifest and the model's own keys
    (one read from the environment too), a secret split over streamed
    deltas too: those deltas are joined. ``append=True`` continues the
    cassette already at ``path`` (its seq numbers go on). Play it back with
    ``model: replay:<path>``. On leaving the block the agent gets its model
    back."""
    target = Path(path)
    inner = agent.model
    redactor = Redactor([*secret_texts(agent.config), *_model_secrets(inner)])
    first = _continued(target) if append else None
    try:
        sink = target.open("a" if first is not None else "w", encoding="utf-8")
    except OSError as exc:
        raise SeamkitError(
            f"cannot write the cassette {str(target)!r}: {exc.strerror}",
            hint="name a file in a directory that exists and that you may write",
        ) from None
    with sink:
        if first is None:
            sink.write(_line(_header(agent, inner), redactor) + "\n")
            sink.flush()
        recording = RecordingModel(inner, sink, redactor, first_seq=first or 0)
        agent.model = recording
        try:
            yield recording
        finally:
            agent.model = inner
