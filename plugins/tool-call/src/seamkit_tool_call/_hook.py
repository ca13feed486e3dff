"""The hook a ``tool_call`` entry builds: it calls the entry's tool and, at
``on_request_start``, injects the call and its result into the messages."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import seamkit
from seamkit.flow import RewriteMessages
from seamkit.plugins import BuildContext

from ._arguments import PLACEHOLDER, check_arguments, unknown_tool
from ._config import ToolCallHookConfig

__all__ = ["ToolCallHook"]


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
        if message.from_user:
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
