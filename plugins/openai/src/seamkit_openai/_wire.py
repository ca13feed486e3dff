"""The request body: a patched `ModelRequest` in the chat-completions format.

- ``preamble`` is the first message, role ``system``;
- ``extra_context`` documents are appended to that system message (one
  system message, first, is what every server's chat template accepts), as::

      <documents>
      <document id="...">
      text
      </document>
      </documents>

  with a ``<metadata>{json}</metadata>`` line first inside a document that
  has metadata;
- ``temperature``; the token limit as ``max_completion_tokens`` (or
  ``max_tokens``, by ``token_limit_field``); ``tool_choice`` as the string, or
  ``{"type": "function", "function": {"name": ...}}`` for a tool's name;
  ``tools`` as functions (left out, with ``tool_choice``, when there are none);
- a run's declared output in ``native`` mode (``request.output``) as
  ``response_format: {"type": "json_schema", "json_schema": {"name", "schema",
  "strict", "description"}}`` (``description`` only when set); in ``tool`` and
  ``prompted`` mode no ``response_format`` (the output tool is among ``tools``,
  the schema in the preamble); with ``native_output: false`` a native request
  is an error, as the server takes no JSON Schema response format;
- an assistant message's content parts OpenAI's format does not have
  (another provider's thinking blocks, say) are left out, and content left
  with text parts only goes as one string, so a transcript recorded with
  another provider can be sent here;
- then the config's ``extra_body``, then the request's ``additional_params``
  (a later one wins; neither may set ``messages`` or ``stream``).
"""

from __future__ import annotations

from typing import Any

import seamkit
from seamkit.plugins import render_documents

from ._config import RESERVED_BODY_KEYS, OpenAIConfig

__all__ = ["request_body", "response_format"]

_PLAIN_CHOICES = frozenset({"auto", "none", "required"})
_OPENAI_PARTS = frozenset({"text", "image_url", "input_audio", "file", "refusal"})


def _message(message: seamkit.Message) -> dict[str, Any]:
    """The message as OpenAI's format has it: an assistant message without
    the content parts OpenAI does not know (as one string when only text
    parts are left)."""
    wire = message.to_openai()
    if message.role != "assistant" or not isinstance(message.content, list):
        return wire
    parts = [p for p in message.content if p.get("type") in _OPENAI_PARTS]
    if len(parts) == len(message.content):
        return wire  # nothing to drop: the content goes as it is
    if all(p.get("type") == "text" for p in parts):
        wire["content"] = "".join(str(p.get("text", "")) for p in parts)
    else:
        wire["content"] = parts
    return wire


def _system(request: seamkit.ModelRequest) -> str | None:
    if not request.extra_context:
        return request.preamble
    documents = render_documents(request.extra_context)
    return f"{request.preamble}\n\n{documents}" if request.preamble else documents


def response_format(output: seamkit.OutputSpec, config: OpenAIConfig) -> dict[str, Any]:
    """The ``response_format`` that asks the server for ``output`` (native
    mode). Raises `seamkit.ModelError` when the config says the server takes
    none (``native_output: false``)."""
    if not config.native_output:
        raise seamkit.ModelError(
            f"the run asks model {config.name!r} for native structured output, but its "
            "config says native_output: false (the server takes no json_schema "
            "response_format)",
            provider="openai",
            hint="declare the output with mode 'tool' or 'prompted' (or 'auto'), or set "
            "native_output: true if the server does take json_schema response formats",
        )
    schema: dict[str, Any] = {
        "name": output.name,
        "schema": output.json_schema,
        "strict": output.strict,
    }
    if output.description is not None:
        schema["description"] = output.description
    return {"type": "json_schema", "json_schema": schema}


def request_body(
    request: seamkit.ModelRequest, config: OpenAIConfig, *, stream: bool
) -> dict[str, Any]:
    """The JSON body for ``POST {base_url}/chat/completions``. Raises
    `seamkit.ModelError` when ``additional_params`` sets a reserved field."""
    messages: list[dict[str, Any]] = []
    system = _system(request)
    if system is not None:
        messages.append({"role": "system", "content": system})
    messages.extend(_message(m) for m in request.messages)
    body: dict[str, Any] = {"model": config.name, "messages": messages}
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.max_tokens is not None:
        body[config.token_limit_field] = request.max_tokens
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in request.tools
        ]
        choice = request.tool_choice
        if choice is not None:
            body["tool_choice"] = (
                choice
                if choice in _PLAIN_CHOICES
                else {"type": "function", "function": {"name": choice}}
            )
    if request.output is not None and request.output.mode == "native":
        body["response_format"] = response_format(request.output, config)
    if stream:
        body["stream"] = True
        if config.stream_usage:
            body["stream_options"] = {"include_usage": True}
    body.update(config.extra_body)
    if request.additional_params:
        reserved = sorted(RESERVED_BODY_KEYS & request.additional_params.keys())
        if reserved:
            raise seamkit.ModelError(
                f"additional_params may not set {', '.join(reserved)}: the openai provider "
                "writes them",
                provider="openai",
            )
        body.update(request.additional_params)
    return body
