"""How text guards' holds add up at ``on_text_delta``: the one rule the
dispatcher (several hooks) and the run's release of streamed text (the
redactor and the hooks) both follow.

Guards run in order on the text not yet released, and each one narrows what
may leave: a `seamkit.flow.Hold` keeps the last characters of the text back;
a `seamkit.flow.RewriteText` replaces the text, and of the replacement only
the prefix it shares with what could leave before may leave now (what the
rewrite changed waits for the next delta, or the end of the turn), less
what it holds itself. So what is released is the longest prefix of the
final text that every guard released, and the rule is associative: a stack
of guards nested in another behaves as the same guards flat.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import flow as F

__all__ = ["Held"]


@dataclass(frozen=True, slots=True)
class Held:
    """The unreleased text after some guards: ``text`` (as they left it),
    of which the first ``upto`` characters may leave; ``rewritten`` when one
    of them replaced it. ``Held.of(text)``: before any guard."""

    text: str
    upto: int
    rewritten: bool = False

    @classmethod
    def of(cls, text: str) -> Held:
        """``text`` before any guard: all of it may leave."""
        return cls(text, len(text))

    def then(self, flow: F.Hold | F.RewriteText) -> Held:
        """What the next guard's ``flow`` makes of this."""
        if type(flow) is F.Hold:
            return Held(self.text, min(self.upto, _before(self.text, flow.keep)), self.rewritten)
        assert type(flow) is F.RewriteText
        after = flow.text
        shared = _shared(self.text, self.upto, after)
        return Held(after, min(shared, _before(after, flow.keep)), True)

    @property
    def keep(self) -> int:
        """How many characters at the end wait."""
        return len(self.text) - self.upto

    def flow(self) -> F.Hold | F.RewriteText:
        """The one flow that has the same effect as the guards together."""
        return F.RewriteText(self.text, self.keep) if self.rewritten else F.Hold(self.keep)

    @property
    def released(self) -> str:
        """What may leave now."""
        return self.text[: self.upto]

    @property
    def kept(self) -> str:
        """What waits for more text."""
        return self.text[self.upto :]


def _before(text: str, keep: int) -> int:
    """Where the last ``keep`` characters of ``text`` begin."""
    return max(0, len(text) - keep)


def _shared(before: str, upto: int, after: str) -> int:
    """How long a prefix of ``after`` is the same as ``before[:upto]``."""
    shared = 0
    for mine, theirs in zip(before[:upto], after, strict=False):
        if mine != theirs:
            break
        shared += 1
    return shared
