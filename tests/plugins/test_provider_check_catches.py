"""`check_model_provider` catches a broken provider and names the check:
each broken model here is the ``openai`` provider (which passes every
check, `test_openai_conformance.py`) with one fault added."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import seamkit
from seamkit.stream import ToolArgumentsDelta
from seamkit.testing import ProviderCheckFailed, acheck_model_provider, check_model_provider
from seamkit_openai import OpenAIConfig, build_model

from tests.plugins.test_openai_conformance import CASSETTES, openai_model

Item = str | ToolArgumentsDelta | seamkit.ModelTurn


class Broken:
    """The OpenAI model, with hooks to change what it gives."""

    def __init__(self, base_url: str, api_key: str, **options: Any) -> None:
        self.inner = openai_model(base_url, api_key)
        self.key = api_key

    async def complete(self, request: seamkit.ModelRequest) -> seamkit.ModelTurn:
        return await self.inner.complete(request)

    async def stream(self, request: seamkit.ModelRequest) -> AsyncIterator[Item]:
        async for item in self.inner.stream(request):
            yield item

    async def aclose(self) -> None:
        await self.inner.aclose()  # type: ignore[attr-defined]


def refused(exc: seamkit.ModelError) -> bool:
    return " refused " in str(exc)


class LeaksTheKey(Broken):
    async def complete(self, request: seamkit.ModelRequest) -> seamkit.ModelTurn:
        try:
            return await super().complete(request)
        except seamkit.ModelError as exc:
            if refused(exc):
                raise seamkit.ModelError(f"{exc} (with key {self.key})") from None
            raise


class LeaksTheKeysEndInTheHint(Broken):
    async def stream(self, request: seamkit.ModelRequest) -> AsyncIterator[Item]:
        try:
            async for item in super().stream(request):
                yield item
        except seamkit.ModelError as exc:
            if refused(exc):
                raise seamkit.ModelError(str(exc), hint=f"key ...{self.key[-10:]}") from None
            raise


class WholeDiffers(Broken):
    async def complete(self, request: seamkit.ModelRequest) -> seamkit.ModelTurn:
        turn = await super().complete(request)
        if not turn.message.text:
            return turn
        message = turn.message.model_copy(update={"content": f"{turn.message.text}!"})
        return turn.model_copy(update={"message": message})


class DropsADelta(Broken):
    async def stream(self, request: seamkit.ModelRequest) -> AsyncIterator[Item]:
        dropped = False
        async for item in super().stream(request):
            if isinstance(item, str) and item and not dropped:
                dropped = True
                continue
            yield item


class IgnoresCancellation(Broken):
    """Reads the answer on a task of its own, which a cancel does not stop."""

    def stream(self, request: seamkit.ModelRequest) -> AsyncIterator[Item]:
        queue: asyncio.Queue[Item | Exception | None] = asyncio.Queue()

        async def pump() -> None:
            try:
                async for item in self.inner.stream(request):
                    await queue.put(item)
            except Exception as exc:
                await queue.put(exc)
            await queue.put(None)

        task = asyncio.get_running_loop().create_task(pump())
        _KEPT.add(task)
        task.add_done_callback(_KEPT.discard)

        async def items() -> AsyncIterator[Item]:
            while (item := await queue.get()) is not None:
                if isinstance(item, Exception):
                    raise item
                yield item

        return items()

    async def aclose(self) -> None:
        pass  # the task above holds a connection of the inner model


_KEPT: set[asyncio.Task[None]] = set()


class TurnFromACutStream(Broken):
    async def stream(self, request: seamkit.ModelRequest) -> AsyncIterator[Item]:
        try:
            async for item in super().stream(request):
                yield item
        except seamkit.ModelError as exc:
            if "cut off" not in str(exc):
                raise
            yield seamkit.ModelTurn(message=seamkit.Message.assistant("(partial)"))


class PlainContextError(Broken):
    async def complete(self, request: seamkit.ModelRequest) -> seamkit.ModelTurn:
        try:
            return await super().complete(request)
        except seamkit.ContextLengthExceeded as exc:
            raise seamkit.ModelError(str(exc)) from None


class CountsNoRequest(Broken):
    async def complete(self, request: seamkit.ModelRequest) -> seamkit.ModelTurn:
        turn = await super().complete(request)
        return turn.model_copy(update={"usage": turn.usage.model_copy(update={"requests": 0})})


def another_model_name(base_url: str, api_key: str) -> seamkit.Model:
    return build_model(
        OpenAIConfig(provider="openai", name="gpt-4.1", base_url=f"{base_url}/v1", api_key=api_key)
    )


PARITY = ("parity[text]", "parity[tools]", "parity[parallel_tools]")


def never_retries(base_url: str, api_key: str) -> seamkit.Model:
    return build_model(
        OpenAIConfig(
            provider="openai",
            name="gpt-4o-mini",
            base_url=f"{base_url}/v1",
            api_key=api_key,
            max_retries=0,
        )
    )


@pytest.mark.parametrize(
    ("factory", "failed", "words"),
    [
        (LeaksTheKey, {"unauthorized"}, "complete: the error's text contains the API key"),
        (
            LeaksTheKeysEndInTheHint,
            {"unauthorized"},
            "stream: the error's hint contains part of the API key",
        ),
        (
            WholeDiffers,
            {"parity[text]"},
            "message.content: streamed 'Hello, world', whole 'Hello, world!'",
        ),
        (DropsADelta, {"text"}, "the text deltas join to ', world'"),
        (IgnoresCancellation, {"cancellation"}, "did not see the connection closed within 2 s"),
        (TurnFromACutStream, {"cut_stream"}, "a stream ending early: stream gave a turn"),
        (
            PlainContextError,
            {"context_length"},
            "complete raised ModelError, not ContextLengthExceeded",
        ),
        (CountsNoRequest, {"usage", *PARITY}, "requests 0, not 1"),
        (never_retries, {"rate_limited", "server_error"}, "the 429 was not retried"),
        (
            another_model_name,
            {"text", "parity[text]", "cancellation"},
            "request 1 to openai_text.http does not match its expect-request: "
            "model is 'gpt-4.1', not 'gpt-4o-mini'",
        ),
    ],
    ids=lambda value: getattr(value, "__name__", None),
)
def test_a_broken_provider_fails_the_check_it_breaks(
    factory: Callable[[str, str], seamkit.Model], failed: set[str], words: str
) -> None:
    report = check_model_provider(factory, CASSETTES)
    assert set(report.failed) == failed, str(report)
    assert words in str(report)
    with pytest.raises(ProviderCheckFailed) as raised:
        report.assert_passed()
    for name in failed:
        assert f"failed       {name}:" in str(raised.value)
    assert "sk-seamkit-check-" not in str(report)


def test_a_check_without_its_cassette_is_not_covered_and_named() -> None:
    report = check_model_provider(openai_model, {"text": CASSETTES["text"]})
    assert report.passed == ("text", "cancellation")
    assert "tools" in report.not_covered and "usage" in report.not_covered
    report.assert_passed()
    with pytest.raises(ProviderCheckFailed, match="not covered  usage: no 'usage' cassette"):
        report.assert_passed(all_covered=True)


def test_an_unknown_cassette_name_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="no cassette named 'txt'; the names are text, "):
        check_model_provider(openai_model, {"txt": CASSETTES["text"]})


async def test_in_async_code_it_says_to_await_the_async_form() -> None:
    with pytest.raises(RuntimeError, match=r"await seamkit\.testing\.acheck_model_provider"):
        check_model_provider(openai_model, CASSETTES)
    report = await acheck_model_provider(openai_model, {"usage": CASSETTES["usage"]})
    assert report.passed == ("usage",)
