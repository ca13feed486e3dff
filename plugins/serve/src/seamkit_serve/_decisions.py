"""The body of ``POST /v1/sessions/{name}/decisions`` read into a
`DecisionsRequest`, or an `ApiError` a person can act on.

The body is ``{"decisions": [{call_id, action, digest, reason?,
arguments?}, ...], "stream"?, "stream_options"?, "user"?}``: ``action`` is
``approve``, ``reject`` or ``edit``; ``digest`` (the pending call's, as the
answer that listed it gave it) is required to approve or edit, since an
approval binds to exactly what was shown (a reject may carry one, which is
checked too); ``reason`` is a reject's, and ``arguments`` an edit's. A body
that is not JSON is a 400; anything else wrong with it a 422 naming the
field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import seamkit

from ._wire import ApiError, Limits, json_object

__all__ = ["DecisionsRequest", "parse_decisions"]

Decision = seamkit.Approve | seamkit.Reject | seamkit.Edit

_TOP = frozenset({"decisions", "stream", "stream_options", "user"})
_FIELDS = frozenset({"call_id", "action", "digest", "reason", "arguments"})
_ACTIONS = ("approve", "reject", "edit")


@dataclass(frozen=True, slots=True)
class DecisionsRequest:
    """A valid decisions body: a decision per call id, and how to answer."""

    decisions: Mapping[str, Decision] = field(default_factory=dict)
    rejected: Mapping[str, str] = field(default_factory=dict)
    """The digests rejects carried (the kernel's `seamkit.Reject` has none)."""
    stream: bool = False
    include_usage: bool = False
    user: str | None = None


def _bad(message: str, param: str | None = None, code: str = "invalid_decision") -> ApiError:
    return ApiError(422, message, param=param, code=code)


def _decision(raw: object, where: str) -> tuple[str, Decision]:
    """One entry of ``decisions``: its call id and decision."""
    if not isinstance(raw, dict):
        raise _bad(f"{where} must be an object: {{call_id, action, digest, ...}}", where)
    unknown = sorted(k for k in raw if k not in _FIELDS)
    if unknown:
        raise _bad(
            f"{where} has {', '.join(map(repr, unknown))}; a decision takes call_id, action, "
            "digest, reason (reject) and arguments (edit)",
            f"{where}.{unknown[0]}",
        )
    call_id = raw.get("call_id")
    if not isinstance(call_id, str) or not call_id:
        raise _bad(f"{where}.call_id must be the pending call's id, a string", f"{where}.call_id")
    action = raw.get("action")
    if action not in _ACTIONS:
        raise _bad(
            f"{where}.action is {action!r}; use one of: approve, reject, edit", f"{where}.action"
        )
    digest = raw.get("digest")
    if digest is None and action != "reject":
        raise _bad(
            f"{where} ({action} {call_id!r}) has no digest: an approval binds to exactly the "
            "arguments shown, so send the digest the pending call was listed with",
            f"{where}.digest",
            "digest_required",
        )
    if digest is not None and (not isinstance(digest, str) or not digest):
        raise _bad(f"{where}.digest must be a string", f"{where}.digest")
    reason = raw.get("reason")
    if reason is not None and (action != "reject" or not isinstance(reason, str)):
        raise _bad(f"{where}.reason must be a string, and only a reject takes one", where)
    arguments = raw.get("arguments")
    if action == "edit" and not isinstance(arguments, dict):
        raise _bad(
            f"{where} (edit {call_id!r}) needs arguments: the object to run the call with",
            f"{where}.arguments",
        )
    if action != "edit" and arguments is not None:
        raise _bad(f"{where}.arguments: only an edit takes arguments", f"{where}.arguments")
    if action == "approve":
        return call_id, seamkit.Approve(digest=digest)
    if action == "reject":
        return call_id, seamkit.Reject(reason or "rejected")
    assert isinstance(arguments, dict)
    return call_id, seamkit.Edit(arguments, digest=digest)


def parse_decisions(raw: bytes, limits: Limits) -> DecisionsRequest:
    """The request in ``raw``, or the `ApiError` that says what is wrong."""
    body = json_object(raw, limits, ': {"decisions": [...]}')
    unknown = sorted(k for k in body if k not in _TOP)
    if unknown:
        raise _bad(
            f"a decisions request takes decisions, stream, stream_options and user, not "
            f"{', '.join(unknown)}",
            unknown[0],
        )
    entries = body.get("decisions")
    if not isinstance(entries, list):
        raise _bad(
            'decisions must be a list: [{"call_id": ..., "action": "approve", "digest": ...}]',
            "decisions",
        )
    decisions: dict[str, Decision] = {}
    rejected: dict[str, str] = {}
    for i, entry in enumerate(entries):
        call_id, decision = _decision(entry, f"decisions[{i}]")
        if call_id in decisions:
            raise _bad(f"decisions[{i}] decides {call_id!r} a second time", f"decisions[{i}]")
        decisions[call_id] = decision
        if isinstance(decision, seamkit.Reject) and isinstance(entry.get("digest"), str):
            rejected[call_id] = entry["digest"]
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise _bad("stream must be true or false", "stream")
    options = body.get("stream_options") or {}
    if not isinstance(options, dict):
        raise _bad("stream_options must be an object", "stream_options")
    user = body.get("user")
    if user is not None and not isinstance(user, str):
        raise _bad("user must be a string", "user")
    return DecisionsRequest(decisions, rejected, stream, bool(options.get("include_usage")), user)
