"""`Model`: what an agent asks for turns, and how ``"<provider>:<name>"`` finds one."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ._errors import SeamkitError
from ._results import ModelRequest, ModelTurn

__all__ = ["Model", "resolve_model"]


@runtime_checkable
class Model(Protocol):
    """A chat model. ``complete`` answers a request with one turn; ``stream``
    yields the turn's text deltas (``str``) and then the `ModelTurn`."""

    async def complete(self, request: ModelRequest) -> ModelTurn:
        """One whole turn."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[str | ModelTurn]:
        """Text deltas as they arrive, then the turn."""
        ...


def resolve_model(spec: Any, *, registry: Any, base_dir: Path | None = None) -> Model:
    """A `Model` object as it is, or the model ``"<provider>:<name>"`` names,
    made by the provider registered for ``<provider>``.

    Raises :class:`seamkit.SeamkitError` for an unknown provider or a spec
    without a provider, listing the installed providers.
    """
    if not isinstance(spec, str):
        if not isinstance(spec, Model):
            raise SeamkitError(
                f"{type(spec).__name__} is not a model",
                hint="a model has async complete(request) and stream(request)",
            )
        return spec
    prefix, sep, name = spec.partition(":")
    providers = ", ".join(sorted(registry.models)) or "none"
    if not sep:
        raise SeamkitError(
            f"model {spec!r} names no provider",
            hint=f"write '<provider>:<name>'; installed providers: {providers}",
        )
    info = registry.model_provider(prefix)
    if info is None:
        raise SeamkitError(
            f"no model provider {prefix!r} is installed (model {spec!r})",
            hint=f"installed providers: {providers}",
        )
    options = {"base_dir": str(base_dir)} if base_dir is not None else {}
    model = info.factory(name, **options)
    return model  # type: ignore[no-any-return]
