"""`AnthropicModel`: the `seamkit.Model` that asks Anthropic's Messages API.

For now a skeleton: it resolves its config and the request headers, and its
``complete`` and ``stream`` fail with a `seamkit.ModelError` saying the wire
mapping is not implemented yet (issue 33)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from importlib.metadata import version

import seamkit
from seamkit.stream import ToolArgumentsDelta

from ._config import AnthropicConfig

__all__ = ["AnthropicModel", "messages_url"]

_NOT_YET_HINT = (
    "until it is, the openai provider reaches Claude through Anthropic's "
    "OpenAI-compatible endpoint: model: {provider: openai, name: <model>, "
    "base_url: https://api.anthropic.com/v1, api_key: ${secret:ANTHROPIC_API_KEY}}"
)


def messages_url(base_url: str) -> str:
    """The Messages endpoint under ``base_url``: ``{base_url}/v1/messages``, and
    a base URL that already ends in ``/v1`` is taken as meant."""
    base = base_url.rstrip("/")
    if base.endswith("/v1"):
        base = base[: -len("/v1")]
    return f"{base}/v1/messages"


class AnthropicModel:
    """A Claude model behind Anthropic's ``/v1/messages``.

    ``complete`` and ``stream`` are not implemented yet: both raise a
    `seamkit.ModelError` that says so. Use ``async with`` (or `aclose`) as
    with any provider's model; an agent built from a manifest closes it with
    itself.

    ``output_modes`` says which structured-output modes it will serve:
    ``tool`` and ``prompted``, and ``native`` when the config says
    ``native_output: true``.
    """

    def __init__(self, config: AnthropicConfig) -> None:
        self.config = config.resolved()
        self.output_modes: frozenset[str] = frozenset(
            {"tool", "prompted", "native"} if self.config.native_output else {"tool", "prompted"}
        )
        base_url = (self.config.base_url or "").rstrip("/")
        self.url = messages_url(base_url)
        self.where = f"anthropic provider at {base_url}"
        self._secrets = seamkit.plugins.secret_texts(self.config)
        self._headers = self._make_headers()

    def _make_headers(self) -> dict[str, str]:
        config = self.config
        headers = {
            "content-type": "application/json",
            "accept": "application/json",
            "anthropic-version": config.api_version,
            "user-agent": f"seamkit-anthropic/{version('seamkit-anthropic')}",
        }
        if config.api_key is not None:
            headers["x-api-key"] = config.api_key.get_secret_value()
        for name, value in config.headers.items():
            plain = value.get_secret_value() if isinstance(value, seamkit.Secret) else value
            headers[name.lower()] = plain
        return headers

    def __repr__(self) -> str:
        return f"AnthropicModel({self.config.name!r}, base_url={self.config.base_url!r})"

    async def aclose(self) -> None:
        """Close the pooled connections (none are opened yet)."""

    async def __aenter__(self) -> AnthropicModel:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _not_yet(self, what: str) -> seamkit.ModelError:
        return seamkit.ModelError(
            f"{self.where} (model {self.config.name!r}): {what} is not implemented yet "
            "(seamkit issue 33 builds the Messages API wire mapping)",
            provider="anthropic",
            hint=_NOT_YET_HINT,
        )

    async def complete(self, request: seamkit.ModelRequest) -> seamkit.ModelTurn:
        """The whole answer to ``request``, as one turn; not implemented yet."""
        raise self._not_yet("asking for a whole answer")

    async def stream(
        self, request: seamkit.ModelRequest
    ) -> AsyncIterator[str | ToolArgumentsDelta | seamkit.ModelTurn]:
        """The answer's text and tool-call fragments as they arrive, then the
        turn; not implemented yet."""
        raise self._not_yet("streaming an answer")
        yield  # an async generator, as the streaming protocol is
