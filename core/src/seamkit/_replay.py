"""The built-in ``replay`` model: plays a recorded cassette back.

``model: replay:run.cassette.jsonl`` (or ``{provider: replay, name: FILE,
ignore: [regex, ...]}``) answers each request with a recorded exchange,
without importing any provider or touching the network. A request takes
the next exchange in the file's order; when that one was recorded for
another request, the first unused exchange whose request is the same
(concurrent runs, as a server has, record in the order they end). A
request that matches none fails with a field-by-field difference from the
next exchange in order; one past the last exchange fails naming the file.

Requests are compared after `seamkit._cassette.normalized`: an injected
pair's expiry, run and session ids and what the ``ignore`` patterns match
may differ, and a secret masked at the recording (`seamkit._cassette.MARK`
then ``***``) stands for any text at its place; nothing else.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

from pydantic import JsonValue

from ._cassette import Cassette, Exchange, differences, matches, normalized, read_cassette
from ._errors import ContextLengthExceeded, ModelError, ScriptError
from ._replay_config import ReplayConfig
from ._types import ModelRequest, ModelTurn, ToolArgumentsDelta

__all__ = ["ReplayConfig", "ReplayModel"]  # ReplayConfig lives in `seamkit._replay_config`

_SHOWN_DIFFERENCES = 8


class ReplayModel:
    """A model that answers from a cassette's exchanges (see the module)."""

    def __init__(self, cassette: Cassette, *, ignore: tuple[str, ...] = ()) -> None:
        self.cassette = cassette
        self._ignore = tuple(re.compile(p) for p in ignore)
        self._used = [False] * len(cassette.exchanges)
        self._expected = [normalized(e.request, self._ignore) for e in cassette.exchanges]
        modes = cassette.header.get("output_modes")
        if isinstance(modes, list):
            self.output_modes = frozenset(str(m) for m in modes)
        self.spec = f"replay:{cassette.path}"

    @classmethod
    def load(
        cls, path: str | Path, *, base_dir: str | Path | None = None, ignore: tuple[str, ...] = ()
    ) -> ReplayModel:
        """The cassette at ``path`` (relative to ``base_dir`` when given).
        Raises `ModelError` naming the file."""
        where = Path(path)
        if not where.is_absolute() and base_dir is not None:
            where = Path(base_dir) / where
        return cls(read_cassette(where), ignore=ignore)

    def _take(self, request: ModelRequest) -> Exchange:
        now = normalized(request.model_dump(mode="json"), self._ignore)
        pending = [i for i, used in enumerate(self._used) if not used]
        path = str(self.cassette.path)
        if not pending:
            raise ModelError(
                f"replay cassette {path!r} ran out: it has {len(self._used)} exchanges "
                "and the run asked for one more",
                provider="replay",
                hint="record the run again (seamkit run --record FILE), or lower max_turns",
            )
        found = next((i for i in pending if matches(self._expected[i], now)), None)
        if found is None:
            nxt = pending[0]
            exchange = self.cassette.exchanges[nxt]
            diff = differences(self._expected[nxt], now)
            more = f" (and {len(diff) - 1} more)" if len(diff) > 1 else ""
            listed = ""
            if len(diff) > 1:
                listed = "the differences: " + "; ".join(diff[:_SHOWN_DIFFERENCES]) + ". "
            raise ModelError(
                f"replay cassette {path!r} seq {exchange.seq}: the request differs from "
                f"the recorded one: {diff[0] if diff else '?'}{more}",
                provider="replay",
                hint=f"{listed}Record the run again (seamkit run --record FILE), or add an "
                "'ignore:' regex to the replay model for what may differ",
            )
        self._used[found] = True
        return self.cassette.exchanges[found]

    def _turn(self, exchange: Exchange) -> ModelTurn:
        """The exchange's turn; else its error, or (closed) why there is none."""
        if exchange.turn is not None:
            return exchange.turn
        if exchange.error is not None:
            raise _recorded_error(exchange.error)
        raise ModelError(
            f"replay cassette {str(self.cassette.path)!r} seq {exchange.seq}: the recorded "
            f"stream was closed after {len(exchange.deltas)} deltas (a guard stopped the "
            "run, or it was cancelled), and this run read further",
            provider="replay",
            hint="record the run again (seamkit run --record FILE)",
        )

    async def complete(self, request: ModelRequest) -> ModelTurn:
        """The recorded turn (a recorded stream's turn too), or its error."""
        return self._turn(self._take(request))

    async def stream(
        self, request: ModelRequest
    ) -> AsyncIterator[str | ToolArgumentsDelta | ModelTurn]:
        """The recorded deltas, then the recorded turn (or error); a recorded
        ``complete`` streams its text as one delta. A stream recorded closed
        early plays its deltas, then fails if read further."""
        exchange = self._take(request)
        for delta in exchange.deltas:
            yield delta
        turn = self._turn(exchange)
        if exchange.call == "complete" and turn.message.text:
            yield turn.message.text
        yield turn


def _recorded_error(error: Mapping[str, JsonValue]) -> ModelError:
    """The error a recorded exchange raised, as its class when it is one of
    seamkit's model errors, else as a `ModelError` naming its class."""
    kind, message = str(error.get("class", "")), str(error.get("message", ""))
    provider, hint = error.get("provider"), error.get("hint")
    provider = provider if isinstance(provider, str) else None
    hint = hint if isinstance(hint, str) else None
    if kind == "ContextLengthExceeded":
        return ContextLengthExceeded(message, provider=provider)
    if kind == "ScriptError":
        return ScriptError(message, hint=hint)
    if kind == "ModelError":
        return ModelError(message, provider=provider, hint=hint)
    return ModelError(f"{kind}: {message}", provider=provider, hint=hint)
