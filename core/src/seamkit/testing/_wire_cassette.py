"""Wire cassettes: HTTP answers written down as text, for a provider's tests.

A cassette (a ``.http`` file) holds one or more raw HTTP responses::

    # Source: where this answer's shape comes from (repository, path, commit, licence)
    # expect-usage: {"input_tokens": 12, "output_tokens": 3}
    HTTP/1.1 200 OK
    content-type: text/event-stream

    data: {"choices": [...]}

    data: [DONE]

``#`` lines at the top are comments (the source, and optional directives of
the form ``# expect-NAME: JSON``: ``expect-usage`` states the turn's usage,
``expect-request`` a subset of every request body the cassette answers, for
`check_model_provider`); then the status line, the headers, a blank
line and the body. A ``text/event-stream`` body is one write per event
(events are separated by blank lines); any other body is one write. Several
responses in one file are separated by a line ``---`` (a 429 then a 200,
for a retry), each with its own status line, and may have comment lines of
their own. A server plays them in order and repeats the last one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from .._errors import WireCassetteError

__all__ = [
    "WireCassette",
    "WireResponse",
    "load_wire_cassette",
    "parse_wire_cassette",
]

_STATUS = re.compile(r"HTTP/\d(?:\.\d)? (\d{3})(?: (.*))?$")
_DIRECTIVE = re.compile(r"#\s*expect-([a-z_-]+):\s*(.+)$")
_SEPARATOR = "---"


@dataclass(frozen=True)
class WireResponse:
    """One HTTP response of a cassette: ``status``, ``reason``, the
    ``headers`` as written (names lower-cased) and the body as its
    ``writes`` (one per server-sent event for an event stream)."""

    status: int
    reason: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    writes: tuple[bytes, ...] = ()

    def header(self, name: str) -> str | None:
        """The value of header ``name`` (any case), or ``None``."""
        name = name.lower()
        return next((value for key, value in self.headers if key == name), None)

    @property
    def is_stream(self) -> bool:
        """Whether the body is a ``text/event-stream``."""
        return (self.header("content-type") or "").startswith("text/event-stream")

    @property
    def body(self) -> bytes:
        """The whole body."""
        return b"".join(self.writes)


@dataclass(frozen=True)
class WireCassette:
    """A loaded cassette: its ``responses`` in order, its ``comments`` (the
    ``#`` lines, without the ``#``), and its ``expect`` directives (``#
    expect-usage: {...}`` is ``expect["usage"]``, parsed as JSON)."""

    path: Path | None
    responses: tuple[WireResponse, ...]
    comments: tuple[str, ...] = ()
    expect: dict[str, object] = field(default_factory=dict)


def load_wire_cassette(path: str | Path) -> WireCassette:
    """The cassette in the ``.http`` file at ``path``; `WireCassetteError` (a
    ``ValueError``) naming the line when it is not one."""
    path = Path(path)
    return parse_wire_cassette(path.read_text(encoding="utf-8"), path=path)


def parse_wire_cassette(text: str, *, path: Path | None = None) -> WireCassette:
    """The cassette written in ``text`` (``path`` only names it in errors)."""
    where = str(path) if path is not None else "<cassette>"
    lines = text.replace("\r\n", "\n").split("\n")
    parts: list[list[tuple[int, str]]] = [[]]
    for number, line in enumerate(lines, 1):
        if line.rstrip() == _SEPARATOR:
            parts.append([])
        else:
            parts[-1].append((number, line))
    responses: list[WireResponse] = []
    comments: list[str] = []
    expect: dict[str, object] = {}
    for part in parts:
        responses.append(_response(part, where, comments, expect))
    return WireCassette(path, tuple(responses), tuple(comments), expect)


def _response(
    part: list[tuple[int, str]], where: str, comments: list[str], expect: dict[str, object]
) -> WireResponse:
    rows = iter(part)
    status_line: tuple[int, str] | None = None
    for number, line in rows:
        if line.startswith("#"):
            comments.append(line[1:].strip())
            directive = _DIRECTIVE.match(line)
            if directive:
                try:
                    expect[directive[1].replace("-", "_")] = json.loads(directive[2])
                except ValueError as exc:
                    raise WireCassetteError(
                        f"{where}:{number}: expect-{directive[1]} is not JSON ({exc})"
                    ) from None
        elif line.strip():
            status_line = (number, line.strip())
            break
    if status_line is None:
        raise WireCassetteError(f"{where}: a response has no status line (HTTP/1.1 200 OK)")
    number, line = status_line
    matched = _STATUS.match(line)
    if matched is None:
        raise WireCassetteError(
            f"{where}:{number}: {line!r} is not a status line; write e.g. 'HTTP/1.1 200 OK'"
        )
    headers: list[tuple[str, str]] = []
    for number, line in rows:
        if not line.strip():
            break
        name, colon, value = line.partition(":")
        if not colon or not name.strip():
            raise WireCassetteError(f"{where}:{number}: {line!r} is not a header (name: value)")
        headers.append((name.strip().lower(), value.strip()))
    body = "\n".join(line for _, line in rows).strip("\n")
    response = WireResponse(int(matched[1]), matched[2] or "", tuple(headers))
    if response.is_stream:
        events = [event for event in re.split(r"\n[ \t]*\n", body) if event.strip()]
        writes = tuple(f"{event}\n\n".encode() for event in events)
    else:
        writes = (body.encode(),) if body else ()
    return WireResponse(response.status, response.reason, response.headers, writes)
