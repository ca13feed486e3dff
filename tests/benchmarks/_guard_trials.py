"""The leak trials' material for ``bench_guard``: seeded secrets and pattern
matches, the answers that embed them, their splits into deltas, and the
detector that counts leaked characters."""

from __future__ import annotations

import base64
import itertools
import json
import random
import string
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import quote, quote_plus

from seamkit import Redactor

__all__ = [
    "PATTERNS",
    "Item",
    "Tally",
    "leaked_chars",
    "pattern_items",
    "secret_items",
    "splits",
]

PATTERNS = (
    r"\b\d{4}(?: ?\d{4}){3}\b",  # a card number
    r"sk-[A-Za-z0-9]{20}",  # an API-key shape
    r"[A-Za-z0-9._%+-]{1,32}@[A-Za-z0-9-]{1,32}\.[A-Za-z]{2,6}",  # an e-mail (bounded)
)
"""The guard's three patterns (each bounded: the guard derives its hold window)."""

SPECIAL = '/+=&%"\\'
"""Characters with escaped (JSON, repr), URL and base64 forms unlike their own."""

ALNUM = string.ascii_letters + string.digits

TEMPLATES = (
    "Sure. The value you asked for is {x} and nothing else; keep it out of the logs.",
    "{x}",
    "{x} is what the configuration holds.",
    "Here it is: {x}",
    'The request carried "{x}" in its header, which is why it was refused.',
    "I found {x}, then {x} again in the second file.",
)
"""Answers embedding a secret form or a match ``x``: in the middle, alone, at
the start, at the end, quoted, twice."""


@dataclass(frozen=True)
class Item:
    """One leak trial's subject: the ``answer`` the model streams, the run's
    ``secrets`` (empty for a pattern match), and how the answer embeds it."""

    label: str
    answer: str
    secrets: tuple[str, ...]
    detector: Redactor
    expected: str
    """The answer as the guards should release it (the detector's masking)."""


def _secret(rng: random.Random, i: int) -> str:
    kind = i % 4
    if kind == 0:  # alnum
        return "".join(rng.choices(ALNUM, k=rng.randint(10, 40)))
    if kind == 1:  # alnum with a few specials
        chars = rng.choices(ALNUM, k=rng.randint(12, 32))
        for _ in range(rng.randint(2, 5)):
            chars.insert(rng.randrange(len(chars) + 1), rng.choice(SPECIAL))
        return "".join(chars)
    if kind == 2:  # mostly specials
        return "".join(rng.choices(SPECIAL + "ab12", k=rng.randint(8, 20)))
    prefix = rng.choice(("sk-live-", "ghp_", "xoxb-", "AKIA"))  # token shapes
    return prefix + "".join(rng.choices(ALNUM + "_-", k=rng.randint(16, 36)))


def _form(secret: str, i: int) -> tuple[str, str]:
    """``secret`` as the ``i``-th answer writes it: (how, text)."""
    raw = secret.encode()
    forms = (
        ("plain", secret),
        ("json", json.dumps(secret)[1:-1]),
        ("repr", repr(secret)[1:-1]),
        ("url", quote(secret, safe="")),
        ("url+", quote_plus(secret, safe="")),
        ("base64", base64.b64encode(raw).decode()),
        ("base64url", base64.urlsafe_b64encode(raw).decode().rstrip("=")),
        ("basic", "Basic " + base64.b64encode(b"user:" + raw).decode()),
    )
    return forms[i % len(forms)]


def secret_items(count: int, seed: int = 28) -> list[Item]:
    """``count`` seeded secrets, each embedded (in one of its forms) in an
    answer; the run has it and the next two secrets (held back too)."""
    rng = random.Random(seed)
    secrets = [_secret(rng, i) for i in range(count + 2)]
    items = []
    for i in range(count):
        how, text = _form(secrets[i], i // 4)
        answer = TEMPLATES[i % len(TEMPLATES)].format(x=text)
        run_secrets = tuple(secrets[i : i + 3])
        detector = Redactor(run_secrets)
        items.append(Item(f"secret {i} ({how})", answer, run_secrets, detector, detector(answer)))
    return items


def _match(rng: random.Random, i: int) -> tuple[str, str]:
    kind = i % 3
    if kind == 0:
        groups = ["".join(rng.choices(string.digits, k=4)) for _ in range(4)]
        return "card", (" " if rng.random() < 0.7 else "").join(groups)
    if kind == 1:
        return "api-key", "sk-" + "".join(rng.choices(ALNUM, k=20))
    local = "".join(rng.choices(ALNUM + "._%+-", k=rng.randint(1, 24)))
    domain = "".join(rng.choices(string.ascii_lowercase + "-", k=rng.randint(2, 20)))
    tld = "".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 6)))
    return "e-mail", f"{rng.choice(ALNUM)}{local}@{rng.choice(ALNUM)}{domain}.{tld}"


def pattern_items(count: int, seed: int = 2028) -> list[Item]:
    """``count`` seeded matches of `PATTERNS`, each embedded in an answer."""
    rng = random.Random(seed)
    detector = Redactor(patterns=PATTERNS)
    items = []
    for i in range(count):
        how, text = _match(rng, i)
        answer = TEMPLATES[i % len(TEMPLATES)].format(x=text)
        items.append(Item(f"match {i} ({how})", answer, (), detector, detector(answer)))
    return items


def splits(
    text: str, randoms: int, rng: random.Random, offsets: int | None = None
) -> Iterator[list[str]]:
    """``text`` in deltas: split in two at every offset (or ``offsets`` of
    them, evenly spread), then ``randoms`` random multi-splits (2 to 40 cuts,
    drawn with replacement from 0..len: some deltas are empty, one may be
    the whole text)."""
    n = len(text)
    every = range(1, n)
    if offsets is not None and offsets < len(every):
        every = range(1, n, max(1, n // offsets))
    for cut in every:
        yield [text[:cut], text[cut:]]
    for _ in range(randoms):
        cuts = sorted(rng.choices(range(n + 1), k=rng.randint(2, 40)))
        bounds = [0, *cuts, n]
        yield [text[a:b] for a, b in itertools.pairwise(bounds)]


def leaked_chars(detector: Redactor, text: str) -> int:
    """How many characters of ``text`` belong to a secret form or a pattern
    match: 0 when ``detector(text) == text``. (The count reads the
    detector's spans, which its masking is built on.)"""
    if detector(text) == text:
        return 0
    covered = 0
    end = 0
    for a, b in detector.spans(text):
        if b > end:
            covered += b - max(a, end)
            end = b
    return covered


@dataclass
class Tally:
    """What a set of trials inspected and found."""

    trials: int = 0
    releases: int = 0
    """Text deltas (content chunks) inspected one by one."""
    texts: int = 0
    """Whole texts inspected: the concatenations, outputs and transcripts."""
    leaked_releases: int = 0
    leaked_chars: int = 0
    altered: int = 0
    """Trials whose released text was not the answer masked as expected (no leak)."""
    errors: int = 0
    examples: list[str] = field(default_factory=list)

    def note(self, line: str) -> None:
        if len(self.examples) < 5:
            self.examples.append(line)

    def summary(self) -> dict[str, object]:
        return {
            "trials": self.trials,
            "releases": self.releases,
            "texts": self.texts,
            "leaked_releases": self.leaked_releases,
            "leaked_chars": self.leaked_chars,
            "altered": self.altered,
            "errors": self.errors,
            "examples": list(self.examples),
        }
