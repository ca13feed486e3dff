"""`Secret`: a value that reaches the code that uses it and nothing else; and
:func:`redact`, the one function that masks secrets in any text seamkit (or a
plugin) writes."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Generic, TypeVar
from urllib.parse import quote, quote_plus

from pydantic import BaseModel, GetCoreSchemaHandler
from pydantic_core import core_schema

__all__ = ["MASK", "Redactor", "Secret", "redact", "secret_json", "secret_texts"]

T = TypeVar("T")

MASK = "***"


class Secret(Generic[T]):
    """Wraps a value so it prints as ``***`` in reprs, logs, schemas and dumps.

    Tools receive the plain value (the kernel unwraps it when injecting);
    everything else sees the mask. ``source`` keeps the text the value came
    from in a manifest (``${secret:API_KEY}``), which is what identities and
    the injected messages show; ``parts`` are the secret pieces of a value
    that mixes them into other text (``"Bearer ${secret:TOKEN}"``), masked on
    their own wherever the value is (:func:`secret_texts`).
    """

    __slots__ = ("_parts", "_source", "_value")

    def __init__(self, value: T, *, source: str | None = None, parts: tuple[str, ...] = ()) -> None:
        self._value = value
        self._source = source
        self._parts = parts

    def get_secret_value(self) -> T:
        """The wrapped value. Call it only where the value is really used."""
        return self._value

    @property
    def source(self) -> str | None:
        """The manifest text this secret was read from, if any."""
        return self._source

    @property
    def parts(self) -> tuple[str, ...]:
        """The secret pieces inside the value, when it holds other text too."""
        return self._parts

    def __repr__(self) -> str:
        return f"Secret({MASK})"

    def __str__(self) -> str:
        return MASK

    def __format__(self, spec: str) -> str:
        return MASK

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and bool(self._value == other._value)

    def __hash__(self) -> int:
        return hash((Secret, self._value))

    def __reduce__(self) -> Any:
        raise TypeError("a Secret cannot be pickled")

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source_type: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        def wrap(value: Any) -> Secret[Any]:
            return value if isinstance(value, Secret) else Secret(value)

        return core_schema.no_info_plain_validator_function(
            wrap,
            serialization=core_schema.plain_serializer_function_ser_schema(
                lambda v: MASK, when_used="always"
            ),
            json_schema_input_schema=core_schema.str_schema(),
        )


_PLAIN = frozenset({str, int, float, bool, type(None), bytes})


def secret_texts(*values: Any) -> list[str]:
    """The plain text of every `Secret` inside ``values`` (mappings, lists,
    tuples, sets and pydantic models walked; an `ActionContext` is a mapping)."""
    found: list[str] = []
    stack = list(values)
    while stack:
        value = stack.pop()
        if type(value) in _PLAIN:  # most values: nothing to walk
            continue
        if isinstance(value, Secret):
            plain = value.get_secret_value()
            if plain is not None and plain != "":
                found.append(plain if isinstance(plain, str) else str(plain))
            found.extend(part for part in value.parts if part)
        elif isinstance(value, Mapping):
            stack.extend(value.values())
        elif isinstance(value, BaseModel):
            stack.extend(value.__dict__.values())
        elif isinstance(value, list | tuple | set | frozenset):
            stack.extend(value)
    return found


_MIN_ENCODED = 4
"""Encoded forms shorter than this are not masked (they would mask noise)."""


def _forms(plain: str) -> set[str]:
    raw = plain.encode("utf-8")
    forms = {
        plain,
        repr(plain)[1:-1],
        json.dumps(plain)[1:-1],
        json.dumps(plain, ensure_ascii=False)[1:-1],
        quote(plain, safe=""),
        quote_plus(plain, safe=""),
    }
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        text = encode(raw).decode("ascii")
        forms |= {text, text.rstrip("=")}
        # Inside a longer encoded text (base64("user:" + secret), a Basic-auth
        # header) the secret sits at one of three alignments: mask the
        # characters that depend on its bytes alone, at each of them.
        for shift in (0, 1, 2):
            shifted = encode(bytes(shift) + raw).decode("ascii")
            forms.add(shifted[-(-8 * shift // 6) : 8 * (shift + len(raw)) // 6])
    return {f for f in forms if len(f) >= _MIN_ENCODED or f == plain}


class Redactor:
    """The one masker: replaces secrets, in every form :func:`redact`
    knows, and text matching the given regular expressions with ``***``.

    Built once for a set of secrets and patterns and then called on every
    text, so the encoded forms are computed once. ``ctx.redactor`` is the
    run's (the agent's manifest secrets and the run's context secrets);
    `extend` adds more. A redactor with nothing to mask returns its input.
    """

    __slots__ = ("_firsts", "_forms", "_longest", "_patterns", "_secrets", "_starts")

    def __init__(
        self,
        secrets: Iterable[str | Secret[Any]] = (),
        patterns: Iterable[str | re.Pattern[str]] = (),
    ) -> None:
        forms: set[str] = set()
        for secret in secrets:
            plain = secret.get_secret_value() if isinstance(secret, Secret) else secret
            if plain is not None and str(plain):
                forms |= _forms(str(plain))
        self._set_forms(forms)
        self._patterns = tuple(re.compile(p) if isinstance(p, str) else p for p in patterns)
        self._secrets: Redactor | None = None

    def _set_forms(self, forms: Iterable[str]) -> None:
        # longest first: no partial masks
        self._forms = tuple(sorted(set(forms), key=len, reverse=True))
        self._longest = len(self._forms[0]) if self._forms else 0
        self._firsts = frozenset(form[0] for form in self._forms)
        # the proper prefixes of the forms: what a stream holds back
        self._starts = frozenset(form[:n] for form in self._forms for n in range(1, len(form)))

    def __call__(self, text: str) -> str:
        """``text`` with every secret form and every pattern match masked:
        all are found in the text as given, and each run of overlapping
        matches becomes one ``***`` (so a secret inside a pattern's match
        cannot break the match, nor a match leave part of a secret)."""
        found = self.spans(text)
        if not found:
            return text
        pieces: list[str] = []
        done = 0  # text before ``done`` is written
        start, end = found[0]
        for next_start, next_end in found[1:]:
            if next_start < end:  # overlapping: one mask
                end = max(end, next_end)
                continue
            pieces += (text[done:start], MASK)
            done, start, end = end, next_start, next_end
        pieces += (text[done:start], MASK, text[end:])
        return "".join(pieces)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Where the secret forms and the pattern matches are in ``text``:
        ``(start, end)`` pairs, sorted (they may overlap)."""
        found: list[tuple[int, int]] = []
        for form in self._forms:
            start = text.find(form)
            while start != -1:
                found.append((start, start + len(form)))
                start = text.find(form, start + len(form))  # as str.replace finds them
        for pattern in self._patterns:
            found.extend(m.span() for m in pattern.finditer(text) if m.end() > m.start())
        found.sort()
        return found

    def unfinished(self, text: str) -> int:
        """How many characters at the end of ``text`` a stream must hold back:
        the longest suffix that begins a secret form (in any encoding) without
        being all of it, widened to the start of any whole form it cuts into.

        What comes before them can be masked and released: no secret is cut
        in two by a release, and text that begins no secret is not held.
        """
        if not self._starts:
            return 0
        n = len(text)
        cut = n
        for i in range(max(0, n - self._longest + 1), n):
            if text[i] in self._firsts and text[i:] in self._starts:
                cut = i
                break
        if cut == n:
            return 0
        for start, end in reversed(self.spans(text)):  # a whole form across the cut
            if start < cut < end:
                cut = start
        return n - cut

    @property
    def secrets(self) -> Redactor:
        """This redactor without its patterns: the secrets alone (what the
        run's release of streamed text masks and holds; patterns are the
        text guards' to hold, at the events their hooks name)."""
        if not self._patterns:
            return self
        if self._secrets is None:
            alone = Redactor()
            alone._set_forms(self._forms)
            self._secrets = alone
        return self._secrets

    def __bool__(self) -> bool:
        """Whether this redactor masks anything at all."""
        return bool(self._forms or self._patterns)

    def extend(
        self,
        secrets: Iterable[str | Secret[Any]] = (),
        patterns: Iterable[str | re.Pattern[str]] = (),
    ) -> Redactor:
        """A redactor that masks what this one does, and ``secrets`` and
        ``patterns`` too (this one when there is nothing to add)."""
        more = Redactor(secrets, patterns)
        if not more:
            return self
        if not self:
            return more
        joined = Redactor()
        joined._set_forms((*self._forms, *more._forms))
        joined._patterns = (*self._patterns, *more._patterns)
        return joined

    def __repr__(self) -> str:
        return f"Redactor({len(self._forms)} secret forms, {len(self._patterns)} patterns)"


def redact(text: str, secrets: Iterable[str | Secret[Any]]) -> str:
    """``text`` with every secret masked as ``***``: its plain text, the
    escaped forms ``repr()`` and JSON give it, its URL encodings and its
    base64 encodings (standard and URL-safe, with or without padding, and
    inside a longer encoded text such as ``base64("user:" + secret)``).

    ``secrets`` are plain texts or `Secret` objects. Use it on everything you
    write that a person or a log can see: errors, logs, diagnostics, spans.
    To mask many texts with the same secrets, build one `Redactor`.
    """
    return Redactor(secrets)(text)


def secret_json(value: Any, *, reveal: bool = False, source: bool = False) -> Any:
    """The one way a `Secret` is written as JSON: the ``default=`` of
    `json.dumps` (or ``fallback=`` of pydantic's ``to_json``) wherever what is
    written may hold one.

    ::

        json.dumps(data, default=seamkit.secret_json)  # a secret is written "***"

    A `Secret` is written as ``***``; with ``source=True`` as the manifest
    text it came from (``${secret:API_KEY}``) when it has one; with
    ``reveal=True`` as its value, for a request body that must carry it
    (``functools.partial(seamkit.secret_json, reveal=True)``). Anything else
    is a `TypeError`, as without a ``default``."""
    if isinstance(value, Secret):
        if reveal:
            return value.get_secret_value()
        return (value.source or MASK) if source else MASK
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")
