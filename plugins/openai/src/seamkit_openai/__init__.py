"""seamkit plugin: the ``openai`` model provider.

It speaks the OpenAI chat-completions wire format, which OpenAI, vLLM,
Ollama, llama.cpp's server, LiteLLM, OpenRouter and the DIAL core all serve::

    model: openai:gpt-4o-mini            # OPENAI_API_KEY, OPENAI_BASE_URL
    model:
      provider: openai
      name: llama3.1
      base_url: http://127.0.0.1:11434/v1
      api_key: ${secret:OLLAMA_KEY}

Importing this module costs next to nothing: the config model (and pydantic)
loads when seamkit registers the provider, httpx when an app builds a model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import seamkit
from seamkit.plugins import lazy_module

if TYPE_CHECKING:
    from seamkit.plugins import BuildContext, RegisterModel

    from ._config import OpenAIConfig as OpenAIConfig
    from ._model import OpenAIModel as OpenAIModel

__getattr__, __dir__, __all__ = lazy_module(
    __name__,
    {
        "OpenAIConfig": "._config",  # pydantic loads on registration
        "OpenAIModel": "._model",  # httpx loads only when a model is built
    },
    defined=["build_model", "register_models"],
)
__seamkit_api__ = 1


def build_model(config: OpenAIConfig, build: BuildContext | None = None) -> OpenAIModel:
    """The model ``config`` describes; with a ``build`` context, its connections
    close with the agent."""
    from ._model import OpenAIModel  # lazy: httpx loads only when a model is built

    model = OpenAIModel(config)
    if build is not None:
        build.exit_stack.push_async_callback(model.aclose)
    return model


@seamkit.hookimpl
def register_models(register: RegisterModel) -> None:
    """Register the ``openai`` provider."""
    from ._config import OpenAIConfig  # lazy: pydantic loads on registration

    register("openai", build_model, config=OpenAIConfig)
