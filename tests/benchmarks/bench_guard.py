"""Guards (issue 28, "Measured"): no secret or pattern match leaks from a
stream, whatever its split, and what the guards add to the time to the first
released token.

**1. Leak trials.** Seeded material (`_guard_trials`): 200 secrets (alnum;
alnum with ``/+=&%"\\``; mostly those characters; token shapes such as
``sk-live-...``), each embedded in an answer in one of its forms (plain,
JSON- and repr-escaped, URL-encoded with ``quote`` and ``quote_plus``,
base64, URL-safe base64 unpadded, inside ``Basic base64("user:" + secret)``),
at the start, the middle, the end, alone, quoted or twice; and 200 matches
of a guard of three patterns (a card number, ``sk-[A-Za-z0-9]{20}``, a
bounded e-mail), embedded the same ways.

Through ``Agent.stream``: two agents built once by ``Agent.load`` from a
manifest dict and reused, each with a model object whose deltas are set
before each run: one without hooks, whose runs get the secret and the next
two secrets as ``Secret`` values in ``context=`` (the run's redactor holds
all three); one with the ``guard`` entry (``event: on_text_delta``,
``action: mask``) for the matches. Each answer is streamed split in two at
every offset, then in 1,000 random multi-splits (2 to 40 cuts drawn with
replacement: empty deltas and a whole-text delta happen). Every released
`TextDelta`, their concatenation, ``RunResult.output`` and every message of
the transcript are checked with the detector ``seamkit.Redactor(secrets,
patterns)`` (``detector(text) != text``: it knows every form), and the
characters of every form or match found are counted. The concatenation must
also equal the answer as the detector masks it (else the trial counts as
*altered*: not a leak, a guard that changed more or less than it should).

Through ``seamkit serve``'s SSE: one real ``seamkit serve APP --workers 1``
(started as ``bench_serve`` starts it) on an app whose model is the
built-in ``scripted`` one, with one turn per trial **in order** (no
``each_run``: one worker answers the requests one after the other, so
request *j* gets turn *j*; each turn's ``expect: {last_user: "trial j"}``
proves the pairing), its ``deltas`` the trial's split; the app's guard entry
is the same, and its secrets reach every run as manifest secrets: the app's
one secret-taking field in a tool-free app is ``settings.state_key``, given
as ``"${secret:GUARD_S0}${secret:GUARD_S1}..."``, which makes one `Secret`
whose ``parts`` are each masked on their own (as a ``Bearer
${secret:TOKEN}`` header's would be). Fewer trials there: 20 secrets and 20
matches, every split offset and 50 random multi-splits each. Every streamed
answer is read with ``httpx`` and parsed; each content chunk and their
concatenation are checked the same way, against the detector of all the
app's secrets and the patterns.

**2. Latency.** A 50-chunk answer (50 words of ordinary prose, 291
characters, no secret) from a model that yields every delta at once and
lets the event loop run once after each (``await asyncio.sleep(0)``, as a
provider awaits its socket; without it the whole run ends before the
consumer of ``Agent.stream`` sees its first event, and the "time to first
token" is the whole stream's: 0.38 ms instead of 0.15 ms for the redactor
in a first run), through ``Agent.stream``. Variants, each an agent built by ``Agent.load`` from a
manifest dict: *neither* (no hooks, no secrets: the kernel makes no
``TextRelease``, checked by counting them in a check run), *neither_again*
(the same, a second agent: the noise floor), *redactor* (the neither agent,
the run's context holding 3 secrets), *guard* (the guard entry of three
patterns, no secrets). Per run: the time from the start of the stream to the
first `TextDelta` (TTFT), and the per-delta time (the whole stream's time /
50). Interleaved (`_interleave.interleaved`: every step runs each variant
once, their order rotated), 15 rounds of 400 steps after a warm-up; per
round p50 and p95 of each; a figure is the median of the rounds. The added
p95 TTFT is paired per round (variant's p95 - neither's p95); its ratio is
taken against the budget: 0.2 ms for the redactor, 1 ms for the guard
(target 1.0 each). With a hold window a guard may hold the end of the first
delta until the next arrives: its TTFT then includes streaming the next
deltas, which is what a user sees.

The extra keys: ``leaks`` (per path and kind, a `_guard_trials.Tally`
summary), ``latency`` (per variant, the median over rounds of p50 and p95,
ms), ``text_releases`` (how many ``TextRelease`` objects each variant's check
run made), ``baselines`` (each figure's baseline), ``problems``.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import seamkit
from seamkit import Message, ModelTurn, Redactor, Secret
from seamkit.stream import RunFinished, TextDelta

from tests.benchmarks._guard_trials import (
    PATTERNS,
    Item,
    Tally,
    leaked_chars,
    pattern_items,
    secret_items,
    splits,
)
from tests.benchmarks._harness import figure, print_figures, print_rows, result, verdict
from tests.benchmarks._interleave import Client, flat, interleaved, warm

FULL: dict[str, Any] = {
    "secrets": 200,
    "matches": 200,
    "randoms": 1000,
    "offsets": None,  # every offset
    "serve_secrets": 20,
    "serve_matches": 20,
    "serve_randoms": 50,
    "serve_offsets": None,
    "rounds": 15,
    "steps": 400,
    "warm": 50,
}
QUICK: dict[str, Any] = {
    "secrets": 4,
    "matches": 3,
    "randoms": 5,
    "offsets": 10,
    "serve_secrets": 2,
    "serve_matches": 2,
    "serve_randoms": 2,
    "serve_offsets": 4,
    "rounds": 2,
    "steps": 10,
    "warm": 2,
}
CHUNKS = 50
REDACTOR_BUDGET_MS = 0.2
GUARD_BUDGET_MS = 1.0
GUARD_ENTRY = {
    "kind": "guard",
    "name": "patterns",
    "event": "on_text_delta",
    "patterns": list(PATTERNS),
    "action": "mask",
}
LATENCY_SECRETS = (
    "sk-live-4f9a2c7e1b8d3f60a5e2",
    'p@ss/w0rd+"quoted"&more=%',
    "ghp_Zx81LmQ0rTt5vW2yKj7",
)


# --- the model and the agents ---------------------------------------------------------


class Deltas:
    """A model that streams ``deltas`` (set before each run) at once; with
    ``pause``, it lets the event loop run once after each delta (a real
    provider awaits its socket between deltas: without that, the whole run
    would be done before the consumer of ``Agent.stream`` saw its first
    event, and the time to the first token would be the whole stream's)."""

    def __init__(self, deltas: Sequence[str] = (), *, pause: bool = False) -> None:
        self.deltas = list(deltas)
        self.pause = pause

    def _turn(self) -> ModelTurn:
        return ModelTurn(message=Message.assistant("".join(self.deltas)), finish_reason="stop")

    async def complete(self, request: Any) -> ModelTurn:
        return self._turn()

    async def stream(self, request: Any) -> AsyncIterator[str | ModelTurn]:
        for delta in self.deltas:
            yield delta
            if self.pause:
                await asyncio.sleep(0)
        yield self._turn()


async def build(model: Deltas, guarded: bool) -> seamkit.Agent:
    """An agent from a manifest dict, with the guard entry or without hooks."""
    manifest: dict[str, Any] = {"name": "guard-bench", "model": "scripted:unused.json"}
    if guarded:
        manifest["hooks"] = [GUARD_ENTRY]
    return await seamkit.Agent.load(manifest, model=model)


# --- 1. leak trials through Agent.stream ---------------------------------------------------


def _inspect_release(tally: Tally, detector: Redactor, text: str, where: str) -> None:
    tally.releases += 1
    leaked = leaked_chars(detector, text)
    if leaked:
        tally.leaked_releases += 1
        tally.leaked_chars += leaked
        tally.note(f"{where}: a release showed {leaked} characters: {text!r}")


def _inspect_text(tally: Tally, detector: Redactor, text: str, where: str) -> None:
    tally.texts += 1
    leaked = leaked_chars(detector, text)
    if leaked:
        tally.leaked_chars += leaked
        tally.note(f"{where}: {leaked} characters: {text!r}")


async def stream_trials(items: Sequence[Item], counts: Mapping[str, Any], guarded: bool) -> Tally:
    """Every split of every item's answer through one reused agent."""
    model = Deltas()
    agent = await build(model, guarded)
    tally = Tally()
    rng = random.Random(f"stream-{guarded}")
    for item in items:
        context = {f"s{i}": Secret(s) for i, s in enumerate(item.secrets)} or None
        for deltas in splits(item.answer, counts["randoms"], rng, counts["offsets"]):
            model.deltas = deltas
            where = f"{item.label} split {[len(d) for d in deltas]}"
            released: list[str] = []
            res = None
            async for event in agent.stream("go", context=context):
                if isinstance(event, TextDelta):
                    released.append(event.text)
                    _inspect_release(tally, item.detector, event.text, where)
                elif isinstance(event, RunFinished):
                    res = event.result
            tally.trials += 1
            whole = "".join(released)
            if res is None or res.outcome.kind != "completed":
                tally.errors += 1
                tally.note(f"{where}: the run ended {res.outcome if res else None!r}")
                continue
            _inspect_text(tally, item.detector, whole, f"{where} (concatenation)")
            _inspect_text(tally, item.detector, res.output or "", f"{where} (output)")
            for message in res.transcript:
                _inspect_text(tally, item.detector, message.text, f"{where} (transcript)")
            if whole != item.expected or res.output != item.expected:
                tally.altered += 1
                tally.note(f"{where}: released {whole!r}, expected {item.expected!r}")
    return tally


# --- 1b. leak trials through seamkit serve ---------------------------------------------------


def _sse_contents(raw: bytes) -> tuple[list[str], str | None]:
    """The content chunks of a streamed answer, and what is wrong with it (None: nothing)."""
    contents: list[str] = []
    finish = None
    events = [e for e in raw.decode().split("\n\n") if e.strip()]
    if not events or events[-1].strip() != "data: [DONE]":
        return contents, f"no [DONE] at the end: {raw[-200:]!r}"
    for event in events[:-1]:
        if not event.startswith("data: "):
            return contents, f"not a data event: {event[:200]!r}"
        chunk = json.loads(event[len("data: ") :])
        for choice in chunk.get("choices", []):
            content = choice.get("delta", {}).get("content")
            if content is not None:
                contents.append(content)
            finish = choice.get("finish_reason") or finish
    if finish != "stop":
        return contents, f"finish_reason {finish!r}"
    return contents, None


def serve_trials(items: Sequence[Item], counts: Mapping[str, Any]) -> Tally:
    """Every item's splits through one ``seamkit serve``: one scripted turn per trial."""
    import httpx

    from tests.benchmarks.bench_serve import seamkit_server

    rng = random.Random("serve")
    secrets = [s for item in items for s in item.secrets[:1]]
    detector = Redactor(secrets, PATTERNS)
    trials: list[tuple[Item, list[str]]] = [
        (item, deltas)
        for item in items
        for deltas in splits(item.answer, counts["serve_randoms"], rng, counts["serve_offsets"])
    ]
    turns = [
        {"text": item.answer, "deltas": deltas, "expect": {"last_user": f"trial {j}"}}
        for j, (item, deltas) in enumerate(trials)
    ]
    names = [f"GUARD_BENCH_S{i}" for i in range(len(secrets))]
    state_key = "".join(f"${{secret:{name}}}" for name in names)
    manifest = {
        "name": "guard-bench",
        "model": "scripted:script.json",
        "settings": {"state_key": state_key},
        "hooks": [GUARD_ENTRY],
    }
    tally = Tally()
    with tempfile.TemporaryDirectory(prefix="seamkit-bench-guard-") as tmp:
        directory = Path(tmp)
        (directory / "script.json").write_text(json.dumps({"turns": turns}), encoding="utf-8")
        app = directory / "guard-bench.yaml"
        app.write_text(json.dumps(manifest), encoding="utf-8")
        os.environ.update(zip(names, secrets, strict=True))  # inherited by the server
        try:
            server = seamkit_server("seamkit", app, str(directory / "s.sqlite"), 1, directory)
        finally:
            for name in names:
                del os.environ[name]
        try:
            with httpx.Client(timeout=30) as client:
                for j, (item, deltas) in enumerate(trials):
                    body = {
                        "model": "guard-bench",
                        "stream": True,
                        "messages": [{"role": "user", "content": f"trial {j}"}],
                    }
                    where = f"serve {item.label} split {[len(d) for d in deltas]}"
                    answer = client.post(server.url, json=body)
                    tally.trials += 1
                    if answer.status_code != 200:
                        tally.errors += 1
                        tally.note(f"{where}: status {answer.status_code}: {answer.text[:200]}")
                        continue
                    contents, wrong = _sse_contents(answer.content)
                    for content in contents:
                        _inspect_release(tally, detector, content, where)
                    whole = "".join(contents)
                    _inspect_text(tally, detector, whole, f"{where} (concatenation)")
                    if wrong is not None:
                        tally.errors += 1
                        tally.note(f"{where}: {wrong}")
                    elif whole != detector(item.answer):
                        tally.altered += 1
                        tally.note(f"{where}: released {whole!r}")
        finally:
            log = server.stop()
    errors = [ln for ln in log.splitlines() if "Traceback" in ln or ln.startswith("ERROR")]
    if errors:
        tally.errors += len(errors)
        tally.note(f"server log: {errors[0]}")
    return tally


# --- 2. latency ---------------------------------------------------------------------------


PROSE = (
    "The report covers the quarter in three parts: what changed in the service, "
    "which incidents followed and how long each took to resolve, and what the team "
    "plans next. Most requests were answered within the target; two releases were "
    "rolled back after their error rates rose, and both were fixed within a day. "
    "Next quarter the team will move the remaining jobs to the new queue and retire "
    "the old scheduler."
)


def prose() -> list[str]:
    """The 50-chunk answer: one word (with its space) a chunk, 291 characters."""
    words = PROSE.split()[:CHUNKS]
    chunks = [words[0]] + [" " + w for w in words[1:]]
    assert len(chunks) == CHUNKS, len(chunks)
    return chunks


class Timed:
    """One variant: runs the agent's stream once per call, recording its TTFT (ms)."""

    def __init__(self, agent: seamkit.Agent, context: Mapping[str, Any] | None, text: str) -> None:
        self.agent = agent
        self.context = context
        self.text = text
        self.ttft: list[float] = []

    async def __call__(self) -> None:
        start = time.perf_counter()
        first = None
        parts = []
        async for event in self.agent.stream("go", context=self.context):
            if isinstance(event, TextDelta):
                if first is None and event.text:
                    first = time.perf_counter()
                parts.append(event.text)
        if first is None or "".join(parts) != self.text:
            raise RuntimeError(f"the stream released {''.join(parts)!r}")
        self.ttft.append((first - start) * 1e3)


def _p95(values: Sequence[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[-1]


async def latency(counts: Mapping[str, Any]) -> dict[str, Any]:
    """Per round, p50 and p95 of TTFT and per-delta time (ms) of each variant."""
    chunks = prose()
    text = "".join(chunks)
    secrets = {f"k{i}": Secret(s) for i, s in enumerate(LATENCY_SECRETS)}
    plain = await build(Deltas(chunks, pause=True), guarded=False)
    again = await build(Deltas(chunks, pause=True), guarded=False)
    guard = await build(Deltas(chunks, pause=True), guarded=True)
    variants = {
        "neither": Timed(plain, None, text),
        "neither_again": Timed(again, None, text),
        "redactor": Timed(plain, secrets, text),
        "guard": Timed(guard, None, text),
    }
    releases = {}
    for name, timed in variants.items():
        releases[name] = await _count_releases_async(timed)
    for timed in variants.values():
        timed.ttft.clear()
    clients: dict[str, Client] = dict(variants)
    await warm(clients, counts["warm"])
    for timed in variants.values():
        timed.ttft.clear()
    steps = counts["steps"]
    totals = await interleaved(clients, counts["rounds"], steps)
    out: dict[str, dict[str, list[float]]] = {}
    for name, timed in variants.items():
        ttft_rounds = [timed.ttft[r * steps : (r + 1) * steps] for r in range(counts["rounds"])]
        per_delta_rounds = [[t / 1e3 / CHUNKS for t in r] for r in totals[name]]
        out[name] = {
            "ttft_p50": [statistics.median(r) for r in ttft_rounds],
            "ttft_p95": [_p95(r) for r in ttft_rounds],
            "per_delta_p50": [statistics.median(r) for r in per_delta_rounds],
            "per_delta_p95": [_p95(r) for r in per_delta_rounds],
        }
    runs = {name: len(flat(rounds)) for name, rounds in totals.items()}
    return {"rounds": out, "runs": runs, "text_releases": releases, "chars": len(text)}


async def _count_releases_async(timed: Timed) -> int:
    from seamkit._engine import _release

    made = 0
    original = _release.TextRelease.__init__

    def counting(self: Any, *args: Any, **kwargs: Any) -> None:
        nonlocal made
        made += 1
        original(self, *args, **kwargs)

    _release.TextRelease.__init__ = counting  # type: ignore[method-assign]
    try:
        await timed()
    finally:
        _release.TextRelease.__init__ = original  # type: ignore[method-assign]
    return made


# --- reporting ----------------------------------------------------------------------------

Spec = tuple[str, str, list[float], str, str, float | None]
STATS = ("ttft_p50", "ttft_p95", "per_delta_p50", "per_delta_p95")
SHOWN = {
    "neither": "neither (no secrets, no hooks)",
    "neither_again": "neither, a second agent (the noise floor)",
    "redactor": "redactor alone (3 secrets in the context)",
    "guard": "guard of three patterns (mask, no secrets)",
}


def _paired(a: Sequence[float], b: Sequence[float]) -> list[float]:
    return [x - y for x, y in zip(a, b, strict=True)]


def _leak_specs(path: str, tally: Tally) -> list[Spec]:
    clean = tally.releases - tally.leaked_releases
    return [
        (
            f"{path}/clean",
            f"{path}: releases without a leak",
            [float(clean)],
            f"{path}/clean",
            "releases",
            None,
        ),
        (
            f"{path}/inspected",
            f"{path}: releases inspected ({tally.trials:,} trials), over those without a leak",
            [float(tally.releases)],
            f"{path}/clean",
            "releases",
            1.0,
        ),
        (
            f"{path}/leaked_chars",
            f"{path}: leaked characters (releases, concatenations, outputs, transcripts)",
            [float(tally.leaked_chars)],
            f"{path}/inspected",
            "chars",
            None,
        ),
    ]


def specs(leaks: Mapping[str, Tally], lat: Mapping[str, Any], steps: int) -> list[Spec]:
    """(name, command, samples, baseline, unit, target) of every figure."""
    out: list[Spec] = []
    for path, tally in leaks.items():
        out += _leak_specs(path, tally)
    rounds = lat["rounds"]
    for stat in STATS:
        for variant in SHOWN:
            out.append(
                (
                    f"{stat}/{variant}",
                    f"{stat.replace('_', ' ')}: {SHOWN[variant]} ({steps} runs a round)",
                    rounds[variant][stat],
                    f"{stat}/neither",
                    "ms",
                    None,
                )
            )
    neither = rounds["neither"]["ttft_p95"]
    for variant, budget, target in (
        ("redactor", "budget/redactor", 1.0),
        ("guard", "budget/guard", 1.0),
        ("neither_again", "budget/redactor", None),
    ):
        added = [max(0.0, x) for x in _paired(rounds[variant]["ttft_p95"], neither)]
        out.append(
            (
                f"added_ttft_p95/{variant}",
                f"added p95 TTFT: {variant} - neither, paired per round (vs its budget)",
                added,
                budget,
                "ms",
                target,
            )
        )
    return out


def _leak_rows(leaks: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = [
        (
            "path / kind",
            "trials",
            "releases",
            "texts",
            "leaked releases",
            "leaked chars",
            "altered",
            "errors",
        )
    ]
    for name, t in leaks.items():
        rows.append(
            (
                name,
                f"{t['trials']:,}",
                f"{t['releases']:,}",
                f"{t['texts']:,}",
                str(t["leaked_releases"]),
                str(t["leaked_chars"]),
                str(t["altered"]),
                str(t["errors"]),
            )
        )
    return rows


def _print(res: Mapping[str, Any]) -> None:
    print_figures(res["figures"], res["baselines"])
    print()
    print_rows(_leak_rows(res["leaks"]))
    for name, t in res["leaks"].items():
        for line in t["examples"]:
            print(f"  {name}: {line}")
    print()
    lat = res["latency"]
    rows: list[tuple[str, ...]] = [
        (
            "variant (ms, median of rounds)",
            "TTFT p50",
            "TTFT p95",
            "per-delta p50",
            "per-delta p95",
            "added TTFT p95",
            "added per-delta p50",
            "TextReleases",
        )
    ]
    base = lat["neither"]
    for variant, shown in SHOWN.items():
        v = lat[variant]
        rows.append(
            (
                shown,
                f"{v['ttft_p50']:.4f}",
                f"{v['ttft_p95']:.4f}",
                f"{v['per_delta_p50']:.4f}",
                f"{v['per_delta_p95']:.4f}",
                "-" if variant == "neither" else f"{v['added_ttft_p95']:+.4f}",
                "-"
                if variant == "neither"
                else f"{v['per_delta_p50'] - base['per_delta_p50']:+.4f}",
                str(res["text_releases"][variant]),
            )
        )
    print_rows(rows)
    by = {f["name"]: f for f in res["figures"]}
    for variant, budget in (("redactor", REDACTOR_BUDGET_MS), ("guard", GUARD_BUDGET_MS)):
        f = by[f"added_ttft_p95/{variant}"]
        print(
            f"{variant}: added p95 TTFT {f['median']:.4f} ms against the {budget:g} ms budget "
            f"({f['ratio']:.2f}x): {'met' if f['met'] else 'NOT MET'}"
        )
    print(
        f"neither: {res['text_releases']['neither']} TextRelease made (the kernel guards "
        f"nothing); neither_again - neither, p95 TTFT: "
        f"{lat['neither_again']['added_ttft_p95']:+.4f} ms (signed, the noise floor)"
    )
    for line in res["problems"]:
        print(f"PROBLEM: {line}")
    print(f"{res['benchmark']}: {verdict(res)}")


def main(quick: bool = False) -> dict[str, Any]:
    counts = QUICK if quick else FULL
    print(
        f"guard: leak trials {counts['secrets']} secrets + {counts['matches']} matches, "
        f"{'every' if counts['offsets'] is None else counts['offsets']} split offsets + "
        f"{counts['randoms']} random splits each through Agent.stream; "
        f"{counts['serve_secrets']} + {counts['serve_matches']}, "
        f"{'every' if counts['serve_offsets'] is None else counts['serve_offsets']} offsets + "
        f"{counts['serve_randoms']} random through seamkit serve; latency {counts['rounds']} "
        f"rounds x {counts['steps']} interleaved steps of a {CHUNKS}-chunk answer; python "
        f"{sys.version.split()[0]}, {os.cpu_count()} cpus"
    )
    secrets = secret_items(max(counts["secrets"], counts["serve_secrets"]))
    matches = pattern_items(max(counts["matches"], counts["serve_matches"]))
    started = time.perf_counter()
    tallies = {
        "stream/secrets": asyncio.run(
            stream_trials(secrets[: counts["secrets"]], counts, guarded=False)
        ),
        "stream/matches": asyncio.run(
            stream_trials(matches[: counts["matches"]], counts, guarded=True)
        ),
    }
    stream_seconds = time.perf_counter() - started
    serve_items = secrets[: counts["serve_secrets"]] + matches[: counts["serve_matches"]]
    started = time.perf_counter()
    tallies["serve"] = serve_trials(serve_items, counts)
    serve_seconds = time.perf_counter() - started
    lat = asyncio.run(latency(counts))

    paths = {"stream": Tally(), "serve": tallies["serve"]}
    for key in ("stream/secrets", "stream/matches"):
        t = tallies[key]
        agg = paths["stream"]
        agg.trials += t.trials
        agg.releases += t.releases
        agg.texts += t.texts
        agg.leaked_releases += t.leaked_releases
        agg.leaked_chars += t.leaked_chars
    all_specs = specs(paths, lat, counts["steps"])
    medians = {name: statistics.median(samples) for name, _, samples, *_ in all_specs}
    medians["budget/redactor"] = REDACTOR_BUDGET_MS
    medians["budget/guard"] = GUARD_BUDGET_MS
    for name, _, _, base, _, _ in all_specs:
        if medians[base] == 0:
            raise RuntimeError(f"{name}: its baseline {base} is 0")
    figures = [
        figure(name, command, samples, medians[base], unit=unit, target=target)
        for name, command, samples, base, unit, target in all_specs
    ]
    rounds = lat["rounds"]
    summary = {
        variant: {stat: statistics.median(rounds[variant][stat]) for stat in STATS}
        for variant in SHOWN
    }
    for variant in SHOWN:
        summary[variant]["added_ttft_p95"] = statistics.median(
            _paired(rounds[variant]["ttft_p95"], rounds["neither"]["ttft_p95"])
        )
    problems = []
    for name, t in tallies.items():
        if t.leaked_chars or t.leaked_releases:
            problems.append(
                f"{name}: {t.leaked_chars} leaked characters in {t.leaked_releases} releases"
            )
        if t.altered:
            problems.append(f"{name}: {t.altered} trials released other text than expected")
        if t.errors:
            problems.append(f"{name}: {t.errors} errors")
    if lat["text_releases"]["neither"] or lat["text_releases"]["neither_again"]:
        problems.append("a run with neither secrets nor text guards made a TextRelease")
    res = result(
        "guard",
        quick=quick,
        baseline="ttft_p50/neither",
        figures=figures,
        baselines={name: base for name, _, _, base, *_ in all_specs},
        leaks={name: t.summary() for name, t in tallies.items()},
        latency=summary,
        text_releases=lat["text_releases"],
        runs=lat["runs"],
        answer_chars=lat["chars"],
        seconds={"stream_trials": stream_seconds, "serve_trials": serve_seconds},
        problems=problems,
        **counts,
    )
    _print(res)
    print(
        f"leak trials took {stream_seconds:.1f} s through Agent.stream, "
        f"{serve_seconds:.1f} s through seamkit serve"
    )
    return res


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
