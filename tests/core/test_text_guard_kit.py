"""`seamkit.testing.check_text_guard`: the run's redactor and a careful
regex guard pass it, whatever the split of the model's text; a guard that
masks only what one delta shows whole is caught (issue 28)."""

from __future__ import annotations

import base64
import json
import re
from urllib.parse import quote, quote_plus

import pytest
import seamkit
from seamkit import flow as F
from seamkit.testing import TextGuardChecked, check_text_guard

KEY = re.compile(r"sk-[a-z0-9]{8}")
"""What the guards of this file mask: an API key of a made-up provider."""
_STARTS = re.compile(r"s(?:k(?:-[a-z0-9]{0,7})?)?")
"""A text that could still become a key: a proper prefix of one."""


def _could_begin(text: str) -> int:
    """How many characters at the end of ``text`` could begin a key."""
    for i in range(max(0, len(text) - 10), len(text)):
        if _STARTS.fullmatch(text, i):
            return len(text) - i
    return 0


class KeyGuard:
    """Masks keys; holds what could begin one until it is whole or is not."""

    name = "key-guard"

    @seamkit.hookimpl
    def on_text_delta(self, ctx: seamkit.HookContext, text: str, final: bool) -> F.TextDeltaFlow:
        keep = 0 if final else _could_begin(text)
        head, tail = text[: len(text) - keep], text[len(text) - keep :]
        masked = KEY.sub("***", head)
        if masked != head:
            return F.RewriteText(masked + tail, keep)
        return F.Hold(keep) if keep else None


class LeakyGuard:
    """Masks only the keys one call sees whole, and holds nothing: a key cut
    in two by the stream gets out."""

    name = "leaky-guard"

    @seamkit.hookimpl
    def on_text_delta(self, ctx: seamkit.HookContext, text: str, final: bool) -> F.TextDeltaFlow:
        masked = KEY.sub("***", text)
        return F.RewriteText(masked) if masked != text else None


TEXTS = [
    "here is sk-abc12345, use it",
    "sk-abc12345",
    "two: sk-aaaaaaaa and sk-bbbbbbbb.",
    "sk-abc not a key, sk- neither, s alone",
    "a text with no key at all",
    "",
]

SECRET = 'p@ss/w"rd ü+1'
"""A secret whose URL, JSON and repr forms all differ from it."""


def _forms_in_text() -> list[str]:
    raw = SECRET.encode()
    return [
        f"the password is {SECRET}!",
        f'{{"password": {json.dumps(SECRET)}}}',
        f"repr: {SECRET!r}",
        f"https://x.example/login?pw={quote(SECRET, safe='')}&u=ann",
        f"form: pw={quote_plus(SECRET)}",
        f"b64 {base64.b64encode(raw).decode()}",
        f"url-safe b64 {base64.urlsafe_b64encode(raw).decode().rstrip('=')}.",
        "Authorization: Basic " + base64.b64encode(b"ann:" + raw).decode(),
        "Authorization: Basic " + base64.b64encode(b"an:" + raw).decode(),
        "Authorization: Basic " + base64.b64encode(b"a:" + raw).decode(),
        f"twice {SECRET}{SECRET} and half p@ss/ then done",
        "nothing secret here, just p@ss and w",
    ]


def test_the_redactor_alone_lets_no_form_of_a_secret_out() -> None:
    texts = _forms_in_text()
    checked = check_text_guard(None, [], texts, secrets=[SECRET, "canary-7f3e9b21d4"])
    assert checked.texts == len(texts)
    # every text: whole, every 2-way cut, 50 random cuts, and once not streamed
    assert checked.runs == sum(1 + max(len(t) - 1, 0) + 50 + 1 for t in texts)
    assert checked.releases > checked.runs


def test_the_redactor_with_a_regex_guard() -> None:
    texts = [*TEXTS, f"key sk-abc12345 and secret {SECRET}"]
    check_text_guard(KeyGuard(), KEY, texts, secrets=[SECRET], random_splits=20)


def test_a_careful_regex_guard_passes() -> None:
    checked = check_text_guard(KeyGuard(), KEY.pattern, TEXTS, seed=7)
    assert isinstance(checked, TextGuardChecked)
    assert checked.texts == len(TEXTS)


def test_forbidden_may_be_literal_texts() -> None:
    check_text_guard(KeyGuard(), ["sk-abc12345", "sk-aaaaaaaa"], TEXTS[:3], random_splits=5)


def test_a_factory_is_called_for_each_run() -> None:
    made: list[KeyGuard] = []

    def fresh() -> KeyGuard:
        made.append(KeyGuard())
        return made[-1]

    checked = check_text_guard(fresh, KEY, ["sk-abc12345 x"], random_splits=3)
    assert len(made) == checked.runs


def test_a_leaky_guard_is_caught_naming_the_text_the_split_and_the_release() -> None:
    with pytest.raises(AssertionError) as caught:
        check_text_guard(LeakyGuard(), KEY, ["here is sk-abc12345, use it"])
    message = str(caught.value)
    assert "'here is sk-abc12345, use it'" in message  # the text
    assert "streamed as deltas ['here is " in message  # the split
    assert "the TextDeltas together was" in message  # the release that leaked
    assert "sk-abc12345" in message


def test_the_secret_forms_are_forbidden_without_a_guard_between() -> None:
    class Unmasking:
        """Puts the secret back in what the redactor masked."""

        name = "unmasking"

        @seamkit.hookimpl
        def on_text_delta(
            self, ctx: seamkit.HookContext, text: str, final: bool
        ) -> F.TextDeltaFlow:
            return F.RewriteText(text.replace("***", "tok-5e1d9")) if "***" in text else None

    with pytest.raises(AssertionError, match="leaked 'tok-5e1d9'"):
        check_text_guard(Unmasking(), [], ["use tok-5e1d9"], secrets=["tok-5e1d9"])


class Patterned:
    """A hook that asks the run's redactor to mask keys (``redact_patterns``)
    and has no text guard of its own."""

    name = "patterned"
    redact_patterns = (KEY.pattern,)

    @seamkit.hookimpl
    def on_pre_llm(self, ctx: seamkit.HookContext, request: seamkit.ModelRequest) -> None:
        return None


def test_redact_patterns_mask_the_kernels_text_but_guard_no_stream() -> None:
    """A hook's ``redact_patterns`` mask what the kernel writes (outcomes,
    diagnostics, logs); they are not a text guard: the stream is guarded for
    a pattern by an ``on_text_delta`` hook (the guide's Guards), so the kit,
    asked about them alone, finds the leak."""
    with pytest.raises(AssertionError, match="sk-abc12345"):
        check_text_guard(Patterned(), KEY, ["key sk-abc12345 here"], random_splits=0)

    agent = seamkit.Agent(
        seamkit.testing.ScriptedModel([]), hooks=[Patterned()], plugin_hooks=False
    )
    assert agent.redactor("failed on sk-abc12345") == "failed on ***"
