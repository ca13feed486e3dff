"""What every client script shares: the server from the environment, the
record type of the structured-output checks, the ``add`` tool, and the one
JSON line a script prints (run inside a client's virtual environment, not
imported by the suite)."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from pydantic import BaseModel

BASE_URL = os.environ["SERVE_BASE_URL"]
API_KEY = os.environ["SERVE_API_KEY"]
MODEL = os.environ["SERVE_MODEL"]
QUESTION = "Ann is 31"
SESSION = {"X-Seamkit-Session": os.environ["SERVE_SESSION"]}
"""The session header of the ``session`` check (one session per client and check)."""
ADDED: list[tuple[int, int]] = []
"""Every call of `add`, as the client's own tool ran it."""


class Record(BaseModel):
    """The structured output every client asks for."""

    name: str
    age: int


def add(a: int, b: int) -> int:
    """Add two integers."""
    ADDED.append((a, b))
    return a + b


def check() -> str:
    """The check to run: the script's one argument."""
    return sys.argv[1]


def report(got: Any) -> None:
    """Print what the client handed back, as the script's last line."""
    print(json.dumps({"check": check(), "got": got, "added": ADDED}))
