"""Recovery files: where a run's transcript goes when its session store
cannot save it, so that no user input is lost; and the JSON form of a
session that ``seamkit sessions export`` writes and ``import`` reads.

A session document is ``{"session": NAME, "transcript": [...], "state":
{...}}``, plus ``"journal": [...]`` when the session has an unfinished run
(its `JournalEntry` records; a session's pending calls are in its state); a
recovery file is one plus ``store``, ``reason`` and ``saved_at``. Recovery
files go to ``recovery/`` in seamkit's data directory
(``$SEAMKIT_HOME``, else the user's data directory), or to
``seamkit-recovery/`` in the temporary directory when that cannot be written
(the disk that filled up, say). Only their owner may read them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import secrets
import stat
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .._errors import SeamkitError, SessionError, SessionNotSaved
from .._types import Message
from ._journal import JournalEntry
from ._sessions import SessionStore, StoredSession, default_store_path

__all__ = [
    "SessionDocument",
    "read_session_document",
    "recovery_dirs",
    "save_or_recover",
    "session_document",
    "store_location",
    "write_recovery",
]

log = logging.getLogger("seamkit.sessions")


def session_document(
    name: str,
    transcript: Sequence[Message],
    state: Mapping[str, Any],
    *,
    journal: Sequence[JournalEntry] = (),
    **extra: str | None,
) -> dict[str, object]:
    """The JSON form of a session, as ``seamkit sessions export`` writes it:
    ``journal`` only when there is one; ``extra`` keys go after the
    session's own."""
    document: dict[str, object] = {
        "session": name,
        "transcript": [m.model_dump(mode="json", exclude_none=True) for m in transcript],
        "state": dict(state),
    }
    if journal:
        document["journal"] = [entry.model_dump(mode="json") for entry in journal]
    return {**document, **extra}


@dataclass(frozen=True, slots=True)
class SessionDocument:
    """A session document read back: its ``name`` (``None`` when it names
    none), the ``session``, and the ``journal`` of its unfinished run
    (empty: none)."""

    name: str | None
    session: StoredSession
    journal: tuple[JournalEntry, ...] = ()


def read_session_document(text: str, source: str) -> SessionDocument:
    """The session of an export or a recovery file; `SessionError` naming
    ``source`` (and the journal entry) when it is neither."""
    hint = "give a file that `seamkit sessions export` or a failed save wrote"
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise SessionError(f"{source} is not JSON: {exc}", hint=hint) from None
    if not isinstance(data, dict) or not isinstance(data.get("transcript"), list):
        raise SessionError(f"{source} has no transcript list", hint=hint)
    name = data.get("session")
    if name is not None and not isinstance(name, str):
        raise SessionError(f"{source}: 'session' is not a string", hint=hint)
    session = StoredSession.parse(
        name or source,
        json.dumps(data["transcript"]),
        json.dumps(data.get("state", {})),
        location=source,
    )
    return SessionDocument(name, session, _journal(data.get("journal", []), source, hint))


def _journal(raw: object, source: str, hint: str) -> tuple[JournalEntry, ...]:
    """The ``journal`` list of a session document, each entry checked."""
    if not isinstance(raw, list):
        raise SessionError(f"{source}: 'journal' is not a list", hint=hint)
    entries: list[JournalEntry] = []
    for i, item in enumerate(raw):
        try:
            entries.append(JournalEntry.model_validate(item))
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(part) for part in problem["loc"]) or "the entry"
            raise SessionError(
                f"{source}: journal entry {i} cannot be read: {where}: {problem['msg']}",
                hint="an entry is {run_id, kind: start|turn|started|finished|decided, "
                "call_id, data}; " + hint,
            ) from None
    return tuple(entries)


def recovery_dirs() -> list[Path]:
    """Where recovery files go, in the order tried: ``recovery/`` beside the
    default session store, then ``seamkit-recovery/`` in the temporary
    directory."""
    return [
        default_store_path().parent / "recovery",
        Path(tempfile.gettempdir()) / f"seamkit-recovery-{os.getuid()}",
    ]


def _private(directory: Path) -> None:
    """Create ``directory`` for this user alone (mode 0700), or check that
    it is one: a real directory (not a symlink) this user owns, that no one
    else can read or write. Raises `OSError` otherwise."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    found = directory.lstat()
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid():
        raise OSError(f"{directory} is not a directory of this user's")
    if found.st_mode & 0o077:
        directory.chmod(0o700)


def write_recovery(
    name: str,
    transcript: Sequence[Message],
    state: Mapping[str, Any],
    *,
    location: str | None,
    reason: str,
) -> Path | None:
    """Write the session to a new recovery file and return its path; ``None``
    when no directory took it (the transcript is then logged as an error,
    the last place left for it)."""
    now = datetime.now(UTC)
    text = json.dumps(
        session_document(
            name,
            transcript,
            state,
            store=location,
            reason=reason,
            saved_at=now.isoformat(timespec="seconds"),
        ),
        ensure_ascii=False,
        indent=2,
    )
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:40] or "session"
    filename = f"{slug}-{now:%Y%m%dT%H%M%SZ}-{os.getpid()}-{secrets.token_hex(3)}.json"
    for directory in recovery_dirs():
        path = directory / filename
        created = False
        try:
            _private(directory)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            created = True
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
            return path
        except OSError as exc:
            log.warning("cannot write a recovery file in %s: %s", directory, exc.strerror or exc)
            if created:  # a partial file (the disk filled up) is worse than none
                with contextlib.suppress(OSError):
                    path.unlink()
    log.error(
        "session %r not saved, and no recovery file could be written (%d messages lost; "
        "free some space or make %s writable)",
        name,
        len(transcript),
        recovery_dirs()[0],
    )
    return None


def store_location(store: SessionStore) -> str:
    """How to name ``store`` to a user: its ``location`` (a path, a URL with
    the password masked) when it has one, else its ``repr``."""
    location = getattr(store, "location", None)
    return location if isinstance(location, str) else repr(store)


async def save_or_recover(
    store: SessionStore, name: str, transcript: Sequence[Message], state: Mapping[str, Any]
) -> SessionNotSaved | None:
    """Save the session (a store that keeps a journal drops it in the same
    transaction: the transcript now holds what it recorded); when the store
    fails, write a recovery file and return the `SessionNotSaved` to raise
    (returned, not raised, so that the caller decides after finishing what
    must not be cut short)."""
    try:
        await store.save(name, transcript, state)
        return None
    except Exception as exc:  # any store's failure: the transcript must survive it
        reason = exc.message if isinstance(exc, SeamkitError) else f"{type(exc).__name__}: {exc}"
        cause_hint = exc.hint if isinstance(exc, SeamkitError) else None
        location = store_location(store)
        path = await asyncio.to_thread(
            write_recovery, name, transcript, state, location=location, reason=reason
        )
        return SessionNotSaved(
            name, reason, recovery=path, location=location, cause_hint=cause_hint
        )
