"""The request side of the wire: a `seamkit.ModelRequest` as the JSON body of
Anthropic's ``POST /v1/messages``.

The body, in this key order: ``model``, ``max_tokens`` (the request's, else
the config's), ``temperature``, ``tools`` (``{name, description,
input_schema}`` in request order), ``tool_choice`` (``auto``, ``required`` as
``any``, ``none``, a tool's name as ``{"type": "tool", "name"}``),
``system`` (always a block list), ``messages``, ``output_config`` (native
structured output), ``stream``; then the config's ``extra_body`` and the
request's ``additional_params``, a later one winning (neither may set
``messages``, ``stream``, ``system`` or ``cache_control``).

Mapping choices
---------------

- **System text.** ``system`` is the preamble block, then one block per
  *leading* system message (before any user or assistant message), then the
  documents (``extra_context``) as one more block, rendered exactly as the
  openai provider renders them. A system message *after* the conversation
  started becomes user text ``<system>…</system>`` where it stood, so
  nothing before it moves.
- **Messages.** Consecutive messages of one role merge into one turn (the
  API wants user and assistant to alternate); tool results become
  ``tool_result`` blocks of a user turn, first in it (the API wants them
  first), ``is_error`` when the result was an error. An assistant message
  gives its content's blocks in their order (the API wants a turn with
  thinking echoed exactly, interleaved thinking included): a text part as a
  text block, a ``{"type": "tool_use", "id"}`` stand-in as that call's
  ``tool_use`` block, OpenAI's other parts (``image_url``, ``input_audio``,
  ``file``, ``refusal``: another provider's transcript) left out, and any
  other part (thinking, redacted thinking, ...) verbatim, less a
  ``cache_control`` one carries (the provider places the breakpoints); then
  the calls no stand-in placed, in order. An
  assistant message with nothing to send (no text, parts or calls) is left
  out (so is a user message without text); a transcript that starts with an
  assistant turn, or ends with one, is refused (seamkit never prefills).
- **Stand-in tools.** The API refuses ``tool_use`` and ``tool_result``
  blocks in a request that defines no tools; when the request has none (an app
  without tools whose hook injected a result), each tool name the transcript
  calls is declared with an empty schema, in the order of first use, and
  ``tool_choice`` is ``none``.
- **``_raw_arguments``.** A tool call's ``input`` is its arguments parsed;
  arguments that are not a JSON object (another provider's transcript, an
  answer cut short) go as ``{"_raw_arguments": "<the text>"}``: the same
  text always gives the same bytes.
- **Ids.** Tool-call ids must match ``^[a-zA-Z0-9_-]+$``. Others are
  rewritten, the same way in ``tool_use`` and ``tool_result``: every other
  character becomes ``_`` and ``_`` plus 6 hex digits of the id's sha256 are
  appended (no randomness, so the bytes repeat request after request). Tool
  names are never rewritten: a name the API refuses is an error naming it.
- **Cache breakpoints** (`place_breakpoints`). Candidates, in priority
  order: **E**, the last cacheable block of the messages (it writes this
  request's prefix); **P**, the last cacheable block before the last
  assistant message the model wrote (not an injected pair: its calls' ids
  start with `seamkit.injection.PREFIX` and it has no text) — under
  ``placement: stable`` that is the block that was E in the request before,
  an exact cache hit; **S**, the last system block before the documents (the
  preamble, or the leading system messages after it: documents change from
  request to request, so never them); **T**, the last tool. ``cache: auto``
  places all that exist, ``{breakpoints: N}`` the first N of E, P, S, T,
  ``off`` none. Never on thinking blocks, empty text, the documents or a
  ``<system>`` block. Each is ``{"type": "ephemeral"}``, with ``"ttl": "1h"``
  only when the config says ``1h`` (5 minutes is the API's default).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

import seamkit
from seamkit.injection import PREFIX
from seamkit.plugins import render_documents

from ._config import RESERVED_BODY_KEYS, AnthropicCache, AnthropicConfig

__all__ = ["Layout", "place_breakpoints", "request_body", "wire_id"]

_TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,128}")
_ID = re.compile(r"[a-zA-Z0-9_-]+")
_ID_BAD = re.compile(r"[^a-zA-Z0-9_-]")
_DATA_URL = re.compile(r"data:([^;,]+);base64,(.*)", re.DOTALL)
_FORCED = frozenset({"any", "tool"})
_PARALLEL_PARAM = "parallel_tool_calls"
_OPENAI_PARTS = frozenset({"image_url", "input_audio", "file", "refusal"})
"""OpenAI's assistant content parts other than text (another provider's
transcript): the API does not know them, so they are left out."""


def wire_id(call_id: str) -> str:
    """``call_id`` as the API accepts it: unchanged when it matches
    ``^[a-zA-Z0-9_-]+$``, else with every other character as ``_`` and ``_``
    plus 6 hex digits of its sha256 appended (the same id, the same answer)."""
    if _ID.fullmatch(call_id):
        return call_id
    digest = hashlib.sha256(call_id.encode()).hexdigest()[:6]
    return f"{_ID_BAD.sub('_', call_id)}_{digest}"


def _error(text: str, hint: str | None = None) -> seamkit.ModelError:
    return seamkit.ModelError(text, provider="anthropic", hint=hint)


def _check_tool_name(name: str) -> None:
    if not _TOOL_NAME.fullmatch(name):
        raise _error(
            f"tool name {name!r} is not one the Anthropic API accepts "
            "(1 to 128 letters, digits, '_' or '-')",
            hint="rename the tool",
        )


@dataclass
class Layout:
    """The body's blocks as `request_body` builds them, with what
    `place_breakpoints` must know about them that the blocks do not say."""

    tools: list[dict[str, Any]] = field(default_factory=list)
    system: list[dict[str, Any]] = field(default_factory=list)
    stable_system: int | None = None
    """Index in ``system`` of the last block before the documents."""
    messages: list[dict[str, Any]] = field(default_factory=list)
    model_written: list[bool] = field(default_factory=list)
    """Per wire message: an assistant turn the model wrote (not only injected pairs)."""
    barred: set[int] = field(default_factory=set)
    """``id()`` of blocks that never carry a breakpoint (``<system>`` text)."""
    stand_ins: bool = False
    """Whether ``tools`` are stand-ins for the transcript's tools (the request
    has none of its own)."""


def _cacheable(block: dict[str, Any], layout: Layout) -> bool:
    kind = block.get("type")
    if kind in ("thinking", "redacted_thinking"):
        return False
    if kind == "text" and not block.get("text"):
        return False
    return id(block) not in layout.barred


def _last_cacheable(layout: Layout, end: int) -> tuple[int, int] | None:
    for i in range(end - 1, -1, -1):
        content = layout.messages[i]["content"]
        for j in range(len(content) - 1, -1, -1):
            if _cacheable(content[j], layout):
                return i, j
    return None


def place_breakpoints(layout: Layout, cache: AnthropicCache | None) -> None:
    """Mark the layout's breakpoint blocks with ``cache_control`` (E, P, S, T
    as the module says; none when ``cache`` is ``None``)."""
    if cache is None:
        return
    marker: dict[str, str] = {"type": "ephemeral"}
    if cache.ttl == "1h":
        marker["ttl"] = "1h"
    chosen: list[dict[str, Any]] = []
    end = _last_cacheable(layout, len(layout.messages))
    if end is not None:
        chosen.append(layout.messages[end[0]]["content"][end[1]])
    written = [i for i, w in enumerate(layout.model_written) if w]
    if written:
        previous = _last_cacheable(layout, written[-1])
        if previous is not None:
            chosen.append(layout.messages[previous[0]]["content"][previous[1]])
    if layout.stable_system is not None:
        chosen.append(layout.system[layout.stable_system])
    if layout.tools:
        chosen.append(layout.tools[-1])
    unique: list[dict[str, Any]] = []
    for block in chosen:
        if all(block is not seen for seen in unique):
            unique.append(block)
    for block in unique[: cache.breakpoints]:
        block["cache_control"] = dict(marker)


def _user_blocks(message: seamkit.Message) -> list[dict[str, Any]]:
    content = message.content
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks: list[dict[str, Any]] = []
    for part in content:
        kind = part.get("type")
        if kind == "text":
            blocks.extend(_text_block(part))
        elif kind == "image_url":
            blocks.append(_image(part))
        else:
            raise _error(
                f"a user message has a content part of type {kind!r}, which the anthropic "
                "provider does not send (it sends text and image_url parts)",
                hint="send the content as text or an image",
            )
    return blocks


def _text_block(part: dict[str, Any]) -> list[dict[str, Any]]:
    """A text part as a text block; none for empty text, which the API refuses."""
    text = str(part.get("text", ""))
    return [{"type": "text", "text": text}] if text else []


def _image(part: dict[str, Any]) -> dict[str, Any]:
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, dict) else image
    if not isinstance(url, str):
        raise _error("an image_url content part has no url")
    match = _DATA_URL.fullmatch(url)
    if match:
        source = {"type": "base64", "media_type": match.group(1), "data": match.group(2)}
    elif url.startswith(("http://", "https://")):
        source = {"type": "url", "url": url}
    else:
        raise _error(
            f"an image_url content part has a url the Anthropic API does not take: {url[:40]!r}",
            hint="use a base64 data: URL or an http(s) URL",
        )
    return {"type": "image", "source": source}


def _tool_input(arguments: str) -> dict[str, Any]:
    try:
        parsed = json.loads(arguments) if arguments.strip() else {}
    except (ValueError, RecursionError):  # RecursionError: nested past Python's stack
        parsed = None
    if isinstance(parsed, dict):
        return parsed
    return {"_raw_arguments": arguments}


def _tool_use(call: seamkit.MessageToolCall) -> dict[str, Any]:
    _check_tool_name(call.function.name)
    return {
        "type": "tool_use",
        "id": wire_id(call.id),
        "name": call.function.name,
        "input": _tool_input(call.function.arguments),
    }


def _assistant_blocks(message: seamkit.Message) -> tuple[list[dict[str, Any]], bool]:
    """The message's blocks in its content's order, and whether the model
    wrote it (it is not an injected pair)."""
    calls = {call.id: call for call in message.tool_calls or ()}
    blocks: list[dict[str, Any]] = []
    content = message.content
    if isinstance(content, list):
        for part in content:
            kind = part.get("type")
            if kind == "text":
                blocks.extend(_text_block(part))
            elif kind == "tool_use":  # a call's stand-in: the call, in its place
                call = calls.pop(str(part.get("id")), None)
                if call is not None:
                    blocks.append(_tool_use(call))
            elif kind not in _OPENAI_PARTS:
                blocks.append({k: v for k, v in part.items() if k != "cache_control"})
    elif content:
        blocks.append({"type": "text", "text": content})
    blocks.extend(_tool_use(call) for call in calls.values())
    calls_only = all(b["type"] == "tool_use" for b in blocks)
    injected = (
        bool(message.tool_calls)
        and calls_only
        and all(call.id.startswith(PREFIX) for call in message.tool_calls or ())
    )
    return blocks, not injected


def _tool_result(message: seamkit.Message) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": wire_id(message.tool_call_id or ""),
    }
    text = message.text
    if text:
        block["content"] = text
    if message.is_error:
        block["is_error"] = True
    return block


def _layout(request: seamkit.ModelRequest) -> Layout:
    layout = Layout()
    for tool in request.tools:
        _check_tool_name(tool.name)
        layout.tools.append(
            {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}
        )
    if request.preamble:
        layout.system.append({"type": "text", "text": request.preamble})
    messages = request.messages
    start = 0
    while start < len(messages) and messages[start].role == "system":
        text = messages[start].text
        if text:
            layout.system.append({"type": "text", "text": text})
        start += 1
    if layout.system:
        layout.stable_system = len(layout.system) - 1
    if request.extra_context:
        layout.system.append({"type": "text", "text": render_documents(request.extra_context)})
    for message in messages[start:]:
        written = False
        if message.role == "assistant":
            role = "assistant"
            blocks, written = _assistant_blocks(message)
        elif message.role == "tool":
            role, blocks = "user", [_tool_result(message)]
        elif message.role == "system":
            role = "user"
            blocks = [{"type": "text", "text": f"<system>{message.text}</system>"}]
            layout.barred.add(id(blocks[0]))
        else:
            role, blocks = "user", _user_blocks(message)
        if not blocks:
            continue
        if layout.messages and layout.messages[-1]["role"] == role:
            layout.messages[-1]["content"].extend(blocks)
            layout.model_written[-1] = layout.model_written[-1] or written
        else:
            layout.messages.append({"role": role, "content": blocks})
            layout.model_written.append(written)
    for turn in layout.messages:
        if turn["role"] == "user":
            content = turn["content"]
            turn["content"] = [b for b in content if b["type"] == "tool_result"] + [
                b for b in content if b["type"] != "tool_result"
            ]
    if not layout.tools:
        _stand_in_tools(layout)
    if layout.messages and layout.messages[0]["role"] == "assistant":
        raise _error(
            "the conversation starts with an assistant message (after leaving out empty "
            "messages); the Messages API needs a user message first",
            hint="start the messages with a user message that has text",
        )
    if layout.messages and layout.messages[-1]["role"] == "assistant":
        raise _error(
            "the conversation ends with an assistant message; the anthropic provider "
            "does not prefill an answer",
            hint="end the messages with a user message (or a tool result)",
        )
    return layout


def _stand_in_tools(layout: Layout) -> None:
    """Tools for a transcript with tool calls in a request without tools: the
    API refuses ``tool_use`` and ``tool_result`` blocks in a request that
    defines no tools (an app without tools whose hook injects a result, say),
    so each tool name the transcript calls gets an empty stand-in, in the order
    of first use; ``tool_choice`` is then ``none``."""
    names: dict[str, None] = {}
    for turn in layout.messages:
        for block in turn["content"]:
            if block["type"] == "tool_use":
                names.setdefault(block["name"], None)
    layout.tools = [
        {
            "name": name,
            "description": "Not available now; its results in the conversation stand.",
            "input_schema": {"type": "object", "properties": {}},
        }
        for name in names
    ]
    layout.stand_ins = bool(layout.tools)


def _tool_choice(choice: str | None, parallel: bool) -> dict[str, Any] | None:
    if choice is None:
        return None if parallel else {"type": "auto", "disable_parallel_tool_use": True}
    if choice == "none":
        return {"type": "none"}
    if choice in ("auto", "required"):
        out: dict[str, Any] = {"type": "auto" if choice == "auto" else "any"}
    else:
        _check_tool_name(choice)
        out = {"type": "tool", "name": choice}
    if not parallel:
        out["disable_parallel_tool_use"] = True
    return out


def _output_config(output: seamkit.OutputSpec, config: AnthropicConfig) -> dict[str, Any]:
    if not config.native_output:
        raise _error(
            f"the run asks model {config.name!r} for native structured output, but its "
            "config says native_output: false",
            hint="declare the output with mode 'tool' or 'prompted' (or 'auto'), or set "
            "native_output: true for a model that takes output_config json_schema formats",
        )
    return {"format": {"type": "json_schema", "schema": output.json_schema}}


def _extras(config: AnthropicConfig, request: seamkit.ModelRequest) -> tuple[dict[str, Any], bool]:
    """The config's ``extra_body`` then the request's ``additional_params``,
    without OpenAI's ``parallel_tool_calls`` (consumed: whether parallel tool
    use stays on)."""
    reserved = sorted(RESERVED_BODY_KEYS & request.additional_params.keys())
    if reserved:
        raise _error(
            f"additional_params may not set {', '.join(reserved)}: the anthropic provider "
            "writes them"
        )
    merged = {**config.extra_body, **request.additional_params}
    parallel = config.parallel_tool_calls
    if _PARALLEL_PARAM in merged:
        parallel = parallel and merged.pop(_PARALLEL_PARAM) is not False
    return merged, parallel


def _check_forced_with_thinking(body: dict[str, Any]) -> None:
    thinking = body.get("thinking")
    choice = body.get("tool_choice")
    if (
        isinstance(thinking, dict)
        and thinking.get("type") == "enabled"
        and isinstance(choice, dict)
        and choice.get("type") in _FORCED
    ):
        raise _error(
            "the request forces a tool call (tool_choice "
            f"{choice.get('type')!r}) with thinking type 'enabled', which the Anthropic "
            "API refuses",
            hint="declare the run's output with mode 'native' (native_output: true) or "
            "'prompted', or use thinking type 'adaptive'",
        )


def request_body(
    request: seamkit.ModelRequest, config: AnthropicConfig, *, stream: bool
) -> dict[str, Any]:
    """The JSON body that asks ``config``'s model for ``request``'s answer.
    Raises `seamkit.ModelError` for what the API would refuse (a bad tool
    name, a user content part it does not take, a reserved key in
    ``additional_params``, a forced tool with thinking enabled, a transcript
    ending with an assistant message)."""
    layout = _layout(request)
    extras, parallel = _extras(config, request)
    place_breakpoints(layout, config.cache_plan)
    body: dict[str, Any] = {
        "model": config.name,
        "max_tokens": request.max_tokens or config.max_tokens,
    }
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if layout.tools:
        body["tools"] = layout.tools
        choice = (
            {"type": "none"} if layout.stand_ins else _tool_choice(request.tool_choice, parallel)
        )
        if choice is not None:
            body["tool_choice"] = choice
    if layout.system:
        body["system"] = layout.system
    body["messages"] = layout.messages
    if request.output is not None and request.output.mode == "native":
        body["output_config"] = _output_config(request.output, config)
    if stream:
        body["stream"] = True
    body.update(extras)
    _check_forced_with_thinking(body)
    return body
