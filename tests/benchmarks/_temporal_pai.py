"""pydantic-ai's side of ``bench_temporal``: W(0, 8) as a durable pydantic-ai agent.

The agent is bench_per_run's pydantic-ai agent at H = 0 (a ``FunctionModel``
that asks for 8 ``add`` calls, then answers ``"done"``), made durable two ways:

- `TemporalAgentWorkflow`: the ``TemporalAgent`` wrapper, which the issue names
  (deprecated by pydantic-ai in favour of the capability);
- `DurabilityWorkflow`: the ``TemporalDurability`` capability, the path
  pydantic-ai now recommends, reported beside it.

Both as pydantic-ai's documentation writes them: a sandboxed workflow listing
its agent in ``__pydantic_ai_agents__`` and a worker whose client carries
``PydanticAIPlugin`` (``_temporal_worker``); the tools run concurrently
(pydantic-ai's default). Imported only in a worker process of an environment
that holds pydantic-ai (``frameworks.txt``); seamkit never depends on it.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import (
    PydanticAIWorkflow,
    TemporalAgent,
    TemporalDurability,
)
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import FunctionModel
from temporalio import workflow

K = 8
ANSWER = "done"
WORKFLOWS = {"pydantic_ai": "TemporalAgentWorkflow", "pydantic_ai_durability": "DurabilityWorkflow"}


async def respond(messages: list[Any], info: Any) -> ModelResponse:
    """K calls to ``add`` after the user's message, else the answer."""
    if any(isinstance(p, UserPromptPart) for p in messages[-1].parts):
        return ModelResponse(
            parts=[
                ToolCallPart(tool_name="add", args={"a": i, "b": 1}, tool_call_id=f"c{i}")
                for i in range(K)
            ]
        )
    return ModelResponse(parts=[TextPart(ANSWER)])


async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


wrapped_agent = TemporalAgent(Agent(FunctionModel(respond), tools=[add], name="bench"))
durable_agent = Agent(
    FunctionModel(respond), tools=[add], name="bench_durable", capabilities=[TemporalDurability()]
)


@workflow.defn(name=WORKFLOWS["pydantic_ai"])
class TemporalAgentWorkflow(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [wrapped_agent]

    @workflow.run
    async def run(self, prompt: str) -> str:
        result = await wrapped_agent.run(prompt)
        return str(result.output)


@workflow.defn(name=WORKFLOWS["pydantic_ai_durability"])
class DurabilityWorkflow(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [durable_agent]

    @workflow.run
    async def run(self, prompt: str) -> str:
        result = await durable_agent.run(prompt)
        return str(result.output)
