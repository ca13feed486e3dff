"""MCP toolsets (``seamkit-mcp``) against the raw MCP SDK, over stdio.

The speed figures of issue 15, measured side by side in one run, in one
event loop of this process (the client). The server is the SDK's own
`MCPServer` with one async tool, ``echo(text) -> text``
(``python -m tests.benchmarks._mcp_server``, cwd the repository root,
``PYTHONPATH`` in the entry's ``env``: the SDK passes a stdio server only a
minimal environment). A stdio server has one stdin and one stdout, so it
cannot be shared: every client starts its own process of that same server.

- **Per tool call**, one call at a time, the clients interleaved call by
  call (their order rotated every step), every result checked to be ``"x"``.
  Each client has a server process of its own (a process called twice in
  a row answers faster the second time, so two clients must not share
  one), and every round starts the three afresh, in an order rotated every
  round (two processes of the same server can differ by several per cent
  on this machine); ``warmup`` calls of each client are discarded at the
  start of a round. The clients:

  - **raw** (the baseline): ``await session.call_tool("echo", {"text": "x"})``
    on a session opened by hand (``stdio_client`` + ``ClientSession`` +
    ``initialize`` + ``list_tools``, as the agent does);
  - **seamkit**: ``await tool.call({"text": "x"}, ctx)`` on the tool the
    plugin builds from a manifest (``seamkit.Agent.load(manifest,
    model=ScriptedModel([]))``, entry ``kind: mcp``, ``toolset: bench``,
    ``command: sys.executable``, ``args: ["-m",
    "tests.benchmarks._mcp_server"]``; tool ``bench_echo``), with
    ``ctx = seamkit.ActionContext()``: the same request on the wire. Target:
    its median latency at most **1.1x** the raw median;
  - **seamkit, user**: the same tool (of a second agent, hence a third
    server process) with ``ActionContext(user="u1")``, which adds
    ``_meta: {"seamkit/user": "u1"}`` to each request; reported.

  Beside the ratio of the medians (the target), ``call/paired_ratio`` is
  the median per round of the per-step ratios seamkit / raw, and the extra
  key ``paired`` the median over every step of the ratio and of the
  difference (µs).
- **Agent build**, one after the other, the two alternating: **raw** (the
  baseline), ``stdio_client`` + ``ClientSession`` + ``initialize`` +
  ``list_tools``, then leaving the blocks (the server is stopped); and
  **seamkit**, ``Agent.load(manifest)`` (which starts the server and lists
  its tools) then ``agent.aclose()``. Each is timed as **open** (until the
  tools are listed), **close**, and the **total**; the ratios are reported
  without a target.

The first build of each kind is discarded (it imports the SDK and loads
the plugins). A latency is ``time.perf_counter`` around one awaited call
or step. The extra key ``baselines`` maps every figure to what its ratio
is taken against.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from importlib import metadata
from typing import Any, TextIO

import seamkit
from seamkit.testing import ScriptedModel

from tests.benchmarks._harness import ROOT, figure, print_figures, result, verdict
from tests.benchmarks._interleave import Client, flat, interleaved, warm

SERVER_MODULE = "tests.benchmarks._mcp_server"
TOOL = "echo"
TOOLSET = "bench"
FINAL = f"{TOOLSET}_{TOOL}"
ARGS: dict[str, Any] = {"text": "x"}
USER = "u1"

FULL = {
    "warmup": 50,  # calls per client and round, discarded
    "rounds": 10,  # each with fresh server processes
    "pairs": 300,  # steps per round: one call of each client
    "builds": 15,  # builds of each kind (one more, discarded, to warm up)
}
QUICK = {"warmup": 3, "rounds": 2, "pairs": 5, "builds": 1}
CALL_TARGET = 1.1

perf_counter = time.perf_counter


def manifest() -> dict[str, Any]:
    """The app: one ``mcp`` entry, the echo server over stdio."""
    return {
        "name": "bench-mcp",
        "model": "scripted:none",
        "tools": [
            {
                "kind": "mcp",
                "toolset": TOOLSET,
                "command": sys.executable,
                "args": ["-m", SERVER_MODULE],
                "cwd": str(ROOT),
                "env": {"PYTHONPATH": str(ROOT)},
            }
        ],
    }


def server_params() -> Any:
    """The same server, as the raw SDK client starts it."""
    from mcp import StdioServerParameters

    return StdioServerParameters(
        command=sys.executable,
        args=["-m", SERVER_MODULE],
        env={"PYTHONPATH": str(ROOT)},
        cwd=str(ROOT),
    )


# --- the clients ----------------------------------------------------------------------


async def open_raw(stack: AsyncExitStack, errlog: TextIO) -> Any:
    """A raw SDK session on a fresh server process: initialised, tools listed."""
    from mcp import ClientSession, stdio_client

    read, write = await stack.enter_async_context(stdio_client(server_params(), errlog=errlog))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    listed = await session.list_tools()
    if [t.name for t in listed.tools] != [TOOL]:
        raise RuntimeError(f"the server listed {listed.tools!r}")
    return session


def raw_client(session: Any) -> Client:
    """``await session.call_tool("echo", {"text": "x"})``."""

    async def call() -> None:
        res = await session.call_tool(TOOL, ARGS)
        if res.is_error or res.content[0].text != ARGS["text"]:
            raise RuntimeError(f"the server answered {res!r}")

    return call


def seamkit_client(tool: seamkit.Tool, ctx: seamkit.ActionContext) -> Client:
    """``await tool.call({"text": "x"}, ctx)``."""
    args = dict(ARGS)

    async def call() -> None:
        res = await tool.call(args, ctx)
        if res.is_error or res.content != ARGS["text"]:
            raise RuntimeError(f"the tool answered {res!r}")

    return call


# --- the measurements ------------------------------------------------------------------


async def calls(counts: dict[str, int], errlog: TextIO) -> dict[str, list[list[float]]]:
    """Per client and round, the latencies (µs) of one call at a time. Every
    client has a server process of its own (two calls in a row to one
    process come back faster), and every round starts them afresh, in an
    order rotated every round, so that no client keeps a luckier process."""
    names = ["raw", "seamkit", "seamkit_user"]
    out: dict[str, list[list[float]]] = {n: [] for n in names}
    for i in range(counts["rounds"]):
        async with AsyncExitStack() as stack:
            clients: dict[str, Client] = {}
            for name in names[i % 3 :] + names[: i % 3]:
                if name == "raw":
                    clients[name] = raw_client(await open_raw(stack, errlog))
                    continue
                agent = await seamkit.Agent.load(manifest(), model=ScriptedModel([]))
                stack.push_async_callback(agent.aclose)
                ctx = seamkit.ActionContext(user=USER) if name == "seamkit_user" else None
                clients[name] = seamkit_client(agent.tools[FINAL], ctx or seamkit.ActionContext())
            clients = {n: clients[n] for n in names}
            await warm(clients, counts["warmup"])
            found = await interleaved(clients, 1, counts["pairs"])
        for name in names:
            out[name] += found[name]
    return out


async def build_raw(errlog: TextIO) -> tuple[float, float]:
    """(open, close) in seconds of a raw SDK session."""
    stack = AsyncExitStack()
    start = perf_counter()
    async with stack:
        await open_raw(stack, errlog)
        opened = perf_counter()
    return opened - start, perf_counter() - opened


async def build_seamkit() -> tuple[float, float]:
    """(open, close) in seconds of an agent with the MCP toolset."""
    start = perf_counter()
    agent = await seamkit.Agent.load(manifest(), model=ScriptedModel([]))
    opened = perf_counter()
    if FINAL not in agent.tools:
        raise RuntimeError(f"the agent has tools {list(agent.tools)}")
    await agent.aclose()
    return opened - start, perf_counter() - opened


async def builds(counts: dict[str, int], errlog: TextIO) -> dict[str, dict[str, list[float]]]:
    """Per client: open, close and total per build (s); the first build of
    each (a warm-up) is discarded; the order alternates every build."""
    makers: dict[str, Callable[[], Awaitable[tuple[float, float]]]] = {
        "raw": lambda: build_raw(errlog),
        "seamkit": build_seamkit,
    }
    names = list(makers)
    out: dict[str, dict[str, list[float]]] = {
        n: {"open": [], "close": [], "total": []} for n in names
    }
    for i in range(counts["builds"] + 1):
        for n in names[i % 2 :] + names[: i % 2]:
            opened, closed = await makers[n]()
            if i == 0:
                continue
            out[n]["open"].append(opened)
            out[n]["close"].append(closed)
            out[n]["total"].append(opened + closed)
    return out


def run(counts: dict[str, int]) -> dict[str, Any]:
    async def both() -> dict[str, Any]:
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
            found: dict[str, Any] = {"calls": await calls(counts, errlog)}
            found["builds"] = await builds(counts, errlog)
            errlog.seek(0)
            found["stderr"] = errlog.read()
        return found

    return asyncio.run(both())


# --- the figures ---------------------------------------------------------------------------

Spec = tuple[str, str, list[float], str, str, float | None]
ONE = "one"


def paired(lat: dict[str, list[list[float]]], subject: str, base: str) -> dict[str, float]:
    """The median of the per-step ratios and differences subject / base."""
    pairs = list(zip(flat(lat[subject]), flat(lat[base]), strict=True))
    return {
        "ratio": statistics.median(s / b for s, b in pairs),
        "added_us": statistics.median(s - b for s, b in pairs),
    }


def specs(found: dict[str, Any], counts: dict[str, int]) -> list[Spec]:
    """(name, command, samples, baseline's name, unit, target) of every figure."""
    lat, built = found["calls"], found["builds"]
    n = counts["rounds"] * counts["pairs"]
    out: list[Spec] = [
        (
            "call/raw",
            f'one call at a time: raw SDK await session.call_tool("echo", ...) ({n} calls)',
            flat(lat["raw"]),
            "call/raw",
            "µs",
            None,
        ),
        (
            "call/seamkit",
            "one call at a time: seamkit await tool.call(args, ActionContext())",
            flat(lat["seamkit"]),
            "call/raw",
            "µs",
            CALL_TARGET,
        ),
        (
            "call/seamkit_user",
            'one call at a time: seamkit, ActionContext(user="u1") (_meta sent)',
            flat(lat["seamkit_user"]),
            "call/raw",
            "µs",
            None,
        ),
        (
            "call/paired_ratio",
            "seamkit / raw, per interleaved step, median per round",
            [
                statistics.median(s / r for s, r in zip(sr, rr, strict=True))
                for sr, rr in zip(lat["seamkit"], lat["raw"], strict=True)
            ],
            ONE,
            "x",
            None,
        ),
    ]
    b = counts["builds"]
    for part, what in (
        ("open", "until the tools are listed"),
        ("close", "closing (the server stops)"),
        ("total", "open + close"),
    ):
        out += [
            (
                f"build_{part}/raw",
                f"raw stdio_client + initialize + tools/list, {what} ({b} builds)",
                built["raw"][part],
                f"build_{part}/raw",
                "s",
                None,
            ),
            (
                f"build_{part}/seamkit",
                f"seamkit Agent.load(manifest) + aclose, {what}",
                built["seamkit"][part],
                f"build_{part}/raw",
                "s",
                None,
            ),
        ]
    return out


def _print(res: dict[str, Any]) -> None:
    print_figures(res["figures"], res["baselines"])
    by_name = {f["name"]: f for f in res["figures"]}
    call = by_name["call/seamkit"]
    p = res["paired"]
    print(
        f"per call: seamkit {call['ratio']:.3f}x the raw SDK's median (target <= "
        f"{CALL_TARGET:g}x: {'met' if call['met'] else 'NOT MET'}); paired: median ratio "
        f"{p['seamkit']['ratio']:.3f}x, {p['seamkit']['added_us']:+.1f} µs per call "
        f"({p['seamkit_user']['added_us']:+.1f} µs with the user in _meta)"
    )
    print(
        f"agent build: seamkit {by_name['build_open/seamkit']['median']:.3f} s to open vs raw "
        f"{by_name['build_open/raw']['median']:.3f} s "
        f"({by_name['build_open/seamkit']['ratio']:.2f}x); open + close "
        f"{by_name['build_total/seamkit']['median']:.3f} s vs "
        f"{by_name['build_total/raw']['median']:.3f} s "
        f"({by_name['build_total/seamkit']['ratio']:.2f}x)"
    )
    for line in res["problems"]:
        print(f"PROBLEM: {line}")
    print(f"{res['benchmark']}: {verdict(res)}")


def main(quick: bool = False) -> dict[str, Any]:
    counts = QUICK if quick else FULL
    dists = ("seamkit-mcp", "mcp", "anyio", "pydantic")
    versions = {d: metadata.version(d) for d in dists}
    print(
        f"mcp: {counts['warmup']} warm-up calls per client, {counts['rounds']} rounds x "
        f"{counts['pairs']} interleaved steps; {counts['builds']} builds of each kind "
        "(+1 discarded); stdio, one server process per client, fresh every round"
    )
    print(
        f"python {sys.version.split()[0]}, "
        + ", ".join(f"{k} {v}" for k, v in versions.items())
        + f", {os.cpu_count()} cpus"
    )
    found = run(counts)

    all_specs = specs(found, counts)
    medians = {name: statistics.median(samples) for name, _, samples, *_ in all_specs}
    medians[ONE] = 1.0
    figures = [
        figure(name, command, samples, medians[base], unit=unit, target=target)
        for name, command, samples, base, unit, target in all_specs
    ]
    stderr = found["stderr"]
    problems = (
        [f"the raw servers wrote to stderr: {stderr.strip().splitlines()[-1][:200]}"]
        if "Traceback" in stderr
        else []
    )
    res = result(
        "mcp",
        quick=quick,
        baseline="call/raw",
        figures=figures,
        baselines={name: base for name, _, _, base, *_ in all_specs},
        paired={name: paired(found["calls"], name, "raw") for name in ("seamkit", "seamkit_user")},
        problems=problems,
        **counts,
        versions=versions,
    )
    _print(res)
    return res


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
