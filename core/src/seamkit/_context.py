"""Run-scoped context: per-request properties (`ActionContext`), the state
hooks share (`Scratchpad`) and what every hookimpl receives (`HookContext`)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel

from ._secret import Redactor, Secret, secret_texts

__all__ = ["ActionContext", "CallInfo", "Effects", "HookContext", "Scratchpad", "system_clock"]


Effects = Literal["none", "idempotent", "once"]
"""What running a tool does to the world: ``none`` (it only reads; re-running
it is harmless), ``idempotent`` (it acts, and running it again with the same
idempotency key acts once), ``once`` (it acts, and must not run twice: after
a crash mid-call it is reported in doubt, never re-run)."""


@dataclass(frozen=True, slots=True)
class CallInfo:
    """What one tool call knows about itself, injected into a parameter
    annotated ``seamkit.CallInfo`` (hidden from the model's schema).

    ``idempotency_key`` is made at random for the call and journaled before
    the call runs: a call re-run after a crash (an ``idempotent`` tool) gets
    the same key, so the tool (or the service it calls) can act once.
    ``attempt`` counts from 1; it is 2 on the first re-run. Unlike the
    shared `ActionContext`, which a caller fills, nobody but the kernel
    writes this.
    """

    call_id: str
    idempotency_key: str
    attempt: int = 1
    tool: str = ""


def system_clock() -> datetime:
    """The current time as an aware UTC datetime."""
    return datetime.now(UTC)


class ActionContext(Mapping[str, Any]):
    """Per-request properties a tool may ask for: a user id, a token, a client.

    Read-only mapping. Values wrapped in :class:`seamkit.Secret` stay wrapped
    here and print as ``***``; the kernel unwraps them only when it injects
    them into a tool.
    """

    __slots__ = ("_context_id", "_props", "_secrets")

    def __init__(
        self,
        properties: Mapping[str, Any] | None = None,
        *,
        context_id: str | None = None,
        **more: Any,
    ) -> None:
        self._props: dict[str, Any] = {**(properties or {}), **more}
        self._context_id = context_id or uuid.uuid4().hex
        self._secrets: tuple[str, ...] | None = None

    @property
    def secret_texts(self) -> tuple[str, ...]:
        """The plain text of every `Secret` among the properties (found once),
        for masking them in what a tool or service says back."""
        if self._secrets is None:
            self._secrets = tuple(secret_texts(self._props))
        return self._secrets

    @property
    def context_id(self) -> str:
        """An id for this request's context (given, or a fresh random one)."""
        return self._context_id

    def get(self, name: str, default: Any = None) -> Any:
        """The property ``name`` (secrets still wrapped), or ``default``."""
        return self._props.get(name, default)

    def __getitem__(self, name: str) -> Any:
        return self._props[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._props)

    def __len__(self) -> int:
        return len(self._props)

    def with_properties(self, **more: Any) -> ActionContext:
        """A copy with more properties (same ``context_id``)."""
        return ActionContext({**self._props, **more}, context_id=self._context_id)

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{k}={'***' if isinstance(v, Secret) else type(v).__name__}"
            for k, v in self._props.items()
        )
        return f"ActionContext({shown})"


class Scratchpad:
    """State the hooks of one run share. Every operation is atomic.

    When tools run concurrently, tool hooks share one scratchpad and run at the
    same time: each operation is race-free, but there is no ordering between
    hooks of different calls, so keep state commutative or key it by call id.
    """

    __slots__ = ("_data", "_lock")

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self._lock = threading.Lock()

    def get(self, key: str, default: Any = None) -> Any:
        """The value under ``key``, or ``default``."""
        with self._lock:
            return self._data.get(key, default)

    def insert(self, key: str, value: Any) -> Any:
        """Store ``value`` under ``key``; return what was there (or ``None``)."""
        with self._lock:
            old = self._data.get(key)
            self._data[key] = value
            return old

    def update(self, key: str, fn: Callable[[Any], Any], default: Any = None) -> Any:
        """Atomically replace the value with ``fn(current or default)``; return it."""
        with self._lock:
            new = fn(self._data.get(key, default))
            self._data[key] = new
            return new

    def remove(self, key: str) -> Any:
        """Remove ``key`` and return its value (``None`` when absent)."""
        with self._lock:
            return self._data.pop(key, None)

    def contains(self, key: str) -> bool:
        """Whether ``key`` holds a value."""
        with self._lock:
            return key in self._data

    __contains__ = contains

    def snapshot(self) -> dict[str, Any]:
        """A shallow copy of everything stored, for inspection."""
        with self._lock:
            return dict(self._data)


class HookContext:
    """What every hookimpl receives as ``ctx``: the run's identity and shared state.

    ``turn`` is 1-based (0 before the first model call); ``tools`` maps the
    agent's resolved tools by final name, so a hook can call one; ``now()``
    reads the agent's clock; ``diagnostics`` collects the run's
    :class:`seamkit.Diagnostic` records (a hook may add its own).

    ``redactor`` masks every secret the run knows (the agent's manifest and
    model config, and the run's context) in any text; use it on whatever a
    plugin writes out (logs, spans, errors). ``sections`` are the agent
    manifest's plugin-owned sections (``section(key)`` reads one), so that a
    plugin-wide hookimpl can read its own.

    ``session_state`` is a small JSON mapping that outlives the run: the
    session's ``state`` (saved with its transcript, in one transaction) for a
    run with ``session=``, else one mapping the agent keeps for all its runs
    without one (shared by every caller of the agent, so never keep a user's
    data there in clear). Hooks keep what they must remember between runs
    there, under a key of their own (their kind's name, say).
    """

    __slots__ = (
        "_agent_redactor",
        "_clock",
        "_redactor",
        "_sections",
        "action_context",
        "agent_name",
        "diagnostics",
        "is_streaming",
        "run_id",
        "scratchpad",
        "session_state",
        "tools",
        "turn",
    )

    def __init__(
        self,
        *,
        run_id: str | None = None,
        agent_name: str = "agent",
        is_streaming: bool = False,
        action_context: ActionContext | None = None,
        tools: Mapping[str, Any] | None = None,
        clock: Callable[[], datetime] = system_clock,
        turn: int = 0,
        scratchpad: Scratchpad | None = None,
        session_state: dict[str, Any] | None = None,
        redactor: Redactor | None = None,
        sections: Mapping[str, BaseModel] | None = None,
    ) -> None:
        self.run_id = run_id or uuid.uuid4().hex
        self.agent_name = agent_name
        self.is_streaming = is_streaming
        self.action_context = action_context if action_context is not None else ActionContext()
        self.tools: Mapping[str, Any] = tools if tools is not None else {}
        self._clock = clock
        self.turn = turn
        self.scratchpad = scratchpad if scratchpad is not None else Scratchpad()
        self.diagnostics: list[Any] = []
        self.session_state: dict[str, Any] = {} if session_state is None else session_state
        self._agent_redactor = redactor if redactor is not None else Redactor()
        self._redactor: Redactor | None = None
        self._sections: Mapping[str, BaseModel] = sections if sections is not None else {}

    @property
    def redactor(self) -> Redactor:
        """The run's `seamkit.Redactor`: the agent's secrets and the context's
        (built on first use)."""
        if self._redactor is None:
            self._redactor = self._agent_redactor.extend(self.action_context.secret_texts)
        return self._redactor

    @property
    def sections(self) -> Mapping[str, BaseModel]:
        """The agent manifest's plugin-owned sections, by key (empty for an
        agent built in code)."""
        return self._sections

    def section(self, key: str) -> BaseModel | None:
        """The manifest section ``key`` (validated by its plugin's model), or ``None``."""
        return self._sections.get(key)

    def now(self) -> datetime:
        """The current time from the agent's clock (an aware datetime)."""
        return self._clock()

    def __repr__(self) -> str:
        return (
            f"HookContext(run_id={self.run_id!r}, agent_name={self.agent_name!r}, "
            f"turn={self.turn}, is_streaming={self.is_streaming})"
        )
