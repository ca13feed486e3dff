"""The ``approval`` hook kind's config model: which tools' calls need a
person's approval, when (a JSON Schema over the arguments), and the reason
shown to the person who decides."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import seamkit
from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from ._template import ReasonTemplate

__all__ = ["ApprovalHookConfig"]


class ApprovalHookConfig(seamkit.HookConfig):
    """Ask a person to approve calls of ``tools`` (when their arguments fit
    ``when``) before they run: the run ends ``suspended`` until a decision."""

    default_on_error: ClassVar[Literal["skip", "fail"]] = "fail"

    kind: Literal["approval"] = "approval"
    tools: list[str] = Field(
        description="Tools whose calls need approval, at least one: final tool names or "
        "glob patterns on them ('*', '?', '[...]'; case-sensitive, the whole name).",
    )
    when: dict[str, Any] | None = Field(
        default=None,
        description="A JSON Schema over the call's arguments (as the tool validated them): "
        "approval is needed when they validate against it, and whenever that cannot be "
        "decided. Left out: every call of the tools needs approval.",
    )
    reason: str = Field(
        min_length=1,
        description="What the person deciding is shown: text with '{name}' placeholders "
        "of the call's top-level arguments, e.g. 'Refund of {amount} EUR on order {order}' "
        "(no attribute, index or format spec). Secrets are masked.",
    )

    @field_validator("tools")
    @classmethod
    def _check_tools(cls, value: list[str]) -> list[str]:
        if not value:
            raise PydanticCustomError(
                "no_tools",
                "tools is empty: the hook would ask about no call",
                {"hint": "name at least one tool or glob pattern, e.g. tools: [refund]"},
            )
        for pattern in value:
            if not pattern.strip():
                raise PydanticCustomError(
                    "empty_tool_pattern",
                    "tools holds an empty name",
                    {"hint": "give each tool's final name or a glob pattern such as 'pay_*'"},
                )
        return value

    @field_validator("when")
    @classmethod
    def _check_when(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return None
        import jsonschema  # lazy: ~40 ms to import, only entries with a `when` need it

        validator = jsonschema.validators.validator_for(
            value, default=jsonschema.Draft202012Validator
        )
        try:
            validator.check_schema(value)
        except jsonschema.SchemaError as exc:
            where = "/".join(str(p) for p in exc.absolute_path) or "(top)"
            raise PydanticCustomError(
                "invalid_when_schema",
                "when is not a valid JSON Schema: {error} (at {where})",
                {
                    "error": exc.message,
                    "where": where,
                    "hint": "e.g. when: {properties: {amount: {minimum: 100}}, required: [amount]}",
                },
            ) from None
        return value

    @field_validator("reason")
    @classmethod
    def _check_reason(cls, value: str) -> str:
        try:
            ReasonTemplate(value)
        except seamkit.SeamkitError as exc:
            context = {"message": exc.message}
            if exc.hint:
                context["hint"] = exc.hint
            raise PydanticCustomError("invalid_reason", "{message}", context) from None
        return value
