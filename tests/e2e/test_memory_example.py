"""The memory example of docs/examples/memory, end to end: separate
`seamkit run --session` processes with SEAMKIT_NOW set, showing the memory
tool skipped while its injected result is fresh and called again once it
expired."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import seamkit

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "docs" / "examples" / "memory" / "app.yaml"
SEAMKIT = Path(sys.executable).parent / "seamkit"


def run(tmp_path: Path, message: str, now: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEAMKIT_")}
    env["SEAMKIT_NOW"] = now
    return subprocess.run(
        [
            str(SEAMKIT),
            "run",
            str(APP),
            message,
            "--session",
            "ann",
            "--store",
            str(tmp_path / "sessions.sqlite"),
            "--context",
            "user=ann",
            "--context",
            f"memory_dir={tmp_path}",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_a_conversation_across_processes_refreshes_memories_by_ttl(tmp_path: Path) -> None:
    times = ["2026-11-22T09:00:00Z", "2026-11-22T09:10:00Z", "2026-11-22T09:31:00Z"]
    outputs = []
    for i, now in enumerate(times):
        out = run(tmp_path, f"message {i}", now)
        assert out.returncode == 0, out.stderr
        assert out.stdout == "Noted.\n"
        outputs.append(out)
    # Called at 09:00 and again at 09:31 (TTL 30 minutes); skipped at 09:10.
    assert (tmp_path / "calls.log").read_text().splitlines() == ["get_memories ann"] * 2
    assert "· on_request_start: memories, profile → RewriteMessages" in outputs[0].stderr
    # on_completion saved every message as a memory.
    saved = json.loads((tmp_path / "memories.json").read_text())
    assert saved == {"ann": ["message 0", "message 1", "message 2"]}

    transcript = _stored(seamkit.SQLiteSessionStore(tmp_path / "sessions.sqlite"), "ann")
    injected = [
        m for m in transcript if m.role == "tool" and (m.tool_call_id or "").startswith("synth_")
    ]
    # Both hooks put their first pair right after the first user message, each
    # in turn (so the profile's lands first); memories were [] at 09:00, then
    # ["message 0", "message 1"] at 09:31: changed, so appended at the end.
    contents = [m.content for m in injected]
    assert contents == ['{"user":"ann","language":"en"}', "[]", '["message 0","message 1"]']
    _, first, last = (seamkit.injection.parse_synthetic_id(m.tool_call_id or "") for m in injected)
    assert first is not None and last is not None
    assert first.expiry == 1795338000 + 30 * 60  # 2026-11-22T09:30:00Z
    assert last.expiry == 1795338000 + 61 * 60
    assert [m.role for m in transcript[:4]] == ["user", "assistant", "tool", "assistant"]


def _stored(store: seamkit.SessionStore, name: str) -> list[seamkit.Message]:
    import asyncio as _asyncio

    found = _asyncio.run(store.load(name))
    return [] if found is None else list(found.transcript)
