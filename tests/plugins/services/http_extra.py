"""Services for the HTTP transport tests: one that counts the requests it
received, and one that checks a secret config value without ever echoing it."""

from __future__ import annotations

from typing import Any

from seamkit_tool_service import ConfigParam, DynamicToolService

CANARY = "sk-joke-canary-7f3a9c2e5b"
"""The secret the tests pass as ``${secret:JOKE_KEY}``; `KeyCheck` knows it."""


class Counter(DynamicToolService):
    """Answers with how many requests this worker received, this one included."""

    id = "counter"

    def __init__(self) -> None:
        self.received = 0

    async def invoke(self, user: str, config: dict[str, Any], arguments: dict[str, Any]) -> Any:
        self.received += 1
        return {"received": self.received, "arguments": arguments}


class KeyCheck(DynamicToolService):
    """Answers ``ok`` when its ``key`` config value is `CANARY`, else ``wrong``
    (never the value itself, so that a leak shows only where seamkit put it)."""

    id = "keycheck"
    config_params = (ConfigParam(name="key", required=True),)

    async def invoke(self, user: str, config: dict[str, Any], arguments: dict[str, Any]) -> str:
        return "ok" if config.get("key") == CANARY else "wrong"
