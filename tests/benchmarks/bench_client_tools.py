"""``seamkit serve`` and a client's own tool: the round trip against two plain requests.

The issue's figure: a client-tool round trip (two requests: one the server
answers with a handed-out call, one that brings the call's result and gets
the answer) p50 against two plain requests, each on ``seamkit serve`` (one
worker, a SQLite store in a temporary directory), one keep-alive ``httpx``
connection, answers whole, rounds alternated after a discarded warm-up.

- **Baseline** (``client_tools/two_plain``): two stateless chat requests to an
  app whose scripted model answers one text turn.
- **For comparison** (``client_tools/two_on_a_session``): two plain requests on
  a session of their own (each loads and saves it), what the round trip's
  pending turn costs in the store.
- **Figure** (``client_tools/round_trip``): a request with the client's tool
  ``weather`` to an app whose scripted model calls it (the run ends
  ``deferred`` on a session the server makes), then the request with the
  result (the id checked, the session loaded, the result through
  ``on_post_tool_use``, the model's answer, the session deleted).

Every answer is checked (the call handed out, then the final text). No
target: the ratio says what the pending turn costs (a session saved, loaded
and deleted, the MAC checks) over two runs that keep nothing.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from tests.benchmarks._harness import figure, print_figures, print_rows, result
from tests.benchmarks.bench_serve import seamkit_server

TEXT = "It is sunny in Oslo."
WEATHER = {
    "type": "function",
    "function": {
        "name": "weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
ASK = {"role": "user", "content": "How is the weather in Oslo?"}


def _apps(root: Path) -> tuple[Path, Path]:
    """The plain app and the client-tool app, written to ``root``."""
    (root / "plain_script.yaml").write_text(
        json.dumps({"each_run": True, "turns": [{"text": TEXT}]})
    )
    (root / "client_script.yaml").write_text(
        json.dumps(
            {
                "each_run": True,
                "turns": [
                    {"tool_calls": [{"name": "weather", "arguments": {"city": "Oslo"}}]},
                    {"text": TEXT},
                ],
            }
        )
    )
    plain = root / "plain.yaml"
    plain.write_text("name: plain\nmodel: scripted:plain_script.yaml\n")
    client = root / "client.yaml"
    client.write_text("name: client\nmodel: scripted:client_script.yaml\n")
    return plain, client


def _post(http: httpx.Client, root: str, body: dict[str, Any]) -> dict[str, Any]:
    response = http.post(f"{root}/v1/chat/completions", json=body)
    if response.status_code != 200:
        raise AssertionError(f"{response.status_code}: {response.text[:300]}")
    answer: dict[str, Any] = response.json()
    return answer


def two_plain(http: httpx.Client, root: str) -> None:
    for _ in range(2):
        answer = _post(http, root, {"model": "plain", "messages": [ASK]})
        if answer["choices"][0]["message"]["content"] != TEXT:
            raise AssertionError(f"plain answer: {answer}")


def two_on_a_session(http: httpx.Client, root: str) -> None:
    """Two plain requests on a session of their own (loaded and saved each)."""
    headers = {"X-Seamkit-Session": f"s-{time.perf_counter_ns()}"}
    for _ in range(2):
        response = http.post(
            f"{root}/v1/chat/completions",
            json={"model": "plain", "messages": [ASK]},
            headers=headers,
        )
        if response.status_code != 200:
            raise AssertionError(f"{response.status_code}: {response.text[:300]}")


def round_trip(http: httpx.Client, root: str) -> None:
    first = _post(http, root, {"model": "client", "messages": [ASK], "tools": [WEATHER]})
    message = first["choices"][0]["message"]
    if first["choices"][0]["finish_reason"] != "tool_calls":
        raise AssertionError(f"no call handed out: {first}")
    results = [
        {"role": "tool", "tool_call_id": call["id"], "content": "sunny, 21 C"}
        for call in message["tool_calls"]
    ]
    body = {"model": "client", "messages": [ASK, message, *results], "tools": [WEATHER]}
    second = _post(http, root, body)
    if second["choices"][0]["message"]["content"] != TEXT:
        raise AssertionError(f"final answer: {second}")


def main(quick: bool = False) -> dict[str, Any]:
    rounds = 6 if quick else 300
    print(f"client_tools: a client-tool round trip vs two plain requests, {rounds} rounds each")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        plain_app, client_app = _apps(root)
        store = str(root / "sessions.sqlite")
        plain = seamkit_server("plain", plain_app, store, 1, root)
        client = seamkit_server("client", client_app, store, 1, root)
        samples: dict[str, list[float]] = {"plain": [], "session": [], "client": []}
        try:
            with httpx.Client(timeout=30) as http:
                plain_root = f"http://127.0.0.1:{plain.port}"
                client_root = f"http://127.0.0.1:{client.port}"
                for _ in range(3):  # discarded
                    two_plain(http, plain_root)
                    round_trip(http, client_root)
                for i in range(rounds):
                    order = [
                        ("plain", two_plain, plain_root),
                        ("session", two_on_a_session, plain_root),
                        ("client", round_trip, client_root),
                    ]
                    for name, fn, where in order if i % 2 == 0 else order[::-1]:
                        started = time.perf_counter()
                        fn(http, where)
                        samples[name].append(time.perf_counter() - started)
        finally:
            plain.stop()
            client.stop()
    base = statistics.median(samples["plain"])
    figures = [
        figure("client_tools/two_plain", "two stateless chat requests", samples["plain"], base),
        figure(
            "client_tools/two_on_a_session",
            "two chat requests on one session (for comparison)",
            samples["session"],
            base,
        ),
        figure(
            "client_tools/round_trip",
            "a request answered with a handed-out call, then its result",
            samples["client"],
            base,
        ),
    ]
    print_figures(figures, {f["name"]: "client_tools/two_plain" for f in figures})
    p95 = {k: statistics.quantiles(v, n=20)[-1] if len(v) > 1 else v[0] for k, v in samples.items()}
    print_rows(
        [
            ("", "p50 ms", "p95 ms"),
            *(
                (k, f"{statistics.median(v) * 1e3:.2f}", f"{p95[k] * 1e3:.2f}")
                for k, v in samples.items()
            ),
        ]
    )
    return result(
        "client_tools",
        quick=quick,
        baseline="client_tools/two_plain",
        figures=figures,
        p95_seconds=p95,
    )
