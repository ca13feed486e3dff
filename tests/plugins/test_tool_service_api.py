"""seamkit-tool-service's public surface: one ``__all__``, every name in it
importable and documented, and an entry module that loads nothing heavy
(httpx, nats-py, uvicorn load when a tool is built or a service served)."""

from __future__ import annotations

import subprocess
import sys

import seamkit_tool_service


def test_all_is_the_one_sorted_table_and_every_name_imports() -> None:
    names = seamkit_tool_service.__all__
    assert names == sorted(names) and len(set(names)) == len(names)
    assert sorted(dir(seamkit_tool_service)) == names
    for name in names:
        value = getattr(seamkit_tool_service, name)
        if callable(value):
            assert (value.__doc__ or "").strip(), f"{name} has no docstring"


def test_the_entry_module_and_registration_load_no_transport() -> None:
    probe = (
        "import sys, seamkit_tool_service\n"
        "from seamkit.plugins import load_plugins\n"
        "registry = load_plugins()\n"
        "assert registry.plugins['tool-service'].error is None\n"
        "print(sorted(m for m in ('httpx', 'nats', 'uvicorn', 'jsonschema') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
