"""What the crash harness checks after each trial, from the trial's event
log, its effects file, how each step ended, and what the store held after
each step (the session and its journal, read by the parent between steps:
what was durably recorded when a step was killed, even a write that
committed in the store's thread just before the kill, before the step could
log it); see `tests.benchmarks._crash_app` for what the logs say.

`check_trial` returns the trial's counts and its violations (empty when the
kernel kept every promise): every call shown for approval with the
arguments the model sent and their digest; a rejected call never started,
its result the reason; an edited call acting (once) only with the edited
arguments, an approved one only with the arguments shown; each decision
recorded at most once, as it was made; no decision asked for again once it
was recorded; no ``once`` call started twice or acting twice; a ``once``
call reported in doubt exactly when its start was recorded and the process
died before its result was; an ``idempotent`` call re-run only with the key
of its first start; no model turn asked again once it was recorded (journal
or save); every step ended as planned (killed at its point, or at a random
moment by the zygote, or exited 0); the run ended; the session loads, with
no journal or pending call left, and its transcript is well formed: the
user's message, the script's four turns once each in order, every tool call
answered exactly once, right after its turn, with what the tool returned
(or the in-doubt text, or the reason of a rejection). `moment_phase` tells,
from the log, where a kill at a random moment landed.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from seamkit import arguments_digest

from tests.benchmarks._crash_app import FINAL, MESSAGE, SCRIPT, steps_of

__all__ = [
    "IN_DOUBT",
    "NOTHING",
    "Dump",
    "Kill",
    "StepRun",
    "TrialVerdict",
    "check_trial",
    "expected_results",
    "moment_phase",
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


@dataclass(frozen=True)
class Kill:
    """Where a step is to be killed: the ``n``-th time it reaches the named
    ``point`` (it kills itself), or ``after`` seconds after its fork (the
    zygote kills it, at a random moment, wherever it is)."""

    point: str | None = None
    n: int = 0
    after: float | None = None
    share: float | None = None
    """``after`` as a share of the kill-free run it was drawn against (the
    share is the seed's; the run's time was measured)."""

    def __str__(self) -> str:
        if self.after is None:
            return f"at {self.point} #{self.n}"
        text = f"at a random moment, {self.after * 1000:.1f} ms after the fork"
        if self.share:
            span = self.after / self.share * 1000
            text += f" ({self.share:.1%} of a kill-free run's {span:.1f} ms)"
        return text


@dataclass
class StepRun:
    """One step of a trial as the parent saw it: its kill plan, how the
    process ended (``{"signal": N}`` or ``{"exit": N}``, maybe ``timeout``
    or ``moment``, with ``seconds``), and what the store held after it."""

    step: int
    kill: Kill | None
    status: dict[str, Any]
    stderr: str = ""
    after: Dump = field(default_factory=lambda: NOTHING)


@dataclass
class TrialVerdict:
    """A trial's counts and violations."""

    counts: Counter[str] = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)
    kills: list[str] = field(default_factory=list)
    """The named points the trial's steps were killed at, in order."""
    moments: list[str] = field(default_factory=list)
    """Where each kill at a random moment landed (`moment_phase`), in order."""


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


def _step_events(
    steps: Sequence[StepRun], events: Sequence[Mapping[str, Any]]
) -> list[list[Mapping[str, Any]]]:
    """Each step's events (those of its process, as the zygote named it; by
    the order of ``begin`` events when it did not)."""
    pids = _by_pid(events)
    begins = {int(e["step"]): int(e["pid"]) for e in events if e["ev"] == "begin"}
    out = []
    for run in steps:
        pid = run.status.get("pid", begins.get(run.step))
        out.append(pids.get(int(pid), []) if pid is not None else [])
    return out


def _check_steps(
    steps: Sequence[StepRun],
    events: Sequence[Mapping[str, Any]],
    effects: Sequence[Mapping[str, Any]],
    v: TrialVerdict,
) -> None:
    """Each step began (unless killed at a moment before it could say so),
    was killed where planned, or exited 0; the last one ended the run."""
    per_step = _step_events(steps, events)
    for run, mine in zip(steps, per_step, strict=True):
        killed = [e for e in mine if e["ev"] == "killed"]
        status = run.status
        moment = status.get("signal") == 9 and status.get("moment")
        if not any(e["ev"] == "begin" for e in mine) and not moment:
            v.violations.append(f"step {run.step} ran ({status}) but never began")
        if status.get("timeout"):
            v.violations.append(f"step {run.step} hung (killed after its time-out)")
        elif moment:
            if run.kill is None or run.kill.after is None or killed:
                v.violations.append(f"step {run.step}: killed at a moment nobody chose")
            else:
                v.moments.append(moment_phase(mine, effects, run.after))
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
    if last is None or last.status.get("exit") != 0 or "signal" in last.status:
        v.violations.append("the run never ended (the last step did not exit 0)")
        return
    ended = [e for e in per_step[-1] if e["ev"] in ("outcome", "nothing")]
    if not ended or (ended[-1]["ev"] == "outcome" and ended[-1]["kind"] != "completed"):
        v.violations.append(f"the last step ended with {ended[-1:]}, not a completed run")


def _per_step(
    steps: Sequence[StepRun], events: Sequence[Mapping[str, Any]]
) -> list[tuple[Dump, list[Mapping[str, Any]]]]:
    """Each step's events, with what the store held before it ran."""
    before = [NOTHING, *(s.after for s in steps)]
    return list(zip(before, _step_events(steps, events), strict=False))


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
    steps: Sequence[StepRun],
    events: Sequence[Mapping[str, Any]],
    drawn: Mapping[str, Mapping[str, Any]],
    shown: Mapping[str, Mapping[str, Any]],
    v: TrialVerdict,
) -> None:
    """No decision asked for again once the store holds it; each recorded
    once, as it was made (the action drawn, the digest shown); a bad edit
    refused with nothing recorded."""
    times: Counter[str] = Counter()
    for before, mine in _per_step(steps, events):
        recorded = before.decided()
        for e in mine:
            if e["ev"] == "jdecided":
                call = str(e["call"])
                v.counts["decisions_recorded"] += 1
                times[call] += 1
                recorded.add(call)
                made = e.get("decision") or {}
                if problem := _decision_problem(made, drawn.get(call, {}), shown, call):
                    v.violations.append(f"call {call}: the journal recorded {problem}")
            elif e["ev"] == "refused":
                v.counts["edits_refused"] += 1
                if str(e["call"]) in recorded:
                    v.violations.append(f"call {e['call']}: a bad edit was tried once decided")
            elif e["ev"] == "accepted":
                v.violations.append(f"call {e['call']}: the bad edit {e['arguments']} was accepted")
            elif e["ev"] == "decide":
                for call in e["calls"]:
                    v.counts["decisions_sent"] += 1
                    made = (e.get("decisions") or {}).get(call) or {}
                    action = str(made.get("action", "approve"))
                    v.counts[f"decisions_sent_{action}"] += 1
                    if call in recorded:
                        v.counts["decisions_lost"] += 1
                        v.violations.append(
                            f"call {call} was decided again after its decision was recorded"
                        )
    for call, n in times.items():
        if n > 1:
            v.counts["decisions_recorded_twice"] += 1
            v.violations.append(f"call {call}: its decision was recorded {n} times")
    for s in steps:  # what the store held: the decision made, never another
        for entry in s.after.journal:
            if entry["kind"] == "decided":
                call = str(entry["call_id"])
                made = (entry["data"] or {}).get("decision") or {}
                if problem := _decision_problem(made, drawn.get(call, {}), shown, call):
                    v.violations.append(f"call {call}: the store held {problem}")
        for p in (s.after.state or {}).get("seamkit.pending", ()):
            call = str(p["call_id"])
            if p.get("decision") and (
                problem := _decision_problem(p["decision"], drawn.get(call, {}), shown, call)
            ):
                v.violations.append(f"call {call}: the session's state held {problem}")


def _decision_problem(
    made: Mapping[str, Any],
    spec: Mapping[str, Any],
    shown: Mapping[str, Mapping[str, Any]],
    call: str,
) -> str:
    """What is wrong with the decision ``made`` about ``call`` against the
    one drawn (``""``: nothing)."""
    action = spec.get("action", "approve")
    digest = (shown.get(call) or {}).get("digest")
    if made.get("action") != action:
        return f"a decision {made!r}, not the {action} made"
    if action == "reject" and made.get("reason") != spec.get("reason"):
        return f"the reason {made.get('reason')!r}, not {spec.get('reason')!r}"
    if action == "edit" and made.get("arguments") != spec.get("arguments"):
        return f"the arguments {made.get('arguments')!r}, not the edited {spec.get('arguments')!r}"
    if action in ("approve", "edit") and digest is not None and made.get("digest") != digest:
        return f"the digest {made.get('digest')!r}, not the one shown ({digest})"
    return ""


def _shown(events: Sequence[Mapping[str, Any]], v: TrialVerdict) -> dict[str, dict[str, Any]]:
    """The calls shown for approval (each time with the model's arguments and
    their digest): call id -> ``{"tool", "arguments", "digest"}``."""
    out: dict[str, dict[str, Any]] = {}
    for e in events:
        if e["ev"] != "outcome":
            continue
        for p in e["pending"]:
            call, tool, args = str(p["call"]), str(p["tool"]), p["arguments"]
            expected = EXPECTED.get(call)
            if expected is None or (tool, args) != expected[:2]:
                v.violations.append(f"call {call} was shown as {tool} {args}, not {expected}")
            if p["digest"] != arguments_digest(tool, args):
                v.violations.append(f"call {call} was shown with digest {p['digest']}, not its own")
            seen = out.setdefault(call, {"tool": tool, "arguments": args, "digest": p["digest"]})
            if seen != {"tool": tool, "arguments": args, "digest": p["digest"]}:
                v.violations.append(f"call {call} was shown as {seen}, later as {p}")
    return out


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


def decided_result(call: str, spec: Mapping[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """What a ``refund`` call decided as ``spec`` must act with (``None``:
    never) and its result."""
    _tool, args, text = EXPECTED[call]
    action = spec.get("action", "approve")
    if action == "reject":
        return None, str(spec["reason"])
    if action == "edit":
        edited = dict(spec["arguments"])
        return edited, f"refunded {edited['order']} {edited['amount']}"
    return dict(args), text


def _check_effects(
    events: Sequence[Mapping[str, Any]],
    effects: Sequence[Mapping[str, Any]],
    results: Mapping[str, str],
    steps: Sequence[StepRun],
    drawn: Mapping[str, Mapping[str, Any]],
    shown: Mapping[str, Mapping[str, Any]],
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
            spec = drawn.get(call, {})
            action = spec.get("action", "approve")
            must, text = decided_result(call, spec)
            if action == "approve" and call in shown:
                must = dict(shown[call]["arguments"])  # the arguments shown
            v.counts["once_calls"] += 1
            v.counts[f"once_{action}"] += 1
            for e in acted[call]:
                args = {"order": e["order"], "amount": e["amount"]}
                if args == must:
                    v.counts["once_effects_as_decided"] += 1
                else:
                    v.counts["once_effects_not_as_decided"] += 1
                    v.violations.append(
                        f"refund {call} ({action}) acted with {args}, decided {must}"
                    )
            if action == "reject":
                started = len(starts[call]) + max(
                    (s.after.started("refund")[call] for s in steps), default=0
                )
                v.counts["once_rejected_results"] += got == text
                if started or n or got != text:
                    v.violations.append(
                        f"refund {call} (rejected): started {started} times, acted {n} "
                        f"times, result {got!r}"
                    )
                continue
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
    # The diagnostic: a run that lived to return reports each call it found
    # in doubt (a process killed before its run returned could not tell).
    for run_pid, mine in _by_pid(events).items():
        found: list[str] = []
        told = ""
        for e in mine:
            if e["ev"] == "jfinished" and str(e.get("content", "")).startswith("Error: InDoubt:"):
                found.append(str(e["call"]))
            elif e["ev"] == "diagnostic":
                told += f" {e['message']}"
            elif e["ev"] == "outcome":
                for call in found:
                    v.counts["in_doubt_diagnostics"] += 1
                    if repr(call) not in told:
                        v.violations.append(
                            f"process {run_pid} found {call} in doubt without a diagnostic"
                        )
                found, told = [], ""


def check_trial(
    steps: Sequence[StepRun],
    events: Sequence[Mapping[str, Any]],
    effects: Sequence[Mapping[str, Any]],
    dump: Dump,
    decisions: Mapping[str, Mapping[str, Any]] | None = None,
) -> TrialVerdict:
    """The counts and violations of one trial (see the module's docs);
    ``decisions`` is what the trial drew per ``refund`` call (every call
    approved when ``None``)."""
    drawn = decisions or {}
    v = TrialVerdict()
    v.counts["steps"] = len(steps)
    _check_steps(steps, events, effects, v)
    _check_turns(steps, events, v)
    shown = _shown(events, v)
    _check_decisions(steps, events, drawn, shown, v)
    if dump.error is not None or dump.transcript is None:
        v.violations.append(f"the session does not load: {dump.error}")
        return v
    v.counts["sessions_loadable"] += 1
    if dump.journal:
        v.violations.append(f"the journal still holds {len(dump.journal)} entries")
    if (dump.state or {}).get("seamkit.pending"):
        v.violations.append(f"calls still pending: {dump.state}")
    results = _results(dump.transcript, v)
    _check_effects(events, effects, results, steps, drawn, shown, v)
    return v


# --- where a kill at a random moment landed ----------------------------------------------


def moment_phase(
    mine: Sequence[Mapping[str, Any]], effects: Sequence[Mapping[str, Any]], after: Dump
) -> str:
    """Where the process whose events are ``mine`` was when it was killed
    at a random moment, as its last events tell (with the trial's
    ``effects``, to tell whether a tool under way had acted, and ``after``,
    what the store held then, whether a write under way had committed)."""
    pid = mine[0]["pid"] if mine else None
    acted = [e for e in effects if e.get("pid") == pid]
    phase = "starting: before the step began"
    writing: list[tuple[str, str | None]] = []
    for e in mine:
        ev = e["ev"]
        if ev == "begin":
            phase = "starting: opening the store"
        elif ev == "input":
            phase = "starting: the run loading the session"
        elif ev == "ask" or (ev == "at" and e["point"] == "stream"):
            phase = "mid model stream"
        elif ev == "jwrite":
            writing = [(str(kind), call) for kind, call in e["entries"]]
            tail = [(x["kind"], x["call_id"]) for x in after.journal[-len(writing) :]]
            done = "committed" if tail == writing else "not committed"
            phase = f"mid journal write: {writing[-1][0]} ({done})"
        elif ev.startswith("j") and writing:  # logged once the write returned
            phase = f"after a journal write: {writing[-1][0]}"
        elif ev == "at" and str(e["point"]).startswith("tool_before:"):
            tool = str(e["point"]).partition(":")[2]
            what = {k: e[k] for k in ("call", "order") if k in e}
            done = any(
                x["ev"] == tool and all(x.get(k) == w for k, w in what.items()) for x in acted
            )
            phase = f"in {tool}, {'after' if done else 'before'} its effect"
        elif ev == "at" and str(e["point"]).startswith("tool_after:"):
            tool = str(e["point"]).partition(":")[2]
            phase = f"in {tool}, after its effect"
        elif ev == "saving":
            held = after.transcript is not None and len(after.transcript) == e["messages"]
            done = "committed" if held and not after.journal else "not committed"
            phase = f"mid save ({done})"
        elif ev == "saved":
            phase = "after a save"
        elif ev in ("decide", "refused"):
            phase = "deciding (sent, not yet recorded)"
        elif ev == "outcome":
            phase = f"after the run returned ({e['kind']})"
        elif ev in ("reached", "nothing"):
            phase = "after the run returned (completed)"
    return phase
