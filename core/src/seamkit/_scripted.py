"""The built-in ``scripted`` model: plays turns from a YAML or JSON script.

A script is a list of turns (or ``{turns: [...]}``); each turn is
``{text: "..."}``, ``{tool_calls: [{name, arguments, id?}]}`` or both, with
optional ``deltas: [...]`` to split streamed text, and optional
``expect: {last_user: "..."}`` to check the request it answers. It runs out
loudly: a request past the last turn is an error naming the script.

``{turns: [...], each_run: true}`` plays the script from its first turn in
every run instead: the turn is picked by how many model turns the run has
had (the assistant messages after the last user message), so concurrent runs
(a server's) each get the whole script, in order.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from ._errors import ScriptError
from ._types import Message, MessageToolCall, ModelRequest, ModelTurn, Usage
from .injection import PREFIX

__all__ = ["ScriptedModel"]


class ScriptedModel:
    """A model that answers from a list of scripted turns, in order."""

    def __init__(
        self, turns: Sequence[dict[str, Any]], *, name: str = "script", each_run: bool = False
    ) -> None:
        self.name = name
        self.turns = [dict(t) for t in turns]
        self.position = 0
        self.each_run = each_run

    @property
    def spec(self) -> str:
        """``"scripted:<name>"``, how observers name this model."""
        return f"scripted:{self.name}"

    @classmethod
    def from_spec(cls, spec: str, *, base_dir: str | None = None, **_: Any) -> ScriptedModel:
        """Load ``spec`` (a path, relative to ``base_dir`` when given)."""
        path = Path(spec)
        if not path.is_absolute() and base_dir is not None:
            path = Path(base_dir) / path
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ScriptError(
                f"cannot read model script {str(path)!r}: {exc.strerror}",
                hint="model: scripted:<path to a YAML or JSON script>",
            ) from None
        if path.suffix == ".json":
            data = json.loads(text)
        else:
            import yaml  # lazy: only YAML scripts need it, and it costs start-up time

            data = yaml.safe_load(text)
        turns = data.get("turns") if isinstance(data, dict) else data
        if not isinstance(turns, list):
            raise ScriptError(f"model script {str(path)!r} must be a list of turns")
        each_run = bool(data.get("each_run")) if isinstance(data, dict) else False
        return cls(turns, name=str(path), each_run=each_run)

    def _next(self, request: ModelRequest) -> tuple[ModelTurn, list[str]]:
        if self.each_run:
            self.position = 0
            for message in reversed(request.messages):
                if message.role == "user":
                    break
                if message.role == "assistant" and not _injected(message):
                    self.position += 1
        if self.position >= len(self.turns):
            raise ScriptError(
                f"model script {self.name!r} ran out after {len(self.turns)} turns",
                hint="add a turn to the script, or lower max_turns",
            )
        turn = self.turns[self.position]
        self.position += 1
        expected = (turn.get("expect") or {}).get("last_user")
        if expected is not None:
            users = [m for m in request.messages if m.role == "user"]
            got = users[-1].text if users else None
            if got != expected:
                raise ScriptError(
                    f"model script {self.name!r} turn {self.position} expected the last user "
                    f"message {expected!r}, got {got!r}"
                )
        calls = [
            MessageToolCall.make(
                c.get("id") or f"call_{self.position}_{i}", c["name"], c.get("arguments", {})
            )
            for i, c in enumerate(turn.get("tool_calls") or [])
        ]
        text = turn.get("text")
        message = Message.assistant(
            text if text is not None else ("" if calls else None), calls or None
        )
        deltas = list(turn.get("deltas") or ([text] if text else []))
        usage = Usage(
            input_tokens=sum(len(m.text) for m in request.messages) // 4,
            output_tokens=len(text or "") // 4,
            requests=1,
        )
        reason = "tool_calls" if calls else "stop"
        return ModelTurn(message=message, usage=usage, finish_reason=reason), deltas

    async def complete(self, request: ModelRequest) -> ModelTurn:
        """The next scripted turn."""
        return self._next(request)[0]

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ModelTurn]:
        """The next turn's text deltas, then the turn."""
        turn, deltas = self._next(request)
        for delta in deltas:
            yield delta
        yield turn


def _injected(message: Message) -> bool:
    """Whether ``message`` is an injected synthetic call (not a model turn)."""
    calls = message.tool_calls or ()
    return bool(calls) and all(c.id.startswith(PREFIX) for c in calls)
