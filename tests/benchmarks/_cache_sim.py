"""A prompt-cache simulator that follows Anthropic's documented rules, for the
caching benchmark (``bench_anthropic_cache``) and its tests.

It answers "what would the Messages API report as cache reads and writes for
this request body, sent at this moment, after those earlier ones?" The rules,
from https://platform.claude.com/docs/en/build-with-claude/prompt-caching
(fetched through the stored-pages search on 2026-11-27: the English page and
its ja copy ``/docs/ja/build-with-claude/prompt-caching.md``):

- The prompt is one prefix in the order **tools -> system -> messages**; a
  cache entry is the prefix up to and including a block that carries
  ``cache_control`` (a *breakpoint*); writes happen only at breakpoints.
- At most **4** breakpoints in a request (more is an error here, as it is a
  400 from the API). A top-level ``cache_control`` (automatic caching) puts
  one on the last cacheable block.
- A breakpoint whose prefix is shorter than the model's **minimum cacheable
  length** is ignored: nothing is read or written there, and no error. The
  minimum is a parameter; `minimum_for` looks it up in `MINIMUMS`.
- **Reads**: at each breakpoint the API looks for a cached prefix ending at
  that block or at up to `LOOKBACK` (20) blocks before it; the longest one
  found is read, and every hit refreshes the entry's TTL. The official
  English excerpt the search returned does not quote the number; it is the
  figure the design note, https://dev.to/ji_ai/claude-prompt-caching-why-cachereadinputtokens-stays-0-2c7d
  and https://subhsen.dev/blog/prompt-cache-is-prefix-hash give, and what
  other simulators use (dwctl's ``prompt_cache/parse.rs``: "Anthropic's
  documented 20-block look-back"). It is a parameter.
- **Writes**: the tokens from the end of the read prefix up to the last
  breakpoint (``cache_creation_input_tokens``); everything after the last
  breakpoint is plain ``input_tokens``.
- TTL ``5m`` (the default) or ``1h``; longer TTLs must come before shorter
  ones in one request.
- Invalidation is tiered: the model and the tools are the start of the
  prefix; changing ``tool_choice`` or ``thinking`` invalidates the messages
  part only (they are mixed into the hash where the messages start).

The minimums (`MINIMUMS`) are the official table as quoted in
https://github.com/anthropics/anthropic-sdk-python/issues/1194 (4096 for
Opus 4.6, Opus 4.5 and Haiku 4.5; 1024 for Sonnet 4.6, Sonnet 4.5, Opus 4.1,
Opus 4, Sonnet 4 and Sonnet 3.7; 2048 for Haiku 3.5 and Haiku 3), plus later
models from secondary pages (https://docs.litellm.ai/docs/completion/prompt_caching.md,
https://dev.to/creeta/claudes-prompt-cache-fails-silently-below-1024-tokens-1ch1):
512 for the 5 generation, 1024 for Opus 4.8, 2048 for Opus 4.7.

Tokens are estimated, not counted: ``len(canonical JSON of a block) // 4``
(the scripted model's convention); the benchmark's figure is a share, so the
estimate's bias mostly cancels.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "LOOKBACK",
    "MAX_BREAKPOINTS",
    "MINIMUMS",
    "TTL_SECONDS",
    "Block",
    "CacheSimulator",
    "SimUsage",
    "blocks_of",
    "canonical",
    "estimate_tokens",
    "minimum_for",
    "read_shares",
]

LOOKBACK = 20
"""Blocks before a breakpoint (the breakpoint's own included as the 0th) at
which a cached prefix is looked for."""

MAX_BREAKPOINTS = 4
TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}

MINIMUMS: dict[str, int] = {
    "claude-opus-5": 512,
    "claude-sonnet-5": 512,
    "claude-haiku-5": 512,
    "claude-fable-5": 512,
    "claude-mythos-5": 512,
    "claude-opus-4-8": 1024,
    "claude-opus-4-7": 2048,
    "claude-opus-4-6": 4096,
    "claude-opus-4-5": 4096,
    "claude-opus-4-1": 1024,
    "claude-opus-4": 1024,
    "claude-sonnet-4-6": 1024,
    "claude-sonnet-4-5": 1024,
    "claude-sonnet-4": 1024,
    "claude-3-7-sonnet": 1024,
    "claude-haiku-4-5": 4096,
    "claude-3-5-haiku": 2048,
    "claude-3-haiku": 2048,
}
"""Minimum cacheable prefix, in tokens, by model-name prefix (the longest
matching prefix wins); see the module docstring for the sources."""

DEFAULT_MINIMUM = 1024
UNCACHEABLE = frozenset({"thinking", "redacted_thinking"})


def minimum_for(model: str, table: Mapping[str, int] = MINIMUMS) -> int:
    """The minimum cacheable length of ``model``: the value of the longest
    prefix of its name in ``table``, else `DEFAULT_MINIMUM`."""
    found = [p for p in table if model.startswith(p)]
    return table[max(found, key=len)] if found else DEFAULT_MINIMUM


def canonical(value: object) -> str:
    """Compact JSON with sorted keys: the same bytes for the same value."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def estimate_tokens(value: object) -> int:
    """The simulator's token estimate of a block: its canonical JSON's length // 4."""
    return len(canonical(value)) // 4


@dataclass(frozen=True)
class Block:
    """One block of the rendered prompt: where it is (``tools``, ``system`` or
    ``messages``), its tokens, the hash of the prefix ending with it, the
    prefix's tokens, and its breakpoint's TTL when it carries one."""

    part: str
    tokens: int
    prefix_hash: str
    prefix_tokens: int
    ttl: str | None


def _strip(block: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k != "cache_control"}


def _ttl(block: Mapping[str, Any]) -> str | None:
    control = block.get("cache_control")
    if control is None:
        return None
    if not isinstance(control, Mapping) or control.get("type") != "ephemeral":
        raise ValueError(f"cache_control must be {{'type': 'ephemeral'}}, not {control!r}")
    ttl = control.get("ttl", "5m")
    if ttl not in TTL_SECONDS:
        raise ValueError(f"cache_control ttl must be '5m' or '1h', not {ttl!r}")
    return str(ttl)


def _content(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise ValueError(f"a message's content must be a string or a list, not {content!r}")
    return [dict(b) for b in content]


def blocks_of(body: Mapping[str, Any]) -> list[Block]:
    """The rendered prompt of a request ``body``, block by block, in the order
    tools -> system -> messages, each with its chained prefix hash.

    The hash starts from the model's name; ``tool_choice`` and ``thinking`` are
    mixed in where the messages start, so changing them keeps the tools and
    system entries and loses the messages'. A top-level ``cache_control``
    puts a breakpoint on the last cacheable block."""
    parts: list[tuple[str, dict[str, Any], object]] = []
    for tool in body.get("tools") or ():
        parts.append(("tools", dict(tool), _strip(tool)))
    system = body.get("system")
    if isinstance(system, str):
        system = [{"type": "text", "text": system}]
    for block in system or ():
        parts.append(("system", dict(block), _strip(block)))
    for message in body.get("messages") or ():
        for i, block in enumerate(_content(message)):
            # the role and the message's start are part of what the model sees
            parts.append(("messages", block, {"role": message["role"], "at": i, **_strip(block)}))
    automatic = _ttl(body) if "cache_control" in body else None
    if automatic is not None:
        for _, block, _ in reversed(parts):
            if block.get("type") not in UNCACHEABLE and block.get("text", None) != "":
                block["cache_control"] = body["cache_control"]
                break
    digest = hashlib.sha256(canonical({"model": body.get("model")}).encode()).hexdigest()
    out: list[Block] = []
    total = 0
    boundary_mixed = False
    for part, block, hashed in parts:
        if part == "messages" and not boundary_mixed:
            settings = {"tool_choice": body.get("tool_choice"), "thinking": body.get("thinking")}
            digest = hashlib.sha256((digest + canonical(settings)).encode()).hexdigest()
            boundary_mixed = True
        ttl = _ttl(block)
        if ttl is not None and block.get("type") in UNCACHEABLE:
            raise ValueError(f"a {block.get('type')} block cannot carry cache_control")
        tokens = estimate_tokens(hashed)
        total += tokens
        digest = hashlib.sha256((digest + canonical(hashed)).encode()).hexdigest()
        out.append(Block(part, tokens, digest, total, ttl))
    return out


@dataclass(frozen=True)
class SimUsage:
    """What the API would report: ``input_tokens`` (after the last breakpoint),
    ``cache_read_input_tokens``, ``cache_creation_input_tokens``."""

    input_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int

    @property
    def total(self) -> int:
        """Every input token of the request (the three counts summed)."""
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens

    @property
    def read_share(self) -> float:
        """The share of the request's input tokens read from cache."""
        return self.cache_read_input_tokens / self.total if self.total else 0.0

    def as_wire(self) -> dict[str, int]:
        """The usage fields as the API spells them."""
        return {
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
        }


@dataclass
class _Entry:
    tokens: int
    ttl: str
    expires_at: float


@dataclass
class CacheSimulator:
    """The cache of one organisation: entries by prefix hash, each with its
    tokens and expiry. `answer` takes a request body and the moment it is sent
    (seconds on any clock the caller keeps), updates the entries and returns
    the usage the API would report.

    ``minimum``: the minimum cacheable length; ``None`` looks it up by the
    body's model name (`minimum_for`)."""

    minimum: int | None = None
    lookback: int = LOOKBACK
    entries: dict[str, _Entry] = field(default_factory=dict)
    history: list[SimUsage] = field(default_factory=list)

    def answer(self, body: Mapping[str, Any], now: float) -> SimUsage:
        """The usage of ``body`` sent at ``now``, after every earlier answer."""
        blocks = blocks_of(body)
        marked = [i for i, b in enumerate(blocks) if b.ttl is not None]
        if len(marked) > MAX_BREAKPOINTS:
            raise ValueError(
                f"{len(marked)} cache_control breakpoints; the API takes {MAX_BREAKPOINTS}"
            )
        ttls = [TTL_SECONDS[blocks[i].ttl or "5m"] for i in marked]
        if any(a < b for a, b in itertools.pairwise(ttls)):
            raise ValueError("a longer cache TTL must come before a shorter one")
        minimum = minimum_for(str(body.get("model", ""))) if self.minimum is None else self.minimum
        valid = [i for i in marked if blocks[i].prefix_tokens >= minimum]
        total = blocks[-1].prefix_tokens if blocks else 0
        if not valid:
            usage = SimUsage(total, 0, 0)
            self.history.append(usage)
            return usage
        hit = -1
        for bp in valid:
            for i in range(bp, max(-1, bp - self.lookback - 1), -1):
                entry = self.entries.get(blocks[i].prefix_hash)
                if entry is not None and entry.expires_at > now:
                    hit = max(hit, i)
                    break
        read = blocks[hit].prefix_tokens if hit >= 0 else 0
        if hit >= 0:
            entry = self.entries[blocks[hit].prefix_hash]
            entry.expires_at = now + TTL_SECONDS[entry.ttl]
        last = valid[-1]
        write = blocks[last].prefix_tokens - read
        for i in valid:
            ttl = blocks[i].ttl or "5m"
            known = self.entries.get(blocks[i].prefix_hash)
            if known is None or known.expires_at <= now or i > hit:
                self.entries[blocks[i].prefix_hash] = _Entry(
                    blocks[i].prefix_tokens, ttl, now + TTL_SECONDS[ttl]
                )
            else:
                known.expires_at = max(known.expires_at, now + TTL_SECONDS[ttl])
        usage = SimUsage(total - read - write, read, write)
        self.history.append(usage)
        return usage

    def totals(self) -> SimUsage:
        """Every answer's usage summed."""
        return SimUsage(
            sum(u.input_tokens for u in self.history),
            sum(u.cache_read_input_tokens for u in self.history),
            sum(u.cache_creation_input_tokens for u in self.history),
        )


def read_shares(usages: Sequence[SimUsage]) -> list[float]:
    """Each usage's share of input tokens read from cache."""
    return [u.read_share for u in usages]
