"""Services that answer with what they learnt about the call: `Keyed`
takes the fourth ``invoke`` parameter (a `ServiceCall`); `Loose` takes it
through ``*rest``; `Defaulted` has it as an optional parameter."""

from __future__ import annotations

from typing import Any

from seamkit_tool_service import DynamicToolService, ServiceCall


def _about(user: str, arguments: dict[str, Any], call: ServiceCall) -> dict[str, Any]:
    return {
        "user": user,
        "arguments": arguments,
        "call_id": call.call_id,
        "idempotency_key": call.idempotency_key,
        "attempt": call.attempt,
    }


class Keyed(DynamicToolService):
    """Answers with the user, the arguments and the call's `ServiceCall` (JSON)."""

    id = "keyed"

    async def invoke(
        self, user: str, config: dict[str, Any], arguments: dict[str, Any], call: ServiceCall
    ) -> Any:
        return _about(user, arguments, call)


class Loose(DynamicToolService):
    """`Keyed`, its call taken through ``*rest``."""

    id = "loose"

    async def invoke(self, user: str, *rest: Any) -> Any:
        config, arguments, call = rest
        assert isinstance(call, ServiceCall) and isinstance(config, dict)
        return _about(user, arguments, call)


class Defaulted(DynamicToolService):
    """`Keyed`, its call an optional parameter (``None`` would say it never came)."""

    id = "defaulted"

    async def invoke(
        self,
        user: str,
        config: dict[str, Any],
        arguments: dict[str, Any],
        call: ServiceCall | None = None,
    ) -> Any:
        assert call is not None, "the call never came"
        return _about(user, arguments, call)
