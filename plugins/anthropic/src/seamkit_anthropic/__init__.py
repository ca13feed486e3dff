"""seamkit plugin: the ``anthropic`` model provider.

It speaks Anthropic's Messages API (``/v1/messages``), placing prompt-cache
breakpoints where the prompt stays the same from one request to the next::

    model: anthropic:claude-sonnet-4-6   # ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL
    model:
      provider: anthropic
      name: claude-sonnet-4-6
      api_key: ${secret:MY_ANTHROPIC_KEY}
      max_tokens: 8192
      cache: {ttl: 1h}

Importing this module costs next to nothing: the config model (and pydantic)
loads when seamkit registers the provider, the model class when an app
builds a model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import seamkit
from seamkit.plugins import lazy_module

if TYPE_CHECKING:
    from seamkit.plugins import BuildContext, RegisterModel

    from ._config import AnthropicCache as AnthropicCache, AnthropicConfig as AnthropicConfig
    from ._model import AnthropicModel as AnthropicModel

__getattr__, __dir__, __all__ = lazy_module(
    __name__,
    {
        "AnthropicCache": "._config",  # pydantic loads on registration
        "AnthropicConfig": "._config",
        "AnthropicModel": "._model",  # the model loads only when one is built
    },
    defined=["build_model", "register_models"],
)
__seamkit_api__ = 1


def build_model(config: AnthropicConfig, build: BuildContext | None = None) -> AnthropicModel:
    """The model ``config`` describes; with a ``build`` context, its connections
    close with the agent."""
    from ._model import AnthropicModel  # lazy: the model loads only when one is built

    model = AnthropicModel(config)
    if build is not None:
        build.exit_stack.push_async_callback(model.aclose)
    return model


@seamkit.hookimpl
def register_models(register: RegisterModel) -> None:
    """Register the ``anthropic`` provider."""
    from ._config import AnthropicConfig  # lazy: pydantic loads on registration

    register("anthropic", build_model, config=AnthropicConfig)
