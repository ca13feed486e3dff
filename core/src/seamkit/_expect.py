"""The ``expect:`` keys of a scripted model's turn: what each one checks in
the request the turn answers.

``Expect`` is the one place the keys are declared: each field is a key, its
``description`` says what in the request it is compared with (the guide's
table of keys is checked against it), and its ``Reads`` metadata reads that
from the request.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from ._types import ModelRequest

__all__ = ["Expect", "Mismatch", "Reads", "expect_keys"]


@dataclass(frozen=True, slots=True)
class Reads:
    """How an ``expect:`` key reads the value it checks out of a request
    (metadata of its field in `Expect`)."""

    read: Callable[[ModelRequest], object]


def _last_text(role: str) -> Callable[[ModelRequest], object]:
    """The text of the request's last message of ``role`` (``None`` if none)."""

    def read(request: ModelRequest) -> object:
        found = [m for m in request.messages if m.role == role]
        return found[-1].text if found else None

    return read


def _tool_names(request: ModelRequest) -> object:
    return [tool.name for tool in request.tools]


class Expect(BaseModel):
    """What a turn checks in the request it answers: every key it sets must
    equal what the request holds (``null``: there is none), or the model
    raises ``ScriptError`` naming what it checked, the value expected and the
    one received."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    last_user: Annotated[
        str | None,
        Field(description="the last user message"),
        Reads(_last_text("user")),
    ] = None
    last_tool: Annotated[
        str | None,
        Field(description="the last tool result (the content of the last tool message)"),
        Reads(_last_text("tool")),
    ] = None
    preamble: Annotated[
        str | None,
        Field(description="the preamble (the system prompt the request carries)"),
        Reads(lambda request: request.preamble),
    ] = None
    tools: Annotated[
        list[str] | None,
        Field(description="the names of the advertised tools, in order"),
        Reads(_tool_names),
    ] = None
    tool_choice: Annotated[
        str | None,
        Field(description="the tool choice"),
        Reads(lambda request: request.tool_choice),
    ] = None
    temperature: Annotated[
        float | None,
        Field(description="the temperature"),
        Reads(lambda request: request.temperature),
    ] = None
    max_tokens: Annotated[
        int | None,
        Field(description="the token limit (max_tokens)"),
        Reads(lambda request: request.max_tokens),
    ] = None

    def mismatches(self, request: ModelRequest) -> list[Mismatch]:
        """Every key the script sets (``null`` too: "there is none") whose
        value differs from the request's, in declaration order."""
        out: list[Mismatch] = []
        for key in self.model_fields_set:
            expected = getattr(self, key)
            got = _reader(key)(request)
            if got != expected:
                what = Expect.model_fields[key].description or key
                out.append(Mismatch(key, what, expected, got))
        order = list(Expect.model_fields)
        return sorted(out, key=lambda m: order.index(m.key))


@dataclass(frozen=True, slots=True)
class Mismatch:
    """One ``expect:`` key the request did not satisfy."""

    key: str
    what: str
    expected: object
    got: object

    def __str__(self) -> str:
        return f"expected {self.what} {self.expected!r}, got {self.got!r}"


def _reader(key: str) -> Callable[[ModelRequest], object]:
    for item in Expect.model_fields[key].metadata:
        if isinstance(item, Reads):
            return item.read
    raise AssertionError(f"expect key {key!r} declares no Reads")  # pragma: no cover


def expect_keys() -> dict[str, str]:
    """``key -> what it is compared with``, in declaration order (the docs'
    table of ``expect:`` keys)."""
    return {key: field.description or key for key, field in Expect.model_fields.items()}
