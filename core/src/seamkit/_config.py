"""The bases of every configurable kind: hooks, tools, refresh conditions and
model providers.

A plugin's config model derives from one of these and declares ``kind`` as a
``Literal``; the manifest's lists are discriminated unions on ``kind``, rebuilt
at load time from the installed plugins.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, ClassVar, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
)
from pydantic_core import PydanticCustomError

from ._events import EVENTS, HookEvent
from ._secret import Secret
from ._tool_settings import ApprovalEntry, EffectsEntry, StreamOutputEntry

__all__ = [
    "AnyRefreshCondition",
    "HookConfig",
    "KindConfig",
    "ModelConfig",
    "ModelSpec",
    "OnError",
    "Placement",
    "RefreshCondition",
    "Settings",
    "ToolConfig",
]

OnError = Literal["skip", "fail"]


class KindConfig(BaseModel):
    """Base of every config model that the manifest selects by ``kind``.

    Unknown fields are errors, so a typo in a manifest is reported, not ignored.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    kind: str


class RefreshCondition(KindConfig):
    """Base of refresh-condition kinds: when does an injected result go stale?

    Subclasses implement :meth:`expiry`.
    """

    def expiry(self, now: datetime) -> datetime:
        """The instant (aware) until which a result obtained at ``now`` stays fresh."""
        raise NotImplementedError(f"{type(self).__name__} does not implement expiry()")


class RefreshSlot:
    """Marks where the loader puts the union of the installed refresh conditions."""

    def __repr__(self) -> str:
        return "AnyRefreshCondition"


AnyRefreshCondition = Annotated[RefreshCondition, RefreshSlot()]
"""Annotation for a field that takes any installed refresh condition."""


class HookConfig(KindConfig):
    """Base of hook-kind config models: the fields every manifest hook entry has.

    ``on_error`` left unset takes the kind's ``default_on_error`` (``skip`` on
    ``on_completion``); ``fail`` is rejected on ``on_completion``. ``match`` takes
    glob patterns on the tool's final name and is allowed only on tool events.
    """

    default_on_error: ClassVar[OnError] = "fail"
    """The kind's default policy: ``skip`` for context injectors, ``fail`` for guards."""

    event: HookEvent = Field(description="The event this hook runs at.")
    name: str | None = Field(default=None, description="A name for logs and diagnostics.")
    timeout_seconds: float | None = Field(
        default=None, gt=0, description="Time-out for one call of the hook; none by default."
    )
    on_error: OnError | None = Field(
        default=None,
        description="What a raising or timed-out hook does: skip (go on) or fail (the "
        "request fails). Default: the kind's choice.",
    )
    match: list[str] | None = Field(
        default=None,
        description="Glob patterns on the tool's final name (tool events only).",
    )

    @field_validator("on_error")
    @classmethod
    def _check_on_error(cls, value: OnError | None, info: ValidationInfo) -> OnError | None:
        if value == "fail" and info.data.get("event") == HookEvent.ON_COMPLETION:
            raise PydanticCustomError(
                "fail_on_completion",
                "on_error 'fail' is not allowed on on_completion",
                {
                    "hint": "the run is already over there, so a failing hook can only be "
                    "skipped: use on_error: skip or leave it out"
                },
            )
        return value

    @field_validator("match")
    @classmethod
    def _check_match(cls, value: list[str] | None, info: ValidationInfo) -> list[str] | None:
        event = info.data.get("event")
        if value is not None and event is not None and not EVENTS[event].tool_event:
            raise PydanticCustomError(
                "match_not_allowed",
                "'match' is only allowed on tool events, not on {event}",
                {
                    "event": event.value,
                    "hint": "use it on on_pre_tool_use, on_post_tool_use or on_invalid_tool_call",
                },
            )
        return value

    @property
    def error_policy(self) -> OnError:
        """The policy in force: ``on_error`` if set, else the kind's default."""
        if self.on_error is not None:
            return self.on_error
        if self.event == HookEvent.ON_COMPLETION:
            return "skip"
        return self.default_on_error


class ToolConfig(KindConfig):
    """Base of tool-kind config models. ``toolset`` prefixes the final tool
    names; ``approval``, ``effects`` and ``stream_output`` (one value for all
    the entry's tools, or a map by tool name) are applied by the kernel to
    the tools the kind resolves, so a kind needs no code for them."""

    toolset: str | None = Field(
        default=None,
        description="Names the model sees become sanitize_toolname(f'{toolset}_{tool}').",
    )
    approval: ApprovalEntry = Field(
        default=None,
        description="When a call needs a person's approval: always, never (or true, false), "
        "or {when: <JSON Schema>} over the validated arguments; one for all the entry's "
        "tools or a map by tool name. Default: each tool's own (never, unless its code says).",
    )
    effects: EffectsEntry = Field(
        default=None,
        description="What running a tool does, for the journal: none (only reads), "
        "idempotent (acts once per idempotency key) or once; one for all the entry's tools "
        "or a map by tool name, e.g. {refund: once, lookup: none}. Default: each tool's own "
        "(once, unless its code says).",
    )
    stream_output: StreamOutputEntry = Field(
        default=None,
        description="Reserved for output guards: whether the tools' output streams; one "
        "boolean or a map by tool name. Checked and kept; nothing uses it yet.",
    )


class ModelConfig(BaseModel):
    """Base of model-provider config models: ``provider`` and ``name``.

    A provider that takes options registers a subclass with more fields;
    ``model: "<provider>:<name>"`` in a manifest is the same as the mapping
    ``{provider: ..., name: ...}``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    provider: str = Field(description="The model provider, e.g. 'openai' or 'scripted'.")
    name: str = Field(description="The model's name at that provider.")

    @property
    def spec(self) -> str:
        """``"<provider>:<name>"``."""
        return f"{self.provider}:{self.name}"


def split_model_spec(value: object) -> object:
    """``"<provider>:<name>"`` as the mapping ``{provider, name}``; anything
    else as it is (so validation reports it)."""
    if isinstance(value, str):
        provider, sep, name = value.partition(":")
        if sep and provider and name:
            return {"provider": provider, "name": name}
    return value


ModelSpec = Annotated[ModelConfig, BeforeValidator(split_model_spec)]
"""A model given as ``"<provider>:<name>"`` or as a `ModelConfig` mapping."""


Placement = Literal["history", "stable"]
"""Where injected tool results go: ``history`` (as the reference places them) or
``stable`` (only at the end, never changing what the model has seen)."""


class Settings(BaseModel):
    """Limits and knobs of a run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_turns: int = Field(default=10, gt=0, description="Model turns before the run stops.")
    tool_concurrency: int = Field(
        default=1, gt=0, description="Tool calls of one turn that may run at once."
    )
    max_invalid_tool_calls: int = Field(
        default=3, ge=0, description="Invalid tool calls the model may retry per run."
    )
    run_timeout_seconds: float | None = Field(
        default=None, gt=0, description="Wall-clock limit of one run; none by default."
    )
    completion_timeout_seconds: float | None = Field(
        default=10.0,
        gt=0,
        description="How long the on_completion hooks of one run may take together, after "
        "the run (and run_timeout_seconds) ended; a hook still running then is cancelled and "
        "reported. null: no limit (a second cancellation of the run still cuts them short).",
    )
    max_argument_depth: int = Field(
        default=64,
        gt=0,
        le=200,
        description="How deeply a tool call's JSON arguments may nest (objects and arrays); "
        "a call nested deeper is an invalid call, never a crash.",
    )
    session_wait_seconds: float = Field(
        default=10.0,
        ge=0,
        description="How long a run waits for another run on the same session before it "
        "fails with 'session busy'.",
    )
    state_key: Secret[str] | None = Field(
        default=None,
        description="The key (a ${secret:...}) that signs the suspended state of a run "
        "without a session, so that it cannot be forged; such a run cannot be resumed "
        "without it.",
    )
    approval_expires_seconds: float | None = Field(
        default=None,
        gt=0,
        description="How long a call may wait for approval; an older one is rejected with "
        "'approval expired' when the run continues. null: pending calls never expire "
        "(a session-less suspended state still expires after 7 days).",
    )
    placement: Placement = Field(
        default="history",
        description="Where hooks that inject tool results put them, unless a hook says: "
        "'history' (refresh in place, first pair after the first user message) or 'stable' "
        "(only ever at the end, so the model's prompt cache stays warm).",
    )
