"""The JSON form of `seamkit.stream` events, for the live-event side channel.

An event travels as a tagged envelope ``{"type": "<class name>", "event":
{...}}`` whose ``event`` is pydantic's JSON of the event (its dataclass
fields; `RunResult` and the other models as they dump themselves).
`encode_event` and `decode_event` round-trip every event a run stream yields
or a run observer receives (`seamkit.stream.ObservedEvent`): the decoded
event equals the encoded one. Two things do not survive JSON as they were:
an `OutputDelta`'s partial is computed on encoding (it travels as its value),
and a `RunResult.output` of a declared output type travels as its JSON value
(``decode_event(data, output=...)`` validates it again into the declared
type).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Annotated, Any, Generic, TypeVar, Union, cast, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    JsonValue,
    PlainValidator,
    Tag,
    TypeAdapter,
    ValidationError,
)
from seamkit import Output, SeamkitError
from seamkit.stream import ObservedEvent, OutputDelta, RunFinished

__all__ = [
    "EVENT_TYPES",
    "EventDecodeError",
    "EventEnvelope",
    "decode_event",
    "describe",
    "encode_event",
    "unwrap",
]

EVENT_TYPES: tuple[type, ...] = get_args(ObservedEvent)
"""Every event type the codec knows: what a run observer receives
(`seamkit.stream.ObservedEvent`), read from that union (a new one travels too)."""


class EventDecodeError(SeamkitError, ValueError):
    """What was received is not an event: not JSON, not an envelope, an
    unknown event type, or fields that do not fit the type."""


@dataclass(frozen=True, slots=True)
class _OutputDeltaJson:
    """An `OutputDelta` as it travels: its partial computed."""

    partial: JsonValue
    turn: int


E = TypeVar("E")


class _Envelope(BaseModel, Generic[E]):
    """``{"type": name, "event": fields}``: one event, tagged by its class's name."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: str
    event: E


def _wire_type(cls: type) -> type:
    return _OutputDeltaJson if cls is OutputDelta else cls


_NAMES: dict[str, type] = {cls.__name__: cls for cls in EVENT_TYPES}


def _tag(value: object) -> str | None:
    raw = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return raw if isinstance(raw, str) else None


def _union() -> Any:
    members = tuple(
        Annotated[_Envelope[_wire_type(cls)], Tag(name)]  # type: ignore[misc]
        for name, cls in _NAMES.items()
    )
    return Annotated[Union[members], Discriminator(_tag)]  # noqa: UP007


def _validate_envelope(value: object) -> object:
    return _envelopes().validate_python(value)


EventEnvelope = Annotated[object, PlainValidator(_validate_envelope)]
"""An envelope as a pydantic field type, for a model that carries events
(validate the model, then `unwrap` the field)."""


@functools.cache
def _adapter(cls: type) -> TypeAdapter[Any]:
    return TypeAdapter(cls)


@functools.cache
def _envelopes() -> TypeAdapter[object]:
    return TypeAdapter(_union())


def encode_event(event: ObservedEvent) -> bytes:
    """``event`` as its JSON envelope (UTF-8); `TypeError` for anything that
    is not a `seamkit.stream` event."""
    cls = type(event)
    name = cls.__name__
    if _NAMES.get(name) is not cls:
        raise TypeError(f"{cls.__qualname__} is not a seamkit.stream event")
    value: object = event
    if isinstance(event, OutputDelta):
        value = _OutputDeltaJson(event.partial, event.turn)
    body = _adapter(_wire_type(cls)).dump_json(value)
    return b'{"type":"' + name.encode() + b'","event":' + body + b"}"


def unwrap(envelope: object, output: Output[Any] | None = None) -> ObservedEvent:
    """The event a validated `EventEnvelope` value carries (``output``: see
    `decode_event`)."""
    assert isinstance(envelope, _Envelope)
    event = envelope.event
    if isinstance(event, _OutputDeltaJson):
        return OutputDelta(event.partial, event.turn)
    if isinstance(event, RunFinished) and output is not None and event.result.output is not None:
        try:
            typed = output.validate(event.result.output)
        except Exception as exc:  # OutputInvalid: the answer was not of this type
            raise EventDecodeError(
                f"RunFinished: the output does not fit the declared {output.type_name}: {exc}"
            ) from None
        return RunFinished(event.result.model_copy(update={"output": typed}))
    return cast(ObservedEvent, event)


def decode_event(data: bytes | str, *, output: Output[Any] | None = None) -> ObservedEvent:
    """The event `encode_event` made ``data`` of; `EventDecodeError` when
    ``data`` is not one (unknown types are named). With ``output`` (the run's
    declared output), a `RunFinished`'s ``result.output`` is validated back
    into the declared type; without, it stays the JSON value."""
    try:
        envelope = _envelopes().validate_json(data)
    except ValidationError as exc:
        raise EventDecodeError(describe(exc)) from None
    return unwrap(envelope, output)


def describe(exc: ValidationError) -> str:
    """A short account of why an envelope did not validate (unknown types named)."""
    for error in exc.errors(include_url=False):
        if error["type"] == "union_tag_invalid":
            tag = error.get("ctx", {}).get("tag")
            return f"unknown event type {tag!r}; known: {', '.join(_NAMES)}"
        if error["type"] == "union_tag_not_found":
            return 'not an event envelope: it needs {"type": <event class>, "event": {...}}'
    first = exc.errors(include_url=False)[0]
    where = ".".join(str(p) for p in first["loc"])
    problem = "is not valid JSON" if first["type"] == "json_invalid" else first["msg"]
    return f"not a valid event: {where or 'the body'} {problem}".rstrip()
