"""The exceptions seamkit raises: one small family, each carrying its context.

Every exception derives from :class:`SeamkitError`, which carries a one-line
``message`` and an optional ``hint`` (what would be right). The CLI prints
exactly those two lines for any of them, never a traceback unless ``--debug``.

::

    SeamkitError                 catch-all for anything seamkit raises on purpose
    ├── ManifestError            a manifest cannot be read or does not validate
    ├── PluginError              a plugin registered something malformed
    ├── HookError                a hook failed closed (on_error: fail, a wrong flow)
    ├── ToolDefinitionError      a function or schema cannot be made a tool
    ├── OutputDefinitionError    a type or schema cannot be a run's declared output
    ├── OutputInvalid            an answer does not fit the declared output
    ├── InvalidToolCall          the model's arguments do not fit a tool's schema
    ├── ResumeError              a run cannot continue as asked (decisions, pending calls)
    ├── ModelError               a model cannot be built or failed to answer
    │   ├── ContextLengthExceeded  the request is longer than the model's context window
    │   └── ScriptError          the scripted model ran out or was asked the wrong thing
    └── SessionError             a session store cannot be opened, read or written
        ├── SessionBusy          another run held the session past the wait
        └── SessionNotSaved      a run ended but its transcript went to a recovery file

Two more belong to ``seamkit.testing`` and keep the bases a test framework
expects rather than `SeamkitError`:

::

    AssertionError
    └── ProviderCheckFailed      a model provider failed `check_model_provider`
    ValueError
    └── WireCassetteError        a wire cassette (``.http`` file) cannot be read
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ContextLengthExceeded",
    "HookError",
    "InvalidToolCall",
    "ManifestError",
    "ModelError",
    "OutputDefinitionError",
    "OutputInvalid",
    "PluginError",
    "Problem",
    "ProviderCheckFailed",
    "ResumeError",
    "ScriptError",
    "SeamkitError",
    "SessionBusy",
    "SessionError",
    "SessionNotSaved",
    "ToolDefinitionError",
    "WireCassetteError",
]


class SeamkitError(Exception):
    """Base of every error seamkit raises on purpose.

    Raised for user mistakes and for failures the run reports; ``hint`` says
    what would fix it, when the kernel knows.
    """

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if self.hint is None else f"{self.message} (hint: {self.hint})"


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong in a manifest, with where it is and what would be right.

    ``location`` is the path inside the document (``("hooks", 0, "event")``);
    ``line`` and ``column`` are 1-based positions in the file when known.
    """

    location: tuple[str | int, ...]
    message: str
    hint: str | None = None
    line: int | None = None
    column: int | None = None

    @property
    def path(self) -> str:
        """The location as a user writes it: ``hooks[0].event``."""
        out = ""
        for part in self.location:
            if isinstance(part, int):
                out += f"[{part}]"
            else:
                out += f".{part}" if out else str(part)
        return out or "(top level)"

    def format(self, source: str | None = None) -> str:
        """One line ``file:line:col: path: message``, plus an indented hint line."""
        where = ""
        if source:
            where = source
            if self.line is not None:
                where += f":{self.line}"
                if self.column is not None:
                    where += f":{self.column}"
            where += ": "
        text = f"{where}{self.path}: {self.message}" if self.location else where + self.message
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class ManifestError(SeamkitError):
    """Raised when an app manifest cannot be read or does not validate.

    ``problems`` lists every problem found (not just the first), each with its
    location; ``source`` names the file when there is one.
    """

    def __init__(self, problems: Sequence[Problem], *, source: str | None = None) -> None:
        self.problems = tuple(problems)
        self.source = source
        first = self.problems[0] if self.problems else Problem((), "invalid manifest")
        count = len(self.problems)
        head = first.format(source).splitlines()[0]
        more = f" (and {count - 1} more)" if count > 1 else ""
        super().__init__(f"{head}{more}", hint=first.hint)

    def format(self) -> str:
        """Every problem, one per line (hints indented below), for a terminal."""
        return "\n".join(p.format(self.source) for p in self.problems)


class PluginError(SeamkitError):
    """Raised when a plugin registers something malformed or cannot be loaded.

    During discovery it is caught and recorded as the plugin's load error; it
    reaches user code only from explicit calls such as ``Registry.register_*``.
    ``plugin`` names the entry point (or ``None`` for code registrations).
    """

    def __init__(self, message: str, *, plugin: str | None = None, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.plugin = plugin


class HookError(SeamkitError):
    """Raised when a hook fails closed: it raised or timed out under
    ``on_error: fail``, or returned a flow its event does not accept.

    Carries the ``hook`` name, the ``event`` and, when a flow is at fault, the
    ``flow`` type name.
    """

    def __init__(
        self,
        message: str,
        *,
        hook: str,
        event: str,
        flow: str | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.hook = hook
        self.event = event
        self.flow = flow


class InvalidToolCall(SeamkitError):
    """Raised by :meth:`seamkit.Tool.validate` and :meth:`seamkit.Tool.call`
    when the model's arguments do not fit the tool's schema.

    The agent catches it and takes the ``on_invalid_tool_call`` path; its
    ``message`` is written for the model. Carries the ``tool`` name and the
    individual ``errors``.
    """

    def __init__(self, message: str, *, tool: str, errors: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.tool = tool
        self.errors = tuple(errors)


class ToolDefinitionError(SeamkitError):
    """Raised when a function, or a name and schema, cannot become a tool:
    an empty name, ``*args``, type hints that do not resolve or cannot be
    described as JSON Schema, an invalid time-out. Catch it where tools are
    made (``@seamkit.tool``, ``Tool.from_schema``); manifests report it as a
    `Problem` of the entry."""


class OutputDefinitionError(SeamkitError):
    """Raised when a type or JSON Schema cannot be a run's declared output
    (`seamkit.Output`): a type pydantic cannot describe, a mapping that is
    not a JSON Schema, ``strict=True`` on a schema a strict provider cannot
    hold (``construct`` names what), a bad ``mode`` or ``retries``, an output
    tool whose name an app tool has. Manifests report it as a `Problem` of
    ``output``."""

    def __init__(self, message: str, *, construct: str | None = None, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.construct = construct


class OutputInvalid(SeamkitError):
    """Raised by `seamkit.Output.parse` and `seamkit.Output.validate` when an
    answer does not fit the declared output. ``errors`` lists what was wrong,
    each ``"<field path>: <message>"`` (the path ``(answer)`` for the whole answer),
    written for the model; ``answer`` is the text that failed (``None`` for a
    value). A run whose answers keep failing after ``retries`` ends
    ``failed`` with an error that starts ``OutputInvalid:``; this exception
    does not escape a run."""

    def __init__(self, errors: Sequence[str], *, answer: str | None = None) -> None:
        self.errors = tuple(errors)
        self.answer = answer
        super().__init__("OutputInvalid: " + "; ".join(self.errors))


class ModelError(SeamkitError):
    """Raised when a model cannot be built (an unknown provider, a bad spec) or
    fails to answer (a provider error, a stream cut short). ``provider`` names
    the provider when known. During a run it ends the run as ``failed``; it
    reaches your code from ``Agent(...)`` and from a provider used directly."""

    def __init__(self, message: str, *, provider: str | None = None, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.provider = provider


class ContextLengthExceeded(ModelError):
    """Raised by a model provider when the server refused a request because
    it does not fit the model's context window (OpenAI's
    ``context_length_exceeded``, and the same error as vLLM, LiteLLM and
    llama.cpp word it). Catch it to shorten the history and try again; during
    a run it ends the run as ``failed``. ``model`` names the model."""

    def __init__(
        self, message: str, *, provider: str | None = None, model: str | None = None
    ) -> None:
        super().__init__(
            message,
            provider=provider,
            hint="shorten the history or the tool results, or lower the token limit",
        )
        self.model = model


class ScriptError(ModelError):
    """Raised by the ``scripted`` model when its script cannot be read, runs
    out, or a request does not fit the turn it expected."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message, provider="scripted", hint=hint)


class SessionError(SeamkitError):
    """Raised when a session store cannot be opened, read or written, or its
    URL names no installed store. Carries the store's ``location`` (path or
    URL, without credentials)."""

    def __init__(self, message: str, *, location: str | None = None, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.location = location


class SessionBusy(SessionError):
    """Raised before a run starts when another run holds the session for
    longer than ``settings.session_wait_seconds``. Carries the session
    ``name``; nothing was run and nothing was lost: retry later."""

    def __init__(self, name: str, waited: float) -> None:
        super().__init__(
            f"session {name!r} busy: another run still holds it after {waited:g}s",
            hint="wait for the other run to finish, or use another --session",
        )
        self.name = name


class SessionNotSaved(SessionError):
    """Raised at the end of a run whose transcript the store could not save
    (a read-only or full disk, a lost connection): the run itself ended and
    its observers saw it finish, but the stored session is still the one from
    before. Nothing is lost: the run's whole transcript and state went to the
    JSON file ``recovery`` (``None`` only when no recovery file could be
    written either; the transcript was then logged), which ``seamkit sessions
    import`` puts back once the store can be written again. Carries the
    session ``name`` and the store ``location``."""

    def __init__(
        self,
        name: str,
        reason: str,
        *,
        recovery: Path | None,
        location: str | None = None,
        cause_hint: str | None = None,
    ) -> None:
        if recovery is not None:
            kept = f"; its transcript is in {recovery}"
            then = f"put it back with `seamkit sessions import {recovery}` (and your --store)"
            hint = f"{cause_hint}; then {then}" if cause_hint else f"once the store works, {then}"
        else:
            kept = "; no recovery file could be written either (the transcript was logged)"
            hint = cause_hint or "make the store and seamkit's data directory writable"
        super().__init__(
            f"session {name!r} not saved: {reason}{kept}", location=location, hint=hint
        )
        self.name = name
        self.recovery = recovery


class ResumeError(SeamkitError):
    """Raised before anything runs when a run cannot continue as asked: a
    decision for a call that is not pending, one already decided, a digest
    that does not match what was shown, edited arguments the tool refuses;
    new input to a session whose calls wait for a decision (or were cut
    short by a crash); a suspended state that is forged, expired, or bound
    to another context. Nothing was run or changed. Carries the ``session``
    (``None`` without one) and the ``call_id`` concerned, when one is."""

    def __init__(
        self,
        message: str,
        *,
        session: str | None = None,
        call_id: str | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.session = session
        self.call_id = call_id


class ProviderCheckFailed(AssertionError):
    """Raised by `seamkit.testing.ProviderReport.assert_passed` when a model
    provider did not pass `seamkit.testing.check_model_provider`: its message
    lists every check that failed (and every check no cassette covered, when
    that was asked for), one per line. An ``AssertionError``, so pytest shows
    it as a failed assertion; exported from `seamkit.testing`."""


class WireCassetteError(ValueError):
    """Raised by `seamkit.testing.load_wire_cassette` and
    `seamkit.testing.parse_wire_cassette` when a wire cassette (a ``.http``
    file) cannot be read: no status line, a header that is not ``name: value``,
    an ``expect-`` directive that is not JSON. The message names the file and
    line and what is wrong. A ``ValueError`` (bad test data, not a run
    failure); exported from `seamkit.testing`."""
