"""The approval example, ``docs/examples/refund``, through all three ways in:
``seamkit run`` (it suspends: exit 3), ``seamkit resume`` (approved: the
refund runs once and the run completes), and ``seamkit serve`` (the official
openai client gets the suspended answer; the decisions endpoint continues
it). Its README's commands are run by tests/test_docs_run.py as well."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import httpx

from tests.plugins.test_serve import SEAMKIT, Served

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "refund"
DIGEST = "b0df0a7854259cb491339f0f"


def _copy(tmp_path: Path) -> Path:
    app = tmp_path / "refund"
    shutil.copytree(EXAMPLE, app, ignore=shutil.ignore_patterns("*.sqlite*", "__pycache__"))
    return app / "app.yaml"


def _seamkit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SEAMKIT), *args], capture_output=True, text=True, timeout=60)


def test_run_suspends_and_resume_approves_the_refund_once(tmp_path: Path) -> None:
    app = str(_copy(tmp_path))
    waiting = _seamkit("run", app, "Please refund order A1", "--session", "d", "--json")
    assert waiting.returncode == 3, waiting.stderr
    [pending] = json.loads(waiting.stdout)["pending"]
    assert (pending["call_id"], pending["tool"], pending["digest"]) == (
        "call_refund",
        "refund",
        DIGEST,
    )
    done = _seamkit("resume", app, "--session", "d", "--approve", f"call_refund@{DIGEST}", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["output"] == "Done. Order A1 was refunded 250 EUR."
    tools = [m["content"] for m in result["transcript"] if m["role"] == "tool"]
    assert tools.count("refunded 250 EUR on A1") == 1
    again = _seamkit("resume", app, "--session", "d", "--approve", "call_refund")
    assert again.returncode == 1 and "no call waiting for a decision" in again.stderr


def test_serve_answers_suspended_and_takes_the_decision(tmp_path: Path) -> None:
    served = Served(str(_copy(tmp_path)), tmp_path)
    try:
        client = served.client(None, **{"X-Seamkit-Session": "web-1"})
        raw = client.chat.completions.with_raw_response.create(
            model="refund", messages=[{"role": "user", "content": "Please refund order A1"}]
        )
        answer = raw.parse()
        assert raw.headers["x-seamkit-outcome"] == "suspended"
        assert answer.choices[0].finish_reason == "stop"
        [pending] = (answer.model_extra or {})["seamkit"]["pending"]
        assert pending["digest"] == DIGEST
        decided = httpx.post(
            f"{served.root}/v1/sessions/web-1/decisions",
            json={"decisions": [{"call_id": "call_refund", "action": "approve", "digest": DIGEST}]},
            timeout=30,
        )
        assert decided.status_code == 200, decided.text
        body = decided.json()
        assert body["choices"][0]["message"]["content"] == "Done. Order A1 was refunded 250 EUR."
    finally:
        served.stop()
