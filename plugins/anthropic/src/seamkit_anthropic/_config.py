"""`AnthropicConfig`: what ``model: {provider: anthropic, ...}`` may say, and
where the key and the base URL come from when it does not say; `AnthropicCache`,
how the provider places prompt-cache breakpoints."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Annotated, Any, Literal

import seamkit
from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator
from seamkit_http import ConnectionSettings

__all__ = [
    "API_VERSION",
    "DEFAULT_BASE_URL",
    "DEFAULT_MAX_TOKENS",
    "MAX_BREAKPOINTS",
    "RESERVED_BODY_KEYS",
    "AnthropicCache",
    "AnthropicConfig",
    "CacheSetting",
]

DEFAULT_BASE_URL = "https://api.anthropic.com"
"""Where requests go when neither ``base_url`` nor ``ANTHROPIC_BASE_URL`` says.
As in the official client, the base URL has no ``/v1``: requests go to
``{base_url}/v1/messages``."""

API_VERSION = "2023-06-01"
"""The ``anthropic-version`` header the provider sends unless told otherwise
(the official client sends the same)."""

DEFAULT_MAX_TOKENS = 4096
"""The answer's token limit when a request sets none: the Messages API requires
one, and every Claude model can produce at least this many."""

MAX_BREAKPOINTS = 4
"""The most ``cache_control`` breakpoints the Messages API takes in one request."""

RESERVED_BODY_KEYS = frozenset({"messages", "stream", "system", "cache_control"})
"""Body keys the provider writes itself from the transcript (and the top-level
``cache_control`` of automatic caching, which would fight the provider's own
breakpoints); ``extra_body`` and ``additional_params`` may not set them."""


class AnthropicCache(BaseModel):
    """How many prompt-cache breakpoints the provider may place, and how long
    a cached prefix lives. ``cache: auto`` is this with its defaults."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    breakpoints: int = Field(
        default=MAX_BREAKPOINTS,
        ge=1,
        le=MAX_BREAKPOINTS,
        description="The most cache_control breakpoints in one request (1 to 4). In "
        "order of priority, the provider places them at the end of the conversation, "
        "at the end of what the previous request already sent, after the system text "
        "and after the tools, and keeps the first ones. ``cache: off`` places none.",
    )
    ttl: Literal["5m", "1h"] = Field(
        default="5m",
        description="How long a cached prefix lives after its last use: '5m' (the "
        "API's default) or '1h' (writing it costs more).",
    )


def _cache_form(value: object) -> str:
    """Which form of ``cache`` a value is in, so a bad mapping is reported
    against the mapping alone (and a bad word against the words alone)."""
    return "mapping" if isinstance(value, Mapping | AnthropicCache) else "word"


CacheSetting = Annotated[
    Annotated[Literal["auto", "off"], Tag("word")] | Annotated[AnthropicCache, Tag("mapping")],
    Discriminator(_cache_form),
]
"""``cache:``: ``auto``, ``off``, or an `AnthropicCache` mapping."""


class AnthropicConfig(ConnectionSettings, seamkit.ModelConfig):
    """The ``anthropic`` provider's configuration: Anthropic's Messages API
    (``/v1/messages``), or a server that speaks it (LiteLLM's proxy).

    ``model: "anthropic:claude-sonnet-4-6"`` is the mapping with only
    ``provider`` and ``name``; then ``api_key`` comes from ``ANTHROPIC_API_KEY``
    and ``base_url`` from ``ANTHROPIC_BASE_URL``, as the official client reads
    them.
    """

    base_url: str | None = Field(
        default=None,
        description="The API's base URL, without /v1 (requests go to "
        "{base_url}/v1/messages); default: ANTHROPIC_BASE_URL, else "
        "https://api.anthropic.com.",
    )
    api_key: seamkit.Secret[str] | None = Field(
        default=None,
        description="The API key, sent as x-api-key, best as '${secret:VAR}'; default: "
        "ANTHROPIC_API_KEY.",
    )
    api_version: str = Field(
        default=API_VERSION,
        min_length=1,
        description="Sent as the anthropic-version header.",
    )
    max_tokens: int = Field(
        default=DEFAULT_MAX_TOKENS,
        gt=0,
        description="The answer's token limit when the request sets none (the Messages "
        "API requires one).",
    )
    native_output: bool = Field(
        default=False,
        description="Whether to ask the model for structured output natively "
        "(output_config with a json_schema format); when false, a run's output in mode "
        "auto uses an output tool instead, and mode native is an error.",
    )
    parallel_tool_calls: bool = Field(
        default=True,
        description="Whether the model may ask for several tool calls in one answer; "
        "false sends disable_parallel_tool_use (so does additional_params "
        "parallel_tool_calls: false).",
    )
    cache: CacheSetting = Field(
        default="auto",
        description="Prompt caching: 'auto' places up to four cache_control breakpoints "
        "where the prompt stays the same from one request to the next (in order of "
        "priority: at the end of the conversation, at the end of what the previous "
        "request sent, after the system text, after the tools); 'off' places none; a "
        "mapping {breakpoints, ttl} keeps the first breakpoints or sets how long the "
        "cache lives.",
    )

    @field_validator("extra_body")
    @classmethod
    def _not_reserved(cls, value: dict[str, Any]) -> dict[str, Any]:
        reserved = sorted(RESERVED_BODY_KEYS & value.keys())
        if reserved:
            raise ValueError(
                f"extra_body may not set {', '.join(reserved)}: the provider writes them"
            )
        return value

    @property
    def cache_plan(self) -> AnthropicCache | None:
        """The caching this config asks for: ``None`` for ``off``, the defaults
        for ``auto``."""
        if self.cache == "off":
            return None
        if self.cache == "auto":
            return AnthropicCache()
        return self.cache

    def resolved(self, environ: Mapping[str, str] | None = None) -> AnthropicConfig:
        """This config with the key and the base URL read from the environment
        where it leaves them unset."""
        env = os.environ if environ is None else environ
        updates: dict[str, Any] = {}
        if self.api_key is None and env.get("ANTHROPIC_API_KEY"):
            updates["api_key"] = seamkit.Secret(
                env["ANTHROPIC_API_KEY"], source="ANTHROPIC_API_KEY"
            )
        if self.base_url is None:
            updates["base_url"] = env.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL
        return self.model_copy(update=updates) if updates else self
