"""How text guards' holds add up at ``on_text_delta``: the one rule the
dispatcher (several hooks) and the run's release of streamed text (the
redactor and the hooks) both follow.

Guards run in order on the text not yet released. A `seamkit.flow.Hold`
keeps the last characters of the text as it stands; a
`seamkit.flow.RewriteText` replaces the text, and what earlier guards held
is carried into the replacement: the same tail when the replacement still
ends with it, otherwise everything after the prefix the replacement shares
with what they released. So the text released is never longer than what any
guard released, and a stack of guards nested in another behaves as the same
guards flat.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import flow as F

__all__ = ["Held"]


@dataclass(frozen=True, slots=True)
class Held:
    """The unreleased text after some guards: ``text`` (as they left it),
    of which the last ``keep`` characters wait; ``rewritten`` when one of
    them replaced it."""

    text: str
    keep: int = 0
    rewritten: bool = False

    def then(self, flow: F.Hold | F.RewriteText) -> Held:
        """What the next guard's ``flow`` makes of this."""
        if type(flow) is F.Hold:
            return Held(self.text, max(self.keep, min(flow.keep, len(self.text))), self.rewritten)
        assert type(flow) is F.RewriteText
        after = flow.text
        carried = _carried(self.text, self.keep, after)
        return Held(after, max(carried, min(flow.keep, len(after))), True)

    def flow(self) -> F.Hold | F.RewriteText:
        """The one flow that has the same effect as the guards together."""
        return F.RewriteText(self.text, self.keep) if self.rewritten else F.Hold(self.keep)

    @property
    def released(self) -> str:
        """What may leave now."""
        return self.text[: len(self.text) - self.keep]

    @property
    def kept(self) -> str:
        """What waits for more text."""
        return self.text[len(self.text) - self.keep :] if self.keep else ""


def _carried(before: str, keep: int, after: str) -> int:
    """How many characters of ``after`` stay held when a guard replaced
    ``before``, whose last ``keep`` characters were held."""
    if keep == 0:
        return 0
    tail = before[len(before) - keep :]
    if after.endswith(tail):
        return keep
    released = before[: len(before) - keep]
    shared = 0
    for mine, theirs in zip(released, after, strict=False):
        if mine != theirs:
            break
        shared += 1
    return len(after) - shared
