"""A tiny memory service for the example (toolset ``memory_server``).

Memories live in ``<memory_dir>/memories.json``; every call of
``get_memories`` is logged to ``<memory_dir>/calls.log`` so you can see when
the hook really called the tool. ``memory_dir`` comes from the context
(``--context memory_dir=...``), else the current directory.
"""

import json
from pathlib import Path

import seamkit


def _store(memory_dir: str) -> Path:
    return Path(memory_dir) / "memories.json"


@seamkit.tool
def get_memories(user: str, _memory_dir: str = ".") -> list[str]:
    """What we remember about a user."""
    with (Path(_memory_dir) / "calls.log").open("a") as log:
        log.write(f"get_memories {user}\n")
    store = _store(_memory_dir)
    memories = json.loads(store.read_text()) if store.exists() else {}
    return list(memories.get(user, []))


@seamkit.tool
def save_memory(user: str, text: str, _memory_dir: str = ".") -> str:
    """Remember something about a user."""
    store = _store(_memory_dir)
    memories = json.loads(store.read_text()) if store.exists() else {}
    memories.setdefault(user, []).append(text)
    store.write_text(json.dumps(memories, indent=1))
    return "saved"
