"""A Responses API request (``POST /v1/responses``) translated into the
chat-completions request the chat route runs: ``input`` (text, or items)
and ``instructions`` become its messages, ``text.format`` its
``response_format``, ``max_output_tokens`` its token limit, function tools
its ``tools`` — the chat body is built and read by `parse_request`, so both
routes take the same parameters the same way.

An explicit ``null`` is the parameter's absence. Parameters fall in groups
(the guide lists them): honoured (``model``, ``input``, ``instructions``,
``stream``, ``temperature``, ``top_p``, ``max_output_tokens``, ``text``,
``tools`` and ``tool_choice`` of functions, ``parallel_tool_calls``,
``previous_response_id``, ``store``, ``user``); accepted and not acted on
(``metadata``, echoed; ``safety_identifier``, ``stream_options``,
``truncation: "disabled"``, and ``include: []``, ``background: false``,
``top_logprobs: 0``, which ask for nothing); refused with a reason (`REFUSED`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ._error import ApiError
from ._wire import ChatRequest, Limits, json_object, parse_request, text_of

__all__ = ["REFUSED", "ResponsesRequest", "parse_responses", "renamed"]

_HONOURED = frozenset(
    {
        "model",
        "input",
        "instructions",
        "stream",
        "temperature",
        "top_p",
        "max_output_tokens",
        "text",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "previous_response_id",
        "store",
        "user",
        "metadata",
        "safety_identifier",
        "stream_options",
        "truncation",
    }
)
_SETTINGS = "the app's configuration chooses its model's settings"
REFUSED: dict[str, str] = {
    "background": "a run answers while its request waits; there is no background mode",
    "include": "the answer holds its output items only (no reasoning, logprobs or sources)",
    "reasoning": _SETTINGS,
    "service_tier": _SETTINGS,
    "prompt_cache_key": _SETTINGS,
    "prompt_cache_retention": _SETTINGS,
    "conversation": "a conversation continues with previous_response_id or X-Seamkit-Session",
    "prompt": "the app holds its own prompts; send input and instructions",
    "max_tool_calls": "the app's own limits bound its tool calls",
    "top_logprobs": "a run may take many model turns, so its tokens have no log-probabilities",
    "context_management": "the app's session keeps its context",
}
"""Responses parameters the server refuses, each with why."""
_HARMLESS: dict[str, object] = {"include": [], "background": False, "top_logprobs": 0}
"""Refused parameters whose value asks for what happens anyway (the OpenAI
Agents SDK always sends ``include``, empty unless asked)."""
_BUILT_IN = "a built-in tool runs at OpenAI; this app's own tools decide what it does"
_INPUT_ROLES = frozenset({"user", "system", "developer", "assistant"})
_PARAMS = {"messages": "input", "response_format": "text.format", "max_tokens": "max_output_tokens"}


@dataclass(frozen=True, slots=True)
class ResponsesRequest:
    """A valid Responses request: the chat request it runs as, the response
    it continues (``previous``), whether it is kept (``store``), and what
    the response object echoes back (``echo``)."""

    chat: ChatRequest
    previous: str | None
    store: bool
    echo: dict[str, object]


def _bad(message: str, param: str | None = None, code: str | None = None) -> ApiError:
    return ApiError(400, message, param=param, code=code)


def _string(item: dict[str, Any], key: str, where: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value:
        raise _bad(f"{where}.{key} must be a non-empty string", f"{where}.{key}")
    return value


def _messages(raw: object) -> list[dict[str, Any]]:
    """The chat messages of ``input``: a text is one user message; items are
    messages, function calls (an assistant turn's tool calls) and function
    call outputs (tool messages)."""
    if isinstance(raw, str):
        return [{"role": "user", "content": raw}]
    if not isinstance(raw, list) or not raw:
        raise _bad("input must be a text or a non-empty list of input items", "input")
    out: list[dict[str, Any]] = []
    for i, item in enumerate(raw):
        where = f"input[{i}]"
        if not isinstance(item, dict):
            raise _bad(f"{where} must be an input item object", where)
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            if not isinstance(role, str) or role not in _INPUT_ROLES:
                raise _bad(
                    f"{where}.role is {role!r}; use one of: user, system, developer, assistant",
                    f"{where}.role",
                )
            kinds = frozenset({"output_text"} if role == "assistant" else {"input_text"})
            out.append({"role": role, "content": text_of(item.get("content"), where, kinds)})
        elif kind == "function_call":
            arguments = item.get("arguments") or "{}"
            if not isinstance(arguments, str):
                raise _bad(f"{where}.arguments must be a JSON text", f"{where}.arguments")
            call = {
                "id": _string(item, "call_id", where),
                "type": "function",
                "function": {"name": _string(item, "name", where), "arguments": arguments},
            }
            last = out[-1] if out else None
            if last is not None and last["role"] == "assistant":  # one turn's calls
                last.setdefault("tool_calls", []).append(call)
            else:
                out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            output = item.get("output")
            text = text_of(output, where, frozenset({"input_text"}))
            out.append(
                {"role": "tool", "tool_call_id": _string(item, "call_id", where), "content": text}
            )
        else:
            raise _bad(
                f"{where} is a {kind!r} item; this app takes message, function_call and "
                "function_call_output items",
                f"{where}.type",
            )
    return out


def _format(text: object) -> dict[str, Any] | None:
    """The chat ``response_format`` of ``text.format``."""
    if text is None:
        return None
    if not isinstance(text, dict):
        raise _bad("text must be an object with a format", "text")
    unknown = sorted(k for k, v in text.items() if k != "format" and v is not None)
    if unknown and not (unknown == ["verbosity"] and text.get("verbosity") == "medium"):
        raise _bad(f"this app cannot honour text.{unknown[0]}: {_SETTINGS}", f"text.{unknown[0]}")
    asked = text.get("format")
    if asked is None:
        return None
    if not isinstance(asked, dict):
        raise _bad("text.format must be an object with a type", "text.format")
    if asked.get("type") != "json_schema":
        return dict(asked)
    spec = {k: v for k, v in asked.items() if k != "type"}
    return {"type": "json_schema", "json_schema": spec}


def _tools(raw: object) -> list[dict[str, Any]] | None:
    """Function tools in chat's ``{"type": "function", "function": {...}}``
    form; a built-in tool is refused by its type."""
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise _bad("tools must be a list of tools", "tools")
    out = []
    for i, tool in enumerate(raw):
        where = f"tools[{i}]"
        kind = tool.get("type") if isinstance(tool, dict) else None
        if not isinstance(tool, dict) or kind != "function":
            raise _bad(f"this app cannot honour {where} of type {kind!r}: {_BUILT_IN}", where)
        spec = {
            k: tool[k]
            for k in ("name", "description", "parameters", "strict")
            if tool.get(k) is not None
        }
        out.append({"type": "function", "function": spec})
    return out or None


def _tool_choice(raw: object) -> object:
    """Chat's ``tool_choice`` for a Responses one."""
    if raw is None or isinstance(raw, str):
        return raw
    if isinstance(raw, dict) and raw.get("type") == "function":
        return {"type": "function", "function": {"name": raw.get("name")}}
    kind = raw.get("type") if isinstance(raw, dict) else type(raw).__name__
    raise _bad(
        f"tool_choice {kind!r} names a built-in tool: use auto, none, required, or "
        '{"type": "function", "name": ...}',
        "tool_choice",
    )


def renamed(exc: ApiError) -> ApiError:
    """A chat-route error about the translated request, naming the
    Responses parameter."""
    param = exc.param
    if param is not None:
        head = param.split(".")[0].split("[")[0]
        param = _PARAMS.get(head, param) if head in _PARAMS else param
    return ApiError(exc.status, exc.message, type=exc.type, param=param, code=exc.code)


def parse_responses(raw: bytes, app_name: str, limits: Limits) -> ResponsesRequest:
    """The Responses request in ``raw``, or the `ApiError` that says what is wrong."""
    body = {k: v for k, v in json_object(raw, limits).items() if v is not None}
    for key, value in _HARMLESS.items():
        if body.get(key) == value and type(body[key]) is type(value):
            del body[key]
    if body.get("truncation") == "auto":
        raise _bad(
            "this app cannot honour truncation 'auto': a session that grows past the "
            "model's context is the app's to trim",
            "truncation",
            "unsupported_parameter",
        )
    refused = sorted(k for k in body if k not in _HONOURED)
    if refused:
        name = refused[0]
        why = REFUSED.get(name, "it is not a Responses parameter this server knows")
        also = f" (also refused: {', '.join(refused[1:])})" if refused[1:] else ""
        raise _bad(f"this app cannot honour {name}: {why}{also}", name, "unsupported_parameter")
    messages = _messages(body.get("input"))
    instructions = body.get("instructions")
    if instructions is not None:
        if not isinstance(instructions, str):
            raise _bad("instructions must be a text", "instructions")
        messages.insert(0, {"role": "system", "content": instructions})
    previous = body.get("previous_response_id")
    if previous is not None and not isinstance(previous, str):
        raise _bad("previous_response_id must be a response id", "previous_response_id")
    store = body.get("store", True)
    if not isinstance(store, bool):
        raise _bad("store must be true or false", "store")
    chat: dict[str, Any] = {"model": body.get("model"), "messages": messages}
    for key in ("stream", "temperature", "top_p", "user", "metadata", "parallel_tool_calls"):
        if key in body:
            chat[key] = body[key]
    if "max_output_tokens" in body:
        chat["max_completion_tokens"] = body["max_output_tokens"]
    chat["response_format"] = _format(body.get("text"))
    chat["tools"] = _tools(body.get("tools"))
    chat["tool_choice"] = _tool_choice(body.get("tool_choice"))
    try:
        # (as the client wrote it, not escaped: the body limit sees its size)
        parsed = parse_request(json.dumps(chat, ensure_ascii=False).encode(), app_name, limits)
    except ApiError as exc:
        raise renamed(exc) from None
    echo: dict[str, object] = {
        "instructions": instructions,
        "metadata": body.get("metadata") or {},
        "temperature": body.get("temperature"),
        "top_p": body.get("top_p"),
        "max_output_tokens": body.get("max_output_tokens"),
        "tools": body.get("tools") or [],
        "tool_choice": body.get("tool_choice", "auto"),
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "text": body.get("text") or {"format": {"type": "text"}},
        "previous_response_id": previous,
        "store": store,
        "user": body.get("user"),
    }
    return ResponsesRequest(parsed, previous, store, echo)
