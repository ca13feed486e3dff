"""Structured output (issue 30): what a declared output costs a stream, and
what 10,000 generated bad answers do to the run loop.

``output``: one streamed structured answer, about 1 KB of JSON in 50 chunks
(the built-in scripted model's ``{output: ..., chunks: 50}`` turn), through
`Agent.stream` with ``output=Output(schema)`` (native mode: the partial value
recomputed after every chunk, the answer parsed and validated at the end)
against the same JSON text streamed in the same 50 deltas by a run without a
declared output; and the same with the answer declared as a pydantic model
(``Invoice``, validated by pydantic-core rather than ``jsonschema``). Tool
mode (the answer as argument fragments of the output tool) is reported beside
them without a target. The figures are seconds per run, the median of rounds
that interleave the variants (one warm-up round discarded). Target: an output
run at most 1.2x the plain one. The scripted model costs nothing, so the
baseline is the run loop alone (about 0.13 ms a run here): what an output adds
per run (a partial per chunk, 50 more events, the validation; see
docs/benchmarks.md) is measured against almost nothing.

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
import json
import os
import random
import statistics
import sys
import time
from collections import Counter
from typing import Any

from pydantic import BaseModel
from seamkit import Agent, Output
from seamkit.stream import OutputDelta, RunFinished
from seamkit.testing import ScriptedModel

from tests.benchmarks._harness import figure, print_figures, print_rows, result

FULL_ROUNDS = 15
QUICK_ROUNDS = 2
WARMUP_ROUNDS = 1
FULL_RUNS = 20
QUICK_RUNS = 2
CHUNKS = 50
TARGET = 1.2
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
                partials += 1
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


def measure_cpu(quick: bool) -> tuple[list[dict[str, Any]], dict[str, str], dict[str, Any]]:
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
                    samples[name].append(elapsed)

    asyncio.run(go())
    base = statistics.median(samples["plain"])
    commands = {
        "plain": f"Agent.stream, {size:,} B of JSON text in {CHUNKS} deltas, no output",
        "native": f"Agent.stream, output=Output(schema, mode='native'), same {CHUNKS} deltas",
        "model": f"Agent.stream, output=Output(Invoice, mode='native'), same {CHUNKS} deltas",
        "tool": f"Agent.stream, output=Output(schema, mode='tool'), {CHUNKS} argument fragments",
    }
    figures = [
        figure(
            f"output/{name}",
            commands[name],
            samples[name],
            base,
            target=TARGET if name in ("native", "model") else None,
        )
        for name in names
    ]
    baselines = {f["name"]: "output/plain" for f in figures}
    return figures, baselines, {"bytes": size, "chunks": CHUNKS, "partials": shown, "runs": runs}


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


def main(quick: bool = False) -> dict[str, Any]:
    pydantic_core = sys.modules.get("pydantic_core")
    print(
        f"output: a streamed structured answer vs the same text without output; "
        f"python {sys.version.split()[0]}, "
        f"pydantic-core {getattr(pydantic_core, '__version__', '?')}, {os.cpu_count()} cpus"
    )
    figures, baselines, about = measure_cpu(quick)
    print(
        f"{about['bytes']:,} B of JSON in {about['chunks']} chunks, {about['runs']} runs a sample; "
        f"partials shown per run: {about['partials']}"
    )
    print_figures(figures, baselines)

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
        baseline="output/plain",
        figures=figures,
        baselines=baselines,
        stream=about,
        output_retries={k: v for k, v in retries.items() if k != "violations"}
        | {"violations": len(retries["violations"])},
    )
    print(f"output: {'all targets met' if res['all_met'] else 'SOME TARGETS NOT MET'}")
    return res


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
