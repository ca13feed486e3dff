"""seamkit-mcp's public surface: one ``__all__``, every name importable and
documented, and an entry module that loads no MCP SDK (it takes about a
second to import; only apps with an ``mcp`` entry pay it)."""

from __future__ import annotations

import subprocess
import sys

import seamkit_mcp

from tests.conftest import ROOT


def test_all_is_the_one_sorted_table_and_every_name_imports() -> None:
    names = seamkit_mcp.__all__
    assert names == sorted(names) and len(set(names)) == len(names)
    assert sorted(dir(seamkit_mcp)) == names
    for name in names:
        value = getattr(seamkit_mcp, name)
        if callable(value):
            assert (value.__doc__ or "").strip(), f"{name} has no docstring"


def test_an_app_without_mcp_never_imports_the_sdk() -> None:
    probe = (
        "import asyncio, sys, seamkit\n"
        "from seamkit.plugins import load_plugins\n"
        "assert load_plugins().plugins['mcp'].error is None\n"
        "async def main():\n"
        f"    async with await seamkit.Agent.load({str(ROOT / 'docs/examples/hello/app.yaml')!r})"
        " as agent:\n"
        "        result = await agent.run('What is 2 + 3?')\n"
        "        assert result.outcome.kind == 'completed', result\n"
        "asyncio.run(main())\n"
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
