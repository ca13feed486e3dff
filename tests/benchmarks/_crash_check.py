"""What the crash harness checks after each trial, from the trial's event
log, its effects file, how each step ended, and what the store held after
each step (the session and its journal, read by the parent between steps:
what was durably recorded when a step was killed, even a write that
committed in the store's thread just before the kill, before the step could
log it); see `tests.benchmarks._crash_app` for what the logs say.

`check_trial` returns the trial's counts and its violations (empty when the
kernel kept every promise): no ``once`` call started twice or acting twice;
a ``once`` call reported in doubt exactly when its start was recorded and
the process died before its result was; an ``idempotent`` call re-run only
with the key of its first start; no decision asked for again once it was
recorded; no model turn asked again once it was recorded (journal or save);
every step ended as planned (killed at its point, or exited 0); the run
ended; the session loads, with no journal or pending call left, and its
transcript is well formed: the user's message, the script's four turns once
each in order, every tool call answered exactly once, right after its turn,
with what the tool returned (or the in-doubt text).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.benchmarks._crash_app import FINAL, MESSAGE, SCRIPT, steps_of

__all__ = [
    "IN_DOUBT",
    "NOTHING",
    "Dump",
    "StepRun",
    "TrialVerdict",
    "check_trial",
    "expected_results",
]

IN_DOUBT = (
    "Error: InDoubt: the process stopped while {tool} was running; it may or may not have acted"
)


@dataclass(frozen=True)
class Dump:
    """A session as the store returns it: its transcript and state
    (``None``: no such session yet), its journal (entries as JSON), and
    ``error`` when it would not load."""

    transcript: list[dict[str, Any]] | None
    state: dict[str, Any] | None
    journal: list[dict[str, Any]]
    error: str | None = None

    def recorded_turns(self) -> set[int]:
        """The model turns the store holds (transcript or journal)."""
        out = set(steps_of(self.transcript or ()))
        for e in self.journal:
            if e["kind"] in ("start", "turn"):
                out.update(steps_of(e["data"].get("messages", ())))
        return out

    def decided(self) -> set[str]:
        """The calls whose decision the store holds (journal or state)."""
        out = {str(e["call_id"]) for e in self.journal if e["kind"] == "decided"}
        for p in (self.state or {}).get("seamkit.pending", ()):
            if p.get("decision"):
                out.add(str(p["call_id"]))
        return out

    def started(self, tool: str) -> Counter[str]:
        """How many starts of ``tool``'s calls the journal holds, per call."""
        return Counter(
            str(e["call_id"])
            for e in self.journal
            if e["kind"] == "started" and e["data"].get("tool") == tool
        )

    def unfinished(self, tool: str) -> set[str]:
        """``tool``'s calls whose start the journal holds, but not their result."""
        finished = {str(e["call_id"]) for e in self.journal if e["kind"] == "finished"}
        return set(self.started(tool)) - finished


NOTHING = Dump(None, None, [])


@dataclass
class StepRun:
    """One step of a trial as the parent saw it: its kill plan, how the
    process ended (``{"signal": N}`` or ``{"exit": N}``, maybe ``timeout``),
    and what the store held after it."""

    step: int
    kill: tuple[str, int] | None
    status: dict[str, Any]
    stderr: str = ""
    after: Dump = field(default_factory=lambda: NOTHING)


@dataclass
class TrialVerdict:
    """A trial's counts and violations."""

    counts: Counter[str] = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)
    kills: list[str] = field(default_factory=list)
    """The points the trial's steps were killed at, in order."""


def expected_results() -> dict[str, tuple[str, dict[str, Any], str]]:
    """Each scripted call's id (as the scripted model names it) -> its tool,
    arguments and the result the tool returns."""
    out = {}
    for k, turn in enumerate(SCRIPT, start=1):
        for i, call in enumerate(turn.get("tool_calls", ())):
            name, args = call["name"], call["arguments"]
            if name == "refund":
                text = f"refunded {args['order']} {args['amount']}"
            elif name == "reserve":
                text = f"reserved {args['item']}"
            else:
                text = f"order {args['order']}: late"
            out[f"call_{k}_{i}"] = (name, args, text)
    return out


EXPECTED = expected_results()


def _by_pid(events: Sequence[Mapping[str, Any]]) -> dict[int, list[Mapping[str, Any]]]:
    out: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
    for e in events:
        out[int(e["pid"])].append(e)
    return out


def _check_steps(
    steps: Sequence[StepRun], events: Sequence[Mapping[str, Any]], v: TrialVerdict
) -> None:
    """Each step killed where planned, or exited 0; the last one ended the run."""
    begins = [e for e in events if e["ev"] == "begin"]
    if len(begins) != len(steps):
        v.violations.append(f"{len(steps)} steps ran but {len(begins)} began")
        return
    pids = _by_pid(events)
    for run, begin in zip(steps, begins, strict=True):
        mine = pids[int(begin["pid"])]
        killed = [e for e in mine if e["ev"] == "killed"]
        status = run.status
        if status.get("timeout"):
            v.violations.append(f"step {run.step} hung (killed after its time-out)")
        elif status.get("signal") == 9:
            if not killed:
                v.violations.append(f"step {run.step} died of SIGKILL without reaching a point")
            else:
                v.kills.append(str(killed[0]["point"]))
        elif status.get("exit") != 0 or "exit" not in status:
            v.violations.append(f"step {run.step} failed ({status}):\n{run.stderr[-3000:]}")
        elif run.kill is not None and killed:
            v.violations.append(f"step {run.step} logged a kill but exited 0")
    last = steps[-1] if steps else None
    if last is None or last.status != {"exit": 0}:
        v.violations.append("the run never ended (the last step did not exit 0)")
        return
    tail = pids[int(begins[-1]["pid"])]
    ended = [e for e in tail if e["ev"] in ("outcome", "nothing")]
    if not ended or (ended[-1]["ev"] == "outcome" and ended[-1]["kind"] != "completed"):
        v.violations.append(f"the last step ended with {ended[-1:]}, not a completed run")


def _per_step(
    steps: Sequence[StepRun], events: Sequence[Mapping[str, Any]]
) -> list[tuple[Dump, list[Mapping[str, Any]]]]:
    """Each step's events, with what the store held before it ran."""
    pids = _by_pid(events)
    begins = [int(e["pid"]) for e in events if e["ev"] == "begin"]
    before = [NOTHING, *(s.after for s in steps)]
    return [(before[i], pids[pid]) for i, pid in enumerate(begins[: len(steps)])]


def _check_turns(
    steps: Sequence[StepRun], events: Sequence[Mapping[str, Any]], v: TrialVerdict
) -> None:
    """No model turn asked again once the journal or a save recorded it."""
    for before, mine in _per_step(steps, events):
        recorded = before.recorded_turns()
        for e in mine:
            ev = e["ev"]
            if ev in ("jstart", "jturn", "saved"):
                recorded.update(e["steps"])
                v.counts["turns_recorded"] += ev == "jturn"
            elif ev == "ask":
                v.counts["model_requests"] += 1
                turn = int(e["turn"])
                if turn in recorded:
                    v.counts["turns_asked_again_after_recorded"] += 1
                    v.violations.append(f"model turn {turn} was asked again after it was recorded")


def _check_decisions(
    steps: Sequence[StepRun], events: Sequence[Mapping[str, Any]], v: TrialVerdict
) -> None:
    """No decision asked for again once the store holds it."""
    for before, mine in _per_step(steps, events):
        recorded = before.decided()
        for e in mine:
            if e["ev"] == "jdecided":
                v.counts["decisions_recorded"] += 1
                recorded.add(str(e["call"]))
            elif e["ev"] == "decide":
                for call in e["calls"]:
                    v.counts["decisions_sent"] += 1
                    if call in recorded:
                        v.counts["decisions_lost"] += 1
                        v.violations.append(
                            f"call {call} was decided again after its decision was recorded"
                        )


def _cut(steps: Sequence[StepRun]) -> set[str]:
    """The ``refund`` calls whose start the journal held, without their
    result, when a step was killed."""
    out: set[str] = set()
    for s in steps:
        out |= s.after.unfinished("refund")
    return out


def _results(transcript: Sequence[Mapping[str, Any]], v: TrialVerdict) -> dict[str, str]:
    """Each call's result in a well-formed transcript (violations otherwise)."""
    problems = []
    users = [m for m in transcript if m.get("role") == "user"]
    if not transcript or transcript[0].get("role") != "user" or len(users) != 1:
        problems.append(f"{len(users)} user messages, the first message is not the user's")
    elif users[0].get("content") != MESSAGE:
        problems.append(f"the user's message is {users[0].get('content')!r}")
    if steps_of(transcript) != [1, 2, 3, 4]:
        problems.append(f"the model turns are steps {steps_of(transcript)}, not [1, 2, 3, 4]")
    last = transcript[-1] if transcript else {}
    if last.get("role") != "assistant" or last.get("content") != FINAL or last.get("tool_calls"):
        problems.append(f"the last message is {last!r}, not the answer {FINAL!r}")
    results: dict[str, str] = {}
    waiting: list[str] = []
    for m in transcript:
        role = m.get("role")
        if role == "tool":
            call = str(m.get("tool_call_id"))
            if call not in waiting:
                problems.append(
                    f"tool message for {call}, which the last turn did not call or was answered"
                )
            else:
                waiting.remove(call)
                results[call] = str(m.get("content"))
            continue
        if waiting:
            problems.append(f"calls {waiting} left unanswered before a {role} message")
            waiting = []
        if role == "assistant":
            waiting = [c["id"] for c in m.get("tool_calls") or ()]
    if waiting:
        problems.append(f"calls {waiting} unanswered at the end")
    if set(results) != set(EXPECTED):
        problems.append(f"results for {sorted(results)}, the script made {sorted(EXPECTED)}")
    v.violations += [f"transcript: {p}" for p in problems]
    v.counts["transcripts_well_formed"] += not problems
    return results


def _check_effects(
    events: Sequence[Mapping[str, Any]],
    effects: Sequence[Mapping[str, Any]],
    results: Mapping[str, str],
    steps: Sequence[StepRun],
    v: TrialVerdict,
) -> None:
    """Each kind of tool against its promise (see the module's docs)."""
    cut = _cut(steps)
    acted: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for e in effects:
        if "call" in e:
            acted[str(e["call"])].append(e)
    starts: dict[str, list[str]] = defaultdict(list)
    for e in events:
        if e["ev"] == "jstarted":
            starts[str(e["call"])].append(str(e["key"]))
    lookups = Counter(str(e["order"]) for e in effects if e["ev"] == "lookup")
    for call, (tool, args, text) in EXPECTED.items():
        got = results.get(call)
        if got is None:
            continue  # the transcript check said so
        if tool == "refund":
            n = len(acted[call])
            v.counts["once_calls"] += 1
            v.counts["once_effects"] += n
            if n > 1:
                v.counts["once_duplicates"] += n - 1
                v.violations.append(f"refund {call} acted {n} times")
            journaled = max((s.after.started("refund")[call] for s in steps), default=0)
            if max(len(starts[call]), journaled) > 1:
                v.violations.append(f"refund {call} was started {len(starts[call])} times")
            in_doubt = got == IN_DOUBT.format(tool=tool)
            expected = call in cut
            v.counts["in_doubt_expected"] += expected
            v.counts["in_doubt_reported"] += in_doubt
            if in_doubt:
                v.counts["in_doubt_with_effect"] += n
            if in_doubt != expected:
                v.violations.append(
                    f"refund {call}: result {got!r}, but it was {'' if expected else 'not '}"
                    "started without its result recorded"
                )
            elif not in_doubt and (got != text or n != 1):
                v.violations.append(f"refund {call}: result {got!r} after {n} effects")
        elif tool == "reserve":
            keys = {str(e["key"]) for e in acted[call]}
            v.counts["idempotent_calls"] += 1
            v.counts["idempotent_effects"] += len(acted[call])
            v.counts["idempotent_reruns"] += max(0, len(acted[call]) - 1)
            first = starts[call][:1]
            if len(keys) > 1 or set(starts[call]) != set(first) or (keys and keys != set(first)):
                v.counts["idempotent_key_changes"] += 1
                v.violations.append(
                    f"reserve {call} ran with keys {sorted(keys)}; journaled keys {starts[call]}"
                )
            if got != text or not acted[call]:
                v.violations.append(f"reserve {call}: result {got!r} after {len(acted[call])} runs")
        else:
            ran = lookups[args["order"]]
            v.counts["none_calls"] += 1
            v.counts["none_reruns"] += max(0, ran - 1)
            if got != text or not ran:
                v.violations.append(f"lookup {call}: result {got!r} after {ran} runs")
    # The diagnostic: a step that lived to return reports each call it found in doubt.
    for run_pid, mine in _by_pid(events).items():
        reported = [
            str(e["call"])
            for e in mine
            if e["ev"] == "jfinished" and str(e.get("content", "")).startswith("Error: InDoubt:")
        ]
        if not reported or any(e["ev"] == "killed" for e in mine):
            continue
        told = " ".join(str(e["message"]) for e in mine if e["ev"] == "diagnostic")
        for call in reported:
            v.counts["in_doubt_diagnostics"] += 1
            if repr(call) not in told:
                v.violations.append(f"process {run_pid} found {call} in doubt without a diagnostic")


def check_trial(
    steps: Sequence[StepRun],
    events: Sequence[Mapping[str, Any]],
    effects: Sequence[Mapping[str, Any]],
    dump: Dump,
) -> TrialVerdict:
    """The counts and violations of one trial (see the module's docs)."""
    v = TrialVerdict()
    v.counts["steps"] = len(steps)
    _check_steps(steps, events, v)
    _check_turns(steps, events, v)
    _check_decisions(steps, events, v)
    if dump.error is not None or dump.transcript is None:
        v.violations.append(f"the session does not load: {dump.error}")
        return v
    v.counts["sessions_loadable"] += 1
    if dump.journal:
        v.violations.append(f"the journal still holds {len(dump.journal)} entries")
    if (dump.state or {}).get("seamkit.pending"):
        v.violations.append(f"calls still pending: {dump.state}")
    results = _results(dump.transcript, v)
    _check_effects(events, effects, results, steps, v)
    return v
