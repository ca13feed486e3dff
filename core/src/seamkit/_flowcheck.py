"""What is wrong with the payload of a flow a hook returned, checked where the
dispatcher receives it.

The flow types are plain frozen dataclasses (cheap to build, importable without
pydantic), so ``Skip(None)`` or ``RewriteMessages([1, 2, 3])`` can be built; this
module says what is malformed in words that name the field, so that the
dispatcher can fail the run closed naming the hook and the event, instead of a
pydantic or ``TypeError`` text from deep inside the run (or a session that
cannot be saved).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError
from pydantic_core import to_json

from . import flow as F
from ._patch import RequestPatch
from ._types import Document, FunctionCall, Message, MessageToolCall

__all__ = ["message_problem", "payload_problem"]


def payload_problem(flow: object) -> str | None:
    """What is malformed in ``flow``'s payload (``"reason is int, not str"``),
    or ``None`` when it is well-formed. ``flow`` is one of the `seamkit.flow`
    types; any other value has no payload to check."""
    check = _CHECKS.get(type(flow))
    return None if check is None else check(flow)


def _kind(value: object) -> str:
    return "None" if value is None else type(value).__name__


def _text(value: object, field: str, *, optional: bool = False) -> str | None:
    if isinstance(value, str) or (optional and value is None):
        return None
    return f"{field} is {_kind(value)}, not str" + (" or None" if optional else "")


def _count(value: object, field: str) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return None
    return f"{field} is {value!r}, not a count of characters (an int, 0 or more)"


def _arguments(value: object, field: str, *, optional: bool = False) -> str | None:
    if optional and value is None:
        return None
    if not isinstance(value, Mapping):
        return f"{field} is {_kind(value)}, not a dict"
    for key in value:
        if not isinstance(key, str):
            return f"{field} has a key of type {_kind(key)}; its keys must be str"
    return None


_ROLES = frozenset({"system", "user", "assistant", "tool"})


def _plain(message: Message) -> bool:
    """Whether ``message`` is certainly well-formed, by a few cheap checks
    (text content, well-typed tool calls): the usual case, on every turn."""
    role, calls, answers = message.role, message.tool_calls, message.tool_call_id
    if type(role) is not str or role not in _ROLES:
        return False
    if message.content is not None and type(message.content) is not str:
        return False
    if message.name is not None and type(message.name) is not str:
        return False
    if (role == "tool") != (type(answers) is str and answers != ""):
        return False
    if role != "tool" and answers is not None:
        return False
    if calls is None:
        return True
    if role != "assistant" or type(calls) is not tuple:
        return False
    return all(
        type(c) is MessageToolCall
        and type(c.id) is str
        and type(c.function) is FunctionCall
        and type(c.function.name) is str
        and type(c.function.arguments) is str
        for c in calls
    )


def message_problem(message: object, field: str) -> str | None:
    """What is wrong with ``message`` as a `Message` of a transcript: not one,
    a field pydantic would reject (one built with ``model_construct``), or
    content parts that cannot be written as JSON (a session could not save)."""
    if not isinstance(message, Message):
        return f"{field} is {_kind(message)}, not a Message"
    if _plain(message):
        return None
    try:
        Message.model_validate({name: getattr(message, name) for name in Message.model_fields})
    except ValidationError as exc:
        first = exc.errors()[0]
        return f"{field} is not a valid Message: {first['msg']}"
    if isinstance(message.content, list):
        try:
            to_json(message.content)
        except Exception as exc:  # a part holding something JSON cannot write
            return f"{field} has content parts that are not JSON: {type(exc).__name__}"
    return None


def _messages(value: object, field: str) -> str | None:
    if not isinstance(value, tuple):
        return f"{field} is {_kind(value)}, not a list of Message"
    for i, message in enumerate(value):
        problem = message_problem(message, f"{field}[{i}]")
        if problem is not None:
            return problem
    return None


_NUMBER = (int, float)


def _patch(patch: object) -> str | None:
    if not isinstance(patch, RequestPatch):
        return f"patch is {_kind(patch)}, not a RequestPatch"
    for name in ("preamble", "tool_choice"):
        value = getattr(patch, name)
        if value is not None and not isinstance(value, str):
            return f"patch.{name} is {_kind(value)}, not str"
    temperature = patch.temperature
    if temperature is not None and (
        isinstance(temperature, bool) or not isinstance(temperature, _NUMBER)
    ):
        return f"patch.temperature is {_kind(temperature)}, not a number"
    tokens = patch.max_tokens
    if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int)):
        return f"patch.max_tokens is {_kind(tokens)}, not int"
    if patch.history is not None:
        problem = _messages(patch.history, "patch.history")
        if problem is not None:
            return problem
    for i, document in enumerate(patch.extra_context or ()):
        if not isinstance(document, Document):
            return f"patch.extra_context[{i}] is {_kind(document)}, not a Document"
    if patch.additional_params is not None:
        problem = _arguments(patch.additional_params, "patch.additional_params")
        if problem is not None:
            return problem
    for i, tool in enumerate(patch.active_tools or ()):
        if not isinstance(tool, str):
            return f"patch.active_tools[{i}] is {_kind(tool)}, not a tool name (str)"
    return None


def _repair(flow: F.Repair) -> str | None:
    return _text(flow.tool_name, "tool_name") or _arguments(
        flow.arguments, "arguments", optional=True
    )


_CHECKS: dict[type, Callable[[Any], str | None]] = {
    F.Continue: lambda flow: None,
    F.PatchRequest: lambda flow: _patch(flow.patch),
    F.RewriteMessages: lambda flow: _messages(flow.messages, "messages"),
    F.RewriteArgs: lambda flow: _arguments(flow.arguments, "arguments"),
    F.RewriteResult: lambda flow: _text(flow.content, "content"),
    F.Skip: lambda flow: _text(flow.reason, "reason"),
    F.Terminate: lambda flow: _text(flow.reason, "reason"),
    F.Fail: lambda flow: _text(flow.reason, "reason"),
    F.RequireApproval: lambda flow: (
        _text(flow.reason, "reason") or _arguments(flow.arguments, "arguments", optional=True)
    ),
    F.Hold: lambda flow: _count(flow.keep, "keep"),
    F.RewriteText: lambda flow: _text(flow.text, "text") or _count(flow.keep, "keep"),
    F.RewriteOutput: lambda flow: None,  # validated against the declared output by the run
    F.Retry: lambda flow: _text(flow.feedback, "feedback", optional=True),
    F.Repair: _repair,
}
