"""The OpenAI Agents SDK (``openai-agents``) against ``seamkit serve``: with
``OpenAIChatCompletionsModel``, and with its default (Responses) model."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from _common import API_KEY, BASE_URL, MODEL, QUESTION, SESSION, Record, add, check, report
from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    Runner,
    function_tool,
    set_default_openai_api,
    set_default_openai_client,
    set_tracing_disabled,
)
from openai import AsyncOpenAI
from openai.types.responses import ResponseTextDeltaEvent

set_tracing_disabled(True)  # no traces sent to OpenAI
CLIENT = AsyncOpenAI(base_url=BASE_URL, api_key=API_KEY, max_retries=0)


def chat_model() -> OpenAIChatCompletionsModel:
    return OpenAIChatCompletionsModel(model=MODEL, openai_client=CLIENT)


async def stream(agent: Agent[Any]) -> list[str]:
    result = Runner.run_streamed(agent, QUESTION)
    return [
        event.data.delta
        async for event in result.stream_events()
        if event.type == "raw_response_event"
        and isinstance(event.data, ResponseTextDeltaEvent)
        and event.data.delta
    ]


async def session(model: Any) -> list[str]:
    """Two turns in one seamkit session, the second with the first's items."""
    client = AsyncOpenAI(base_url=BASE_URL, api_key=API_KEY, max_retries=0, default_headers=SESSION)
    if not isinstance(model, str):
        model = OpenAIChatCompletionsModel(model=MODEL, openai_client=client)
    else:
        set_default_openai_client(client, use_for_tracing=False)
    agent = Agent("plain", model=model)
    first = await Runner.run(agent, "one")
    again = [*first.to_input_list(), {"role": "user", "content": "two"}]
    second = await Runner.run(agent, again)
    return [first.final_output, second.final_output]


async def round_trip(agent: Agent[Any]) -> dict[str, Any]:
    result = await Runner.run(agent, "What is 2 + 3?")
    calls = [
        {"name": item.raw_item.name, "args": json.loads(item.raw_item.arguments)}
        for item in result.new_items
        if item.type == "tool_call_item"
    ]
    return {"calls": calls, "text": result.final_output}


async def main() -> None:
    name = check()
    model: Any = chat_model()
    if name.startswith("responses_"):  # the SDK's default model: the Responses API
        set_default_openai_client(CLIENT, use_for_tracing=False)
        set_default_openai_api("responses")
        model, name = MODEL, name.removeprefix("responses_")
    match name:
        case "chat":
            report((await Runner.run(Agent("plain", model=model), QUESTION)).final_output)
        case "stream":
            report(await stream(Agent("plain", model=model)))
        case "structured":
            agent = Agent("record", model=model, output_type=Record)
            report((await Runner.run(agent, QUESTION)).final_output.model_dump())
        case "session":
            report(await session(model))
        case "tool_round_trip":
            report(await round_trip(Agent("adder", model=model, tools=[function_tool(add)])))
        case other:
            raise SystemExit(f"no check {other!r}")


asyncio.run(main())
