"""The laws of hook composition, proved with hypothesis.

Run with `HYPOTHESIS_PROFILE=deep` for 100,000 examples a law; CI runs 1,000.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, strategies as st
from seamkit import HookEvent, HookStack, RequestPatch, flow as F
from seamkit._engine._dispatch import Dispatcher
from seamkit.testing import Opaque, check_patch_laws, make_context, scripted_hook
from seamkit.testing.strategies import event_arguments, flows, request_patches

MODES = {
    "chain": [
        HookEvent.ON_REQUEST_START,
        HookEvent.ON_PRE_TOOL_USE,
        HookEvent.ON_POST_TOOL_USE,
        HookEvent.ON_OUTPUT,
    ],
    "accumulate": [HookEvent.ON_PRE_LLM],
    "first": [
        HookEvent.ON_MODEL_TURN_FINISHED,
        HookEvent.ON_INVALID_TOOL_CALL,
        HookEvent.ON_ITERATION_END,
    ],
    "all": [HookEvent.ON_COMPLETION],
    "hold": [HookEvent.ON_TEXT_DELTA],
}
ALL_EVENTS = [e for events in MODES.values() for e in events]


def dispatch(hooks: list[object], event: HookEvent, args: tuple[Any, ...]) -> tuple[Any, Any]:
    ctx = make_context()
    result = asyncio.run(Dispatcher(hooks=hooks).dispatch(event, ctx, *args))
    return result, ctx


@st.composite
def scenario(draw: st.DrawFn, event: HookEvent | None = None) -> tuple[Any, ...]:
    e = event or draw(st.sampled_from(ALL_EVENTS))
    args = draw(event_arguments(e))
    results = draw(st.lists(flows(e), max_size=6))
    return e, args, results


def build(event: HookEvent, results: list[Any]) -> list[object]:
    return [scripted_hook(event, r, name=f"h{i}") for i, r in enumerate(results)]


# --- RequestPatch --------------------------------------------------------


def test_identity_and_associativity_of_merge() -> None:
    check_patch_laws()


@given(request_patches(), request_patches())
def test_active_tools_is_the_intersection_in_the_earliest_order(
    a: RequestPatch, b: RequestPatch
) -> None:
    merged = (a | b).active_tools
    if a.active_tools is None or b.active_tools is None:
        assert merged == (a.active_tools if b.active_tools is None else b.active_tools)
    else:
        assert merged == tuple(t for t in a.active_tools if t in set(b.active_tools))


@given(st.lists(request_patches(), max_size=6))
def test_extra_context_keeps_registration_order(patches: list[RequestPatch]) -> None:
    hooks = build(HookEvent.ON_PRE_LLM, [F.PatchRequest(p) for p in patches])
    from seamkit import ModelRequest

    result, _ = dispatch(hooks, HookEvent.ON_PRE_LLM, (ModelRequest(),))
    expected = tuple(d for p in patches for d in (p.extra_context or ()))
    got = result.flow.patch.extra_context if isinstance(result.flow, F.PatchRequest) else None
    assert (got or ()) == expected


@given(st.lists(request_patches(), min_size=1, max_size=6))
def test_last_writer_wins_on_scalar_fields(patches: list[RequestPatch]) -> None:
    merged = RequestPatch()
    for p in patches:
        merged = merged | p
    for name in ("preamble", "temperature", "max_tokens", "tool_choice", "history"):
        written = [getattr(p, name) for p in patches if getattr(p, name) is not None]
        assert getattr(merged, name) == (written[-1] if written else None)


@given(request_patches(), st.data())
def test_apply_narrows_tools_and_appends_context(patch: RequestPatch, data: st.DataObject) -> None:
    from seamkit.testing.strategies import model_requests

    request = data.draw(model_requests())
    applied = patch.apply(request)
    assert applied.extra_context == request.extra_context + (patch.extra_context or ())
    if patch.active_tools is not None:
        assert [t.name for t in applied.tools] == [
            t.name for t in request.tools if t.name in patch.active_tools
        ]
    assert applied.messages == (request.messages if patch.history is None else patch.history)


# --- the dispatcher --------------------------------------------------------


@given(scenario(), st.data())
def test_nested_stack_equals_flat_for_every_mode(
    case: tuple[Any, ...], data: st.DataObject
) -> None:
    event, args, results = case
    hooks = build(event, results)
    cut = sorted(data.draw(st.lists(st.integers(0, len(hooks)), min_size=2, max_size=2)))
    a, b = cut
    nested = [*hooks[:a], Opaque(HookStack(hooks[a:b])), *hooks[b:]]
    flat_result, _ = dispatch(hooks, event, args)
    nested_result, _ = dispatch(nested, event, args)
    assert nested_result.flow == flat_result.flow
    # and a stack passed in code is inlined: same flow and the same deciding hook
    inlined, _ = dispatch([*hooks[:a], HookStack(hooks[a:b]), *hooks[b:]], event, args)
    assert inlined == flat_result


@given(st.sampled_from(MODES["chain"]), st.data())
def test_chain_order_equals_list_order(event: HookEvent, data: st.DataObject) -> None:
    args = data.draw(event_arguments(event))
    results = data.draw(st.lists(flows(event), max_size=6))
    calls: list[tuple[str, tuple[Any, ...]]] = []
    hooks = [scripted_hook(event, r, name=f"h{i}", calls=calls) for i, r in enumerate(results)]
    result, _ = dispatch(hooks, event, args)
    stop = next(
        (i for i, r in enumerate(results) if isinstance(r, F.Skip | F.Terminate | F.Retry)), None
    )
    expected = [f"h{i}" for i in range(len(results) if stop is None else stop + 1)]
    assert [name for name, _ in calls] == expected
    if stop is not None:
        assert result == (results[stop], f"h{stop}")
    else:
        asked = next((i for i, r in enumerate(results) if isinstance(r, F.RequireApproval)), None)
        if asked is not None:  # the first asker, with the arguments the chain left
            assert isinstance(result.flow, F.RequireApproval) and result.hook == f"h{asked}"
            assert result.flow.reason == results[asked].reason
            rewrote = any(
                isinstance(r, F.RewriteArgs)
                or (isinstance(r, F.RequireApproval) and r.arguments is not None)
                for r in results
            )
            final = result.flow.arguments
            assert (final is not None) == rewrote
    # each hook saw what the previous one produced
    position = 2 if event == HookEvent.ON_POST_TOOL_USE else 1
    current = args[position - 1]
    for (_, seen), r in zip(calls, results, strict=False):
        assert seen[position] == current
        if isinstance(r, F.RewriteMessages):
            current = tuple(r.messages)
        elif isinstance(r, F.RewriteArgs) or (
            isinstance(r, F.RequireApproval) and r.arguments is not None
        ):
            current = current.model_copy(update={"arguments": dict(r.arguments)})
        elif isinstance(r, F.RewriteResult):
            current = current.model_copy(update={"content": r.content})
        elif isinstance(r, F.RewriteOutput):
            current = r.value


@given(st.lists(flows(HookEvent.ON_PRE_LLM), max_size=6), st.data())
def test_a_terminate_anywhere_in_accumulate_discards_every_patch(
    results: list[Any], data: st.DataObject
) -> None:
    where = data.draw(st.integers(0, len(results)))
    results = [*results[:where], F.Terminate("stop"), *results[where:]]
    from seamkit import ModelRequest

    result, _ = dispatch(
        build(HookEvent.ON_PRE_LLM, results), HookEvent.ON_PRE_LLM, (ModelRequest(),)
    )
    first = next(r for r in results if isinstance(r, F.Terminate))
    assert result.flow == first


@given(scenario(), st.data())
def test_under_skip_a_raising_hook_is_indistinguishable_from_an_absent_one(
    case: tuple[Any, ...], data: st.DataObject
) -> None:
    event, args, results = case
    where = data.draw(st.integers(0, len(results)))
    hooks = build(event, results)
    raising = scripted_hook(event, raises=RuntimeError("boom"), name="raiser", on_error="skip")
    with_raiser, ctx_with = dispatch([*hooks[:where], raising, *hooks[where:]], event, args)
    without, ctx_without = dispatch(hooks, event, args)
    assert with_raiser == without
    extra = [d for d in ctx_with.diagnostics if d not in ctx_without.diagnostics]
    assert len(ctx_with.diagnostics) - len(ctx_without.diagnostics) in (0, 1)
    assert all(d.code == "hook_skipped" and d.hooks == ("raiser",) for d in extra)
