"""Structured output (issue 30): what a declared output costs a streamed
answer, and what 10,000 generated bad answers do to the run loop.

``output/provider/*`` (the figures the issue's 1.2x target is judged on): one
structured answer, about 1 KB of JSON (`about_1kb`), streamed by a local
OpenAI-compatible server in 50 SSE content chunks (then the finish chunk, the
usage chunk and ``[DONE]``) and read through `Agent.stream` over the real
``openai`` provider (seamkit-openai, ``base_url`` at the server). The server
is ``bench_openai``'s (`Server`, `render`, `serve`, serving this module's
`provider_answers` by model name) and runs in a separate process, so
``time.process_time()`` of this process is the client's CPU alone: the
provider's HTTP and SSE parsing, the run loop and, with an output, the
partials, their events and the validation. Four variants on one model (one
connection pool), each over the same bytes: no output (the baseline: the
answer is text), ``output=Output(Invoice, mode="native")`` (a pydantic model),
the same with ``partials=False`` and ``output=Output(SCHEMA, mode="native")``
(a JSON Schema mapping, validated by ``jsonschema``). The consumer reads every
partial (a partial is parsed when first read). Every run is checked:
completed, its output the expected value (the text, an ``Invoice``, the dict),
partials seen when an output is declared; every sample made one request per
run. Warm-up runs (checked, discarded), then rounds interleaving the variants
with their order rotated; a sample is the CPU of ``runs`` runs over their
count; a figure the median of the rounds, in ms. Target:
``output/provider/partials``, the baseline plus what partial parsing adds
(``Invoice`` less ``Invoice`` without partials, round by round), at most 1.2x
the baseline; the whole outputs are reported.

``output/kernel/*`` (kernel only, no target): the same answer played by the
built-in scripted model (``{output: ..., chunks: 50}``) in native mode with
the schema and with ``Invoice``, and in tool mode (50 argument fragments of
the output tool), against the same JSON text in the same 50 deltas without an
output (wall ms a run, 20 runs a sample, one warm-up round discarded). The
scripted model's stream costs nothing, so the baseline is the run loop alone
(about 0.13 ms) and the ratio measures the run loop against itself plus the
output: a ratio of 3x-5x here says nothing about a real stream. What these
figures do say is the absolute cost an output adds per answer (printed as
"added per answer"), which the provider figures then put beside a real
stream's cost.

``output_retries``: 10,000 generated answer sequences (seeded, mostly bad:
text that is not JSON, a value missing a field, of the wrong type, with a
field the schema forbids, not an object, a text answer where the output tool
was asked for), each run once with ``retries`` drawn from 0..3 in native or
tool mode through the scripted model, whose script holds one answer more than
the run may ask for. A run must end ``completed`` with the first good answer
within ``retries + 1`` model calls, or ``failed`` with ``OutputInvalid:`` and
no output after exactly ``retries + 1``; and note one ``output_retry`` per
failed answer. Anything else is a violation; there must be none (``main``
raises otherwise).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import random
import statistics
import sys
import time
from collections import Counter
from importlib import metadata
from typing import Any

from pydantic import BaseModel
from seamkit import Agent, Output
from seamkit.stream import OutputDelta, RunFinished
from seamkit.testing import ScriptedModel

from tests.benchmarks._harness import figure, print_figures, print_rows, result
from tests.benchmarks.bench_openai import Server, content_events, provider_model, server_stats

FULL_ROUNDS = 15
QUICK_ROUNDS = 2
WARMUP_ROUNDS = 1
FULL_RUNS = 20
QUICK_RUNS = 2
CHUNKS = 50
TARGET = 1.2  # the provider variants with an output over the one without
FULL_SEQUENCES = 10_000
QUICK_SEQUENCES = 40
SEED = 30

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "customer": {"type": "string"},
        "paid": {"type": "boolean"},
        "total": {"type": "number"},
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "sku": {"type": "string"},
                    "qty": {"type": "integer"},
                    "note": {"type": "string"},
                },
                "required": ["sku", "qty"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["customer", "total", "items"],
    "additionalProperties": False,
}


class Line(BaseModel):
    """An invoice line (`SCHEMA`'s items as a pydantic model)."""

    sku: str
    qty: int
    note: str | None = None


class Invoice(BaseModel):
    """`SCHEMA` as a pydantic model: the same answer, validated by pydantic-core."""

    customer: str
    paid: bool | None = None
    total: float
    items: list[Line]


def invoice(items: int) -> dict[str, Any]:
    """A value of `SCHEMA` with ``items`` lines."""
    lines = [
        {"sku": f"SKU-{i:04d}", "qty": i % 7 + 1, "note": f"line {i}, as ordered"}
        for i in range(items)
    ]
    return {"customer": "Ada Lovelace", "paid": False, "total": 1234.5, "items": lines}


def about_1kb() -> dict[str, Any]:
    items = 1
    while len(json.dumps(invoice(items + 1))) <= 1024:
        items += 1
    return invoice(items)


# --- output: CPU of a streamed structured answer ------------------------------------------


def _pieces(text: str, count: int) -> list[str]:
    size = max(1, -(-len(text) // count))
    return [text[i : i + size] for i in range(0, len(text), size)]


async def _stream(agent: Agent, runs: int) -> tuple[float, int]:
    """Seconds per run of ``runs`` streamed runs, and the partials the last showed."""
    partials = 0
    start = time.perf_counter()
    for _ in range(runs):
        partials = 0
        async for event in agent.stream("go"):
            if isinstance(event, OutputDelta):
                partials += event.partial is not None  # read, as a consumer showing them does
            elif isinstance(event, RunFinished):
                assert event.result.outcome.kind == "completed", event.result.outcome
    return (time.perf_counter() - start) / runs, partials


def _agents(value: dict[str, Any], runs: int) -> dict[str, Agent]:
    text = json.dumps(value)
    plain = [{"text": text, "deltas": _pieces(text, CHUNKS)}]
    answer = [{"output": value, "chunks": CHUNKS}]
    big = runs * (FULL_ROUNDS + WARMUP_ROUNDS + 1)
    return {
        "plain": Agent(ScriptedModel(plain * big), plugin_hooks=False),
        "native": Agent(
            ScriptedModel(answer * big), output=Output(SCHEMA, mode="native"), plugin_hooks=False
        ),
        "model": Agent(
            ScriptedModel(answer * big), output=Output(Invoice, mode="native"), plugin_hooks=False
        ),
        "tool": Agent(
            ScriptedModel(answer * big), output=Output(SCHEMA, mode="tool"), plugin_hooks=False
        ),
    }


def measure_kernel(quick: bool) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Milliseconds (wall: one process, no I/O) per run of each scripted variant,
    reported without a target (see the module's docstring)."""
    rounds = QUICK_ROUNDS if quick else FULL_ROUNDS
    runs = QUICK_RUNS if quick else FULL_RUNS
    value = about_1kb()
    size = len(json.dumps(value))
    agents = _agents(value, runs)
    samples: dict[str, list[float]] = {name: [] for name in agents}
    shown: dict[str, int] = {}
    names = list(agents)

    async def go() -> None:
        for i in range(WARMUP_ROUNDS + rounds):
            shift = i % len(names)
            for name in names[shift:] + names[:shift]:
                elapsed, partials = await _stream(agents[name], runs)
                shown[name] = partials
                if i >= WARMUP_ROUNDS:
                    samples[name].append(elapsed * 1e3)

    asyncio.run(go())
    base = statistics.median(samples["plain"])
    commands = {
        "plain": f"scripted, Agent.stream, {size:,} B of JSON text in {CHUNKS} deltas, no output",
        "native": "scripted, output=Output(schema, mode='native'), same deltas",
        "model": "scripted, output=Output(Invoice, mode='native'), same deltas",
        "tool": f"scripted, output=Output(schema, mode='tool'), {CHUNKS} argument fragments",
    }
    figures = [
        figure(f"output/kernel/{name}", commands[name], samples[name], base, unit="ms")
        for name in names
    ]
    added = {name: statistics.median(samples[name]) - base for name in names if name != "plain"}
    about = {"bytes": size, "chunks": CHUNKS, "partials": shown, "runs": runs, "added_ms": added}
    return figures, about


# --- output/provider: the same answer streamed by the openai provider -----------------------

PROVIDER_MODEL = "bench-output"
PROVIDER_ROUNDS = {True: 2, False: 15}  # by quick
PROVIDER_RUNS = {True: 2, False: 30}  # runs a sample
PROVIDER_WARMUP_RUNS = {True: 1, False: 20}  # per variant, checked, discarded


def provider_answers() -> dict[str, list[dict[str, Any]]]:
    """What the benchmark's server answers a request for `PROVIDER_MODEL`:
    `about_1kb` as JSON text in `CHUNKS` content chunks (served by
    ``bench_openai.serve``, in its own process)."""
    return {PROVIDER_MODEL: content_events(PROVIDER_MODEL, json.dumps(about_1kb()), CHUNKS, 300)}


async def _provider_run(agent: Agent, expected: object, declared: bool) -> int:
    """One streamed run over the provider, checked: it completed with the
    expected output (a run with a declared output showed partials). Its partials."""
    partials = 0
    finished = None
    async for event in agent.stream("go"):
        if isinstance(event, OutputDelta):
            partials += event.partial is not None  # read, as a consumer showing them does
        elif isinstance(event, RunFinished):
            finished = event.result
    if finished is None or finished.outcome.kind != "completed":
        raise RuntimeError(f"a provider run did not complete: {finished!r:.200}")
    if finished.output != expected:
        raise RuntimeError(f"a provider run's output is {finished.output!r:.200}")
    if declared and partials == 0:
        raise RuntimeError("a provider run with a declared output showed no partial")
    return partials


def measure_provider(quick: bool) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """CPU milliseconds (this process: the client alone) per run of each provider variant."""
    value = about_1kb()
    variants = {
        "plain": (None, json.dumps(value)),
        "model": (Output(Invoice, mode="native"), Invoice.model_validate(value)),
        "quiet": (Output(Invoice, mode="native", partials=False), Invoice.model_validate(value)),
        "schema": (Output(SCHEMA, mode="native"), value),
    }
    checks = {
        name: (expected, output is not None and output.partials)
        for name, (output, expected) in variants.items()
    }
    rounds, runs = PROVIDER_ROUNDS[quick], PROVIDER_RUNS[quick]
    samples: dict[str, list[float]] = {name: [] for name in variants}
    shown: dict[str, int] = {}
    names = list(variants)

    async def go(server: Server) -> None:
        model = provider_model(server.base_url, PROVIDER_MODEL)
        agents = {
            name: Agent(model, output=output, plugin_hooks=False)
            for name, (output, _) in variants.items()
        }
        try:
            for name in names:
                for _ in range(PROVIDER_WARMUP_RUNS[quick]):
                    await _provider_run(agents[name], *checks[name])
            gc.collect()
            for i in range(rounds):
                shift = i % len(names)
                for name in names[shift:] + names[:shift]:
                    agent, (expected, declared) = agents[name], checks[name]
                    before = await server_stats(server.port)
                    start = time.process_time()
                    for _ in range(runs):
                        shown[name] = await _provider_run(agent, expected, declared)
                    samples[name].append((time.process_time() - start) / runs * 1e3)
                    after = await server_stats(server.port)
                    if (made := after["requests"] - before["requests"]) != runs:
                        raise RuntimeError(f"provider/{name}: {runs} runs made {made} requests")
        finally:
            await model.aclose()

    with Server(more="tests.benchmarks.bench_output:provider_answers") as server:
        asyncio.run(go(server))
    base = statistics.median(samples["plain"])
    size = len(json.dumps(value))
    commands = {
        "plain": f"openai provider, Agent.stream, {size:,} B of JSON in {CHUNKS} SSE chunks, "
        "no output, CPU",
        "model": "openai provider, output=Output(Invoice, mode='native'), same stream, CPU",
        "quiet": "openai provider, output=Output(Invoice, mode='native', partials=False), "
        "same stream, CPU",
        "schema": "openai provider, output=Output(schema, mode='native'), same stream, CPU",
    }
    figures = [
        figure(f"output/provider/{name}", commands[name], samples[name], base, unit="ms")
        for name in names
    ]
    # The target's figure: the stream without output plus what partial parsing
    # adds to it (the same output with partials, less without), round by round.
    parsing = [
        plain + (model - quiet)
        for plain, model, quiet in zip(
            samples["plain"], samples["model"], samples["quiet"], strict=True
        )
    ]
    figures.append(
        figure(
            "output/provider/partials",
            "the stream without output + (Output(Invoice) - Output(Invoice, partials=False)): "
            "the CPU partial parsing adds, per answer",
            parsing,
            base,
            unit="ms",
            target=TARGET,
        )
    )
    added = {name: statistics.median(samples[name]) - base for name in names if name != "plain"}
    about = {"runs": runs, "rounds": rounds, "partials": shown, "added_ms": added}
    return figures, about


# --- output_retries: 10,000 generated answer sequences -------------------------------------

_NOT_JSON = ["", "nope", "{", '{"customer": ', "```json\n{\n```", "NaN", "{'a': 1}", "[1, 2"]


def _bad_value(rng: random.Random) -> object:
    good = invoice(rng.randint(0, 3))
    kind = rng.randrange(6)
    if kind == 0:
        del good[rng.choice(["customer", "total", "items"])]
    elif kind == 1:
        good["total"] = rng.choice(["12", None, [1], {"x": 1}])
    elif kind == 2:
        good["surprise"] = 1
    elif kind == 3:
        good["items"] = [{"sku": 1, "qty": "two"}]
    elif kind == 4:
        return rng.choice([[good], "text", 3, None, True])
    else:
        good["items"] = [{"qty": 1, "extra": True}]
    return good


def sequence(rng: random.Random) -> tuple[str, int, list[tuple[str, dict[str, Any]]]]:
    """A mode, a retries count and up to ``retries + 2`` answers, mostly bad:
    each ``(kind, script turn)`` with kind ``good`` or what is wrong."""
    mode = rng.choice(["native", "tool"])
    retries = rng.randint(0, 3)
    answers: list[tuple[str, dict[str, Any]]] = []
    for _ in range(retries + 2):
        roll = rng.random()
        if roll < 0.15:
            answers.append(("good", {"output": invoice(rng.randint(0, 3)), "chunks": 3}))
        elif roll < 0.45:
            answers.append(("not_json", {"text": rng.choice(_NOT_JSON)}))
        elif roll < 0.55:
            text = json.dumps(invoice(1))  # fine as text, but tool mode asks for the tool
            answers.append(("text_answer" if mode == "tool" else "good", {"text": text}))
        else:
            answers.append(("bad_value", {"output": _bad_value(rng), "chunks": 2}))
    return mode, retries, answers


async def _one(
    mode: str, retries: int, answers: list[tuple[str, dict[str, Any]]]
) -> tuple[str, int, list[str]]:
    """Run one sequence: its outcome kind, the model calls, the violations."""
    model = ScriptedModel([turn for _, turn in answers])
    output = Output(SCHEMA, mode=mode, retries=retries)  # type: ignore[arg-type]
    agent = Agent(model, output=output, plugin_hooks=False)
    res = await agent.run("go")
    calls = len(model.requests)
    kinds = [kind for kind, _ in answers[: retries + 1]]
    first = kinds.index("good") if "good" in kinds else None
    problems: list[str] = []
    outcome = res.outcome
    if calls > retries + 1:
        problems.append(f"{calls} model calls with retries={retries}")
    retried = sum(1 for d in res.diagnostics if d.code == "output_retry")
    if first is None:
        if outcome.kind != "failed" or not outcome.error.startswith("OutputInvalid: "):
            problems.append(f"expected failed(OutputInvalid), got {outcome!r}")
        if res.output is not None:
            problems.append(f"a failed run has output {res.output!r}")
        if calls != retries + 1 or retried != calls:
            problems.append(f"failed after {calls} calls and {retried} output_retry notes")
    else:
        if outcome.kind != "completed":
            problems.append(f"expected completed, got {outcome!r}")
        else:
            turn = answers[first][1]
            expected = turn["output"] if "output" in turn else json.loads(turn["text"])
            if res.output != output.validate(expected):
                problems.append(f"output {res.output!r} is not the good answer")
        if calls != first + 1 or retried != first:
            problems.append(f"completed after {calls} calls and {retried} output_retry notes")
    return outcome.kind, calls, problems


def measure_retries(quick: bool) -> dict[str, Any]:
    count = QUICK_SEQUENCES if quick else FULL_SEQUENCES
    rng = random.Random(SEED)
    sequences = [sequence(rng) for _ in range(count)]
    answers = Counter(kind for _, _, seq in sequences for kind, _ in seq)
    outcomes: Counter[str] = Counter()
    violations: list[str] = []
    worst = 0.0  # the largest share of its budget a run used: calls / (retries + 1)
    started = time.perf_counter()

    async def go() -> None:
        nonlocal worst
        for mode, retries, seq in sequences:
            kind, calls, problems = await _one(mode, retries, seq)
            outcomes[kind] += 1
            worst = max(worst, calls / (retries + 1))
            violations.extend(f"{mode}, retries={retries}: {p}" for p in problems)

    asyncio.run(go())
    seconds = time.perf_counter() - started
    return {
        "sequences": count,
        "answers": dict(answers),
        "completed": outcomes["completed"],
        "failed": outcomes["failed"],
        "other": sum(n for k, n in outcomes.items() if k not in ("completed", "failed")),
        "max_calls_over_budget": worst,
        "violations": violations,
        "seconds": seconds,
    }


def _added(added: dict[str, float]) -> str:
    return ", ".join(f"{name} +{ms:.3f} ms" for name, ms in added.items())


def main(quick: bool = False) -> dict[str, Any]:
    pydantic_core = sys.modules.get("pydantic_core")
    versions = {d: metadata.version(d) for d in ("seamkit-openai", "httpx", "jsonschema")}
    print(
        f"output: a streamed structured answer vs the same stream without output; "
        f"python {sys.version.split()[0]}, "
        f"pydantic-core {getattr(pydantic_core, '__version__', '?')}, "
        + ", ".join(f"{k} {v}" for k, v in versions.items())
        + f", {os.cpu_count()} cpus"
    )
    provider_figures, provider = measure_provider(quick)
    kernel_figures, kernel = measure_kernel(quick)
    figures = provider_figures + kernel_figures
    baselines = {f["name"]: "output/provider/plain" for f in provider_figures} | {
        f["name"]: "output/kernel/plain" for f in kernel_figures
    }
    print(
        f"{kernel['bytes']:,} B of JSON in {kernel['chunks']} chunks. provider: client CPU "
        f"(time.process_time; the server is another process), median of {provider['rounds']} "
        f"rounds of {provider['runs']} runs; kernel only (scripted model, no target): wall, "
        f"{kernel['runs']} runs a sample"
    )
    print_figures(figures, baselines)
    print(f"added per answer, provider: {_added(provider['added_ms'])}")
    print(f"added per answer, kernel only: {_added(kernel['added_ms'])}")
    print(f"partials shown per run: provider {provider['partials']}, kernel {kernel['partials']}")

    retries = measure_retries(quick)
    print(
        f"\n=== output_retries: {retries['sequences']:,} generated answer sequences "
        f"({retries['seconds']:.1f} s) ==="
    )
    print_rows(
        [
            ("count", "value"),
            ("answers by kind", json.dumps(retries["answers"], sort_keys=True)),
            ("completed", str(retries["completed"])),
            ("failed (OutputInvalid)", str(retries["failed"])),
            ("other outcomes", str(retries["other"])),
            ("max model calls / (retries + 1)", f"{retries['max_calls_over_budget']:.2f}"),
            ("violations", str(len(retries["violations"]))),
        ]
    )
    for line in retries["violations"][:10]:
        print("  violation:", line)
    if retries["violations"] or retries["other"]:
        raise AssertionError(f"{len(retries['violations'])} violations of the bounded-retries law")

    res = result(
        "output",
        quick=quick,
        baseline="output/provider/plain",
        figures=figures,
        baselines=baselines,
        provider=provider,
        kernel=kernel,
        versions=versions,
        output_retries={k: v for k, v in retries.items() if k != "violations"}
        | {"violations": len(retries["violations"])},
    )
    print(f"output: {'all targets met' if res['all_met'] else 'SOME TARGETS NOT MET'}")
    return res


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
