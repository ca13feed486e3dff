"""Per-run overhead: one whole ``agent.run`` against a plain loop and three frameworks.

Target (from the issue): per-run overhead with an in-process fake model on the
workload W(H, K): the first model turn emits K calls to a trivial async tool
``add(a: int, b: int)``, the second answers ``"done"``; H pass-through hooks
observe every model call and every tool call; H in {0, 10}, K in {1, 8}. At every
point seamkit must take at least 20 times less time per run than the fastest of
LangChain, pydantic-ai and the OpenAI Agents SDK, and at most 10 times the floor.
Memory: no growth over 100,000 runs of one agent.

The five variants of W(H, K), each built once per (H, K) and then run over and
over (one agent, many runs):

- ``floor`` (the baseline): the workload hand-written as a plain async loop. It
  asks the same fake model (``await model.complete(request)``, a ``ModelRequest``
  of the messages alone), parses each call's JSON arguments and awaits the tool's
  function directly (no argument validation, no result object), and fires the H
  observers through one raw pluggy hook, ``pm.hook.observe(event=..., payload=...)``,
  at every observation point (the call is made with H = 0 too, reaching no
  hookimpl). No transcript: the second request carries the user's message and the
  model's first turn only.
- ``seamkit``: ``await agent.run("go")`` on ``Agent(model=FakeModel(K), tools=[add],
  hooks=[Observer() ...], settings={"tool_concurrency": 1}, plugin_hooks=False)``.
- ``langchain``: ``await agent.ainvoke({"messages": [...]})`` on LangChain v1's
  ``create_agent`` with a fake ``BaseChatModel`` (async ``_agenerate``, ``bind_tools``
  returning itself) and H pass-through ``AgentMiddleware`` instances.
- ``pydantic_ai``: ``await agent.run("go")`` on a pydantic-ai ``Agent`` over a
  ``FunctionModel`` (an ``async def`` function) with H pass-through capabilities.
- ``openai_agents``: ``await Runner.run(agent, "go", hooks=...)`` on an OpenAI Agents
  SDK ``Agent`` with a canned ``Model`` and, for H > 0, one ``RunHooks`` that awaits
  the same method of H pass-through ``RunHooks`` (``Runner.run`` takes one); tracing
  is disabled (``set_tracing_disabled(True)``), since nothing is exported in-process.

"Observe every model call and every tool call" means, in every variant and per
hook: once before each model call, and before and after each tool call, i.e.
H * (2 + 2K) observations per run:

=============  =====================  ==========================================
variant        before each model call before / after each tool call
=============  =====================  ==========================================
floor          ``observe`` (pluggy)   ``observe`` / ``observe``
seamkit        ``on_pre_llm``         ``on_pre_tool_use`` / ``on_post_tool_use``
langchain      ``awrap_model_call``   ``awrap_tool_call`` (one wrap sees both)
pydantic_ai    ``before_model_request`` ``before_tool_execute`` / ``after_tool_execute``
openai_agents  ``on_llm_start``       ``on_tool_start`` / ``on_tool_end``
=============  =====================  ==========================================

Before timing, every variant is run once with counting observers built the same
way: it must answer ``"done"`` and make exactly H * (2 + 2K) observations.

The frameworks are never dependencies of seamkit: they are imported only when
installed, which the benchmark's own environment does::

    python3 -m uv run --with-requirements tests/benchmarks/frameworks.txt \\
        python -m tests.benchmarks per_run

Without them their figures are omitted (and said so), in quick and full mode.

The figure is microseconds per run: a sample's wall time over its number of runs.
Everything runs inside ONE event loop. Per (H, K), one warm-up round is discarded
(in full mode it also sizes the samples to about ``SAMPLE_SECONDS`` each), then
rounds interleave every variant, rotating their order each round; a figure is the
median of the rounds (the min is kept too). Garbage collection stays on; once all
variants of a (H, K) are built, ``gc.freeze()`` moves the heap so far (the frameworks'
modules included) out of the collector's way, the same for every variant.

Ratios and targets, in the harness' "ratio <= target" form:

- ``H=h/K=k/seamkit``: its median over the floor's at the same (H, K); target 10.
- ``H=h/K=k/<framework>``: over the same floor, without a target.
- ``H=h/K=k/seamkit_vs_fastest``: seamkit's samples again, but its ratio is its
  median over the FASTEST framework's median at the same (H, K): "at least 20 times
  less time" is this ratio <= 1/20 = 0.05. Only when a framework was measured.

Memory, on one seamkit agent at W(10, 8): ``MEMORY_RUNS`` runs (100,000 in full
mode), the first ``MEMORY_WARMUP`` a warm-up. ``sys.getallocatedblocks()`` and the
RSS are read (after ``gc.collect()``) after the warm-up, at the half and at the
end; then ``tracemalloc`` is started (too slow to trace all 100,000 runs), a few
runs are made, and the traced memory is read before and after ``MEMORY_TRACED``
more runs. Both carry a target as a ratio to a budget, target 1.0:

- ``memory/traced``: traced bytes after the traced runs over (traced bytes before
  them + 1 byte per traced run): met means growth < 1 byte/run;
- ``memory/blocks``: allocated blocks at the end over (blocks at the half + 0.01
  per run of the second half): met means fewer than one block kept per 100 runs.

The RSS growth is reported without a target (page-grained, allocator-dependent).
The extra key ``baselines`` maps every figure to what its ratio is taken against,
``memory`` holds the raw readings and ``frameworks`` the versions (or why not).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import statistics
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from importlib import metadata
from typing import Any

import pluggy
import seamkit
from seamkit import Agent, Message, MessageToolCall, ModelRequest, ModelTurn

from tests.benchmarks._harness import figure, print_rows, result, verdict

CONFIGS: tuple[tuple[int, int], ...] = ((0, 1), (0, 8), (10, 1), (10, 8))  # (H, K)
FRAMEWORKS = ("langchain", "pydantic_ai", "openai_agents")
VARIANTS = ("floor", "seamkit", *FRAMEWORKS)
FLOOR_TARGET = 10.0
FRAMEWORK_FACTOR = 20.0
FRAMEWORK_TARGET = 1 / FRAMEWORK_FACTOR
USER_TEXT = "go"
ANSWER = "done"

FULL_ROUNDS = 11
QUICK_ROUNDS = 2
WARMUP_ROUNDS = 1
SAMPLE_SECONDS = 0.15  # full mode: each sample is sized to about this long
WARMUP_RUNS = 3  # full mode: runs per variant in the warm-up round (sizes the samples)
MAX_RUNS_PER_SAMPLE = 5_000
QUICK_RUNS_PER_SAMPLE = 2

MEMORY_CONFIG = (10, 8)
MEMORY_BLOCKS_PER_RUN = 0.01
MEMORY_BYTES_PER_RUN = 1.0
FULL_MEMORY = {"runs": 100_000, "warmup": 2_000, "traced_warmup": 200, "traced": 5_000}
QUICK_MEMORY = {"runs": 300, "warmup": 50, "traced_warmup": 20, "traced": 50}

REQUIREMENTS = "tests/benchmarks/frameworks.txt"
RUN_WITH_FRAMEWORKS = (
    f"python3 -m uv run --with-requirements {REQUIREMENTS} python -m tests.benchmarks per_run"
)
DISTRIBUTIONS = {
    "langchain": ("langchain", "langchain-core", "langgraph"),
    "pydantic_ai": ("pydantic-ai-slim",),
    "openai_agents": ("openai-agents", "openai"),
}

Runner = Callable[[], Awaitable[str]]


def _expected_observations(h: int, k: int) -> int:
    return h * (2 + 2 * k)


# --- the tool and the fake model ------------------------------------------------


async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


ADD = seamkit.tool(add)


class FakeModel:
    """An in-process seamkit model: K calls to ``add`` after the user's message, else the answer."""

    def __init__(self, k: int) -> None:
        self.k = k

    async def complete(self, request: ModelRequest) -> ModelTurn:
        if request.messages[-1].role == "user":
            calls = [MessageToolCall.make(f"c{i}", "add", {"a": i, "b": 1}) for i in range(self.k)]
            return ModelTurn(message=Message.assistant("", calls))
        return ModelTurn(message=Message.assistant(ANSWER))

    async def stream(self, request: ModelRequest) -> Any:
        yield await self.complete(request)


# --- seamkit ----------------------------------------------------------------------


class Observer:
    """A pass-through seamkit hook at the model call and around every tool call."""

    @seamkit.hookimpl
    def on_pre_llm(self, ctx: Any, request: Any) -> Any:
        return None

    @seamkit.hookimpl
    def on_pre_tool_use(self, ctx: Any, call: Any) -> Any:
        return None

    @seamkit.hookimpl
    def on_post_tool_use(self, ctx: Any, call: Any, result: Any) -> Any:
        return None


class _Counter:
    """Observations made by the counting observers of the checks."""

    seen = 0


class CountingObserver:
    @seamkit.hookimpl
    def on_pre_llm(self, ctx: Any, request: Any) -> Any:
        _Counter.seen += 1

    @seamkit.hookimpl
    def on_pre_tool_use(self, ctx: Any, call: Any) -> Any:
        _Counter.seen += 1

    @seamkit.hookimpl
    def on_post_tool_use(self, ctx: Any, call: Any, result: Any) -> Any:
        _Counter.seen += 1


def build_seamkit(h: int, k: int, counting: bool = False) -> Runner:
    cls = CountingObserver if counting else Observer
    agent = Agent(
        model=FakeModel(k),
        tools=[ADD],
        hooks=[cls() for _ in range(h)],
        settings={"tool_concurrency": 1},
        plugin_hooks=False,
    )

    async def run() -> str:
        res = await agent.run(USER_TEXT)
        return res.output or ""

    return run


# --- the floor: a plain loop and one raw pluggy hook ------------------------------

floor_hookspec = pluggy.HookspecMarker("floor")
floor_hookimpl = pluggy.HookimplMarker("floor")


class FloorSpec:
    @floor_hookspec
    def observe(self, event: str, payload: Any) -> None:
        """An observation point of the loop."""


class FloorObserver:
    @floor_hookimpl
    def observe(self, event: str, payload: Any) -> None:
        return None


class CountingFloorObserver:
    @floor_hookimpl
    def observe(self, event: str, payload: Any) -> None:
        _Counter.seen += 1


async def floor_loop(model: FakeModel, tools: dict[str, Any], pm: Any, text: str) -> str:
    """The workload as a plain loop: no argument validation, no transcript, no result.

    The request is built with its constructor: in pydantic 2.14 ``model_construct`` is
    several times slower than validating a tuple of messages that are already built.
    """
    messages: tuple[Message, ...] = (Message.user(text),)
    while True:
        request = ModelRequest(messages=messages)
        pm.hook.observe(event="model_call", payload=request)
        turn = await model.complete(request)
        calls = turn.message.tool_calls
        if not calls:
            return turn.message.content
        for call in calls:
            pm.hook.observe(event="pre_tool", payload=call)
            value = await tools[call.function.name](**json.loads(call.function.arguments))
            pm.hook.observe(event="post_tool", payload=value)
        messages = (*messages, turn.message)


def build_floor(h: int, k: int, counting: bool = False) -> Runner:
    pm = pluggy.PluginManager("floor")
    pm.add_hookspecs(FloorSpec)
    cls = CountingFloorObserver if counting else FloorObserver
    for _ in range(h):
        pm.register(cls())
    model = FakeModel(k)
    tools = {"add": add}

    async def run() -> str:
        return await floor_loop(model, tools, pm, USER_TEXT)

    return run


# --- LangChain v1: create_agent, a fake chat model, H middleware -------------------


def build_langchain(h: int, k: int, counting: bool = False) -> Runner:
    from langchain.agents import create_agent
    from langchain.agents.middleware import AgentMiddleware
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class FakeChatModel(BaseChatModel):
        k: int = 1

        @property
        def _llm_type(self) -> str:
            return "fake"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any):  # type: ignore[no-untyped-def]
            raise NotImplementedError("the benchmark runs async only")

        async def _agenerate(  # type: ignore[no-untyped-def]
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
        ):
            if isinstance(messages[-1], HumanMessage):
                calls = [
                    {"name": "add", "args": {"a": i, "b": 1}, "id": f"c{i}", "type": "tool_call"}
                    for i in range(self.k)
                ]
                message = AIMessage(content="", tool_calls=calls)
            else:
                message = AIMessage(content=ANSWER)
            return ChatResult(generations=[ChatGeneration(message=message)])

    class PassThrough(AgentMiddleware):  # type: ignore[type-arg]
        def __init__(self, index: int) -> None:
            super().__init__()
            self._name = f"observer_{index}"  # create_agent wants distinct names

        @property
        def name(self) -> str:
            return self._name

        async def awrap_model_call(self, request: Any, handler: Any) -> Any:
            return await handler(request)

        async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
            return await handler(request)

    class Counting(PassThrough):
        async def awrap_model_call(self, request: Any, handler: Any) -> Any:
            _Counter.seen += 1
            return await handler(request)

        async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
            _Counter.seen += 1
            out = await handler(request)
            _Counter.seen += 1
            return out

    cls = Counting if counting else PassThrough
    agent = create_agent(
        model=FakeChatModel(k=k), tools=[add], middleware=[cls(i) for i in range(h)]
    )

    async def run() -> str:
        state = await agent.ainvoke({"messages": [{"role": "user", "content": USER_TEXT}]})
        return str(state["messages"][-1].content)

    return run


# --- pydantic-ai: FunctionModel, H capabilities ------------------------------------


def build_pydantic_ai(h: int, k: int, counting: bool = False) -> Runner:
    from pydantic_ai import Agent as PydanticAgent
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, UserPromptPart
    from pydantic_ai.models.function import FunctionModel

    async def respond(messages: list[Any], info: Any) -> Any:
        if any(isinstance(p, UserPromptPart) for p in messages[-1].parts):
            return ModelResponse(
                parts=[
                    ToolCallPart(tool_name="add", args={"a": i, "b": 1}, tool_call_id=f"c{i}")
                    for i in range(k)
                ]
            )
        return ModelResponse(parts=[TextPart(ANSWER)])

    class PassThrough(AbstractCapability):  # type: ignore[type-arg]
        async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
            return request_context

        async def before_tool_execute(
            self, ctx: Any, *, call: Any, tool_def: Any, args: Any
        ) -> Any:
            return args

        async def after_tool_execute(
            self, ctx: Any, *, call: Any, tool_def: Any, args: Any, result: Any
        ) -> Any:
            return result

    class Counting(AbstractCapability):  # type: ignore[type-arg]
        async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
            _Counter.seen += 1
            return request_context

        async def before_tool_execute(
            self, ctx: Any, *, call: Any, tool_def: Any, args: Any
        ) -> Any:
            _Counter.seen += 1
            return args

        async def after_tool_execute(
            self, ctx: Any, *, call: Any, tool_def: Any, args: Any, result: Any
        ) -> Any:
            _Counter.seen += 1
            return result

    cls = Counting if counting else PassThrough
    agent = PydanticAgent(
        FunctionModel(respond), tools=[add], capabilities=[cls() for _ in range(h)]
    )

    async def run() -> str:
        res = await agent.run(USER_TEXT)
        return str(res.output)

    return run


# --- OpenAI Agents SDK: a canned Model, run hooks ------------------------------------


def build_openai_agents(h: int, k: int, counting: bool = False) -> Runner:
    from agents import (
        Agent as OpenAIAgent,
        RunHooks,
        Runner as OpenAIRunner,
        Usage as OpenAIUsage,
        function_tool,
        set_tracing_disabled,
    )
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    set_tracing_disabled(True)

    class CannedModel(Model):
        async def get_response(  # type: ignore[override]
            self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
        ) -> Any:
            if isinstance(input, str) or input[-1].get("role") == "user":
                output: list[Any] = [
                    ResponseFunctionToolCall(
                        type="function_call",
                        call_id=f"c{i}",
                        name="add",
                        arguments=json.dumps({"a": i, "b": 1}),
                    )
                    for i in range(k)
                ]
            else:
                text = ResponseOutputText(type="output_text", text=ANSWER, annotations=[])
                output = [
                    ResponseOutputMessage(
                        id="m1",
                        type="message",
                        role="assistant",
                        status="completed",
                        content=[text],
                    )
                ]
            return ModelResponse(output=output, usage=OpenAIUsage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("the benchmark runs Runner.run only")

    class PassThrough(RunHooks):  # type: ignore[type-arg]
        async def on_llm_start(
            self, context: Any, agent: Any, system_prompt: Any, input_items: Any
        ) -> None:
            return None

        async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
            return None

        async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
            return None

    class Counting(RunHooks):  # type: ignore[type-arg]
        async def on_llm_start(
            self, context: Any, agent: Any, system_prompt: Any, input_items: Any
        ) -> None:
            _Counter.seen += 1

        async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
            _Counter.seen += 1

        async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
            _Counter.seen += 1

    class FanOut(RunHooks):  # type: ignore[type-arg]
        """``Runner.run`` takes one ``RunHooks``: this one calls the H observers in turn."""

        def __init__(self, observers: list[Any]) -> None:
            self.observers = observers

        async def on_llm_start(
            self, context: Any, agent: Any, system_prompt: Any, input_items: Any
        ) -> None:
            for o in self.observers:
                await o.on_llm_start(context, agent, system_prompt, input_items)

        async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
            for o in self.observers:
                await o.on_tool_start(context, agent, tool)

        async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
            for o in self.observers:
                await o.on_tool_end(context, agent, tool, result)

    cls = Counting if counting else PassThrough
    hooks = FanOut([cls() for _ in range(h)]) if h else None
    agent = OpenAIAgent(name="agent", model=CannedModel(), tools=[function_tool(add)])

    async def run() -> str:
        res = await OpenAIRunner.run(agent, USER_TEXT, hooks=hooks)
        return str(res.final_output)

    return run


BUILDERS: dict[str, Callable[..., Runner]] = {
    "floor": build_floor,
    "seamkit": build_seamkit,
    "langchain": build_langchain,
    "pydantic_ai": build_pydantic_ai,
    "openai_agents": build_openai_agents,
}

SHOWN = {
    "floor": 'await floor_loop(model, tools, pm, "go")  # plain loop, raw pluggy hook',
    "seamkit": 'await agent.run("go")',
    "langchain": 'await agent.ainvoke({"messages": [...]})  # create_agent',
    "pydantic_ai": 'await agent.run("go")  # pydantic-ai FunctionModel',
    "openai_agents": 'await Runner.run(agent, "go", hooks=hooks)  # OpenAI Agents SDK',
}


# --- which frameworks are here ---------------------------------------------------


def frameworks_available() -> dict[str, dict[str, Any]]:
    """Per framework: ``{"available": bool, "versions": {...}}`` or why it is not."""
    out: dict[str, dict[str, Any]] = {}
    for name, dists in DISTRIBUTIONS.items():
        versions: dict[str, str] = {}
        missing: list[str] = []
        for dist in dists:
            try:
                versions[dist] = metadata.version(dist)
            except metadata.PackageNotFoundError:
                missing.append(dist)
        if missing:
            out[name] = {"available": False, "why": "not installed: " + ", ".join(missing)}
            continue
        try:
            BUILDERS[name](0, 1)
        except Exception as exc:  # installed but unusable: say why, measure the rest
            out[name] = {"available": False, "why": f"{type(exc).__name__}: {exc}"}
            continue
        out[name] = {"available": True, "versions": versions}
    return out


# --- measuring -------------------------------------------------------------------


async def _check(name: str, h: int, k: int) -> None:
    """The variant answers and makes exactly H * (2 + 2K) observations."""
    run = BUILDERS[name](h, k, counting=True)
    for _ in range(2):  # a second run on the same agent too
        _Counter.seen = 0
        out = await run()
        if out != ANSWER:
            raise RuntimeError(f"{name} at H={h}, K={k} answered {out!r}, not {ANSWER!r}")
        if _Counter.seen != _expected_observations(h, k):
            raise RuntimeError(
                f"{name} at H={h}, K={k} made {_Counter.seen} observations, "
                f"not H * (2 + 2K) = {_expected_observations(h, k)}"
            )


async def _timed(run: Runner, reps: int) -> float:
    """Seconds per run over ``reps`` runs."""
    start = time.perf_counter()
    for _ in range(reps):
        await run()
    return (time.perf_counter() - start) / reps


async def _measure_config(
    h: int, k: int, variants: tuple[str, ...], quick: bool, rounds: int
) -> dict[str, list[float]]:
    """Samples (µs per run) of every variant at W(H, K)."""
    runs: dict[str, Runner] = {}
    for name in variants:
        await _check(name, h, k)
        runs[name] = BUILDERS[name](h, k)
        if await runs[name]() != ANSWER:
            raise RuntimeError(f"{name} at H={h}, K={k} did not answer {ANSWER!r}")
    reps = dict.fromkeys(variants, QUICK_RUNS_PER_SAMPLE)
    # The frameworks' modules make the heap several times larger, so a full collection
    # costs ~0.2 s and lands in whichever sample it falls in: everything built so far
    # goes to the permanent generation (``_measure_all`` unfreezes at the end).
    gc.collect()
    gc.freeze()
    samples: dict[str, list[float]] = {v: [] for v in variants}
    for i in range(WARMUP_ROUNDS + rounds):
        shift = i % len(variants)
        for name in variants[shift:] + variants[:shift]:
            if i < WARMUP_ROUNDS:
                per_run = await _timed(runs[name], QUICK_RUNS_PER_SAMPLE if quick else WARMUP_RUNS)
                if not quick:
                    reps[name] = max(1, min(MAX_RUNS_PER_SAMPLE, round(SAMPLE_SECONDS / per_run)))
            else:
                samples[name].append(await _timed(runs[name], reps[name]) * 1e6)
    return samples


def _rss() -> int | None:
    """The resident set size in bytes (Linux), else None."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _reading() -> dict[str, Any]:
    gc.collect()
    return {"blocks": sys.getallocatedblocks(), "rss": _rss()}


async def _measure_memory(sizes: dict[str, int]) -> dict[str, Any]:
    """Readings of one seamkit agent at W(MEMORY_CONFIG) over ``sizes["runs"]`` runs."""
    h, k = MEMORY_CONFIG
    run = build_seamkit(h, k)
    runs, warmup = sizes["runs"], sizes["warmup"]
    half = warmup + (runs - warmup) // 2
    start = time.perf_counter()
    for _ in range(warmup):
        await run()
    after_warmup = _reading()
    for _ in range(half - warmup):
        await run()
    at_half = _reading()
    for _ in range(runs - half):
        await run()
    at_end = _reading()
    untraced_seconds = time.perf_counter() - start

    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        for _ in range(sizes["traced_warmup"]):
            await run()
        gc.collect()
        traced_before = tracemalloc.get_traced_memory()[0]
        for _ in range(sizes["traced"]):
            await run()
        gc.collect()
        traced_after = tracemalloc.get_traced_memory()[0]
    finally:
        if not was_tracing:
            tracemalloc.stop()
    second_half = runs - half
    rss_growth = (
        None
        if at_end["rss"] is None or at_half["rss"] is None
        else (at_end["rss"] - at_half["rss"]) / second_half
    )
    return {
        "config": {"H": h, "K": k},
        "runs": runs,
        "warmup": warmup,
        "half": half,
        "after_warmup": after_warmup,
        "at_half": at_half,
        "at_end": at_end,
        "untraced_us_per_run": untraced_seconds / runs * 1e6,
        "blocks_per_run_first_half": (at_half["blocks"] - after_warmup["blocks"]) / (half - warmup),
        "blocks_per_run_second_half": (at_end["blocks"] - at_half["blocks"]) / second_half,
        "rss_bytes_per_run_second_half": rss_growth,
        "traced_runs": sizes["traced"],
        "traced_before": traced_before,
        "traced_after": traced_after,
        "traced_bytes_per_run": (traced_after - traced_before) / sizes["traced"],
    }


async def _measure_all(
    variants: tuple[str, ...], quick: bool, rounds: int, memory: dict[str, int]
) -> tuple[dict[tuple[int, int], dict[str, list[float]]], dict[str, Any]]:
    samples = {}
    try:
        for h, k in CONFIGS:
            samples[h, k] = await _measure_config(h, k, variants, quick, rounds)
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        mem = await _measure_memory(memory)
    finally:
        gc.unfreeze()
    return samples, mem


# --- reporting -------------------------------------------------------------------


def _name(h: int, k: int, variant: str) -> str:
    return f"H={h}/K={k}/{variant}"


def _us(value: float) -> str:
    if value < 1e3:
        return f"{value:.3g} µs"
    return f"{value / 1e3:.3g} ms"


def _print(res: dict[str, Any], measured: tuple[str, ...]) -> None:
    by_name = {f["name"]: f for f in res["figures"]}
    frameworks = [v for v in FRAMEWORKS if v in measured]
    header = ("H", "K", "floor (baseline)", "seamkit", "ratio", "target", "met")
    header += tuple(frameworks)
    if frameworks:
        header += ("fastest", "x seamkit", "seamkit/fastest", "target", "met")
    rows: list[tuple[str, ...]] = [header]
    for h, k in CONFIGS:
        s = by_name[_name(h, k, "seamkit")]
        row: tuple[str, ...] = (
            str(h),
            str(k),
            _us(by_name[_name(h, k, "floor")]["median"]),
            _us(s["median"]),
            f"{s['ratio']:.2f}x",
            f"<= {s['target']:g}x",
            "met" if s["met"] else "NOT MET",
        )
        row += tuple(_us(by_name[_name(h, k, v)]["median"]) for v in frameworks)
        if frameworks:
            v = by_name[_name(h, k, "seamkit_vs_fastest")]
            fastest = res["baselines"][v["name"]].rpartition("/")[2]
            row += (
                fastest,
                f"{1 / v['ratio']:.0f}x",
                f"{v['ratio']:.4f}",
                f"<= {v['target']:g}",
                "met" if v["met"] else "NOT MET",
            )
        rows.append(row)
    print_rows(rows)
    print(
        f"µs per run, median of {by_name[_name(*CONFIGS[0], 'floor')]['n']} rounds; ratio = "
        "seamkit over the floor (the baseline) at the same (H, K); seamkit/fastest = seamkit "
        "over the fastest framework (target <= 0.05: at least 20x less time)"
    )
    mem = res["memory"]
    traced, blocks = by_name["memory/traced"], by_name["memory/blocks"]
    rss = mem["rss_bytes_per_run_second_half"]
    print(
        f"memory, one seamkit agent at W(H={mem['config']['H']}, K={mem['config']['K']}), "
        f"{mem['runs']} runs ({mem['untraced_us_per_run']:.0f} µs/run):"
    )
    print(
        f"  allocated blocks: {mem['after_warmup']['blocks']} after {mem['warmup']} warm-up runs,"
        f" {mem['at_half']['blocks']} at run {mem['half']}, {mem['at_end']['blocks']} at the end:"
        f" {mem['blocks_per_run_second_half']:+.4f} blocks/run over the second half "
        f"(target < {MEMORY_BLOCKS_PER_RUN:g}): {'met' if blocks['met'] else 'NOT MET'}"
    )
    print(
        f"  tracemalloc over {mem['traced_runs']} more runs: {mem['traced_before']} -> "
        f"{mem['traced_after']} bytes, {mem['traced_bytes_per_run']:+.3f} bytes/run "
        f"(target < {MEMORY_BYTES_PER_RUN:g}): {'met' if traced['met'] else 'NOT MET'}"
    )
    if rss is not None:
        print(
            f"  RSS: {mem['at_half']['rss'] / 2**20:.1f} MiB at the half, "
            f"{mem['at_end']['rss'] / 2**20:.1f} MiB at the end: {rss:+.2f} bytes/run "
            "(no target)"
        )
    print(f"{res['benchmark']}: {verdict(res)}")


def _hint(missing: dict[str, str], quick: bool) -> None:
    print("frameworks not measured (their figures are omitted):")
    for name, why in missing.items():
        print(f"  {name}: {why}")
    if not quick:
        print("  the targets against the frameworks are NOT checked")
    print(f"to measure them, from the repository's root: {RUN_WITH_FRAMEWORKS}")
    print(f"(uv layers {REQUIREMENTS} over the project's environment; seamkit never depends on it)")


def main(quick: bool = False) -> dict[str, Any]:
    rounds = QUICK_ROUNDS if quick else FULL_ROUNDS
    memory = QUICK_MEMORY if quick else FULL_MEMORY
    frameworks = frameworks_available()
    measured = tuple(v for v in VARIANTS if v not in frameworks or frameworks[v]["available"])
    missing = {n: f["why"] for n, f in frameworks.items() if not f["available"]}
    sizing = f"sized to ~{SAMPLE_SECONDS:g} s" if not quick else "of 2 runs"
    print(
        f"per run: W(H, K) for (H, K) in {list(CONFIGS)}, {WARMUP_ROUNDS} warm-up + {rounds} "
        f"rounds of {len(measured)} variants in one event loop, samples {sizing}; "
        f"memory: {memory['runs']} runs + {memory['traced']} traced"
    )
    versions = {"pluggy": pluggy.__version__, "pydantic": metadata.version("pydantic")}
    for f in frameworks.values():
        versions.update(f.get("versions", {}))
    print(
        f"python {sys.version.split()[0]}, "
        + ", ".join(f"{k} {v}" for k, v in versions.items())
        + f", {os.cpu_count()} cpus"
    )
    if missing:
        _hint(missing, quick)

    samples, mem = asyncio.run(_measure_all(measured, quick, rounds, memory))

    figures: list[dict[str, Any]] = []
    baselines: dict[str, str] = {}
    fastest_by_config: dict[str, str] = {}
    for (h, k), by_variant in samples.items():
        floor_name = _name(h, k, "floor")
        floor = statistics.median(by_variant["floor"])
        for variant in measured:
            name = _name(h, k, variant)
            target = FLOOR_TARGET if variant == "seamkit" else None
            figures.append(
                figure(name, SHOWN[variant], by_variant[variant], floor, unit="µs", target=target)
            )
            baselines[name] = floor_name
        present = [v for v in FRAMEWORKS if v in by_variant]
        if present:
            fastest = min(present, key=lambda v: statistics.median(by_variant[v]))
            name = _name(h, k, "seamkit_vs_fastest")
            figures.append(
                figure(
                    name,
                    f"seamkit over the fastest framework ({fastest})",
                    by_variant["seamkit"],
                    statistics.median(by_variant[fastest]),
                    unit="µs",
                    target=FRAMEWORK_TARGET,
                )
            )
            baselines[name] = _name(h, k, fastest)
            fastest_by_config[f"H={h}/K={k}"] = fastest

    traced_budget = mem["traced_before"] + MEMORY_BYTES_PER_RUN * mem["traced_runs"]
    figures.append(
        figure(
            "memory/traced",
            f"tracemalloc bytes after {mem['traced_runs']} runs (budget: before + 1 B/run)",
            [max(mem["traced_after"], 1)],
            traced_budget,
            unit="B",
            target=1.0,
        )
    )
    baselines["memory/traced"] = "memory_traced_budget"
    blocks_budget = mem["at_half"]["blocks"] + MEMORY_BLOCKS_PER_RUN * (mem["runs"] - mem["half"])
    figures.append(
        figure(
            "memory/blocks",
            f"allocated blocks after {mem['runs']} runs (budget: at the half + 0.01/run)",
            [mem["at_end"]["blocks"]],
            blocks_budget,
            unit="blocks",
            target=1.0,
        )
    )
    baselines["memory/blocks"] = "memory_blocks_budget"

    res = result(
        "per_run",
        quick=quick,
        baseline=_name(*CONFIGS[0], "floor"),
        figures=figures,
        baselines=baselines,
        fastest=fastest_by_config,
        memory=mem,
        memory_traced_budget=traced_budget,
        memory_blocks_budget=blocks_budget,
        frameworks=frameworks,
        frameworks_missing=sorted(missing),
        per="run",
        rounds=rounds,
        configs=[list(c) for c in CONFIGS],
        versions=versions,
        executable=sys.executable,
    )
    _print(res, measured)
    if missing and not quick:
        _hint(missing, quick)
    return res


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
