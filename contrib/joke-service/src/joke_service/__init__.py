"""The joke service of the tool-services reference, as a seamkit
`DynamicToolService`: config param ``style`` (``pun`` by default), argument
``topic``. Serve it with::

    seamkit tool-service serve joke_service:JokeService --transport http --port 8765
"""

from __future__ import annotations

from typing import Any

from seamkit_tool_service import Argument, ConfigParam, DynamicToolService, ServedTool

__all__ = ["JOKES", "JokeService", "pick_joke"]

JOKES: dict[str, dict[str, str]] = {
    "pun": {
        "programming": "I would tell you a UDP joke, but you might not get it.",
        "animals": "What do you call a sleeping bull? A bulldozer.",
        "food": "I'm reading a book about anti-gravity toast. It's impossible to put down.",
    },
    "dad": {
        "programming": "Why do programmers prefer dark mode? Because light attracts bugs.",
        "animals": "Why don't cows have money? Because farmers milk them dry.",
        "food": "Why did the cookie go to the doctor? It felt crummy.",
    },
}


def pick_joke(topic: str, style: str) -> str:
    """A joke on ``topic`` in ``style`` (puns for an unknown style, a generic
    joke for an unknown topic)."""
    jokes = JOKES.get(style, JOKES["pun"])
    key = topic.strip().lower()
    generic = f"Why did the {key or 'thing'} cross the road? To get to the punchline."
    return jokes.get(key) or generic


class JokeService(DynamicToolService):
    """Tells jokes: ``style`` from the tool's config, ``topic`` from the model."""

    id = "joke-service"
    description = "Tells a joke on a topic, in a style."
    config_params = (ConfigParam(name="style"),)
    tools = (
        ServedTool(
            name="tell-joke",
            description="Tell a joke on a given topic",
            config={"style": "pun"},
            arguments=[
                Argument(
                    name="topic",
                    type="string",
                    description="The topic for the joke (e.g. programming, animals, food)",
                )
            ],
        ),
    )

    async def invoke(self, user: str, config: dict[str, Any], arguments: dict[str, Any]) -> str:
        """One joke on the model's ``topic`` in the tool's ``style`` (``pun``
        when the tool sets none), greeting ``user`` when the agent sent one."""
        style = str(config.get("style") or "pun")
        topic = str(arguments.get("topic", ""))
        greeting = f"Hey {user}! " if user else ""
        kind = "pun" if style == "pun" else f"{style} joke"
        return f"{greeting}Here's a {kind} for you:\n\n{pick_joke(topic, style)}"
