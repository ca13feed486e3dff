"""The structured-output example, ``docs/examples/extract``, in every mode:
``seamkit run`` on each manifest (``app-tool.yaml``, ``app-native.yaml``,
``app-prompted.yaml``) prints the validated invoice as JSON, after a first
answer that failed and was redone (the retry shows in ``--json``'s
diagnostics and in ``--trace``); an app that may not retry ends
``OutputInvalid:`` with exit status 1; and the code example ``extract.py``
streams partial values that the final value agrees with. Its README's
commands are run by tests/test_docs_run.py as well."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from seamkit._partial import consistent

from tests.plugins.test_serve import SEAMKIT

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "extract"
TEXT = "Bill Ada Lovelace (ada@example.org): 2 notebooks at 3.50 EUR, a fountain pen at 24 EUR."
INVOICE = {
    "customer": "Ada Lovelace",
    "email": "ada@example.org",
    "currency": "EUR",
    "lines": [
        {"item": "notebook", "quantity": 2, "unit_price": 3.5},
        {"item": "fountain pen", "quantity": 1, "unit_price": 24.0},
    ],
    "total": 31.0,
}
ANSWER = {  # the model's valid answer as it wrote it (script.yaml): 24, not 24.0
    **INVOICE,
    "lines": [INVOICE["lines"][0], {"item": "fountain pen", "quantity": 1, "unit_price": 24}],
    "total": 31,
}
"""The partials are JSON values of the answer as it arrives, so they agree
with it; the validated value may differ in type (a float for ``24``)."""
FIRST_ERRORS = (
    "email: Field required",
    "lines[0].quantity: Input should be a valid integer",
)
MODES = ("tool", "native", "prompted")


def _copy(tmp_path: Path) -> Path:
    app = tmp_path / "extract"
    shutil.copytree(EXAMPLE, app, ignore=shutil.ignore_patterns("*.sqlite*", "__pycache__"))
    return app


def _seamkit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SEAMKIT), *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("mode", MODES)
def test_seamkit_run_json_holds_the_validated_invoice_after_one_retry(
    tmp_path: Path, mode: str
) -> None:
    app = _copy(tmp_path) / f"app-{mode}.yaml"
    done = _seamkit("run", str(app), TEXT, "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["outcome"]["kind"] == "completed"
    assert result["output"] == INVOICE
    retries = [d for d in result["diagnostics"] if d["code"] == "output_retry"]
    assert len(retries) == 1
    for error in FIRST_ERRORS:
        assert error in retries[0]["message"]
    # native and prompted: the answer is the model's text; tool mode: the
    # answer is the output tool's arguments, and the turn has no text
    if mode == "tool":
        assert result["text"] == ""
    else:
        assert json.loads(result["text"]) == INVOICE
    # the model was told what was wrong: a tool result (tool mode) or a
    # feedback message that is not the user's (native, prompted)
    told = [m for m in result["transcript"] if "Your answer was not accepted" in m["content"]]
    assert len(told) == 1
    assert told[0]["role"] == ("tool" if mode == "tool" else "user")


@pytest.mark.parametrize("mode", MODES)
def test_seamkit_run_prints_the_invoice_as_json_and_traces_the_retry(
    tmp_path: Path, mode: str
) -> None:
    app = _copy(tmp_path) / f"app-{mode}.yaml"
    done = _seamkit("run", str(app), TEXT, "--trace")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == INVOICE
    assert done.stdout.startswith("{\n  ")  # indented
    lines = done.stderr.splitlines()
    # as it happens, then in the timeline, under the turn it was given in
    shown = [line for line in lines if line.startswith("↻ answer not accepted: ")]
    assert len(shown) == 1, done.stderr
    assert "email: Field required; lines[0].quantity" in shown[0]
    traced = [line for line in lines if line.strip().startswith("answer not accepted: email")]
    assert len(traced) == 1, done.stderr
    assert lines.index(traced[0]) < next(i for i, x in enumerate(lines) if "turn 2" in x)


@pytest.mark.parametrize("mode", MODES)
def test_an_app_with_no_retries_left_fails_output_invalid_with_status_1(
    tmp_path: Path, mode: str
) -> None:
    app = _copy(tmp_path) / f"app-{mode}.yaml"
    manifest = app.read_text()
    strict = manifest.replace("retries: 2", "retries: 0")
    assert strict != manifest
    app.write_text(strict)
    done = _seamkit("run", str(app), TEXT, "--json")
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert result["outcome"]["kind"] == "failed"
    error = result["outcome"]["error"]
    assert error.startswith("OutputInvalid: email: Field required")
    assert "(after 1 answer)" in error
    assert result["output"] is None
    plain = _seamkit("run", str(app), TEXT)
    assert plain.returncode == 1
    assert "OutputInvalid: email: Field required" in plain.stderr
    assert "Traceback" not in plain.stderr


@pytest.mark.parametrize("mode", [*MODES, "auto"])
def test_the_code_example_streams_partials_the_invoice_agrees_with(
    tmp_path: Path, mode: str
) -> None:
    app = _copy(tmp_path)
    done = subprocess.run(
        [sys.executable, str(app / "extract.py"), "--mode", mode],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-3:] == [
        "Ada Lovelace <ada@example.org>: 31.00 EUR",
        "  2 x notebook at 3.50",
        "  1 x fountain pen at 24.00",
    ]
    [retry] = [i for i, line in enumerate(lines) if line.startswith("retry ")]
    assert lines[retry].startswith("retry email: Field required; lines[0].quantity")
    before = [json.loads(line[8:]) for line in lines[:retry] if line.startswith("partial ")]
    after = [json.loads(line[8:]) for line in lines[retry:] if line.startswith("partial ")]
    assert before and after
    assert any(p["lines"][0]["quantity"] == "two" for p in before if p.get("lines"))
    for partial in after:  # every partial after the retry agrees with the answer
        assert consistent(partial, ANSWER), partial
    assert after[-1] == ANSWER
