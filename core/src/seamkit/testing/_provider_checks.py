"""`check_model_provider`: the conformance suite a model provider runs
against wire cassettes of its own API, played by a local `WireServer`.

Each check builds a fresh model with the provider's factory, pointed at the
server, asks it one request, and holds the answer (or the error) to what
the kernel relies on. A failed check never stops the others; every outcome
goes into the `ProviderReport`.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path

from .._errors import ContextLengthExceeded, ModelError
from .._types import Message, Model, ModelRequest, ModelTurn, ToolArgumentsDelta
from ._provider_check_parts import (
    KEY_PREFIX,
    Answer,
    Closing,
    Failed,
    NotCovered,
    close_model,
    key_pieces,
    lacking,
    safe,
    tool_calls,
    turn_difference,
    wait_until,
)
from ._provider_report import ProviderCheck, ProviderReport
from ._wire_cassette import WireCassette, load_wire_cassette
from ._wire_server import WireServer

__all__ = ["CASSETTE_NAMES", "acheck_model_provider", "check_model_provider"]

CASSETTE_NAMES: dict[str, str] = {
    "text": "a streamed text answer (no tool calls)",
    "text.whole": "the same answer as 'text', not streamed",
    "tools": "a streamed answer with one tool call",
    "tools.whole": "the same answer as 'tools', not streamed",
    "parallel_tools": "a streamed answer with two or more tool calls",
    "parallel_tools.whole": "the same answer as 'parallel_tools', not streamed",
    "unauthorized": "the API's answer to a bad key (a 401)",
    "rate_limited": "a 429 with 'retry-after: 0', then (after a '---' line) a 200 answer",
    "context_length": "the API's answer to a request longer than the context window",
    "server_error": "a 5xx answer (played again for every retry; give it 'retry-after: 0')",
    "cut_stream": "a streamed answer that stops before its end",
    "usage": "an answer (streamed or whole) whose usage a '# expect-usage: {...}' line states",
}
"""The keys `check_model_provider` reads from ``cassettes``, and what each
cassette holds."""

CHECK_SECONDS = 30.0
"""How long one check may take before it fails."""

CLOSE_SECONDS = 2.0
"""How soon the server must see a cancelled stream's connection closed (and
every connection closed after ``aclose()``)."""

_FIRST_DELTA_SECONDS = 5.0

Factory = Callable[[str, str], Model]
"""``factory(base_url, api_key)``: the provider's model talking to ``base_url``."""


def check_model_provider(factory: Factory, cassettes: Mapping[str, str | Path]) -> ProviderReport:
    """Run the provider conformance checks; the `ProviderReport` (call its
    ``assert_passed()`` in a test). Runs its own event loop; in an ``async
    def`` test, ``await acheck_model_provider(...)``.

    ``factory(base_url, api_key)`` builds the provider's `seamkit.Model`
    talking to ``base_url`` (a local server's root, ``http://127.0.0.1:PORT``,
    which answers any path: add ``/v1`` if the provider's base URL has it)
    with ``api_key`` (a fake key the checks look for in errors). It is
    called once per check, and the model is closed (``aclose()``, when it
    has one) after each. Keep retries fast there: the ``rate_limited`` and
    ``server_error`` cassettes should say ``retry-after: 0``, which a
    provider should honour; a provider that ignores it needs a small
    backoff from its factory, as each check fails after 30 s.

    ``cassettes`` maps names to wire cassettes (``.http`` files, see
    `seamkit.testing.load_wire_cassette`) in the provider's own format
    (`CASSETTE_NAMES` lists the names; another name is a ``ValueError``). A
    check without its cassette is ``not covered``, never skipped silently.
    The checks, by name:

    - ``text``: the streamed text deltas joined are the turn's text.
    - ``tools``: one tool call with a non-empty id and a JSON object for
      arguments; the `ToolArgumentsDelta` fragments, when the stream gives
      any, join to the same object.
    - ``parallel_tools``: two or more calls, in the order the wire gives
      them, with distinct ids (and fragments as for ``tools``).
    - ``parity[text]``, ``parity[tools]``, ``parity[parallel_tools]``:
      ``complete`` on the ``.whole`` cassette gives the same `ModelTurn` as
      ``stream`` on the streamed one.
    - ``unauthorized``: the provider sent the key, and ``complete`` and
      ``stream`` raise `seamkit.ModelError` whose text and hint do not
      contain it.
    - ``rate_limited``: the 429 is retried: a turn, after two requests.
    - ``context_length``: `seamkit.ContextLengthExceeded`, from both calls.
    - ``server_error``: retried, then `seamkit.ModelError` when the retries
      run out.
    - ``cut_stream``: `seamkit.ModelError` and never a turn, whether the
      stream ends early or its connection drops.
    - ``cancellation`` (on the ``text`` cassette, held open before its last
      event): cancelling the task that reads the stream closes its
      connection within 2 s; after a whole answer, ``aclose()`` leaves no
      connection open.
    - ``usage``: ``requests == 1``, the counts the cassette's
      ``# expect-usage`` line states, and ``input_tokens >=
      cache_read_tokens + cache_write_tokens``.

    A cassette with an ``# expect-request: {...}`` line also holds every
    request it answers to that JSON (objects as subsets): a check fails
    when a request lacks a field of it or has another value there.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(acheck_model_provider(factory, cassettes))
    raise RuntimeError(
        "check_model_provider runs its own event loop; in async code, "
        "await seamkit.testing.acheck_model_provider(factory, cassettes)"
    )


async def acheck_model_provider(
    factory: Factory, cassettes: Mapping[str, str | Path]
) -> ProviderReport:
    """:func:`check_model_provider` in the running event loop."""
    unknown = sorted(set(cassettes) - set(CASSETTE_NAMES))
    if unknown:
        raise ValueError(
            f"check_model_provider knows no cassette named {', '.join(map(repr, unknown))}; "
            f"the names are {', '.join(CASSETTE_NAMES)}"
        )
    server = WireServer()
    await asyncio.to_thread(server.start)
    try:
        checks = _Checks(factory, cassettes, server)
        return ProviderReport(tuple([check async for check in checks.run()]))
    finally:
        await asyncio.to_thread(server.stop)


_REQUEST = ModelRequest(
    messages=(Message.user("Say hello, or call a tool (seamkit provider check)."),),
    max_tokens=256,
)


class _Checks:
    """The checks, each a method, run in turn against one server."""

    def __init__(
        self, factory: Factory, cassettes: Mapping[str, str | Path], server: WireServer
    ) -> None:
        self.factory = factory
        self.paths = cassettes
        self.server = server
        self.key = f"{KEY_PREFIX}{secrets.token_hex(12)}"
        self.expected: WireCassette | None = None

    async def run(self) -> AsyncIterator[ProviderCheck]:
        plan: list[tuple[str, Callable[[], Awaitable[str]]]] = [
            ("text", self.text),
            ("tools", self.tools),
            ("parallel_tools", self.parallel_tools),
            *[
                (f"parity[{name}]", _bind(self.parity, name))
                for name in ("text", "tools", "parallel_tools")
            ],
            ("unauthorized", self.unauthorized),
            ("rate_limited", self.rate_limited),
            ("context_length", self.context_length),
            ("server_error", self.server_error),
            ("cut_stream", self.cut_stream),
            ("cancellation", self.cancellation),
            ("usage", self.usage),
        ]
        for name, check in plan:
            self.expected = None
            try:
                async with asyncio.timeout(CHECK_SECONDS):
                    detail = await check()
                self.verify()
            except NotCovered as exc:
                yield ProviderCheck(name, "not covered", str(exc))
            except Failed as exc:
                yield ProviderCheck(name, "failed", str(exc))
            except TimeoutError:
                yield ProviderCheck(
                    name,
                    "failed",
                    f"did not finish within {CHECK_SECONDS:g} s (a provider waiting long "
                    "between retries should honour retry-after: 0, or get a small backoff "
                    "from its factory)",
                )
            except Exception as exc:
                yield ProviderCheck(
                    name, "failed", f"raised {type(exc).__name__}: {safe(str(exc), self.key)}"
                )
            else:
                yield ProviderCheck(name, "passed", detail)

    # -- helpers --

    def play(self, cassette: WireCassette, *, cut: bool = False, hold: bool = False) -> None:
        """Play ``cassette`` next, after holding the requests the last one
        answered to its ``# expect-request`` subset."""
        self.verify()
        self.server.play(cassette, cut=cut, hold=hold)
        self.expected = cassette

    def verify(self) -> None:
        """Fail when a request the last cassette answered lacks a field of
        its ``# expect-request: {...}`` line."""
        cassette, self.expected = self.expected, None
        if cassette is None or "request" not in cassette.expect:
            return
        expected = cassette.expect["request"]
        for number, request in enumerate(self.server.requests):
            missing = lacking(expected, request.body, "")
            if missing:
                name = cassette.path.name if cassette.path is not None else "the cassette"
                raise Failed(
                    f"request {number + 1} to {name} does not match its expect-request: {missing}"
                )

    def cassette(self, name: str) -> WireCassette:
        path = self.paths.get(name)
        if path is None:
            raise NotCovered(f"no {name!r} cassette ({CASSETTE_NAMES[name]})")
        try:
            return load_wire_cassette(path)
        except (OSError, ValueError) as exc:
            raise Failed(f"cannot read the {name!r} cassette {str(path)!r}: {exc}") from None

    def model(self) -> Model:
        try:
            return self.factory(self.server.base_url, self.key)
        except Exception as exc:
            said = f"{type(exc).__name__}: {safe(str(exc), self.key)}"
            raise Failed(f"factory(base_url, api_key) raised {said}") from None

    async def stream(self, model: Model, what: str) -> Answer:
        answer = Answer()
        async for item in model.stream(_REQUEST):
            if answer.turn is not None:
                raise Failed(f"{what}: the stream went on after its ModelTurn")
            if isinstance(item, ModelTurn):
                answer.turn = item
            elif isinstance(item, str):
                answer.texts.append(item)
            elif isinstance(item, ToolArgumentsDelta):
                answer.fragments.append(item)
            else:
                raise Failed(f"{what}: the stream yielded a {type(item).__name__}")
        if answer.turn is None:
            raise Failed(f"{what}: the stream ended without a ModelTurn")
        return answer

    async def streamed(self, name: str) -> Answer:
        cassette = self.cassette(name)
        self.play(cassette)
        async with Closing(self.model()) as model:
            return await self.stream(model, f"stream on the {name!r} cassette")

    async def ask(self, model: Model, cassette: WireCassette) -> ModelTurn:
        """``stream`` when the cassette's last answer is a stream, else ``complete``."""
        if cassette.responses[-1].is_stream:
            turn = (await self.stream(model, "stream")).turn
            assert turn is not None
            return turn
        return await model.complete(_REQUEST)

    # -- the checks --

    async def text(self) -> str:
        answer = await self.streamed("text")
        turn = answer.turn
        assert turn is not None
        text = turn.message.text
        if not text:
            raise Failed("the turn has no text (is the 'text' cassette a text answer?)")
        joined = "".join(answer.texts)
        if joined != text:
            raise Failed(f"the text deltas join to {joined!r}, but the turn's text is {text!r}")
        return f"{len(answer.texts)} deltas, {len(text)} characters"

    async def tools(self) -> str:
        answer = await self.streamed("tools")
        calls = tool_calls(answer, "tools")
        if len(calls) != 1:
            raise Failed(f"the turn has {len(calls)} tool calls, not one")
        return f"call {calls[0][1]!r}; {len(answer.fragments)} argument fragments"

    async def parallel_tools(self) -> str:
        cassette = self.cassette("parallel_tools")
        answer = await self.streamed("parallel_tools")
        calls = tool_calls(answer, "parallel_tools")
        if len(calls) < 2:
            raise Failed(f"the turn has {len(calls)} tool calls, not two or more")
        ids = [call_id for call_id, _ in calls]
        if len(set(ids)) != len(ids):
            raise Failed(f"the calls' ids are not distinct: {ids}")
        wire = b"".join(response.body for response in cassette.responses).decode("utf-8", "replace")
        places = [wire.find(call_id) for call_id in ids]
        if all(place >= 0 for place in places) and places != sorted(places):
            raise Failed(f"the calls {ids} are not in the order the wire gives them")
        return f"{len(calls)} calls: {', '.join(name for _, name in calls)}"

    async def parity(self, name: str) -> str:
        whole = self.cassette(f"{name}.whole")
        streamed = await self.streamed(name)
        self.play(whole)
        async with Closing(self.model()) as model:
            turn = await model.complete(_REQUEST)
        if turn != streamed.turn:
            assert streamed.turn is not None
            raise Failed(
                f"complete on {name + '.whole'!r} and stream on {name!r} give different turns: "
                f"{turn_difference(streamed.turn, turn)}"
            )
        return "the same turn"

    async def unauthorized(self) -> str:
        cassette = self.cassette("unauthorized")
        seen: list[str] = []
        for call in ("complete", "stream"):
            self.play(cassette)
            error = await self.failure(call, ModelError)
            for text, what in ((error.hint or "", "hint"), (str(error), "text")):
                if self.key in text:
                    raise Failed(f"{call}: the error's {what} contains the API key")
                if any(piece in text for piece in key_pieces(self.key)):
                    raise Failed(f"{call}: the error's {what} contains part of the API key")
            sent = self.server.requests
            if not any(self.key in r.path or self.key in str(r.headers) for r in sent):
                raise Failed(
                    f"{call}: no request carried the api_key the factory was given, so the "
                    "check cannot tell whether errors leak it"
                )
            seen.append(f"{call}: {type(error).__name__}")
        return "; ".join(seen)

    async def failure(self, call: str, expected: type[ModelError]) -> ModelError:
        """The error ``call`` (``complete`` or ``stream``) raises; a failure
        when it is not an ``expected`` one or when a turn comes back."""
        async with Closing(self.model()) as model:
            try:
                if call == "complete":
                    await model.complete(_REQUEST)
                else:
                    await self.stream(model, "stream")
            except Failed:
                raise
            except expected as exc:
                return exc
            except Exception as exc:
                raise Failed(
                    f"{call} raised {type(exc).__name__}, not {expected.__name__}: "
                    f"{safe(str(exc), self.key)}"
                ) from None
        raise Failed(f"{call} gave a turn, not {expected.__name__}")

    async def rate_limited(self) -> str:
        cassette = self.cassette("rate_limited")
        statuses = [response.status for response in cassette.responses]
        if len(statuses) < 2 or statuses[0] != 429 or not 200 <= statuses[-1] < 300:
            raise Failed(f"the cassette's statuses are {statuses}, not a 429 then a 2xx")
        self.play(cassette)
        async with Closing(self.model()) as model:
            try:
                await self.ask(model, cassette)
            except ModelError as exc:
                raise Failed(
                    f"the 429 was not retried: {type(exc).__name__}: {safe(str(exc), self.key)}"
                ) from None
        count = len(self.server.requests)
        if count != len(statuses):
            raise Failed(f"the server saw {count} requests, not {len(statuses)}")
        return f"a turn after {count} requests"

    async def context_length(self) -> str:
        cassette = self.cassette("context_length")
        for call in ("complete", "stream"):
            self.play(cassette)
            await self.failure(call, ContextLengthExceeded)
        return "ContextLengthExceeded from complete and stream"

    async def server_error(self) -> str:
        cassette = self.cassette("server_error")
        self.play(cassette)
        error = await self.failure("complete", ModelError)
        if isinstance(error, ContextLengthExceeded):
            raise Failed("a 5xx raised ContextLengthExceeded")
        count = len(self.server.requests)
        if count < 2:
            raise Failed("the 5xx was not retried (the server saw one request)")
        return f"ModelError after {count} requests"

    async def cut_stream(self) -> str:
        cassette = self.cassette("cut_stream")
        for cut, how in ((False, "ending early"), (True, "dropping the connection")):
            self.play(cassette, cut=cut)
            try:
                await self.failure("stream", ModelError)
            except Failed as exc:
                raise Failed(f"a stream {how}: {exc}") from None
        return "ModelError whether the stream ends early or drops"

    async def cancellation(self) -> str:
        cassette = self.cassette("text")
        self.play(cassette, hold=True)
        async with Closing(self.model()) as model:
            first = asyncio.Event()

            async def read() -> None:
                async for item in model.stream(_REQUEST):
                    if isinstance(item, str | ToolArgumentsDelta):
                        first.set()

            task = asyncio.create_task(read())
            waiter = asyncio.create_task(first.wait())
            await asyncio.wait(
                {task, waiter}, timeout=_FIRST_DELTA_SECONDS, return_when=asyncio.FIRST_COMPLETED
            )
            waiter.cancel()
            if task.done():
                error = task.exception()
                raise Failed(
                    "the stream ended while the server held its last event back (the check "
                    "cancels a stream that waits for its end; a provider reads a stream to its "
                    "end before it gives the turn)"
                    + (f": {type(error).__name__}: {safe(str(error), self.key)}" if error else "")
                )
            if not first.is_set():
                task.cancel()
                raise Failed(f"no delta arrived within {_FIRST_DELTA_SECONDS:g} s")
            cancelled = time.monotonic()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            if not await wait_until(lambda: bool(self.server.disconnects), CLOSE_SECONDS):
                raise Failed(
                    f"the server did not see the connection closed within {CLOSE_SECONDS:g} s "
                    "of cancelling the task that read the stream"
                )
            took = self.server.disconnects[0] - cancelled
            self.play(cassette)
            await self.stream(model, "stream after the cancelled one")
            await close_model(model)
        if not await wait_until(lambda: self.server.open_connections == 0, CLOSE_SECONDS):
            raise Failed(
                f"{self.server.open_connections} connections were still open "
                f"{CLOSE_SECONDS:g} s after aclose()"
            )
        return f"connection closed {max(took, 0.0):.2f} s after the cancel"

    async def usage(self) -> str:
        cassette = self.cassette("usage")
        expected = cassette.expect.get("usage")
        if not isinstance(expected, dict):
            raise Failed(
                "the 'usage' cassette says no counts: add a line like "
                '# expect-usage: {"input_tokens": 12, "output_tokens": 3}'
            )
        self.play(cassette)
        async with Closing(self.model()) as model:
            turn = await self.ask(model, cassette)
        usage = turn.usage
        wrong = [
            f"{name} {getattr(usage, name, None)!r}, not {value!r}"
            for name, value in {"requests": 1, **expected}.items()
            if getattr(usage, name, None) != value
        ]
        if usage.input_tokens < usage.cache_read_tokens + usage.cache_write_tokens:
            wrong.append(
                f"input_tokens {usage.input_tokens} < cache_read_tokens "
                f"{usage.cache_read_tokens} + cache_write_tokens {usage.cache_write_tokens} "
                "(input_tokens counts every input token, the cached ones included)"
            )
        if wrong:
            raise Failed("the turn's usage has " + "; ".join(wrong))
        return ", ".join(f"{name}={getattr(usage, name)}" for name in expected)


def _bind(check: Callable[[str], Awaitable[str]], name: str) -> Callable[[], Awaitable[str]]:
    return lambda: check(name)
