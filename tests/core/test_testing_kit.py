"""The testing kit plugin authors use: harness, ready checks, pytest plugin."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import seamkit
from seamkit import HookEvent, ModelRequest, RequestPatch, flow as F
from seamkit.testing import check_hook_composes, run_event


class Brief:
    """A well-behaved hook: asks for short answers."""

    @seamkit.hookimpl
    def on_pre_llm(self, ctx, request):  # type: ignore[no-untyped-def]
        return F.PatchRequest(RequestPatch(max_tokens=200, additional_params={"brief": True}))


class Confused:
    """Returns a flow its event does not accept."""

    @seamkit.hookimpl
    def on_pre_llm(self, ctx, request):  # type: ignore[no-untyped-def]
        return F.Skip("wrong event for this")


def test_check_hook_composes_passes_for_a_good_hook() -> None:
    check_hook_composes(Brief(), HookEvent.ON_PRE_LLM, max_examples=50)
    check_hook_composes(Brief, HookEvent.ON_PRE_LLM, max_examples=20)  # factory form


def test_check_hook_composes_catches_a_bad_flow() -> None:
    with pytest.raises(AssertionError, match="returned a flow on_pre_llm does not accept"):
        check_hook_composes(Confused(), HookEvent.ON_PRE_LLM, max_examples=10)


def test_run_event_harness() -> None:
    result = run_event([Brief()], "on_pre_llm", ModelRequest())
    assert result.flow.patch.max_tokens == 200


def test_pytest_plugin_imports_hypothesis_only_when_used(tmp_path: Path) -> None:
    (tmp_path / "test_kit.py").write_text(
        textwrap.dedent("""
        import sys

        def test_a_no_fixture(seamkit_context, seamkit_run_event):
            assert "hypothesis" not in sys.modules
            assert seamkit_context.turn == 1

        def test_b_strategies(seamkit_strategies):
            assert "hypothesis" in sys.modules
            assert seamkit_strategies.messages().example().role
    """)
    )
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:hypothesispytest",
            str(tmp_path / "test_kit.py"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert "2 passed" in out.stdout, out.stdout + out.stderr
