"""pydantic-ai's OpenAI chat model (``pydantic-ai-slim[openai]``) against ``seamkit serve``."""

from __future__ import annotations

import asyncio
from typing import Any

from _common import API_KEY, BASE_URL, MODEL, QUESTION, SESSION, Record, add, check, report
from openai import AsyncOpenAI
from pydantic_ai import Agent, NativeOutput
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider


def model(**headers: str) -> OpenAIChatModel:
    client = AsyncOpenAI(  # no retries: a failure shows at once
        base_url=BASE_URL, api_key=API_KEY, max_retries=0, default_headers=headers
    )
    return OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=client))


async def stream() -> list[str]:
    async with Agent(model()).run_stream(QUESTION) as result:
        return [delta async for delta in result.stream_text(delta=True, debounce_by=None) if delta]


def session() -> list[str]:
    """Two turns in one seamkit session, the second with the first's history."""
    agent = Agent(model(**SESSION))
    first = agent.run_sync("one")
    second = agent.run_sync("two", message_history=first.all_messages())
    return [first.output, second.output]


def round_trip() -> dict[str, Any]:
    """The agent's own ``@agent.tool_plain``, called by the model."""
    agent = Agent(model())
    agent.tool_plain(add)
    result = agent.run_sync("What is 2 + 3?")
    calls = [
        {"name": part.tool_name, "args": part.args_as_dict()}
        for message in result.all_messages()
        for part in message.parts
        if part.part_kind == "tool-call"
    ]
    return {"calls": calls, "text": result.output}


def main() -> None:
    match check():
        case "chat":
            report(Agent(model()).run_sync(QUESTION).output)
        case "stream":
            report(asyncio.run(stream()))
        case "structured":
            agent = Agent(model(), output_type=NativeOutput(Record))
            report(agent.run_sync(QUESTION).output.model_dump())
        case "structured_tools":  # the default: an output tool, ``final_result``
            report(Agent(model(), output_type=Record).run_sync(QUESTION).output.model_dump())
        case "session":
            report(session())
        case "tool_round_trip":
            report(round_trip())
        case other:
            raise SystemExit(f"no check {other!r}")


main()
