"""A run's answer in the Responses API's shapes: the ``response`` object
and the stream's events (each with its ``sequence_number``).

How a run's outcome reads as a response (the guide says the same):

- completed, or ended by a hook that is not a guard: ``status:
  "completed"``; a run that handed calls to the client (outcome
  ``deferred``) is completed too, its calls ``function_call`` items;
- a guard's stop: ``incomplete``, ``incomplete_details.reason:
  "content_filter"``; ``max_turns``: ``incomplete``, reason ``max_turns``;
- suspended (calls wait for approval): ``incomplete``, reason
  ``approval_pending``, and the response's ``metadata`` carries
  ``seamkit_outcome``, ``seamkit_session`` and ``seamkit_pending`` (the
  pending calls as a JSON text: metadata values are strings);
- failed: ``failed`` with its ``error`` (a whole answer is a 500 instead).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import seamkit

from ._response_store import new_response_id

__all__ = ["ClientCall", "Rendered", "ResponseShape", "sse_event"]

_GUARDED = frozenset({"on_request_start", "on_text_delta", "on_post_tool_use"})


@dataclass(frozen=True, slots=True)
class ClientCall:
    """A call handed to the client: the id the server issued for it, the
    tool's name and the arguments (JSON text)."""

    call_id: str
    name: str
    arguments: str

    @classmethod
    def from_chat(cls, call: Mapping[str, object]) -> ClientCall:
        """A chat ``tool_calls`` entry (`Run.handed`) as a client call."""
        function = call.get("function")
        spec = function if isinstance(function, Mapping) else {}
        return cls(str(call.get("id")), str(spec.get("name")), str(spec.get("arguments") or "{}"))


def _status(outcome: seamkit.Outcome) -> tuple[str, str | None]:
    """The response's ``status`` and ``incomplete_details.reason``."""
    if isinstance(outcome, seamkit.Suspended):
        return "incomplete", "approval_pending"
    if isinstance(outcome, seamkit.MaxTurns):
        return "incomplete", "max_turns"
    if isinstance(outcome, seamkit.Terminated) and outcome.event in _GUARDED:
        return "incomplete", "content_filter"
    if isinstance(outcome, seamkit.Failed):
        return "failed", None
    return "completed", None


def _usage(used: seamkit.Usage) -> dict[str, object]:
    return {
        "input_tokens": used.input_tokens,
        "input_tokens_details": {
            "cached_tokens": used.cache_read_tokens,
            "cache_write_tokens": used.cache_write_tokens,
        },
        "output_tokens": used.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": used.input_tokens + used.output_tokens,
    }


@dataclass(frozen=True, slots=True)
class Rendered:
    """A finished run as the Responses API says it: ``status``, the
    ``incomplete`` reason, the ``error``, the reply ``text`` and the
    handed-out ``calls``, the usage, and the metadata it adds."""

    status: str
    reason: str | None
    text: str
    calls: Sequence[ClientCall]
    usage: seamkit.Usage
    error: Mapping[str, object] | None = None
    metadata: dict[str, str] = field(default_factory=dict)

    @property
    def has_message(self) -> bool:
        """Whether the output holds a message item: when there is text, or
        nothing else."""
        return bool(self.text) or not self.calls


@dataclass(slots=True)
class ResponseShape:
    """One response's fixed parts (id, model, what it echoes) and the ids of
    its output items, so that every event and the final object agree."""

    model: str
    echo: dict[str, object]
    id: str = field(default_factory=new_response_id)
    message_id: str = field(default_factory=lambda: f"msg_{uuid.uuid4().hex}")
    created: int = field(default_factory=lambda: int(time.time()))
    sequence: int = 0

    def next(self) -> int:
        """The next event's ``sequence_number``."""
        self.sequence += 1
        return self.sequence - 1

    @staticmethod
    def outcome(
        result: seamkit.RunResult,
        text: str,
        pending: dict[str, object] | None,
        handed: Sequence[Mapping[str, object]] | None,
    ) -> Rendered:
        """``result`` as a response says it; ``pending`` is what a suspended
        run waits for (`Run.pending`), ``handed`` the calls a deferred one
        hands to the client (`Run.handed`)."""
        status, reason = _status(result.outcome)
        metadata: dict[str, str] = {}
        if pending is not None:
            metadata = {
                "seamkit_outcome": str(pending.get("outcome")),
                "seamkit_session": str(pending.get("session")),
                "seamkit_pending": json.dumps(pending.get("pending"), separators=(",", ":")),
            }
        calls = [ClientCall.from_chat(c) for c in handed or ()]
        return Rendered(status, reason, text, calls, result.usage, None, metadata)

    def message(self, text: str, status: str = "completed") -> dict[str, object]:
        """The ``message`` output item holding ``text``."""
        content = [] if status == "in_progress" else [self.part(text)]
        return {
            "type": "message",
            "id": self.message_id,
            "status": status,
            "role": "assistant",
            "content": content,
        }

    @staticmethod
    def part(text: str) -> dict[str, object]:
        """An ``output_text`` content part."""
        return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}

    @staticmethod
    def call(call: ClientCall, arguments: str | None = None) -> dict[str, object]:
        """The ``function_call`` output item of a handed-out call."""
        return {
            "type": "function_call",
            "id": ResponseShape.call_item(call),
            "call_id": call.call_id,
            "name": call.name,
            "arguments": call.arguments if arguments is None else arguments,
            "status": "completed" if arguments is None else "in_progress",
        }

    @staticmethod
    def call_item(call: ClientCall) -> str:
        """The id of a handed-out call's output item."""
        return f"fc_{call.call_id.removeprefix('call_')}"

    def output(self, rendered: Rendered) -> list[dict[str, object]]:
        """The response's output items: the message (when there is text, or
        nothing else), then the function calls."""
        if rendered.status == "failed":
            return []
        items = [self.call(c) for c in rendered.calls]
        if rendered.has_message:
            items.insert(0, self.message(rendered.text))
        return items

    def body(self, rendered: Rendered | None = None) -> dict[str, object]:
        """The ``response`` object: in progress (no ``rendered`` yet), or finished."""
        echo = dict(self.echo)
        given = echo.pop("metadata", None)
        metadata: dict[str, object] = dict(given) if isinstance(given, dict) else {}
        store = echo.pop("store", True)
        body: dict[str, object] = {
            "id": self.id,
            "object": "response",
            "created_at": self.created,
            "status": "in_progress" if rendered is None else rendered.status,
            "error": None if rendered is None else rendered.error,
            "incomplete_details": None
            if rendered is None or rendered.reason is None
            else {"reason": rendered.reason},
            "model": self.model,
            "output": [] if rendered is None else self.output(rendered),
            "usage": None if rendered is None else _usage(rendered.usage),
            **echo,
            "metadata": {**metadata, **(rendered.metadata if rendered else {})},
            "store": store,
        }
        if rendered is not None and rendered.status == "completed":
            body["completed_at"] = int(time.time())
        return body

    def event(self, kind: str, **fields: object) -> bytes:
        """One stream event of ``kind`` with ``fields``."""
        return sse_event({"type": kind, "sequence_number": self.next(), **fields})


def sse_event(data: dict[str, object]) -> bytes:
    """One server-sent event carrying ``data``, named by its ``type``."""
    payload = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return f"event: {data['type']}\ndata: {payload}\n\n".encode()
