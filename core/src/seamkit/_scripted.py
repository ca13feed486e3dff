"""The built-in ``scripted`` model: plays turns from a YAML or JSON script.

A script is a list of turns (or ``{turns: [...]}``); each turn is
``{text: "..."}``, ``{tool_calls: [{name, arguments, id?}]}`` or both, with
optional ``deltas: [...]`` to split streamed text; or ``{output: <value>}``,
a structured answer played as the request asks for it (`seamkit.Output`):
a call to the output tool in ``tool`` mode, else the value's JSON as the
text, streamed in ``chunks`` pieces (1 by default); and optional
``expect: {last_user: "..."}`` to check the request it answers (every key is
declared in `._expect.Expect`). It runs out loudly: a request past the last
turn is an error naming the script. ``model.requests`` holds every request
it received, in order.

``{turns: [...], each_run: true}`` plays the script from its first turn in
every run instead: the turn is picked by how many model turns the run has
had (the assistant messages after the last user message), so concurrent runs
(a server's) each get the whole script, in order.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from ._errors import ManifestError, Problem, ScriptError
from ._expect import Expect
from ._types import (
    Message,
    MessageToolCall,
    ModelRequest,
    ModelTurn,
    ToolArgumentsDelta,
    Usage,
)
from .injection import PREFIX

__all__ = ["ScriptedModel"]

_SHOWN = 60


class _Call(BaseModel):
    """One tool call a turn makes: ``arguments`` a mapping, or JSON text as
    the model would send it (invalid on purpose, say)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    id: str | None = None


class _Turn(BaseModel):
    """One scripted model turn: text, tool calls or both; ``usage`` states
    the turn's token counts (prompt-cache counts, say) instead of the
    estimate from the text's length."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str | None = None
    tool_calls: list[_Call] | None = None
    deltas: list[str] | None = None
    output: JsonValue = None
    chunks: int = Field(default=1, ge=1)
    expect: Expect | None = None
    usage: Usage | None = None


class _Script(BaseModel):
    """A script file's mapping form."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    turns: list[_Turn]
    each_run: bool = False


SERVED_REQUESTS = 100
"""How many of the latest requests a scripted model from a manifest keeps:
an app served for hours must not grow with every request it answers."""


class ScriptedModel:
    """A model that answers from a list of scripted turns, in order, and keeps
    the requests it received in ``requests``. It supports the ``native`` and
    ``tool`` output modes (``output_modes``): a text turn is a native answer."""

    output_modes = frozenset({"native", "tool"})

    def __init__(
        self,
        turns: Sequence[Mapping[str, Any]],
        *,
        name: str = "script",
        each_run: bool = False,
        keep_requests: int | None = None,
    ) -> None:
        """Raises `ScriptError` naming the first turn that is malformed."""
        self.name = name
        try:
            self.turns = _Script.model_validate({"turns": list(turns)}).turns
        except ValidationError as exc:
            problems = _problems(exc, listed=True)
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            head = problems[0].format().splitlines()[0]
            raise ScriptError(
                f"model script {name!r}: {head}{more}", hint=problems[0].hint
            ) from None
        self.position = 0
        self.each_run = each_run
        self.requests: list[ModelRequest] = []
        """Every request received (by ``complete`` and ``stream``), in order;
        one that ran past the script or failed its turn's ``expect`` too. With
        ``keep_requests``, only that many of the latest stay (a model from a
        manifest, which ``seamkit serve`` may play for hours, keeps
        `SERVED_REQUESTS`)."""
        self.keep_requests = keep_requests

    @property
    def spec(self) -> str:
        """``"scripted:<name>"``, how observers name this model."""
        return f"scripted:{self.name}"

    @classmethod
    def from_spec(cls, spec: str, *, base_dir: str | None = None, **_: Any) -> ScriptedModel:
        """Load ``spec`` (a path, relative to ``base_dir`` when given). Raises
        `ScriptError` naming the file, and the line and column of the first
        problem, when it cannot be read, parsed, or is not a script."""
        from ._document import locate, read_document  # lazy: PyYAML, only scripts need it

        path = Path(spec)
        if not path.is_absolute() and base_dir is not None:
            path = Path(base_dir) / path
        try:
            document = read_document(path)
        except OSError as exc:
            raise ScriptError(
                f"cannot read model script {str(path)!r}: {exc.strerror}",
                hint="model: scripted:<path to a YAML or JSON script>",
            ) from None
        except ManifestError as exc:
            raise ScriptError(f"model script {exc.message}", hint=exc.hint) from None
        data = document.data
        listed = isinstance(data, list)
        problems: list[Problem] = []
        script: _Script | None = None
        if not listed and not isinstance(data, dict):
            line, column = document.placements.find(())
            problems.append(
                Problem(
                    (),
                    "a model script must be a list of turns, or a mapping with 'turns'",
                    hint="- text: Hello!",
                    line=line,
                    column=column,
                )
            )
        else:
            try:
                script = _Script.model_validate({"turns": data} if listed else data)
            except ValidationError as exc:
                problems = _problems(exc, listed=listed)
        if script is None:
            first = locate(problems, document.placements)[0]
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            head = first.format(str(path)).splitlines()[0]
            raise ScriptError(f"model script {head}{more}", hint=first.hint)
        model = cls([], name=str(path), each_run=script.each_run, keep_requests=SERVED_REQUESTS)
        model.turns = script.turns
        return model

    def _next(self, request: ModelRequest) -> tuple[ModelTurn, list[str | ToolArgumentsDelta]]:
        self.requests.append(request)
        if self.keep_requests is not None and len(self.requests) > self.keep_requests:
            del self.requests[: len(self.requests) - self.keep_requests]
        if self.each_run:
            self.position = 0
            for message in reversed(request.messages):
                if message.from_user:
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
        mismatches = turn.expect.mismatches(request) if turn.expect is not None else []
        if mismatches:
            more = f" (and {len(mismatches) - 1} more)" if len(mismatches) > 1 else ""
            raise ScriptError(
                f"model script {self.name!r} turn {self.position} {mismatches[0]}{more}",
                hint="the turn's expect: keys that differ: " + ", ".join(m.key for m in mismatches),
            )
        calls = [
            MessageToolCall.make(c.id or f"call_{self.position}_{i}", c.name, c.arguments)
            for i, c in enumerate(turn.tool_calls or [])
        ]
        text = turn.text
        deltas: list[str | ToolArgumentsDelta] = list(turn.deltas or ([text] if text else []))
        if "output" in turn.model_fields_set:
            wanted = request.output
            value = turn.output
            answer = json.dumps(value if isinstance(value, dict) else {"response": value})
            pieces = _pieces(answer, turn.chunks)
            if wanted is not None and wanted.mode == "tool":
                call_id = f"call_{self.position}_{len(calls)}"
                calls.append(MessageToolCall.make(call_id, wanted.name, answer))
                deltas.extend(
                    ToolArgumentsDelta(len(calls) - 1, call_id, wanted.name, piece)
                    for piece in pieces
                )
            else:
                text = (text or "") + answer
                deltas.extend(pieces)
        message = Message.assistant(
            text if text is not None else ("" if calls else None), calls or None
        )
        usage = (
            turn.usage.model_copy(update={"requests": 1})
            if turn.usage is not None
            else Usage(
                input_tokens=sum(len(m.text) for m in request.messages) // 4,
                output_tokens=len(text or "") // 4,
                requests=1,
            )
        )
        reason = "tool_calls" if calls else "stop"
        return ModelTurn(message=message, usage=usage, finish_reason=reason), deltas

    async def complete(self, request: ModelRequest) -> ModelTurn:
        """The next scripted turn."""
        return self._next(request)[0]

    async def stream(
        self, request: ModelRequest
    ) -> AsyncIterator[str | ToolArgumentsDelta | ModelTurn]:
        """The next turn's text deltas (and its output tool's argument
        fragments), then the turn."""
        turn, deltas = self._next(request)
        for delta in deltas:
            yield delta
        yield turn


def _pieces(text: str, count: int) -> list[str]:
    """``text`` cut into ``count`` nearly equal pieces (none empty)."""
    size = max(1, -(-len(text) // count))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _injected(message: Message) -> bool:
    """Whether ``message`` is an injected synthetic call (not a model turn)."""
    calls = message.tool_calls or ()
    return bool(calls) and all(c.id.startswith(PREFIX) for c in calls)


def _problems(exc: ValidationError, *, listed: bool) -> list[Problem]:
    """One `Problem` per error of a script's validation; ``listed`` when the
    script is a bare list of turns (no ``turns:`` in its locations)."""
    out: list[Problem] = []
    seen: set[tuple[tuple[str | int, ...], str]] = set()
    for err in exc.errors(include_url=False):
        loc: tuple[str | int, ...] = tuple(err["loc"])
        if "arguments" in loc:  # the union's members would each speak
            loc = loc[: loc.index("arguments") + 1]
            problem = Problem(
                loc,
                "arguments must be a mapping, or JSON text",
                hint="arguments: {city: Paris}",
            )
        elif err["type"] == "missing":
            problem = Problem(
                loc, f"required field '{loc[-1]}' is missing", hint=f"add '{loc[-1]}'"
            )
        elif err["type"] == "extra_forbidden":
            allowed = _allowed(loc)
            close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
            guess = f"did you mean '{close[0]}'? " if close else ""
            problem = Problem(
                loc,
                f"unknown field '{_short(str(loc[-1]))}'",
                hint=f"{guess}allowed fields: {', '.join(allowed)}",
            )
        else:
            shown = repr(err.get("input"))
            problem = Problem(loc, f"{err['msg']}, got {_short(shown)}")
        if listed and problem.location[:1] == ("turns",):
            problem = Problem(problem.location[1:], problem.message, problem.hint)
        if (problem.location, problem.message) not in seen:
            seen.add((problem.location, problem.message))
            out.append(problem)
    # A misspelt field is the cause of the missing one it was meant to be.
    return sorted(out, key=lambda p: not p.message.startswith("unknown field"))


def _allowed(loc: tuple[str | int, ...]) -> list[str]:
    """The fields of the model that validates the mapping holding ``loc``."""
    model: type[BaseModel] | None = _Script
    for part in loc[:-1]:
        if isinstance(part, int) or model is None:
            continue
        field = model.model_fields.get(part)
        model = _model_in(field.annotation) if field is not None else None
    return sorted(model.model_fields) if model is not None else []


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The script model ``annotation`` holds (``X``, ``list[X]``, ``X | None``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for argument in get_args(annotation):
        found = _model_in(argument)
        if found is not None:
            return found
    return None


def _short(text: str) -> str:
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."
