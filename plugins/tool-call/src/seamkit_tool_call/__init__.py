"""seamkit plugin: the ``tool_call`` hook kind.

At ``on_request_start`` it calls one of the agent's tools and injects the
call and its result into the messages (a synthetic pair); at
``on_completion`` it only calls the tool. Written against seamkit's public API.

When the agent is built, the entry is checked against its tool: the tool
must exist, and the arguments must fit its JSON Schema (see `_arguments`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Literal

import seamkit
from pydantic import Field, model_validator
from seamkit.flow import RewriteMessages
from seamkit.plugins import BuildContext

from ._arguments import PLACEHOLDER, check_arguments, unknown_tool

__all__ = ["ToolCallHook", "ToolCallHookConfig"]
__seamkit_api__ = 1

log = logging.getLogger("seamkit.tool_call")

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


class ToolCallHook:
    """The hook a ``tool_call`` entry builds: the tool is looked up once, when
    the agent is built, and the entry's arguments are checked against it.

    Raises `seamkit.ManifestError` whose problems are located inside the
    entry (``tool_name``, ``arguments.limit``) when the tool is missing or
    the arguments do not fit its schema.
    """

    def __init__(self, config: ToolCallHookConfig, build: BuildContext) -> None:
        self.config = config
        final = config.final_name
        tool = build.tools.get(final)
        if tool is None:
            label = config.name or "tool_call"
            tools = list(build.tools)
            raise unknown_tool(label, final, config.tool_name, config.toolset_name, tools)
        problems = check_arguments(config.arguments, tool, final)
        if problems:
            raise seamkit.ManifestError(problems)
        self.tool: seamkit.Tool = tool
        self.final_name = final
        self.frequency: seamkit.injection.Frequency = config.frequency or "append_if_changed"
        self.placement: seamkit.injection.Placement = config.placement or build.settings.placement

    @seamkit.hookimpl
    async def on_request_start(
        self, ctx: seamkit.HookContext, messages: Sequence[seamkit.Message]
    ) -> RewriteMessages | None:
        """Call the tool (unless its latest result is still fresh for the same
        rendered arguments) and inject it."""
        config = self.config
        injection = seamkit.injection
        condition = config.refresh_condition
        now = ctx.now()
        if self.frequency == "once" and injection.injected_results(
            messages, self.final_name, config.arguments
        ):
            return None  # already injected: no need to call the tool
        values = {"user_message": _last_user(messages), "run_id": ctx.run_id}
        arguments = _render(config.arguments, ctx, values, shown=False)
        state = ctx.session_state
        # Freshness only matters with a refresh condition: without one the
        # digest and the record would be work on every request for nothing.
        digest = injection.argument_digest(state, arguments) if condition is not None else None
        if digest is not None and injection.is_fresh(
            state,
            messages,
            name=self.final_name,
            arguments=config.arguments,
            digest=digest,
            now=now,
        ):
            return None
        result = await self._call(arguments, ctx)
        expiry = condition.expiry(now) if condition is not None else None
        injected = injection.inject_tool_result(
            messages,
            name=self.final_name,
            arguments=config.arguments,
            content=result.content,
            frequency=self.frequency,
            expiry=expiry,
            shown_arguments=_render(config.arguments, ctx, values, shown=True),
            placement=self.placement,
        )
        if digest is not None:
            injection.remember(
                state,
                injected,
                name=self.final_name,
                arguments=config.arguments,
                digest=digest,
                expiry=expiry,
            )
        return RewriteMessages(injected)

    @seamkit.hookimpl
    async def on_completion(self, ctx: seamkit.HookContext, result: seamkit.RunResult) -> None:
        """Call the tool with the run's output in reach; inject nothing."""
        values = {
            "user_message": _last_user(result.transcript),
            "output": result.output or "",
            "run_id": ctx.run_id,
        }
        await self._call(_render(self.config.arguments, ctx, values, shown=False), ctx)

    async def _call(
        self, arguments: dict[str, Any], ctx: seamkit.HookContext
    ) -> seamkit.ToolResult:
        try:
            result = await self.tool.call(arguments, ctx.action_context)
        except seamkit.InvalidToolCall as exc:
            raise seamkit.SeamkitError(f"tool {self.final_name!r}: {exc.message}") from None
        if result.raised:
            # A failure (exception, time-out, missing dependency): the hook's
            # on_error decides; under skip nothing is injected.
            raise seamkit.SeamkitError(f"tool {self.final_name!r} failed: {result.content}")
        return result


def _last_user(messages: Sequence[seamkit.Message]) -> str:
    for message in reversed(messages):
        if message.role == "user":
            return message.text
    return ""


def _render(value: Any, ctx: seamkit.HookContext, values: dict[str, Any], *, shown: bool) -> Any:
    """``value`` with its placeholders filled in.

    Secrets stay `Secret` either way: the tool call unwraps them (and masks
    their text in any error), the injected message prints them as ``***``.
    A string that mixes a secret into other text becomes a `Secret` as a whole
    for the call (``shown=False``), and shows the secret as ``***``
    (``shown=True``).
    """
    if isinstance(value, dict):
        return {k: _render(v, ctx, values, shown=shown) for k, v in value.items()}
    if isinstance(value, list):
        return [_render(v, ctx, values, shown=shown) for v in value]
    if not isinstance(value, str) or "{{" not in value:
        return value
    secret = False

    def lookup(name: str) -> Any:
        nonlocal secret
        if not name.startswith("context."):
            return values.get(name, "")
        prop = name.split(".", 1)[1]
        found = ctx.action_context.get(prop, _MISSING)
        if found is _MISSING:
            raise seamkit.SeamkitError(
                f"placeholder {{{{ {name} }}}}: the request's context has no property {prop!r}",
                hint=f"context properties: {', '.join(ctx.action_context) or 'none'}",
            )
        secret = secret or isinstance(found, seamkit.Secret)
        return found

    whole = PLACEHOLDER.fullmatch(value.strip())
    if whole is not None:
        return lookup(whole.group(1))  # a lone placeholder keeps the value's type

    def text(match: re.Match[str]) -> str:
        found = lookup(match.group(1))
        if isinstance(found, seamkit.Secret) and not shown:
            return str(found.get_secret_value())
        return str(found)  # a Secret prints as ***

    rendered = PLACEHOLDER.sub(text, value)
    return seamkit.Secret(rendered) if secret and not shown else rendered


_MISSING: Any = object()


@seamkit.hookimpl
def register_hook_kinds(register: Callable[..., None]) -> None:
    """Register the ``tool_call`` kind, at on_request_start and on_completion."""
    register(
        ToolCallHookConfig,
        ToolCallHook,
        events={seamkit.HookEvent.ON_REQUEST_START, seamkit.HookEvent.ON_COMPLETION},
    )
