"""Interleaved latency measurement for benchmarks that compare clients of
one service: every step calls each client once, in an order rotated every
step, so that drift in the machine falls on all of them alike."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from time import perf_counter

__all__ = ["Client", "flat", "interleaved", "warm"]

Client = Callable[[], Awaitable[None]]
"""One call of a client under test (it checks its own answer)."""


async def warm(clients: dict[str, Client], calls: int) -> None:
    """Call every client ``calls`` times, discarding the times."""
    for _ in range(calls):
        for call in clients.values():
            await call()


async def interleaved(
    clients: dict[str, Client], rounds: int, steps: int
) -> dict[str, list[list[float]]]:
    """Latencies (µs) of one call at a time, per client and round; each step
    calls every client once, their order rotated every step."""
    names = list(clients)
    out: dict[str, list[list[float]]] = {n: [] for n in names}
    for _ in range(rounds):
        for n in names:
            out[n].append([])
        for step in range(steps):
            shift = step % len(names)
            for n in names[shift:] + names[:shift]:
                call = clients[n]
                start = perf_counter()
                await call()
                out[n][-1].append((perf_counter() - start) * 1e6)
    return out


def flat(rounds: list[list[float]]) -> list[float]:
    """Every latency of every round, in one list."""
    return [x for r in rounds for x in r]
