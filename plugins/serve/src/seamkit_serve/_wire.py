"""The chat-completions wire format as the server speaks it: a request body
read into a `ChatRequest` (or an `ApiError` a person can act on), and the
answer written as a completion, as SSE chunks, or as an error, all in
OpenAI's shapes.

An explicit ``null`` is the parameter's absence, as with OpenAI. Request
parameters fall in four groups (the guide lists them):

- honoured: ``model`` (the app's name), ``messages``, ``stream``,
  ``stream_options.include_usage``, ``temperature``, ``max_tokens`` /
  ``max_completion_tokens``, ``response_format`` (`parse_format`), ``user``,
  ``n`` when it is 1, and the client's tools: ``tools`` (functions),
  ``tool_choice`` and ``parallel_tool_calls``, with assistant messages that
  carry ``tool_calls`` and ``tool`` messages (whose ids the server checks:
  `seamkit_serve._handed`);
- passed to the app's model as ``additional_params`` (its hooks may change
  them): ``top_p``, ``frequency_penalty``, ``presence_penalty``, ``seed``,
  ``stop``;
- accepted and not acted on, since they cannot change the answer:
  ``store``, ``metadata`` (checked for OpenAI's shape);
- refused with a 400 that names them and says why (`REFUSED`).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import seamkit

from ._error import ApiError, error_body
from ._format import ResponseFormat, parse_format

__all__ = [
    "ApiError",
    "ChatRequest",
    "Limits",
    "chunk",
    "completion",
    "error_body",
    "json_object",
    "new_id",
    "parse_request",
    "sse",
    "text_of",
    "usage",
]

HONOURED = frozenset(
    {
        "model",
        "messages",
        "stream",
        "stream_options",
        "temperature",
        "max_tokens",
        "max_completion_tokens",
        "user",
        "n",
        "response_format",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
    }
)
ACCEPTED = frozenset({"store", "metadata"})
"""Parameters that cannot change the answer: checked, then not acted on."""
_TOOLS = "this app runs its own tools and does not take a client's"
_LEGACY = "functions are OpenAI's deprecated form of tools: send tools and tool_choice"
_TEXT = "this app answers with text"
TOOL_PARAMETERS = ("tools", "tool_choice", "parallel_tool_calls")
"""What an app whose ``serve.client_tools`` is ``refuse`` refuses (`REFUSED`)."""
REFUSED: dict[str, str] = {
    "tools": _TOOLS,
    "tool_choice": _TOOLS,
    "parallel_tool_calls": _TOOLS,
    "functions": _LEGACY,
    "function_call": _LEGACY,
    "logprobs": "a run may take many model turns, so its tokens have no log-probabilities",
    "top_logprobs": "a run may take many model turns, so its tokens have no log-probabilities",
    "logit_bias": "token ids belong to a model, and the app chooses its model",
    "audio": _TEXT,
    "modalities": _TEXT,
    "prediction": "a predicted output is not used by the app's runs",
    "web_search_options": "the app's tools decide what it looks up",
    "reasoning_effort": "the app's configuration chooses its model's settings",
    "verbosity": "the app's configuration chooses its model's settings",
    "service_tier": "the app's configuration chooses its model's settings",
}
"""OpenAI's parameters the server refuses, each with why."""
_HARMLESS: dict[str, object] = {"logprobs": False}
"""Refused parameters whose value asks for what happens anyway."""
PASSED_ON = frozenset({"top_p", "frequency_penalty", "presence_penalty", "seed", "stop"})
_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})


@dataclass(frozen=True, slots=True)
class Limits:
    """What one request may be."""

    max_body_bytes: int
    max_messages: int
    max_depth: int = 64
    """How deeply a request's JSON may nest arrays and objects."""
    client_tools: bool = True
    """Whether the app takes the client's tools (``serve.client_tools: pass``)."""


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """A valid request: the client's messages and what they asked for."""

    messages: tuple[seamkit.Message, ...]
    stream: bool = False
    include_usage: bool = False
    user: str | None = None
    defaults: seamkit.RequestPatch = field(default_factory=seamkit.RequestPatch)
    response_format: ResponseFormat | None = None
    tools: tuple[seamkit.ToolSpec, ...] = ()
    """The client's own tools (`seamkit.Agent.run`'s ``client_tools``)."""


def _bad(message: str, param: str | None = None, code: str | None = None) -> ApiError:
    return ApiError(400, message, param=param, code=code)


def text_of(content: object, where: str, kinds: frozenset[str] = frozenset({"text"})) -> str:
    """The text of a message's ``content`` (``where`` names the message):
    a string, or a list of text parts whose ``type`` is one of ``kinds``
    (chat's ``text``; the Responses API's ``input_text``, ``output_text``);
    anything else is a 400 naming the part."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _bad(f"{where}.content must be a string or a list of text parts", f"{where}.content")
    texts = []
    for i, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else type(part).__name__
        if not isinstance(part, dict) or not isinstance(kind, str) or kind not in kinds:
            raise _bad(
                f"{where}.content[{i}] is a {kind!r} part; this app takes "
                f"{' and '.join(sorted(kinds))} parts only",
                f"{where}.content",
            )
        text = part.get("text")
        if not isinstance(text, str):
            raise _bad(f"{where}.content[{i}].text must be a string", f"{where}.content")
        texts.append(text)
    return "".join(texts)


def _message(raw: object, index: int, tools: bool) -> seamkit.Message:
    where = f"messages[{index}]"
    if not isinstance(raw, dict):
        raise _bad(f"{where} must be an object with a role and content", where)
    role = raw.get("role")
    calls = raw.get("tool_calls")
    if not tools and (role == "tool" or calls or raw.get("function_call")):
        raise _bad(
            f"{where} is a tool call or a tool result; this app runs its own tools, so a "
            "conversation holds only system, user and assistant messages",
            where,
        )
    if raw.get("function_call") or role == "function":
        raise _bad(f"{where}: {_LEGACY}", where)
    if role not in _ROLES:
        raise _bad(
            f"{where}.role is {role!r}; use one of: system, developer, user, assistant, tool",
            f"{where}.role",
        )
    content = raw.get("content")
    if content is None and role == "assistant":
        content = ""
    text = text_of(content, where)
    if role == "tool":
        call_id = raw.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise _bad(f"{where}.tool_call_id must be the id of the call it answers", where)
        return seamkit.Message.tool(call_id, text)
    if calls:
        if role != "assistant" or not isinstance(calls, list):
            raise _bad(f"{where}.tool_calls must be a list on an assistant message", where)
        made = tuple(_call(c, f"{where}.tool_calls[{i}]") for i, c in enumerate(calls))
        return seamkit.Message.assistant(text or None, made)
    return seamkit.Message(role="system" if role == "developer" else role, content=text)


def _call(raw: object, where: str) -> seamkit.MessageToolCall:
    """One of an assistant message's ``tool_calls``."""
    function = raw.get("function") if isinstance(raw, dict) else None
    call_id = raw.get("id") if isinstance(raw, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    arguments = function.get("arguments", "{}") if isinstance(function, dict) else None
    if not (isinstance(call_id, str) and isinstance(name, str) and isinstance(arguments, str)):
        raise _bad(
            f"{where} must be {{id, type: function, function: {{name, arguments}}}} with "
            "string values",
            where,
        )
    return seamkit.MessageToolCall.make(call_id, name, arguments)


def _tools(raw: object) -> tuple[seamkit.ToolSpec, ...]:
    """The client's ``tools``: functions, each with a name and a JSON Schema."""
    if not isinstance(raw, list):
        raise _bad("tools must be a list of {type: function, function: {...}}", "tools")
    specs: list[seamkit.ToolSpec] = []
    for i, item in enumerate(raw):
        where = f"tools[{i}]"
        if not isinstance(item, dict) or item.get("type") != "function":
            kind = item.get("type") if isinstance(item, dict) else type(item).__name__
            raise _bad(f"{where} is a {kind!r} tool; this server takes function tools", where)
        function = item.get("function")
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
            raise _bad(f"{where}.function.name must be 1 to 64 letters, digits, _ and -", where)
        assert isinstance(function, dict)
        parameters = function.get("parameters") or {"type": "object", "properties": {}}
        description = function.get("description") or ""
        if not isinstance(parameters, dict) or not isinstance(description, str):
            raise _bad(f"{where}.function: parameters must be a JSON Schema object", where)
        if any(s.name == name for s in specs):
            raise _bad(f"{where}: the tool {name!r} is given twice", where)
        specs.append(seamkit.ToolSpec(name=name, description=description, parameters=parameters))
    return tuple(specs)


def _choice(raw: object, tools: tuple[seamkit.ToolSpec, ...]) -> str | None:
    """``tool_choice`` as a run takes it: auto, none, required or a tool's name."""
    if raw is None or (not tools and raw in ("auto", "none")):
        return None  # (without tools: what happens anyway)
    if not tools:
        raise _bad("tool_choice asks for a tool call, but the request has no tools", "tool_choice")
    if raw in ("auto", "none", "required"):
        assert isinstance(raw, str)
        return raw
    function = raw.get("function") if isinstance(raw, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(name, str):
        raise _bad(
            "tool_choice must be auto, none, required or {type: function, function: {name}}",
            "tool_choice",
        )
    if not any(s.name == name for s in tools):
        raise _bad(f"tool_choice names {name!r}, which is not among tools", "tool_choice")
    return name


_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _number(body: dict[str, Any], key: str, low: float, high: float) -> float | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise _bad(f"{key} must be a number from {low:g} to {high:g}, got {value!r}", key)
    return float(value)


def json_object(raw: bytes, limits: Limits, shape: str = "") -> dict[str, Any]:
    """The JSON object a request body holds, or the `ApiError` (413, 400)
    that says what is wrong; ``shape`` shows what the object looks like."""
    if len(raw) > limits.max_body_bytes:
        raise ApiError(
            413,
            f"the request body is {len(raw)} bytes; this server takes at most "
            f"{limits.max_body_bytes}",
            code="request_too_large",
        )
    deep = _bad(
        f"the request body nests arrays and objects more than {limits.max_depth} deep, "
        "the most this server takes",
        code="json_too_deep",
    )
    try:
        body = json.loads(raw)
    except RecursionError:
        raise deep from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise _bad(f"the request body is not JSON: {exc}") from None
    # no more brackets than the limit: no deeper than it (counted at C speed)
    if raw.count(b"[") + raw.count(b"{") > limits.max_depth and _depth(body) > limits.max_depth:
        raise deep
    if not isinstance(body, dict):
        raise _bad(f"the request body must be a JSON object{shape}")
    return body


def _depth(value: object) -> int:
    """How deeply ``value`` nests lists and dicts (walked without recursion)."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, level + 1)
            stack.extend((child, level + 1) for child in item)
    return deepest


def parse_request(raw: bytes, app_name: str, limits: Limits) -> ChatRequest:
    """The request in ``raw``, or the `ApiError` that says what is wrong."""
    body = {k: v for k, v in json_object(raw, limits).items() if v is not None}
    for key, value in _HARMLESS.items():
        if body.get(key) == value and type(body[key]) is type(value):
            del body[key]
    if body.get("modalities") == ["text"]:
        del body["modalities"]
    known = HONOURED | PASSED_ON | ACCEPTED
    refused = sorted(k for k in body if k not in known)
    if refused:
        name = refused[0]
        why = REFUSED.get(name, "it is not a chat-completions parameter this server knows")
        also = f" (also refused: {', '.join(refused[1:])})" if refused[1:] else ""
        raise _bad(f"this app cannot honour {name}: {why}{also}", name, "unsupported_parameter")
    _accepted(body)
    model = body.get("model")
    if model != app_name:
        raise ApiError(
            404,
            f"the model {model!r} does not exist here; this server serves {app_name!r}",
            param="model",
            code="model_not_found",
        )
    if body.get("n", 1) != 1:
        raise _bad("n must be 1: the app answers with one message", "n")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _bad("messages must be a non-empty list of messages", "messages")
    if len(messages) > limits.max_messages:
        raise _bad(
            f"{len(messages)} messages; this server takes at most {limits.max_messages} in "
            "one request (use X-Seamkit-Session and send only the new message)",
            "messages",
            "too_many_messages",
        )
    passed = {k: body[k] for k in sorted(PASSED_ON) if body.get(k) is not None}
    if not limits.client_tools:
        refused = [k for k in TOOL_PARAMETERS if k in body]
        if refused:
            raise _bad(
                f"this app cannot honour {refused[0]}: {_TOOLS} (serve.client_tools: refuse)",
                refused[0],
                "unsupported_parameter",
            )
    parsed = tuple(_message(m, i, limits.client_tools) for i, m in enumerate(messages))
    if parsed[-1].role not in ("user", "tool"):
        raise _bad(
            "the last message must be the user's (or a result of a tool call the server "
            "handed out)",
            f"messages[{len(parsed) - 1}]",
        )
    tools = _tools(body["tools"]) if "tools" in body else ()
    parallel = body.get("parallel_tool_calls")
    if parallel is not None and not isinstance(parallel, bool):
        raise _bad("parallel_tool_calls must be true or false", "parallel_tool_calls")
    if parallel is not None and tools:
        passed["parallel_tool_calls"] = parallel
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise _bad("stream must be true or false", "stream")
    options = body.get("stream_options") or {}
    if not isinstance(options, dict):
        raise _bad("stream_options must be an object", "stream_options")
    limit = body.get("max_completion_tokens", body.get("max_tokens"))
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise _bad(f"the token limit must be a positive integer, got {limit!r}", "max_tokens")
    user = body.get("user")
    if user is not None and not isinstance(user, str):
        raise _bad("user must be a string", "user")
    defaults = seamkit.RequestPatch(
        temperature=_number(body, "temperature", 0, 2),
        max_tokens=limit,
        additional_params=passed or None,
        tool_choice=_choice(body.get("tool_choice"), tools),
    )
    return ChatRequest(
        parsed,
        stream,
        bool(options.get("include_usage")),
        user,
        defaults,
        parse_format(body.get("response_format")),
        tools,
    )


def _accepted(body: dict[str, Any]) -> None:
    """Check ``store`` and ``metadata`` as OpenAI would (a bool; at most 16
    string keys of up to 64 characters with string values of up to 512)."""
    if "store" in body and not isinstance(body["store"], bool):
        raise _bad("store must be true or false", "store")
    metadata = body.get("metadata", {})
    if not (
        isinstance(metadata, dict)
        and len(metadata) <= 16
        and all(
            isinstance(k, str) and len(k) <= 64 and isinstance(v, str) and len(v) <= 512
            for k, v in metadata.items()
        )
    ):
        raise _bad(
            "metadata must be an object of at most 16 string keys (up to 64 characters) "
            "with string values (up to 512)",
            "metadata",
        )


def new_id() -> str:
    """A completion id: ``chatcmpl-`` and 24 hex digits."""
    return f"chatcmpl-{uuid.uuid4().hex[:24]}"


def usage(result: seamkit.Usage) -> dict[str, object]:
    """The usage object; ``prompt_tokens_details.cached_tokens`` counts the
    prompt tokens the model's provider read from its prompt cache."""
    return {
        "prompt_tokens": result.input_tokens,
        "completion_tokens": result.output_tokens,
        "total_tokens": result.total_tokens,
        "prompt_tokens_details": {"cached_tokens": result.cache_read_tokens},
    }


def completion(
    id: str,
    model: str,
    text: str,
    finish: str,
    used: seamkit.Usage,
    extra: dict[str, object] | None = None,
    calls: list[dict[str, object]] | None = None,
) -> dict[str, object]:
    """A whole ``chat.completion``; ``extra``, when given, is its ``seamkit``
    field (what a suspended run waits for); ``calls`` the ``tool_calls``
    handed to the client."""
    message: dict[str, object] = {"role": "assistant", "content": text, "refusal": None}
    if calls:
        message["content"] = text or None
        message["tool_calls"] = calls
    body: dict[str, object] = {
        "id": id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish,
                "logprobs": None,
            }
        ],
        "usage": usage(used),
    }
    if extra is not None:
        body["seamkit"] = extra
    return body


def chunk(
    id: str,
    model: str,
    delta: dict[str, object] | None,
    finish: str | None = None,
    used: seamkit.Usage | None = None,
    *,
    extra: dict[str, object] | None = None,
) -> dict[str, object]:
    """One ``chat.completion.chunk``: a delta (``None`` for the usage chunk,
    whose ``choices`` is empty); ``extra``, when given, is its ``seamkit``
    field."""
    body: dict[str, object] = {
        "id": id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": []
        if delta is None
        else [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
    }
    if used is not None:
        body["usage"] = usage(used)
    if extra is not None:
        body["seamkit"] = extra
    return body


def sse(data: object) -> bytes:
    """One server-sent event carrying ``data`` as JSON."""
    return b"data: " + json.dumps(data, separators=(",", ":")).encode() + b"\n\n"
