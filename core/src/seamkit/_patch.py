"""`RequestPatch`: how hooks change one turn's model request, and how patches merge."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any

from ._types import Document, Message, ModelRequest

__all__ = ["LAST_WRITER_WINS", "RequestPatch"]

LAST_WRITER_WINS = ("preamble", "temperature", "max_tokens", "tool_choice", "history")
"""The fields where a later patch replaces an earlier one (conflicts are diagnosed)."""


def _dedupe(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(names))


@dataclass(frozen=True, slots=True)
class RequestPatch:
    """A change to one turn's :class:`ModelRequest`; ``None`` means "not set".

    ``a | b`` merges two patches, ``b`` being the later hook: ``extra_context``
    appends, ``additional_params`` shallow-merges (later key wins),
    ``active_tools`` intersects keeping the earlier order, and every other field
    is last writer wins. ``|`` is pure and associative, with ``RequestPatch()``
    as its identity. A patch never clears a field.
    """

    extra_context: tuple[Document, ...] | None = None
    additional_params: Mapping[str, Any] | None = None
    preamble: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    tool_choice: str | None = None
    history: tuple[Message, ...] | None = None
    active_tools: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        # Adding nothing is not setting: empty additions normalise to "not set".
        if self.extra_context is not None:
            object.__setattr__(self, "extra_context", tuple(self.extra_context) or None)
        if self.history is not None:
            object.__setattr__(self, "history", tuple(self.history))
        if self.active_tools is not None:
            if isinstance(self.active_tools, str):
                raise TypeError("active_tools takes a list of tool names, not one string")
            object.__setattr__(self, "active_tools", _dedupe(self.active_tools))
        if self.additional_params is not None:
            params = dict(self.additional_params)
            object.__setattr__(
                self, "additional_params", MappingProxyType(params) if params else None
            )

    def __or__(self, later: RequestPatch) -> RequestPatch:
        if not isinstance(later, RequestPatch):
            return NotImplemented
        return RequestPatch(
            extra_context=_join(self.extra_context, later.extra_context),
            additional_params=_merge_params(self.additional_params, later.additional_params),
            preamble=_last(self.preamble, later.preamble),
            temperature=_last(self.temperature, later.temperature),
            max_tokens=_last(self.max_tokens, later.max_tokens),
            tool_choice=_last(self.tool_choice, later.tool_choice),
            history=_last(self.history, later.history),
            active_tools=_intersect(self.active_tools, later.active_tools),
        )

    def __reduce__(self) -> Any:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        if values["additional_params"] is not None:
            values["additional_params"] = dict(values["additional_params"])
        return (_rebuild, (values,))

    def is_empty(self) -> bool:
        """True when no field is set (the patch changes nothing)."""
        return all(getattr(self, f.name) is None for f in fields(self))

    def set_fields(self) -> tuple[str, ...]:
        """The names of the fields this patch sets."""
        return tuple(f.name for f in fields(self) if getattr(self, f.name) is not None)

    def apply(self, request: ModelRequest) -> ModelRequest:
        """The request with this patch applied; ``request`` is left unchanged."""
        update: dict[str, Any] = {}
        if self.extra_context:
            update["extra_context"] = (*request.extra_context, *self.extra_context)
        if self.additional_params:
            update["additional_params"] = {**request.additional_params, **self.additional_params}
        for name in ("preamble", "temperature", "max_tokens", "tool_choice"):
            value = getattr(self, name)
            if value is not None:
                update[name] = value
        if self.history is not None:
            update["messages"] = self.history
        if self.active_tools is not None:
            allowed = set(self.active_tools)
            update["tools"] = tuple(t for t in request.tools if t.name in allowed)
        return request.model_copy(update=update) if update else request


def _rebuild(values: dict[str, Any]) -> RequestPatch:
    return RequestPatch(**values)


def _last(earlier: Any, later: Any) -> Any:
    return earlier if later is None else later


def _join(
    earlier: tuple[Document, ...] | None, later: tuple[Document, ...] | None
) -> tuple[Document, ...] | None:
    if earlier is None:
        return later
    if later is None:
        return earlier
    return earlier + later


def _merge_params(
    earlier: Mapping[str, Any] | None, later: Mapping[str, Any] | None
) -> Mapping[str, Any] | None:
    if earlier is None:
        return later
    if later is None:
        return earlier
    return {**earlier, **later}


def _intersect(
    earlier: tuple[str, ...] | None, later: tuple[str, ...] | None
) -> tuple[str, ...] | None:
    if earlier is None:
        return later
    if later is None:
        return earlier
    keep = set(later)
    return tuple(name for name in earlier if name in keep)
