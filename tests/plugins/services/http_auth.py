"""A service for the HTTP authentication tests: it answers with who called
it, as its transport vouches, and the user the agent claims."""

from __future__ import annotations

from typing import Any

from seamkit_tool_service import DynamicToolService, ServiceCall


class Whoami(DynamicToolService):
    """Answers ``{user, caller, user_verified}``; trusts users from ``agent-1``."""

    id = "whoami"
    trust_user_from = frozenset({"agent-1"})

    async def invoke(
        self, user: str, config: dict[str, Any], arguments: dict[str, Any], call: ServiceCall
    ) -> Any:
        return {"user": user, "caller": call.caller, "user_verified": call.user_verified}


class Plain(DynamicToolService):
    """The three-parameter form, still served behind a token."""

    id = "plain"

    async def invoke(self, user: str, config: dict[str, Any], arguments: dict[str, Any]) -> Any:
        return f"plain for {user}"
