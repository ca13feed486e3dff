"""Approvals: what a call waiting for a person looks like (`PendingCall`), the
decisions that continue a suspended run (`Decisions` of `Approve`, `Reject`
and `Edit`), the digest an approval binds to, and a tool's own rule for when
it needs approval (`ApprovalRule`)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import KW_ONLY
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.dataclasses import dataclass

from ._errors import ToolDefinitionError
from ._schema import compile_schema

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

__all__ = [
    "ApprovalRule",
    "ApprovalSetting",
    "Approve",
    "Decision",
    "Decisions",
    "Edit",
    "PendingCall",
    "Reject",
    "approval_rule",
    "arguments_digest",
]

DIGEST_LENGTH = 24
"""Hex digits of an argument digest (96 bits of SHA-256)."""


def arguments_digest(tool: str, arguments: Mapping[str, Any]) -> str:
    """The digest an approval binds to: SHA-256 over the tool's name and the
    arguments as canonical JSON (sorted keys, no spaces), its first 24 hex
    digits. Two calls get one digest exactly when they name one tool with
    equal arguments."""
    text = json.dumps(
        [tool, arguments], sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )
    return hashlib.sha256(text.encode()).hexdigest()[:DIGEST_LENGTH]


@dataclass(frozen=True)
class Approve:
    """Run the call as shown. ``digest``, when given, must be the pending
    call's: an approval binds to exactly the arguments that were shown."""

    digest: str | None = None
    _: KW_ONLY
    by: str | None = None
    """Who decided (an API key's id, ``"cli"``), for telemetry."""
    action: Literal["approve"] = "approve"


@dataclass(frozen=True)
class Reject:
    """Do not run the call: ``reason`` is what the model gets as its result."""

    reason: str = "rejected"
    _: KW_ONLY
    by: str | None = None
    action: Literal["reject"] = "reject"


@dataclass(frozen=True)
class Edit:
    """Run the call with these ``arguments`` instead (validated against the
    tool's schema; the approval binds to them). ``digest``, when given, must
    be the pending call's."""

    arguments: dict[str, Any]
    digest: str | None = None
    _: KW_ONLY
    by: str | None = None
    action: Literal["edit"] = "edit"


Decision = Approve | Reject | Edit
"""What a person decided about one pending call."""


@dataclasses.dataclass(frozen=True, slots=True)
class Decisions:
    """The input that continues a suspended run: a decision per call id.

    ``rest`` decides every pending call the mapping leaves out (a
    ``Reject("...")``, say); without it, the run stays suspended until every
    pending call is decided. ``by`` is who decided, for telemetry, when a
    decision does not say.
    """

    decisions: Mapping[str, Decision] = dataclasses.field(default_factory=dict)
    rest: Decision | None = None
    by: str | None = None

    def __post_init__(self) -> None:
        for call_id, decision in self.decisions.items():
            if not isinstance(decision, Approve | Reject | Edit):
                raise TypeError(
                    f"Decisions: the decision for {call_id!r} is a {type(decision).__name__}, "
                    "not Approve, Reject or Edit"
                )


class PendingCall(BaseModel):
    """One call of a suspended run that waits for a decision.

    ``arguments`` are what the model sent, after any ``RewriteArgs``;
    ``digest`` is `arguments_digest` of them, which ``Approve(digest=...)``
    must match; ``hook`` names the hook that asked (``None`` when the tool's
    own ``approval`` rule did); ``decision`` is the decision recorded so far
    (the run stays suspended until every pending call has one).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    call_id: str
    tool: str
    arguments: dict[str, Any]
    reason: str
    hook: str | None = None
    digest: str
    requested_at: datetime
    decision: Annotated[Approve | Reject | Edit, Field(discriminator="action")] | None = None


ApprovalSetting = bool | Literal["always", "never"] | Mapping[str, Any]
"""How a tool says when it needs approval: ``True``/``"always"``,
``False``/``"never"``, or ``{"when": <JSON Schema over the arguments>}``."""


class ApprovalRule:
    """A tool's own approval rule: never, always, or when its validated
    arguments validate against a JSON Schema. Fails closed: arguments that
    cannot be checked (not JSON, a schema that errs) need approval."""

    __slots__ = ("_validator", "mode", "when")

    def __init__(
        self, mode: Literal["never", "always", "when"], when: dict[str, Any] | None
    ) -> None:
        self.mode = mode
        self.when = when
        self._validator: Validator | None = None

    def __repr__(self) -> str:
        return (
            f"ApprovalRule({self.mode!r})"
            if self.when is None
            else f"ApprovalRule(when={self.when!r})"
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ApprovalRule) and (self.mode, self.when) == (
            other.mode,
            other.when,
        )

    def __hash__(self) -> int:
        return hash((self.mode, json.dumps(self.when, sort_keys=True, default=str)))

    @property
    def setting(self) -> ApprovalSetting:
        """The rule as a setting (``False``, ``True``, ``{"when": ...}``)."""
        if self.when is not None:
            return {"when": self.when}
        return self.mode == "always"

    def needed(self, values: Mapping[str, Any]) -> bool:
        """Whether a call with these validated ``values`` needs approval."""
        if self.mode != "when":
            return self.mode == "always"
        try:
            data = json.loads(json.dumps(dict(values), default=_plain))
            validator = self._validator
            if validator is None:
                validator = self._validator = _compile(self.when or {})
            return bool(validator.is_valid(data))
        except Exception:
            return True  # undecidable: fail closed


NEVER = ApprovalRule("never", None)
ALWAYS = ApprovalRule("always", None)


def approval_rule(setting: ApprovalSetting | ApprovalRule, *, tool: str = "") -> ApprovalRule:
    """The rule a tool's ``approval`` setting names; `ToolDefinitionError`
    naming ``tool`` for anything else (a ``when`` that is not JSON Schema)."""
    if isinstance(setting, ApprovalRule):
        return setting
    if setting is True or setting == "always":
        return ALWAYS
    if setting is False or setting == "never":
        return NEVER
    if isinstance(setting, Mapping) and set(setting) == {"when"} and _is_map(setting["when"]):
        when = dict(setting["when"])
        _compile(when, tool=tool)
        return ApprovalRule("when", when)
    raise ToolDefinitionError(
        f"tool {tool!r}: approval must be true, false, 'always', 'never' or "
        f"{{when: <JSON Schema>}}, not {setting!r}",
    )


def _is_map(value: object) -> bool:
    return isinstance(value, Mapping)


def _compile(schema: dict[str, Any], *, tool: str = "") -> Validator:
    return compile_schema(schema, f"tool {tool!r}: approval.when")


def _plain(value: object) -> object:
    """A validated value JSON has no type for (a date, a model), as JSON."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    return str(value)
