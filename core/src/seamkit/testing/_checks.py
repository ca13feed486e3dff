"""Ready property checks: one call in a test shows a law holds."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from .._engine._dispatch import Dispatcher, HookStack, impls_of
from .._errors import HookError
from .._events import HookEvent
from .._patch import RequestPatch
from ._harness import Opaque, make_context, scripted_hook

__all__ = ["check_hook_composes", "check_patch_laws"]


def check_patch_laws(max_examples: int | None = None) -> None:
    """Check that ``RequestPatch`` merging is a monoid: ``RequestPatch()`` is the
    identity of ``|`` and ``|`` is associative. Raises on a counterexample."""
    from hypothesis import given, settings  # lazy: hypothesis is a test-time dependency

    from .strategies import request_patches  # lazy: imports hypothesis

    def run(test: Callable[..., None]) -> None:
        (settings(max_examples=max_examples)(test) if max_examples else test)()

    @given(request_patches())
    def identity(p: RequestPatch) -> None:
        assert RequestPatch() | p == p
        assert p | RequestPatch() == p

    @given(request_patches(), request_patches(), request_patches())
    def associative(a: RequestPatch, b: RequestPatch, c: RequestPatch) -> None:
        assert (a | b) | c == a | (b | c)

    run(identity)
    run(associative)


def check_hook_composes(
    hook: object | Callable[[], object],
    event: HookEvent | str,
    *,
    max_examples: int | None = None,
) -> None:
    """Check that a hook composes at ``event`` with any neighbours:

    - for generated arguments it returns only flows the event accepts;
    - put between generated neighbour hooks, nesting it in a :class:`HookStack`
      with the hooks after it gives the same net flow as the flat list.

    ``hook`` may be a zero-argument factory, called afresh for each example,
    for hooks that keep state.
    """
    from hypothesis import (  # lazy: hypothesis is a test-time dependency
        given,
        settings,
        strategies as st,
    )

    from .strategies import event_arguments, flows  # lazy: imports hypothesis

    e = HookEvent(event)
    factory = isinstance(hook, type) or (callable(hook) and not _has_impl(hook, e))
    make: Callable[[], object] = hook if factory else (lambda: hook)  # type: ignore[assignment]

    def neighbours(prefix: str) -> Any:
        return st.lists(flows(e), max_size=3).map(
            lambda fs: [scripted_hook(e, f, name=f"{prefix}{i}") for i, f in enumerate(fs)]
        )

    @given(event_arguments(e), neighbours("before"), neighbours("after"))
    def composes(args: tuple[Any, ...], before: list[object], after: list[object]) -> None:
        async def both() -> tuple[Any, Any]:
            try:
                alone = await Dispatcher(hooks=[make()]).dispatch(e, make_context(), *args)
            except HookError as exc:
                if exc.flow is not None:
                    raise AssertionError(
                        f"the hook returned a flow {e.value} does not accept: {exc.message}"
                    ) from exc
                raise
            del alone
            flat = await Dispatcher(hooks=[*before, make(), *after]).dispatch(
                e, make_context(), *args
            )
            nested_stack = Opaque(HookStack([make(), *after]))
            nested = await Dispatcher(hooks=[*before, nested_stack]).dispatch(
                e, make_context(), *args
            )
            return flat.flow, nested.flow

        flat, nested = asyncio.run(both())
        assert flat == nested, f"flat {flat!r} != nested {nested!r}"

    from hypothesis import Phase  # lazy: as above

    quick_failures = settings(
        phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
        report_multiple_bugs=False,
        max_examples=max_examples or settings().max_examples,
    )
    quick_failures(composes)()


def _has_impl(obj: object, event: HookEvent) -> bool:
    return event in impls_of(obj)
