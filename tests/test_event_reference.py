"""The generated event reference of docs/guide.md is current, complete, and
its examples are hookimpls the kernel accepts.

If ``test_the_committed_reference_is_current`` fails, regenerate the block:

    python docs/gen_events.py
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import inspect
import re
import shutil
import subprocess
import sys
import typing
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import seamkit
import seamkit.hookspecs
import seamkit.stream
from hypothesis import given, settings, strategies as st
from seamkit import HookEvent, flow as F
from seamkit._engine._dispatch import Dispatcher
from seamkit._events import EVENTS, OBSERVER, Composition, hookimpls_of
from seamkit._flowcheck import payload_problem
from seamkit.plugins import Registry
from seamkit.testing import make_context
from seamkit.testing.strategies import event_arguments

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "guide.md"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_events", ROOT / "docs" / "gen_events.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen = _generator()
RENDERED: str = gen.render()
FLOWS: tuple[type, ...] = typing.get_args(F.Flow)
PAIRS = [(event, flow) for event in HookEvent for flow in EVENTS[event].flows]


def _sections(text: str) -> dict[str, str]:
    """``heading -> body`` of every ``###`` section of the block."""
    parts = re.split(r"^### (.+)$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.M | re.S)


def _code_cell(text: str) -> str:
    """``text`` as a code span in a Markdown table cell."""
    return f"`{text}`".replace("|", "\\|")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = heading.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


# --- the block is current and complete ----------------------------------------


def test_the_committed_reference_is_current() -> None:
    committed = gen.committed(GUIDE.read_text(encoding="utf-8"))
    assert committed == RENDERED, (
        "the event reference in docs/guide.md is stale; regenerate it with "
        "`python docs/gen_events.py`"
    )


def test_the_reference_says_it_is_generated_and_how() -> None:
    first = RENDERED.splitlines()[0]
    assert first == gen.BEGIN and "generated" in first and "python docs/gen_events.py" in first


def test_the_guide_has_the_section_and_lists_it_in_its_contents() -> None:
    guide = GUIDE.read_text(encoding="utf-8")
    assert "- [Event reference](#event-reference)" in guide
    section = guide.split("\n## Event reference\n", 1)[1].split("\n## ", 1)[0]
    assert gen.BEGIN in section and gen.END in section
    # right after the events overview
    assert guide.index("\n## Events\n") < guide.index("\n## Event reference\n")


def test_every_event_has_a_section_in_firing_order() -> None:
    headings = [h for h in _sections(RENDERED) if "`" in h]
    assert headings == [f"`{e.value}`" for e in HookEvent] + [f"Observers: `{OBSERVER}`"]


def test_each_event_section_shows_its_arguments_flows_and_composition() -> None:
    sections = _sections(RENDERED)
    for event, spec in EVENTS.items():
        body = sections[f"`{event.value}`"]
        hookspec = getattr(seamkit.hookspecs, event.value)
        for name, param in inspect.signature(hookspec).parameters.items():
            assert f"| `{name}` | " in body, (event, name)
            assert str(param.annotation).replace("|", "\\|") in body, (event, name)
        for flow in spec.flows:
            assert f"| {_code_cell(gen.constructor(flow))} |" in body, (event, flow)
        others = set(FLOWS) - set(spec.flows)
        for flow in others:
            assert f"`{flow.__name__}(" not in body.split("```python")[0], (event, flow)
        assert f"**{spec.composition.value}** (`Composition.{spec.composition.name}`)" in body


def test_model_arguments_get_their_fields() -> None:
    body = _sections(RENDERED)["`on_post_tool_use`"]
    assert "| `arguments` | `dict[str, Any]` | `{}` |" in body
    assert "| `content` | `str` | required |" in body
    assert "| `is_error` | `bool` | `False` |" in body
    for model in (seamkit.ToolCall, seamkit.ToolResult):
        for field in model.model_fields:
            assert f"| `{field}` | " in body, (model, field)


def test_every_flow_type_appears_with_its_constructor() -> None:
    assert set(FLOWS) == {getattr(F, n) for n in F.__all__} - {F.Dispatched, F.Flow}
    glance = _sections(RENDERED)["Flows at a glance"]
    for flow in FLOWS:
        text = gen.constructor(flow)
        assert f"| {_code_cell(text)} |" in glance, text
        # the constructor shown takes exactly the dataclass's fields, in order
        params = list(inspect.signature(flow).parameters)
        assert params == [f.name for f in dataclasses.fields(flow)]
        assert text.startswith(f"{flow.__name__}(") and all(p in text for p in params)
    assert gen.constructor(F.RewriteResult) == "RewriteResult(content: str)"
    assert gen.constructor(F.Repair) == (
        "Repair(tool_name: str, arguments: dict[str, Any] | None = None)"
    )
    assert gen.constructor(F.Continue) == "Continue()"


def test_every_composition_mode_is_explained() -> None:
    glance = _sections(RENDERED)["Flows at a glance"]
    for mode in Composition:
        assert f"| **{mode.value}** | " in glance


def test_every_observed_event_type_is_listed() -> None:
    body = _sections(RENDERED)[f"Observers: `{OBSERVER}`"]
    for cls in typing.get_args(seamkit.stream.ObservedEvent):
        assert f"| {_code_cell(gen.constructor(cls))} |" in body, cls


def test_the_hookspec_docstrings_agree_with_the_event_table() -> None:
    """The hookspecs say "Mode: Flow, Flow." in words; the reference uses the
    table. If they disagree, one of them is wrong."""
    for event, spec in EVENTS.items():
        doc = " ".join((getattr(seamkit.hookspecs, event.value).__doc__ or "").split())
        match = re.search(r"([A-Z][\w -]*): (\w+(?:, \w+)*)(?: only)?\.$", doc)
        assert match is not None, event
        assert match.group(2).split(", ") == [f.__name__ for f in spec.flows], event


def test_the_links_of_the_block_lead_to_headings_of_the_guide() -> None:
    guide = GUIDE.read_text(encoding="utf-8")
    anchors = {_slug(h) for h in re.findall(r"^#+ (.+)$", guide, flags=re.M)}
    links = set(re.findall(r"\]\(#([^)]+)\)", RENDERED))
    assert links and links <= anchors, links - anchors


# --- --check and the markers ----------------------------------------------------


def test_check_mode_on_a_copy_of_the_guide(tmp_path: Path) -> None:
    copy = tmp_path / "guide.md"
    shutil.copyfile(GUIDE, copy)
    text = copy.read_text(encoding="utf-8")
    stale = text.replace(gen.committed(text), f"{gen.BEGIN}\nold text\n{gen.END}")
    copy.write_text(stale, encoding="utf-8")
    assert gen.main(["--check", "--guide", str(copy)]) == 1
    assert copy.read_text(encoding="utf-8") == stale, "--check must not write"
    assert gen.main(["--guide", str(copy)]) == 0
    assert gen.main(["--check", "--guide", str(copy)]) == 0
    fixed = copy.read_text(encoding="utf-8")
    assert gen.committed(fixed) == RENDERED
    # only the block changed
    assert fixed.split(gen.BEGIN)[0] == stale.split(gen.BEGIN)[0]
    assert fixed.split(gen.END)[1] == stale.split(gen.END)[1]


def test_a_guide_without_the_markers_is_an_error(tmp_path: Path) -> None:
    copy = tmp_path / "guide.md"
    copy.write_text("# A guide\n", encoding="utf-8")
    assert gen.main(["--check", "--guide", str(copy)]) == 2
    assert gen.main(["--guide", str(copy)]) == 2
    assert copy.read_text(encoding="utf-8") == "# A guide\n"


def test_a_flow_without_an_example_body_fails_the_generator() -> None:
    @dataclasses.dataclass(frozen=True)
    class Unknown:
        """A flow the generator has no example for."""

    with pytest.raises(gen.GeneratorError, match="no example body for flow Unknown"):
        gen.example("on_pre_tool_use", Unknown)


def test_an_example_body_using_a_missing_argument_fails_the_generator(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(gen.EXAMPLE_BODIES, "Terminate", "Terminate(result.content)")
    with pytest.raises(gen.GeneratorError, match="on_pre_llm lacks"):
        gen.example("on_pre_llm", F.Terminate)


# --- the examples are valid --------------------------------------------------------


def _plugin(source: str) -> ModuleType:
    """Exec an example (after the imports the reference shows) as a plugin module."""
    module = ModuleType("example_plugin")
    exec(compile(gen.example_imports() + "\n" + source, "<example>", "exec"), vars(module))
    return module


def test_the_shown_examples_are_the_generated_ones() -> None:
    blocks = _python_blocks(RENDERED)
    assert blocks[0].strip() == gen.example_imports()
    shown = [b.strip() for b in blocks[1:]]
    expected = [gen.example(e.value, gen.example_flow(e.value)) for e in HookEvent]
    assert shown == [*expected, gen.observer_example()]
    for event in HookEvent:
        assert gen.example_flow(event.value) in EVENTS[event].flows
    assert gen.example_flow("on_post_tool_use") is F.RewriteResult
    assert gen.example_flow("on_completion") is F.Continue


def _ruff() -> str:
    found = Path(sys.executable).with_name("ruff")
    ruff = str(found) if found.exists() else shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed")
    return ruff


def test_every_code_block_is_as_ruff_formats_it() -> None:
    """`ruff format` also formats the guide's code blocks: the generated ones
    must be its fixed point, or `ruff format --check .` fails on the guide."""
    examples = [gen.example(event.value, flow) for event, flow in PAIRS]
    for code in [gen.example_imports(), *examples, gen.observer_example()]:
        source = code + "\n"
        formatted = subprocess.run(
            [_ruff(), "format", "--stdin-filename", "example.py", "-"],
            input=source,
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=True,
        ).stdout
        assert formatted == source


def test_every_flow_type_has_an_example_body() -> None:
    assert set(gen.EXAMPLE_BODIES) == {flow.__name__ for flow in FLOWS}


@pytest.mark.parametrize(
    ("event", "flow"), PAIRS, ids=[f"{e.value}-{f.__name__}" for e, f in PAIRS]
)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_every_example_is_a_hookimpl_the_kernel_accepts(
    event: HookEvent, flow: type, data: st.DataObject
) -> None:
    """Each (event, flow) example body, not only the one shown: registered in
    a fresh registry (pluggy checks its arguments against the hookspec),
    called with the testing kit's values, and dispatched by the kernel, which
    checks the flow is accepted and well formed."""
    plugin = _plugin(gen.example(event.value, flow))
    impl, _ = hookimpls_of(plugin)[event.value]
    assert not inspect.iscoroutinefunction(impl)
    registry = Registry()
    registry.plugin_manager.register(plugin, name="example")  # validates against the hookspec

    args: tuple[Any, ...] = data.draw(event_arguments(event))
    returned = impl(make_context(), *args)
    assert type(returned) is flow
    assert type(returned) in EVENTS[event].flows
    assert payload_problem(returned) is None

    ctx = make_context()
    dispatcher = Dispatcher(plugin_manager=registry.plugin_manager)
    assert [ref.name for ref in dispatcher.hooks_at(event)] == ["example"]
    dispatched = asyncio.run(dispatcher.dispatch(event, ctx, *args))
    # on_completion ignores flows; elsewhere the one hook's flow is the net flow
    ignored = EVENTS[event].composition is Composition.ALL
    assert type(dispatched.flow) is (F.Continue if ignored else flow)
    assert not [d for d in ctx.diagnostics if d.event == event.value], ctx.diagnostics


def test_the_observer_example_is_an_observer_the_kernel_accepts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    plugin = _plugin(gen.observer_example())
    registry = Registry()
    registry.plugin_manager.register(plugin, name="example")
    dispatcher = Dispatcher(plugin_manager=registry.plugin_manager)
    assert len(dispatcher.observers) == 1
    observer = dispatcher.observers[0]
    assert not inspect.iscoroutinefunction(observer)
    ctx = make_context(turn=3)
    assert observer(ctx, seamkit.stream.TextDelta("hi", 3)) is None
    assert capsys.readouterr().out == "turn 3: TextDelta\n"
