"""The hook a ``guard`` entry builds: it masks or blocks what matches its
patterns in the user's input, the model's text and tool results."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import seamkit
from seamkit.flow import (
    Hold,
    PostToolUseFlow,
    RequestStartFlow,
    RewriteMessages,
    RewriteResult,
    RewriteText,
    Terminate,
    TextDeltaFlow,
)
from seamkit.plugins import BuildContext

from ._config import GuardHookConfig
from ._patterns import longest_match

if TYPE_CHECKING:
    import regex

__all__ = ["GuardHook"]


class GuardHook:
    """The hook a ``guard`` entry builds (or one made in code:
    ``GuardHook(GuardHookConfig(...))``).

    One object serves every run at once, so it keeps no state between calls:
    at ``on_text_delta`` the text it is given is all that was not released,
    and what it holds back comes again with the next delta.

    ``redact_patterns`` (the patterns, for ``action: mask``) is read by the
    kernel, whose redactor then masks them in the run's logs, diagnostics
    and outcome texts too.
    """

    def __init__(self, config: GuardHookConfig, build: BuildContext | None = None) -> None:
        import regex  # lazy: only a guard that is built needs it

        self.config = config
        self._compiled: tuple[regex.Pattern[str], ...] = tuple(
            regex.compile(p) for p in config.patterns
        )
        windows: list[int] = []
        for pattern in config.patterns:
            longest = longest_match(pattern)
            if longest is None:
                assert config.hold is not None, "checked by GuardHookConfig"
                longest = config.hold
            windows.append(longest)
        self.windows: tuple[int, ...] = tuple(windows)
        """Each pattern's hold window: its longest match, or ``hold`` when unbounded."""
        self.redact_patterns: tuple[str, ...] = (
            tuple(config.patterns) if config.action == "mask" else ()
        )
        """What the run's redactor masks too (the patterns, when masking)."""

    # --- what it does with a text -------------------------------------------

    def mask(self, text: str) -> str:
        """``text`` with every match replaced by ``replacement``: matches of
        all patterns are found in the text as given, and each run of
        overlapping ones becomes one replacement."""
        spans = [
            m.span()
            for pattern in self._compiled
            for m in pattern.finditer(text)
            if m.end() > m.start()
        ]
        return self._replaced(text, spans)

    def first_match(self, text: str) -> int | None:
        """The index of the first pattern that matches somewhere in ``text``."""
        for index, pattern in enumerate(self._compiled):
            if any(m.end() > m.start() for m in pattern.finditer(text)):
                return index
        return None

    def unsettled(self, text: str) -> int:
        """How many characters at the end of ``text`` could still become (the
        start of) a match as more text arrives: the suffix from the earliest
        partial match, at most the pattern's window - 1 characters."""
        n = len(text)
        cut = n
        for pattern, window in zip(self._compiled, self.windows, strict=True):
            for m in pattern.finditer(text, partial=True):
                start, end = m.span()
                if m.partial and end > start:
                    cut = min(cut, max(start, n - (window - 1)))
        return n - cut

    def scan(self, text: str) -> tuple[str, int]:
        """``text`` of a stream as it may be released now, and how many
        characters at its end wait: each settled match replaced, the suffix
        that could still become or grow a match held (at most the window - 1
        of its pattern), a match never cut in two by the hold."""
        n = len(text)
        cut = n
        spans: list[tuple[int, int]] = []
        for pattern, window in zip(self._compiled, self.windows, strict=True):
            for m in pattern.finditer(text, partial=True):
                start, end = m.span()
                if end == start:
                    continue
                if m.partial:
                    cut = min(cut, max(start, n - (window - 1)))
                elif n - start < window and pattern.fullmatch(text, start, partial=True):
                    cut = min(cut, start)  # complete, but it could still grow
                else:
                    spans.append((start, end))
        spans.sort()
        for start, end in reversed(spans):  # a match across the cut waits whole
            if start < cut < end:
                cut = start
        head = self._replaced(text[:cut], [s for s in spans if s[1] <= cut])
        return head + text[cut:], n - cut

    def _replaced(self, text: str, spans: list[tuple[int, int]]) -> str:
        if not spans:
            return text
        spans = sorted(spans)
        pieces: list[str] = []
        done = 0
        start, end = spans[0]
        for next_start, next_end in spans[1:]:
            if next_start < end:  # overlapping: one replacement
                end = max(end, next_end)
                continue
            pieces += (text[done:start], self.config.replacement)
            done, start, end = end, next_start, next_end
        pieces += (text[done:start], self.config.replacement, text[end:])
        return "".join(pieces)

    def reason(self, index: int) -> str:
        """Why a block ended the run: ``reason``, or the guard and the index
        of its pattern that matched (never the text that matched)."""
        if self.config.reason is not None:
            return self.config.reason
        name = f"guard {self.config.name!r}" if self.config.name else "a guard"
        return f"{name} blocked it: its pattern {index} matched"

    # --- the events ------------------------------------------------------------

    @seamkit.hookimpl
    def on_request_start(
        self, ctx: seamkit.HookContext, messages: tuple[seamkit.Message, ...]
    ) -> RequestStartFlow:
        """Mask the user's messages (`RewriteMessages`), or `Terminate` when
        one matches; ``None`` when none does."""
        users = [m for m in messages if m.role == "user"]
        if self.config.action == "block":
            for message in users:
                for text in _texts(message):
                    index = self.first_match(text)
                    if index is not None:
                        return Terminate(self.reason(index))
            return None
        rewritten = tuple(self._masked_message(m) if m.role == "user" else m for m in messages)
        if all(a is b for a, b in zip(rewritten, messages, strict=True)):
            return None
        return RewriteMessages(rewritten)

    @seamkit.hookimpl
    def on_text_delta(self, ctx: seamkit.HookContext, text: str, final: bool) -> TextDeltaFlow:
        """Mask: the text with its settled matches replaced, holding what
        could still become a match (`RewriteText`, or `Hold` when nothing was
        replaced); at ``final`` every match replaced and nothing held.
        Block: `Terminate` once a match exists, holding what could become one
        until then."""
        if self.config.action == "block":
            index = self.first_match(text)
            if index is not None:
                return Terminate(self.reason(index))
            keep = 0 if final else self.unsettled(text)
            return Hold(keep) if keep else None
        if final:
            masked, keep = self.mask(text), 0
        else:
            masked, keep = self.scan(text)
        if masked != text:
            return RewriteText(masked, keep)
        return Hold(keep) if keep else None

    @seamkit.hookimpl
    def on_post_tool_use(
        self, ctx: seamkit.HookContext, call: seamkit.ToolCall, result: seamkit.ToolResult
    ) -> PostToolUseFlow:
        """Mask the result (`RewriteResult`), or `Terminate` when it matches
        (the kernel withholds it); ``None`` when it does not match."""
        if self.config.action == "block":
            index = self.first_match(result.content)
            return None if index is None else Terminate(self.reason(index))
        masked = self.mask(result.content)
        return None if masked == result.content else RewriteResult(masked)

    def _masked_message(self, message: seamkit.Message) -> seamkit.Message:
        content = message.content
        if isinstance(content, str):
            masked = self.mask(content)
            return message if masked == content else message.model_copy(update={"content": masked})
        if not content:
            return message
        parts: list[dict[str, Any]] = []
        changed = False
        for part in content:
            text = part.get("text") if part.get("type") == "text" else None
            if isinstance(text, str):
                masked = self.mask(text)
                if masked != text:
                    part, changed = {**part, "text": masked}, True
            parts.append(part)
        return message.model_copy(update={"content": parts}) if changed else message


def _texts(message: seamkit.Message) -> list[str]:
    """The texts of a message: its string content, or each text part."""
    content = message.content
    if isinstance(content, str):
        return [content]
    if not content:
        return []
    return [
        p["text"] for p in content if p.get("type") == "text" and isinstance(p.get("text"), str)
    ]
