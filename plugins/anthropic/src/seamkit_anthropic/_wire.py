"""The request side of the wire: a `seamkit.ModelRequest` as the JSON body of
Anthropic's ``POST /v1/messages``.

(A stub: text-only messages. The full mapping — tools, tool results, system
blocks, documents, ``tool_choice``, cache breakpoints — replaces it.)"""

from __future__ import annotations

from typing import Any

import seamkit

from ._config import AnthropicConfig

__all__ = ["request_body"]


def request_body(
    request: seamkit.ModelRequest, config: AnthropicConfig, *, stream: bool
) -> dict[str, Any]:
    """The JSON body that asks ``config``'s model for ``request``'s answer."""
    body: dict[str, Any] = {
        "model": config.name,
        "max_tokens": request.max_tokens or config.max_tokens,
    }
    if request.preamble:
        body["system"] = [{"type": "text", "text": request.preamble}]
    body["messages"] = [
        {"role": m.role, "content": [{"type": "text", "text": m.text}]}
        for m in request.messages
        if m.role in ("user", "assistant")
    ]
    if stream:
        body["stream"] = True
    return body
