"""The gateway benchmark's load: a peer's (LiteLLM's) rare wrong answer is
counted and asked again; seamkit's, or a peer's that stays wrong, stops it."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.benchmarks.bench_gateway import PEER_TRIES, TEXT, WrongAnswer, measure

COUNTS = {"warmup": 0, "per_round": 2, "rounds": 1}


class Answers:
    """A local server that fails its first ``failures`` requests with the
    HTTP 500 CI saw from LiteLLM, then answers `TEXT` right."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.asked = 0
        answers = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                answers.asked += 1
                if answers.asked <= answers.failures:
                    status, raw = 500, b'{"error":{"message":"","code":"500"}}'
                elif body["stream"]:
                    delta = {"choices": [{"index": 0, "delta": {"content": TEXT}}]}
                    status, raw = 200, f"data: {json.dumps(delta)}\n\ndata: [DONE]\n\n".encode()
                else:
                    message = {"choices": [{"message": {"content": TEXT}}]}
                    status, raw = 200, json.dumps(message).encode()
                self.send_response(status)
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]


@pytest.fixture
def serve() -> Iterator[type[Answers]]:
    started: list[Answers] = []

    def start(failures: int) -> Answers:
        answers = Answers(failures)
        threading.Thread(target=answers.server.serve_forever, daemon=True).start()
        started.append(answers)
        return answers

    yield start  # type: ignore[misc]
    for answers in started:
        answers.server.shutdown()
        answers.server.server_close()


def test_a_peers_wrong_answer_is_counted_and_asked_again(serve: type[Answers]) -> None:
    peer = serve(1)
    wrong: dict[str, list[str]] = {}
    latencies = asyncio.run(measure({"litellm_mock": peer.port}, COUNTS, wrong))
    assert len(latencies["litellm_mock"]) == 2  # every request has its right answer's latency
    assert peer.asked == 3
    assert [w.split(":")[0] for w in wrong["litellm_mock"]] == ["HTTP 500"]


def test_a_peer_that_stays_wrong_stops_the_benchmark(serve: type[Answers]) -> None:
    peer = serve(PEER_TRIES)
    with pytest.raises(WrongAnswer, match="litellm: a wrong answer: HTTP 500"):
        asyncio.run(measure({"litellm": peer.port}, COUNTS, {}))
    assert peer.asked == PEER_TRIES


def test_seamkits_wrong_answer_stops_the_benchmark_at_once(serve: type[Answers]) -> None:
    server = serve(1)
    with pytest.raises(WrongAnswer, match="seamkit: a wrong answer: HTTP 500"):
        asyncio.run(measure({"seamkit": server.port}, COUNTS, {}))
    assert server.asked == 1
