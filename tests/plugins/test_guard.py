"""The `guard` hook kind of seamkit-guard, found through its installed
distribution: masking and blocking at the user's input, the model's text
(streamed in pieces split at every offset, and not streamed) and tool
results; located manifest errors; the run's logs masked by its patterns; and
the law that no release of a stream ever contains a match."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import seamkit
import yaml
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st
from seamkit import stream as S
from seamkit._cli._group import cli
from seamkit.flow import Hold, RewriteText, Terminate
from seamkit.plugins import get_registry
from seamkit.testing import make_context
from seamkit_guard import GuardHook, GuardHookConfig, longest_match

KEY = "key-1234"
PATTERN = r"key-\d{4}"
TEXT = f"Your {KEY} is ready."

TOOLS = '''
"""The shop's tools."""

import seamkit


@seamkit.tool(effects="none")
def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order} uses key-9876"


@seamkit.tool(effects="none")
def broken(order: str) -> str:
    """Fails, naming a key."""
    raise RuntimeError("lookup broke on key-4242 for " + order)
'''


class Shop:
    """A manifest app in a folder of its own: the tools above as the toolset
    ``shop``, a scripted model playing ``turns``, the given hook entries."""

    def __init__(self, folder: Path, hooks: list[dict[str, Any]], turns: list[Any]) -> None:
        module = f"guard_shop_{uuid.uuid4().hex[:12]}"  # a module per app: imports are cached
        (folder / f"{module}.py").write_text(TOOLS, encoding="utf-8")
        (folder / "script.yaml").write_text(yaml.safe_dump(turns), encoding="utf-8")
        self.app = folder / "app.yaml"
        manifest = {
            "name": "shop",
            "model": "scripted:script.yaml",
            "tools": [{"kind": "function", "ref": module, "toolset": "shop"}],
            "hooks": hooks,
        }
        self.app.write_text(yaml.safe_dump(manifest, sort_keys=False), encoding="utf-8")

    def run(self, message: str = "hello", *, stream: bool = False) -> tuple[seamkit.RunResult, str]:
        """The run's result and the text its `TextDelta` events carried."""

        async def go() -> tuple[seamkit.RunResult, str]:
            async with await seamkit.Agent.load(self.app) as agent:
                if not stream:
                    return await agent.run(message), ""
                events = [e async for e in agent.stream(message)]
                finished = events[-1]
                assert isinstance(finished, S.RunFinished)
                texts = "".join(e.text for e in events if isinstance(e, S.TextDelta))
                return finished.result, texts

        return asyncio.run(go())


def guard(**fields: Any) -> dict[str, Any]:
    return {
        "kind": "guard",
        "name": "keys",
        "event": "on_text_delta",
        "patterns": [PATTERN],
        **fields,
    }


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": json.dumps(arguments)}


def everything(result: seamkit.RunResult, streamed: str) -> str:
    """All text of a run a person could see: the stream, the transcript, the output."""
    messages = [m.model_dump_json() for m in result.transcript]
    return "\n".join([streamed, *messages, result.output or "", repr(result.outcome)])


# --- discovery ----------------------------------------------------------------------


def test_the_kind_is_discovered_through_its_installed_distribution() -> None:
    registry = get_registry()
    info = registry.kind("hook", "guard")
    assert info is not None and info.plugin == "guard" and info.model is GuardHookConfig
    assert {e.value for e in info.events} == {
        "on_request_start",
        "on_text_delta",
        "on_post_tool_use",
    }
    plugin = registry.plugins["guard"]
    assert plugin.error is None and plugin.distribution == "seamkit-guard"
    (entry,) = [
        ep for ep in metadata.distribution("seamkit-guard").entry_points if ep.group == "seamkit"
    ]
    assert (entry.name, entry.value) == ("guard", "seamkit_guard")


def test_seamkit_plugins_lists_the_kind() -> None:
    result = CliRunner().invoke(cli, ["plugins", "--json"])
    assert result.exit_code == 0, result.output
    found = {p["name"]: p for p in json.loads(result.output)}["guard"]
    assert found["kinds"] == ["hook:guard"] and found["error"] is None


def test_the_entry_fails_closed_by_default_and_windows_are_derived() -> None:
    config = GuardHookConfig.model_validate(guard(patterns=[PATTERN, r"(?i)sk-[a-z]{20}"]))
    assert config.error_policy == "fail"
    assert GuardHook(config).windows == (8, 23)
    assert longest_match(r"\d+") is None and longest_match(r"ab(?=cd)") == 4
    unbounded = GuardHook(GuardHookConfig.model_validate(guard(patterns=[r"\d+"], hold=12)))
    assert unbounded.windows == (12,)


# --- the model's text ----------------------------------------------------------------


def _split_turn(offset: int) -> dict[str, Any]:
    return {"text": TEXT, "deltas": [TEXT[:offset], TEXT[offset:]]}


@pytest.mark.parametrize("stream", [False, True])
def test_mask_a_match_split_over_two_deltas_at_every_offset(tmp_path: Path, stream: bool) -> None:
    for offset in range(1, len(TEXT)):
        folder = tmp_path / f"o{offset}"
        folder.mkdir()
        shop = Shop(folder, [guard()], [_split_turn(offset)])
        result, streamed = shop.run(stream=stream)
        assert result.outcome.kind == "completed", offset
        assert result.output == "Your *** is ready.", offset
        if stream:
            assert streamed == result.output, offset
        assert KEY not in everything(result, streamed), offset


@pytest.mark.parametrize("stream", [False, True])
def test_block_a_match_split_over_two_deltas_at_every_offset(tmp_path: Path, stream: bool) -> None:
    for offset in range(1, len(TEXT)):
        folder = tmp_path / f"o{offset}"
        folder.mkdir()
        shop = Shop(folder, [guard(action="block")], [_split_turn(offset)])
        result, streamed = shop.run(stream=stream)
        outcome = result.outcome
        assert isinstance(outcome, seamkit.Terminated), offset
        assert outcome.hook == "keys" and outcome.event == "on_text_delta"
        assert outcome.reason == "guard 'keys' blocked it: its pattern 0 matched"
        assert "Your ".startswith(streamed), (offset, streamed)  # not even the 'k' left
        assert KEY not in everything(result, streamed), offset


def test_text_that_cannot_begin_a_match_is_not_held(tmp_path: Path) -> None:
    deltas = ["Plain ", "words, ", "no keys", " here."]
    shop = Shop(tmp_path, [guard()], [{"text": "".join(deltas), "deltas": deltas}])

    async def go() -> list[str]:
        async with await seamkit.Agent.load(shop.app) as agent:
            return [e.text async for e in agent.stream("hi") if isinstance(e, S.TextDelta)]

    assert asyncio.run(go()) == deltas


def test_a_match_in_a_tool_calls_arguments_is_masked_or_blocked(tmp_path: Path) -> None:
    turns = [{"tool_calls": [call("c1", "shop_lookup", order=KEY)]}, {"text": "done"}]
    masked, _ = Shop(tmp_path, [guard()], turns).run()
    assert KEY not in everything(masked, "")
    (assistant,) = [m for m in masked.transcript if m.tool_calls]
    assert assistant.tool_calls is not None
    assert json.loads(assistant.tool_calls[0].function.arguments) == {"order": "***"}
    (tmp_path / "b").mkdir()
    blocked, _ = Shop(tmp_path / "b", [guard(action="block")], turns).run()
    assert isinstance(blocked.outcome, seamkit.Terminated)
    assert KEY not in everything(blocked, "")


def test_the_replacement_is_what_a_mask_writes_at_each_event(tmp_path: Path) -> None:
    shop = Shop(
        tmp_path,
        [
            {
                "kind": "guard",
                "name": "keys",
                "events": ["on_request_start", "on_post_tool_use", "on_text_delta"],
                "patterns": [PATTERN],
                "replacement": "[KEY]",
            }
        ],
        [
            {"tool_calls": [call("c1", "shop_lookup", order="A1")]},
            {"text": f"Your {KEY} is ready.", "deltas": ["Your key-", KEY[4:], " is ready."]},
        ],
    )
    result, _ = shop.run(f"my {KEY}, please")
    texts = {m.role: m.text for m in result.transcript if m.role in ("user", "tool")}
    assert texts == {"user": "my [KEY], please", "tool": "order A1 uses [KEY]"}
    # the model's text too: the run's redactor leaves patterns to their guards
    assert result.output == "Your [KEY] is ready."


# --- user input ----------------------------------------------------------------------


def test_user_input_is_masked_before_the_model_sees_it(tmp_path: Path) -> None:
    turns = [{"text": "ok", "expect": {"last_user": "my ***, and ***"}}]
    shop = Shop(tmp_path, [guard(event="on_request_start")], turns)
    result, _ = shop.run(f"my {KEY}, and key-0000")
    assert result.outcome.kind == "completed", result.outcome
    assert KEY not in everything(result, "")


def test_user_input_with_a_match_is_blocked(tmp_path: Path) -> None:
    entry = guard(event="on_request_start", action="block", reason="no keys in requests")
    result, _ = Shop(tmp_path, [entry], [{"text": "never"}]).run(f"my {KEY}")
    assert isinstance(result.outcome, seamkit.Terminated)
    assert result.outcome.reason == "no keys in requests"
    assert result.outcome.event == "on_request_start"
    (tmp_path / "b").mkdir()
    fine, _ = Shop(tmp_path / "b", [entry], [{"text": "fine"}]).run("no key here")
    assert fine.output == "fine"


def test_text_parts_of_a_user_message_are_masked() -> None:
    hook = GuardHook(GuardHookConfig.model_validate(guard(event="on_request_start")))
    message = seamkit.Message(
        role="user",
        content=[{"type": "text", "text": f"a {KEY}"}, {"type": "image_url", "image_url": {}}],
    )
    flow = hook.on_request_start(make_context(), (seamkit.Message.system("sys"), message))
    assert isinstance(flow, seamkit.flow.RewriteMessages)
    assert flow.messages[1].content == [
        {"type": "text", "text": "a ***"},
        {"type": "image_url", "image_url": {}},
    ]
    assert flow.messages[0].text == "sys"


# --- tool results --------------------------------------------------------------------


def test_a_tool_result_with_a_match_is_withheld_on_block(tmp_path: Path) -> None:
    shop = Shop(
        tmp_path,
        [guard(event="on_post_tool_use", action="block")],
        [{"tool_calls": [call("c1", "shop_lookup", order="A1")]}, {"text": "never"}],
    )
    result, _ = shop.run()
    assert isinstance(result.outcome, seamkit.Terminated)
    (tool,) = [m for m in result.transcript if m.role == "tool"]
    assert tool.text == "Result withheld by keys: guard 'keys' blocked it: its pattern 0 matched"
    assert "key-9876" not in everything(result, "")


def test_a_tool_result_is_masked(tmp_path: Path) -> None:
    shop = Shop(
        tmp_path,
        [guard(event="on_post_tool_use")],
        [{"tool_calls": [call("c1", "shop_lookup", order="A1")]}, {"text": "done"}],
    )
    result, _ = shop.run()
    assert result.output == "done"
    (tool,) = [m for m in result.transcript if m.role == "tool"]
    assert tool.text == "order A1 uses ***"


# --- logs and diagnostics -----------------------------------------------------------


def test_a_masking_guard_masks_the_runs_log_lines(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    turns = [{"tool_calls": [call("c1", "shop_broken", order="A1")]}, {"text": "sorry"}]
    shop = Shop(tmp_path, [guard(event="on_request_start")], turns)
    with caplog.at_level("WARNING", logger="seamkit"):
        result, _ = shop.run()
    lines = [r.getMessage() for r in caplog.records if "raised RuntimeError" in r.getMessage()]
    assert lines == ["tool 'shop_broken' raised RuntimeError: lookup broke on *** for A1"]
    assert "key-4242" not in everything(result, "")


def test_a_blocking_guard_asks_no_masking() -> None:
    masking = GuardHook(GuardHookConfig.model_validate(guard()))
    blocking = GuardHook(GuardHookConfig.model_validate(guard(action="block")))
    assert masking.redact_patterns == (PATTERN,) and blocking.redact_patterns == ()


# --- manifest errors ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "where", "words"),
    [
        (
            {"patterns": [PATTERN, r"\d+"]},
            ("hooks", 0, "patterns", 1),
            r"pattern '\d+' has no longest match",
        ),
        ({"patterns": ["key-("]}, ("hooks", 0, "patterns", 0), "does not compile"),
        ({"patterns": [r"\p{L}+x"]}, ("hooks", 0, "patterns", 0), "does not compile: re:"),
        ({"patterns": ["x*"]}, ("hooks", 0, "patterns", 0), "empty text"),
        ({"patterns": ["(?<=a)b"]}, ("hooks", 0, "patterns", 0), "looks behind"),
        ({"patterns": []}, ("hooks", 0, "patterns"), "patterns is empty"),
        ({"action": "drop"}, ("hooks", 0, "action"), ""),
        ({"hold": 0}, ("hooks", 0, "hold"), ""),
        ({"replacment": "x"}, ("hooks", 0, "replacment"), "unknown field 'replacment'"),
        ({"event": "on_pre_llm"}, ("hooks", 0, "event"), "does not support event"),
    ],
)
def test_a_bad_entry_is_a_manifest_error_naming_the_entry_and_field(
    tmp_path: Path, fields: dict[str, Any], where: tuple[Any, ...], words: str
) -> None:
    shop = Shop(tmp_path, [guard(**fields)], [])
    with pytest.raises(seamkit.ManifestError) as caught:
        asyncio.run(seamkit.Agent.load(shop.app))
    (problem,) = caught.value.problems
    assert tuple(problem.location) == where, problem
    assert words in problem.message, problem
    text = str(caught.value)
    assert "app.yaml:" in text and "hooks[0]." in text, text


def test_an_unbounded_pattern_is_fine_with_hold(tmp_path: Path) -> None:
    shop = Shop(tmp_path, [guard(patterns=[r"\d+"], hold=6)], [{"text": "pin 123"}])
    result, _ = shop.run()
    assert result.output == "pin ***"


def test_seamkit_validate_locates_an_unbounded_pattern(tmp_path: Path) -> None:
    shop = Shop(tmp_path, [guard(patterns=[PATTERN, r"secret-\w+"])], [])
    result = CliRunner().invoke(cli, ["validate", str(shop.app)])
    assert result.exit_code == 1, result.output
    (line,) = [line for line in result.output.splitlines() if "patterns[1]" in line]
    assert "hooks[0].patterns[1]: pattern 'secret-\\w+' has no longest match" in line
    assert "give `hold:`" in line
    assert "hold: 64" in result.output  # the hint
    (tmp_path / "ok").mkdir()
    fine = Shop(tmp_path / "ok", [guard(patterns=[r"secret-\w+"], hold=40)], [])
    assert CliRunner().invoke(cli, ["validate", str(fine.app)]).exit_code == 0


# --- the hook's own flows --------------------------------------------------------------


def test_the_flows_at_on_text_delta() -> None:
    ctx = make_context()
    hook = GuardHook(GuardHookConfig.model_validate(guard(replacement="#")))
    assert hook.on_text_delta(ctx, "nothing to see", False) is None
    assert hook.on_text_delta(ctx, "see ke", False) == Hold(2)
    assert hook.on_text_delta(ctx, "see ke", True) is None
    assert hook.on_text_delta(ctx, f"a {KEY} b key-9", False) == RewriteText("a # b key-9", 5)
    assert hook.on_text_delta(ctx, f"a {KEY} b key-9", True) == RewriteText("a # b key-9", 0)
    block = GuardHook(GuardHookConfig.model_validate(guard(action="block")))
    assert block.on_text_delta(ctx, "see key-12", False) == Hold(6)
    assert isinstance(block.on_text_delta(ctx, f"x {KEY}", False), Terminate)
    assert block.on_text_delta(ctx, "see key-12", True) is None


def test_a_complete_match_that_could_still_grow_waits() -> None:
    hook = GuardHook(GuardHookConfig.model_validate(guard(patterns=[r"ab(?:cd)?"])))
    assert hook.scan("x ab") == ("x ab", 2)  # 'abcd' may follow
    assert hook.scan("x abc") == ("x abc", 3)
    assert hook.scan("x abcd") == ("x ***", 0)
    assert hook.scan("x abx") == ("x ***x", 0)


def test_an_unbounded_pattern_holds_at_most_hold_minus_one() -> None:
    hook = GuardHook(GuardHookConfig.model_validate(guard(patterns=[r"<[^>]+>"], hold=5)))
    assert hook.scan("a <bc") == ("a <bc", 3)
    assert hook.scan("a <bcdefg") == ("a <bcdefg", 4)  # longer than the window: let out


# --- the law ----------------------------------------------------------------------------

LAW_PATTERNS = [r"key-\d{4}", r"sk-[a-z]{3,6}", r"(?i:secret)"]
LAW = re.compile("|".join(LAW_PATTERNS))
LAW_HOOK = GuardHook(GuardHookConfig.model_validate(guard(patterns=LAW_PATTERNS, replacement="_")))
LAW_CONTEXT = make_context()
PIECES = st.one_of(
    st.text(alphabet="abcdek-0123456789 sSECRTt", max_size=12),
    st.sampled_from(["key-1234", "sk-abcdef", "sk-abc", "SeCrEt", "key-", "sk-", "secre"]),
)


def released(hook: GuardHook, deltas: list[str]) -> list[str]:
    """What a stream of ``deltas`` releases through ``hook`` alone, each
    delta's release in order and the final one last (the kernel's rule:
    the unreleased text is offered again with the next delta)."""
    out: list[str] = []
    pending = ""
    for delta in [*deltas, None]:
        final = delta is None
        text = pending + (delta or "")
        flow = hook.on_text_delta(LAW_CONTEXT, text, final)
        assert not isinstance(flow, Terminate)
        if isinstance(flow, RewriteText):
            text, keep = flow.text, flow.keep
        else:
            keep = flow.keep if isinstance(flow, Hold) else 0
        assert not final or keep == 0 or isinstance(flow, Hold)
        keep = 0 if final else keep
        out.append(text[: len(text) - keep])
        pending = text[len(text) - keep :]
    return out


@settings(max_examples=400, deadline=None)
@given(st.lists(PIECES, max_size=8), st.data())
def test_no_release_of_a_masked_stream_holds_a_match(
    pieces: list[str], data: st.DataObject
) -> None:
    text = "".join(pieces)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=6)))
    deltas = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    out = "".join(released(LAW_HOOK, deltas))
    assert LAW.search(out) is None, (deltas, out)
    assert out == LAW_HOOK.mask(text), (deltas, out)  # the same as masking it whole
