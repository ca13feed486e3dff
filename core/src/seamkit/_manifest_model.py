"""Builds the concrete manifest model from the registry's installed kinds.

Each kind's config model gets a subclass that knows the events the kind
supports and has its ``AnyRefreshCondition`` fields replaced by the union of
the installed refresh conditions; the manifest's lists become discriminated
unions of those subclasses.
"""

from __future__ import annotations

import copy
import types
from typing import TYPE_CHECKING, Annotated, Any, Union, get_args, get_origin

from pydantic import BeforeValidator, Field, WithJsonSchema, create_model, field_validator
from pydantic_core import PydanticCustomError

from ._app import AppConfig
from ._config import KindConfig, _RefreshSlot
from ._events import HookEvent

if TYPE_CHECKING:
    from ._registry import Category, KindInfo, Registry

__all__ = ["build_app_model"]


def _no_kinds(category: str) -> Any:
    def reject(value: Any) -> Any:
        tag = value.get("kind") if isinstance(value, dict) else None
        raise PydanticCustomError(
            "unknown_kind", "no {category} kinds are installed", {"category": category, "tag": tag}
        )

    return Annotated[Any, BeforeValidator(reject), WithJsonSchema({"not": {}})]


def _union(models: list[type[KindConfig]], category: str) -> Any:
    if not models:
        return _no_kinds(category)
    members = models[0] if len(models) == 1 else Union[tuple(models)]  # noqa: UP007
    return Annotated[members, Field(discriminator="kind")]


def _substitute(tp: Any, replacement: Any) -> Any:
    origin = get_origin(tp)
    if origin is Annotated:
        base, *meta = get_args(tp)
        if any(isinstance(m, _RefreshSlot) for m in meta):
            return replacement
        return Annotated[(_substitute(base, replacement), *meta)]
    args = get_args(tp)
    if not args:
        return tp
    new = tuple(_substitute(a, replacement) for a in args)
    if new == args:
        return tp
    if origin in (Union, types.UnionType):
        return Union[new]  # noqa: UP007
    if origin is not None:
        return origin[new if len(new) > 1 else new[0]]
    return tp


def _concrete(info: KindInfo, refresh: Any, preview: bool) -> type[KindConfig]:
    """The subclass of a kind's model used inside the manifest."""
    overrides: dict[str, Any] = {}
    for name, field in info.model.model_fields.items():
        slot = any(isinstance(m, _RefreshSlot) for m in field.metadata)
        new_annotation = refresh if slot else _substitute(field.annotation, refresh)
        if slot or new_annotation is not field.annotation:
            fi = copy.copy(field)
            fi.metadata = [m for m in field.metadata if not isinstance(m, _RefreshSlot)]
            fi.annotation = new_annotation
            overrides[name] = (new_annotation, fi)
    validators: dict[str, Any] = {}
    if info.category == "hook":
        # The schema lists only the events this kind supports, for editors.
        events = sorted(e.value for e in info.events | (info.preview_events if preview else set()))
        event_field = copy.copy(info.model.model_fields["event"])
        annotation = Annotated[HookEvent, WithJsonSchema({"type": "string", "enum": events})]
        event_field.annotation = annotation
        overrides["event"] = (annotation, event_field)
        validators["_seamkit_check_event"] = field_validator("event")(_event_checker(info, preview))
    model: type[KindConfig] = create_model(
        info.model.__name__,
        __base__=info.model,
        __module__=info.model.__module__,
        __validators__=validators,
        __doc__=info.model.__doc__,
        **overrides,
    )
    return model


def _event_checker(info: KindInfo, preview: bool) -> Any:
    supported = sorted(e.value for e in info.events | (info.preview_events if preview else set()))

    def check(cls: type, value: HookEvent) -> HookEvent:
        if info.supports(value, preview=preview):
            return value
        if value in info.preview_events:
            raise PydanticCustomError(
                "preview_event",
                "event {event} of kind '{kind}' is a preview",
                {
                    "event": value.value,
                    "kind": info.name,
                    "hint": "set SEAMKIT_ENABLE_PREVIEW=1 to use preview kinds and events",
                },
            )
        raise PydanticCustomError(
            "unsupported_event",
            "hook kind '{kind}' does not support event {event}",
            {
                "event": value.value,
                "kind": info.name,
                "hint": "it supports: " + ", ".join(supported),
            },
        )

    return check


def build_app_model(registry: Registry, *, preview: bool) -> type[AppConfig]:
    """The ``AppConfig`` subclass for the kinds installed in ``registry``."""

    def models(category: Category, refresh: Any) -> list[type[KindConfig]]:
        kinds = registry.kinds_of(category, preview=preview)
        return [_concrete(info, refresh, preview) for _, info in sorted(kinds.items())]

    refresh_union = _union(models("refresh", None), "refresh condition")
    hook_union = _union(models("hook", refresh_union), "hook")
    tool_union = _union(models("tool", refresh_union), "tool")
    prefixes = sorted(p for p, info in registry.models.items() if preview or not info.preview)

    def check_model(cls: type, value: str) -> str:
        prefix, sep, rest = value.partition(":")
        if not sep or not rest:
            raise PydanticCustomError(
                "model_format",
                "model must be '<provider>:<name>', got '{value}'",
                {"value": value, "hint": "installed providers: " + (", ".join(prefixes) or "none")},
            )
        if prefix not in prefixes:
            raise PydanticCustomError(
                "unknown_provider",
                "unknown model provider '{prefix}'",
                {"prefix": prefix, "tag": prefix, "category": "model provider"},
            )
        return value

    model: type[AppConfig] = create_model(
        "AppConfig",
        __base__=AppConfig,
        __module__="seamkit",
        __doc__=AppConfig.__doc__,
        __validators__={"_seamkit_check_model": field_validator("model")(check_model)},
        tools=(list[tool_union], Field(default_factory=list, description="Tool entries.")),  # type: ignore[valid-type]
        hooks=(list[hook_union], Field(default_factory=list, description="Configured hooks.")),  # type: ignore[valid-type]
    )
    return model
