"""The ``tool_call`` hook kind's config model: which tool to call, with which
arguments (placeholders checked here, against the entry's event), and how
often its result is injected."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import seamkit
from pydantic import Field, model_validator

from ._arguments import PLACEHOLDER

__all__ = ["ToolCallHookConfig"]

_NAMES = ("user_message", "output", "run_id")


class ToolCallHookConfig(seamkit.HookConfig):
    """Call a tool; at ``on_request_start`` inject its result into the messages."""

    default_on_error: ClassVar[Literal["skip", "fail"]] = "skip"

    kind: Literal["tool_call"] = "tool_call"
    toolset_name: str | None = Field(
        default=None,
        description="The toolset of the tool (its entry's 'toolset'); the final name is "
        "sanitize_toolname('<toolset_name>_<tool_name>'). Leave out for a tool used by its "
        "own name.",
    )
    tool_name: str = Field(
        description="The tool's name in its toolset, or its final name without toolset_name."
    )
    arguments: dict[str, Any] = Field(
        default_factory=dict,
        description="Arguments of the call. Strings may hold {{ user_message }}, "
        "{{ output }} (on_completion only), {{ run_id }} and {{ context.NAME }}, rendered "
        "at call time.",
    )
    frequency: seamkit.injection.Frequency | None = Field(
        default=None,
        description="on_request_start only: always, append_if_changed (default) or once.",
    )
    refresh_condition: seamkit.AnyRefreshCondition | None = Field(
        default=None,
        description="on_request_start only: while the latest injected result is fresh, "
        "and the arguments render to the same values, the tool is not called again.",
    )
    placement: seamkit.injection.Placement | None = Field(
        default=None,
        description="on_request_start only: 'history' (refresh in place; a first pair "
        "after the first user message) or 'stable' (only ever at the end, so the model's "
        "prompt cache stays warm). Default: settings.placement.",
    )

    @model_validator(mode="after")
    def _check_event(self) -> ToolCallHookConfig:
        if self.event == "on_completion":
            for field in ("frequency", "refresh_condition", "placement"):
                if getattr(self, field) is not None:
                    raise ValueError(
                        f"{field} is only for on_request_start: at on_completion the tool "
                        f"is called and nothing is injected"
                    )
        for name in _placeholders(self.arguments):
            root = name.split(".", 1)[0]
            if root == "context" and "." in name:
                continue
            if root not in _NAMES or "." in name:
                raise ValueError(
                    f"unknown placeholder {{{{ {name} }}}} in arguments; use "
                    f"user_message, output, run_id or context.NAME"
                )
            if root == "output" and self.event != "on_completion":
                raise ValueError("{{ output }} exists only at on_completion")
        return self

    @property
    def final_name(self) -> str:
        """The tool's final name, as the agent's tool map knows it."""
        if self.toolset_name:
            return seamkit.sanitize_toolname(f"{self.toolset_name}_{self.tool_name}")
        return self.tool_name


def _placeholders(value: Any) -> list[str]:
    if isinstance(value, str):
        return PLACEHOLDER.findall(value)
    if isinstance(value, dict):
        return [n for v in value.values() for n in _placeholders(v)]
    if isinstance(value, list):
        return [n for v in value for n in _placeholders(v)]
    return []
