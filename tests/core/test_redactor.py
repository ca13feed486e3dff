"""`seamkit.Redactor`, the kernel's one masker, and ``ctx.redactor``: what
it masks (secrets in every encoding, user patterns), and the laws that make
it safe to build once and extend (hypothesis)."""

from __future__ import annotations

import asyncio
import base64
import json
import re
from collections.abc import Callable
from urllib.parse import quote

import pytest
import seamkit
from hypothesis import given, strategies as st
from seamkit import HookContext, Redactor, Secret, redact
from seamkit.testing import ScriptedModel

CANARY = "canary-5a0c77e1"

secrets = st.text(min_size=1, max_size=12)
texts = st.text(max_size=60)


def test_masks_a_secret_in_every_encoding_and_the_patterns() -> None:
    mask = Redactor([Secret(CANARY)], patterns=[r"sk-[a-z0-9]{8}"])
    basic = base64.b64encode(CANARY.encode()).decode()
    text = f"a {CANARY} b {basic} c {quote(CANARY)} d sk-abcdef12 e"
    assert mask(text) == "a *** b *** c *** d *** e"
    assert bool(mask) and not Redactor()
    assert Redactor()("unchanged") == "unchanged"


@given(st.lists(secrets, max_size=3), texts)
def test_a_redactor_masks_exactly_what_redact_does(plains: list[str], text: str) -> None:
    assert Redactor(plains)(text) == redact(text, plains)


@given(st.lists(secrets, max_size=3), st.lists(secrets, max_size=3), texts)
def test_extending_masks_what_one_redactor_of_both_would(
    first: list[str], second: list[str], text: str
) -> None:
    assert Redactor(first).extend(second)(text) == Redactor([*first, *second])(text)


@given(secrets.filter(lambda s: "*" not in s), texts)
def test_no_secret_survives_in_the_output(plain: str, text: str) -> None:
    assert plain not in Redactor([plain])(f"{text}{plain}{text}")


def test_a_pattern_is_a_regular_expression_or_a_compiled_one() -> None:
    mask = Redactor(patterns=[re.compile(r"\d{4}-\d{4}"), "user-[a-z]+"])
    assert mask("card 1234-5678 of user-bob") == "card *** of ***"


def test_ctx_redactor_knows_the_manifest_and_the_context_secrets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    manifest_secret, context_secret = "manifest-s3cret-1", "context-s3cret-2"
    monkeypatch.setenv("HOOK_TOKEN", manifest_secret)
    seen: list[str] = []

    class Spy:
        @seamkit.hookimpl
        def on_request_start(self, ctx: HookContext) -> None:
            seen.append(ctx.redactor(f"{manifest_secret} and {context_secret}"))

    manifest = {
        "name": "app",
        "model": "scripted:unused",
        "tools": [{"kind": "function", "ref": "tests.core.test_redactor:echo"}],
        "hooks": [
            {
                "kind": "tool_call",
                "name": "inject",
                "event": "on_request_start",
                "tool_name": "echo",
                "arguments": {"text": "${secret:HOOK_TOKEN}"},
            }
        ],
    }

    async def go() -> tuple[seamkit.RunResult, seamkit.Agent]:
        model = ScriptedModel([{"text": "ok"}])
        agent = await seamkit.Agent.load(manifest, model=model, hooks=[Spy()])
        async with agent:
            return await agent.run("hi", context={"token": Secret(context_secret)}), agent

    result, agent = asyncio.run(go())
    assert result.output == "ok"
    assert seen == ["*** and ***"]
    assert agent.redactor(manifest_secret) == "***"


def echo(text: str) -> str:
    """Say ``text`` back."""
    return "echoed"


def test_a_secret_inside_a_patterns_match_does_not_break_it() -> None:
    card = r"card-[0-9]{4}(-[0-9]{4}){3}"
    mask = Redactor(["4321"]).extend(patterns=[card])
    assert mask("paid with card-1111-4321-9999-8888.") == "paid with ***."
    assert Redactor(["abc-123"], patterns=["123"])("x abc-123 y") == "x *** y"


def test_a_non_ascii_secret_is_masked_in_json_written_either_way() -> None:
    secret = 'Grüße"Geheim42'
    mask = Redactor([secret])
    for text in (json.dumps({"pw": secret}), json.dumps({"pw": secret}, ensure_ascii=False)):
        assert "Geheim42" not in mask(text)


def test_a_pattern_that_can_match_empty_text_masks_only_what_it_matches() -> None:
    assert Redactor(patterns=[r"[0-9]*(?=%)"])("up 12% today") == "up ***% today"


@given(st.lists(secrets, max_size=3), st.lists(st.sampled_from(["[0-9]+", "x+y", "ab"])), texts)
def test_masking_is_idempotent(plains: list[str], patterns: list[str], text: str) -> None:
    mask = Redactor(plains, patterns)
    once = mask(text)
    assert all(p not in once for p in plains if "*" not in p)
    assert mask(once) == once or any("*" in p for p in plains)


def _decodes_to(text: str, secret: str) -> bool:
    """Whether some base64 run in ``text`` decodes to bytes holding ``secret``."""
    for run in re.findall(r"[A-Za-z0-9+/_=-]{4,}", text):
        for decode in (base64.b64decode, base64.urlsafe_b64decode):
            for start in range(4):  # every alignment a leak could start at
                piece = run[start:]
                try:
                    decoded = decode(piece + "=" * (-len(piece) % 4))
                except ValueError:
                    continue
                if secret.encode() in decoded:
                    return True
    return False


@given(
    st.text(st.characters(codec="utf-8"), min_size=6, max_size=20).filter(str.strip),
    st.binary(max_size=8),
    st.binary(max_size=8),
    st.sampled_from([base64.b64encode, base64.urlsafe_b64encode]),
)
def test_a_secret_inside_a_longer_base64_text_is_masked(
    secret: str, before: bytes, after: bytes, encode: Callable[[bytes], bytes]
) -> None:
    token = encode(before + secret.encode() + after).decode()
    masked = Redactor([secret])(f"Authorization: Basic {token}")
    assert not _decodes_to(masked, secret)
