"""A document's bytes as text: UTF-8 (a byte-order mark is allowed and
dropped), or a `Problem` at the first byte that is not."""

from __future__ import annotations

from .._errors import Problem

__all__ = ["decode"]

_MARKS = (  # byte-order marks of the encodings a file is most often saved in by mistake
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)


def decode(data: bytes) -> str | Problem:
    """``data`` decoded as UTF-8, or the `Problem` saying where it is not."""
    found = next((name for mark, name in _MARKS if data.startswith(mark)), None)
    if found is not None:
        return Problem(
            (),
            f"the file is {found} text, not UTF-8",
            hint="save it as UTF-8 (in most editors: 'Save with encoding' or 'Reopen with "
            "encoding', then UTF-8)",
            line=1,
            column=1,
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if data.count(0) * 4 > len(data):
            return Problem(
                (),
                "the file looks like UTF-16 or UTF-32 text (without a byte-order mark), not UTF-8",
                hint="save it as UTF-8",
                line=1,
                column=1,
            )
        start = exc.start
        line_start = data.rfind(b"\n", 0, start) + 1
        line = data.count(b"\n", 0, start) + 1
        before = data[line_start:start].removeprefix(b"\xef\xbb\xbf" if line == 1 else b"")
        column = len(before.decode("utf-8", errors="replace")) + 1
        return Problem(
            (),
            f"the file is not UTF-8 text: byte 0x{data[start]:02x} here cannot be read "
            f"({exc.reason})",
            hint="save the file as UTF-8; text in another encoding (Latin-1, Windows-1252) "
            "must be converted first",
            line=line,
            column=column,
        )
