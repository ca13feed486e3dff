"""`OpenAIConfig`: what ``model: {provider: openai, ...}`` may say, and where
the key and the base URL come from when it does not say."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal

import seamkit
from pydantic import Field, field_validator
from seamkit_http import ConnectionSettings

__all__ = ["DEFAULT_BASE_URL", "RESERVED_BODY_KEYS", "OpenAIConfig"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
"""Where requests go when neither ``base_url`` nor ``OPENAI_BASE_URL`` says."""

RESERVED_BODY_KEYS = frozenset({"messages", "stream"})
"""Body keys the provider writes itself; ``extra_body`` and ``additional_params``
may not set them."""


class OpenAIConfig(ConnectionSettings, seamkit.ModelConfig):
    """The ``openai`` provider's configuration: any server that speaks the
    OpenAI chat-completions format (OpenAI, vLLM, Ollama, llama.cpp, LiteLLM,
    OpenRouter).

    ``model: "openai:gpt-4o-mini"`` is the mapping with only ``provider`` and
    ``name``; then ``api_key`` comes from ``OPENAI_API_KEY`` and ``base_url``
    from ``OPENAI_BASE_URL``, as the official client reads them.
    """

    base_url: str | None = Field(
        default=None,
        description="The API's base URL, ending in /v1 for most servers; default: "
        "OPENAI_BASE_URL, else https://api.openai.com/v1.",
    )
    api_key: seamkit.Secret[str] | None = Field(
        default=None,
        description="The API key, best as '${secret:VAR}'; default: OPENAI_API_KEY. "
        "Servers that need no key (a local Ollama or vLLM) work without one.",
    )
    organization: str | None = Field(
        default=None, description="Sent as OpenAI-Organization; default: OPENAI_ORG_ID."
    )
    project: str | None = Field(
        default=None, description="Sent as OpenAI-Project; default: OPENAI_PROJECT_ID."
    )
    token_limit_field: Literal["max_completion_tokens", "max_tokens"] = Field(
        default="max_completion_tokens",
        description="The body field the request's token limit is sent as; 'max_tokens' "
        "for servers that only know that one.",
    )
    stream_usage: bool = Field(
        default=True,
        description="Ask a streamed answer for its token usage "
        "(stream_options.include_usage); turn off for servers that reject it.",
    )
    native_output: bool = Field(
        default=True,
        description="Whether the server takes JSON Schema response formats "
        "(response_format type json_schema); when false, a run's output in mode auto "
        "uses an output tool instead, and mode native is an error.",
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

    def resolved(self, environ: Mapping[str, str] | None = None) -> OpenAIConfig:
        """This config with the key, base URL, organization and project read
        from the environment where it leaves them unset."""
        env = os.environ if environ is None else environ
        updates: dict[str, Any] = {}
        if self.api_key is None and env.get("OPENAI_API_KEY"):
            updates["api_key"] = seamkit.Secret(env["OPENAI_API_KEY"], source="OPENAI_API_KEY")
        if self.base_url is None:
            updates["base_url"] = env.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        if self.organization is None and env.get("OPENAI_ORG_ID"):
            updates["organization"] = env["OPENAI_ORG_ID"]
        if self.project is None and env.get("OPENAI_PROJECT_ID"):
            updates["project"] = env["OPENAI_PROJECT_ID"]
        return self.model_copy(update=updates) if updates else self
