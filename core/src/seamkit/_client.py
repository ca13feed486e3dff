"""Client tools: tools a run advertises to its model but does not run.

A caller (``seamkit serve``'s client, say) passes ``client_tools=`` to
`Agent.run`; when the model calls one of them the run ends `Deferred` with
the calls, unrun. The caller runs them and continues the run with
`ClientResults`, whose results pass ``on_post_tool_use`` (``result_source``
``"client"``) before the model sees them, like every tool result.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ._errors import ResumeError, ToolDefinitionError
from ._types import ToolCall, ToolResult, ToolSpec

__all__ = ["ClientResults", "client_results", "client_specs"]


@dataclass(frozen=True, slots=True)
class ClientResults:
    """The input that continues a `Deferred` run: the result of each call
    it handed back, by call id (a text, or a `ToolResult` to mark an
    error). Every handed-back call needs a result, and no other call may
    have one."""

    results: Mapping[str, str | ToolResult] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for call_id, result in self.results.items():
            if not isinstance(result, str | ToolResult):
                raise TypeError(
                    f"ClientResults: the result for {call_id!r} is a {type(result).__name__}, "
                    "not a str or a ToolResult"
                )

    def result(self, call_id: str) -> ToolResult:
        """The result for ``call_id`` as a `ToolResult` of that call."""
        given = self.results[call_id]
        if isinstance(given, str):
            return ToolResult(call_id=call_id, content=given)
        return given.model_copy(update={"call_id": call_id})


def client_specs(
    specs: Iterable[ToolSpec], app_tools: Iterable[str], reserved: str | None = None
) -> tuple[ToolSpec, ...]:
    """``specs`` checked: `ToolDefinitionError` for a spec that is not a
    `ToolSpec`, a name given twice, or a name the app's tools (or the
    run's output tool, ``reserved``) already have."""
    taken = set(app_tools)
    seen: set[str] = set()
    out: list[ToolSpec] = []
    for spec in specs:
        if not isinstance(spec, ToolSpec):
            raise ToolDefinitionError(
                f"client_tools takes seamkit.ToolSpec items, not {type(spec).__name__}"
            )
        if not spec.name:
            raise ToolDefinitionError("a client tool has an empty name")
        if spec.name in taken or spec.name == reserved:
            whose = "the run's output tool" if spec.name == reserved else "one of the app's tools"
            raise ToolDefinitionError(
                f"the client tool {spec.name!r} has the name of {whose}",
                hint="rename the client's tool",
            )
        if spec.name in seen:
            raise ToolDefinitionError(f"the client tool {spec.name!r} is given twice")
        seen.add(spec.name)
        out.append(spec)
    return tuple(out)


def client_results(
    given: ClientResults, open_calls: Sequence[ToolCall], client: Iterable[str], session: str | None
) -> dict[str, ToolResult]:
    """The results of a deferred run's handed-back calls (``open_calls``,
    those named by a ``client`` tool); `ResumeError` (nothing run) when the
    run has no such calls, a result is missing, or one answers a call it
    did not hand back."""
    names = set(client)
    handed = {c.id: c for c in open_calls if c.name in names}
    others = [c.id for c in open_calls if c.name not in names]
    if others or not handed:
        why = (
            f"its open calls {', '.join(map(repr, others))} are not the client's"
            if others
            else "no call waits for the client's result"
        )
        raise ResumeError(
            f"there is nothing to continue with client results: {why}",
            session=session,
            hint="send client results only after a run ended deferred, with the same client_tools",
        )
    for call_id in given.results:
        if call_id not in handed:
            raise ResumeError(
                f"no call {call_id!r} was handed to the client (waiting: {', '.join(handed)})",
                session=session,
                call_id=call_id,
                hint="answer the calls the deferred run handed back",
            )
    missing = [c for c in handed if c not in given.results]
    if missing:
        raise ResumeError(
            f"no result for the client's call(s) {', '.join(map(repr, missing))}",
            session=session,
            call_id=missing[0],
            hint="give a result for every call the deferred run handed back",
        )
    return {call_id: given.result(call_id) for call_id in handed}
