"""``seamkit serve`` against clients that go away or never finish: a
disconnect mid-stream is one cancellation of the run (its ``on_completion``
finishes within its own deadline). A real ``seamkit serve`` on 127.0.0.1 and
a free port.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from tests.plugins.test_serve import Served

pytestmark = pytest.mark.slow


def test_a_disconnect_mid_stream_lets_on_completion_finish(tmp_path: Path) -> None:
    noted = tmp_path / "noted.txt"
    noted.write_text("")
    served = Served("finish", tmp_path, env={"SERVE_COUNT_FILE": str(noted)})
    try:
        with httpx.stream(
            "POST",
            f"{served.root}/v1/chat/completions",
            json={
                "model": "finish",
                "stream": True,
                "messages": [{"role": "user", "content": "go"}],
            },
            timeout=10,
        ) as response:
            for line in response.iter_lines():
                if "Working" in line:
                    break  # gone in the middle of the run: one cancellation
        deadline = time.monotonic() + 10
        while "finished" not in noted.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert noted.read_text() == "finished\n"  # the hook ran to its end
    finally:
        log = served.stop()
    assert "cancelled a second time" not in log
    assert "Traceback" not in log
