"""A session whose run a real crash cut short, for tests of what continues
it: a manifest app run in a subprocess that SIGKILLs itself inside a
``once`` tool, after another ``once`` tool of the same batch finished.

Continuing it (``agent.run(None, session=SESSION)``) replays the journal:
the model's first turn is reused, ``lookup``'s recorded result is
committed, and ``charge`` is in doubt (never run again)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import uuid
from dataclasses import dataclass
from pathlib import Path

SESSION = "crashed"

_TOOLS = '''
"""Tools of the crashed app: ``charge`` kills its process (SIGKILL)."""

import os
import signal

import seamkit


@seamkit.tool
def lookup(order: str) -> str:
    """Look an order up (journaled: its effects are ``once``)."""
    return f"order {order}: 250 EUR"


@seamkit.tool
def charge(order: str, amount: int) -> str:
    """Charge a card; the process dies while it runs."""
    os.kill(os.getpid(), signal.SIGKILL)
    return "charged"
'''

_SCRIPT = """
each_run: true
turns:
  - tool_calls:
      - {id: l1, name: lookup, arguments: {order: A1}}
      - {id: k1, name: charge, arguments: {order: A1, amount: 250}}
  - text: I could not tell whether the card was charged.
"""

_RUN = """
import asyncio, sys
import seamkit

async def main():
    agent = await seamkit.Agent.load(sys.argv[1], store=sys.argv[2])
    await agent.run("charge A1", session=sys.argv[3])

asyncio.run(main())
"""


@dataclass(frozen=True)
class Crashed:
    """The app and the store of the crashed session `SESSION`."""

    app: Path
    store: str


def crashed_session(folder: Path) -> Crashed:
    """Make the app in ``folder``, run it until ``charge`` kills it, and
    check that it died that way."""
    module = f"crashed_{uuid.uuid4().hex[:12]}"  # a module per app: imports are cached
    (folder / f"{module}.py").write_text(_TOOLS, encoding="utf-8")
    (folder / "script.yaml").write_text(_SCRIPT, encoding="utf-8")
    app = folder / "app.yaml"
    app.write_text(
        textwrap.dedent(
            f"""\
            name: shop
            model: scripted:script.yaml
            tools:
              - {{kind: function, ref: {module}}}
            """
        ),
        encoding="utf-8",
    )
    store = str(folder / "sessions.sqlite")
    done = subprocess.run(
        [sys.executable, "-c", _RUN, str(app), store, SESSION],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    return Crashed(app, store)
