"""The hook an ``approval`` entry builds: at ``on_pre_tool_use`` it asks
for approval of the calls of its tools whose arguments fit its ``when``."""

from __future__ import annotations

import fnmatch
import json
import logging
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import seamkit
from pydantic_core import to_jsonable_python
from seamkit.flow import PreToolUseFlow, RequireApproval
from seamkit.plugins import BuildContext, secret_texts

from ._config import ApprovalHookConfig
from ._template import ReasonTemplate

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

__all__ = ["ApprovalHook"]

log = logging.getLogger("seamkit_approval")


class ApprovalHook:
    """The hook an ``approval`` entry builds (or one made in code:
    ``ApprovalHook(ApprovalHookConfig(...))``).

    ``asks(call, ctx)`` says whether a call needs approval: its tool's final
    name matches a pattern of ``tools``, and its arguments validate against
    ``when`` (always, without one). The arguments are checked as the tool
    validated them (defaults filled in, as JSON) when the run has the tool,
    else as the call holds them. Whatever cannot be decided (arguments that
    are not JSON or that the tool refuses, a schema that errs) needs
    approval: the hook fails closed.
    """

    def __init__(self, config: ApprovalHookConfig, build: BuildContext | None = None) -> None:
        self.config = config
        self.reason = ReasonTemplate(config.reason)
        patterns = "|".join(f"(?:{fnmatch.translate(p)})" for p in config.tools)
        self._matches = re.compile(patterns).match
        self._validator = None if config.when is None else _compile(config.when)
        if build is not None:
            unmatched = [
                p for p in config.tools if not any(fnmatch.fnmatchcase(t, p) for t in build.tools)
            ]
            if unmatched:
                listing = ", ".join(sorted(build.tools)) or "none"
                log.warning(
                    "approval hook %r: %s match no tool of the agent yet (its tools: %s)",
                    config.name or "approval",
                    ", ".join(repr(p) for p in unmatched),
                    listing,
                )

    def matches(self, tool: str) -> bool:
        """Whether calls of the tool named ``tool`` (its final name) are this hook's."""
        return self._matches(tool) is not None

    def asks(self, call: seamkit.ToolCall, ctx: seamkit.HookContext) -> bool:
        """Whether ``call`` needs approval (see the class)."""
        if not self.matches(call.name):
            return False
        validator = self._validator
        if validator is None:
            return True
        try:
            return bool(validator.is_valid(_as_json(_arguments(call, ctx))))
        except Exception:
            return True  # undecidable: fail closed

    @seamkit.hookimpl
    def on_pre_tool_use(self, ctx: seamkit.HookContext, call: seamkit.ToolCall) -> PreToolUseFlow:
        """`RequireApproval` with the rendered reason for a call that needs
        it, else ``None`` (Continue)."""
        if not self.asks(call, ctx):
            return None
        redact = ctx.redactor
        written = secret_texts(call.arguments)  # a hook before this one may have put secrets in
        if written:
            redact = redact.extend(written)
        return RequireApproval(self.reason.render(call.arguments, redact))


def _arguments(call: seamkit.ToolCall, ctx: seamkit.HookContext) -> Mapping[str, Any]:
    """The call's arguments as its tool validates them (the call's own when
    the run has no such tool)."""
    tool = ctx.tools.get(call.name)
    if isinstance(tool, seamkit.Tool):
        return tool.validate(call.arguments)
    return call.arguments


def _as_json(value: Any) -> Any:
    """``value`` as the JSON a schema checks (a secret as its value); raises
    for what JSON cannot hold (NaN, an infinity, an object of no JSON type)."""
    plain = to_jsonable_python(value, fallback=_unwrap)
    return json.loads(json.dumps(plain, allow_nan=False))


def _unwrap(value: Any) -> Any:
    if isinstance(value, seamkit.Secret):
        return to_jsonable_python(value.get_secret_value(), fallback=_unwrap)
    raise TypeError(f"{type(value).__name__} is not JSON")


def _compile(schema: dict[str, Any]) -> Validator:
    import jsonschema  # lazy: ~40 ms to import, only entries with a `when` need it

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    validator: Validator = cls(schema)
    return validator
