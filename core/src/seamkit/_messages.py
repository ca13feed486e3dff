"""Chat messages in the OpenAI chat format, and the documents hooks add as context."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["Document", "FunctionCall", "Message", "MessageToolCall", "Role"]

Role = Literal["system", "user", "assistant", "tool"]

_FROZEN = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class FunctionCall(BaseModel):
    """The function part of a tool call on the wire: a name and JSON-text arguments."""

    model_config = _FROZEN

    name: str
    arguments: str = "{}"


class MessageToolCall(BaseModel):
    """One tool call inside an assistant message: ``{id, type, function}``."""

    model_config = _FROZEN

    id: str
    type: Literal["function"] = "function"
    function: FunctionCall

    @classmethod
    def make(cls, id: str, name: str, arguments: dict[str, Any] | str) -> MessageToolCall:
        """Build one from a name and arguments (a dict is JSON-encoded)."""
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        return cls(id=id, function=FunctionCall(name=name, arguments=text))


class Message(BaseModel):
    """One chat message, shaped exactly like the OpenAI chat format.

    Roles ``system``, ``user``, ``assistant`` and ``tool``. An assistant message
    may carry ``tool_calls``; a tool message answers one of them by
    ``tool_call_id``. ``content`` is text, or a list of content parts as the
    OpenAI format allows.
    """

    model_config = _FROZEN

    role: Role
    content: str | list[dict[str, Any]] | None = None
    tool_calls: tuple[MessageToolCall, ...] | None = None
    tool_call_id: str | None = None
    name: str | None = None

    @model_validator(mode="after")
    def _check_shape(self) -> Message:
        if self.tool_calls is not None and self.role != "assistant":
            raise ValueError("only assistant messages carry tool_calls")
        if self.role == "tool" and not self.tool_call_id:
            raise ValueError("a tool message needs the tool_call_id it answers")
        if self.tool_call_id is not None and self.role != "tool":
            raise ValueError("only tool messages carry a tool_call_id")
        return self

    @classmethod
    def system(cls, content: str) -> Message:
        """A system message."""
        return cls(role="system", content=content)

    @classmethod
    def user(cls, content: str) -> Message:
        """A user message."""
        return cls(role="user", content=content)

    @classmethod
    def assistant(
        cls, content: str | None = None, tool_calls: Sequence[MessageToolCall] | None = None
    ) -> Message:
        """An assistant message, with text, tool calls, or both."""
        return cls(
            role="assistant",
            content=content,
            tool_calls=tuple(tool_calls) if tool_calls else None,
        )

    @classmethod
    def tool(cls, tool_call_id: str, content: str) -> Message:
        """A tool message carrying the result of the call ``tool_call_id``."""
        return cls(role="tool", tool_call_id=tool_call_id, content=content)

    @property
    def text(self) -> str:
        """The message's text: ``content``, or its text parts joined; ``""`` if none."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(str(p.get("text", "")) for p in self.content if p.get("type") == "text")

    def to_openai(self) -> dict[str, Any]:
        """The message as an OpenAI chat API dict (unset fields left out)."""
        return self.model_dump(mode="json", exclude_none=True)


class Document(BaseModel):
    """A piece of context a hook adds to a model request (``extra_context``)."""

    model_config = _FROZEN

    id: str
    text: str
    metadata: dict[str, Any] = Field(default_factory=dict)
