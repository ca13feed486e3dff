"""Builds the concrete manifest model, and its JSON Schema, from the
registry's installed kinds.

Each kind's config model gets a subclass that knows the events the kind
supports and has its ``AnyRefreshCondition`` fields replaced by the union of
the installed refresh conditions; the manifest's lists become discriminated
unions of those subclasses; ``model`` a union of the providers' config models
discriminated by ``provider``; each plugin-owned section an optional field.
"""

from __future__ import annotations

import copy
import types
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

from pydantic import (
    BaseModel,
    BeforeValidator,
    Field,
    WithJsonSchema,
    create_model,
    field_validator,
)
from pydantic.json_schema import models_json_schema
from pydantic_core import PydanticCustomError

from .._config import KindConfig, ModelConfig, RefreshSlot, split_model_spec
from .._events import HookEvent
from .._registry import Category, KindInfo, Registry, preview_enabled

__all__ = ["app_model", "manifest_schema"]

M = TypeVar("M", bound=BaseModel)


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
        if any(isinstance(m, RefreshSlot) for m in meta):
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
        slot = any(isinstance(m, RefreshSlot) for m in field.metadata)
        new_annotation = refresh if slot else _substitute(field.annotation, refresh)
        if slot or new_annotation is not field.annotation:
            fi = copy.copy(field)
            fi.metadata = [m for m in field.metadata if not isinstance(m, RefreshSlot)]
            fi.annotation = new_annotation
            overrides[name] = (new_annotation, fi)
    validators: dict[str, Any] = {}
    options: dict[str, Any] = {}
    if info.category == "hook":
        # The schema lists only the events this kind supports, for editors.
        events = sorted(e.value for e in info.events | (info.preview_events if preview else set()))
        event_field = copy.copy(info.model.model_fields["event"])
        annotation = Annotated[HookEvent, WithJsonSchema({"type": "string", "enum": events})]
        event_field.annotation = annotation
        overrides["event"] = (annotation, event_field)
        validators["_seamkit_check_event"] = field_validator("event")(_event_checker(info, preview))
        options["json_schema_extra"] = _with_events(events)
    model: type[KindConfig] = create_model(
        info.model.__name__,
        __base__=info.model,
        __module__=info.model.__module__,
        __validators__=validators,
        __doc__=info.model.__doc__,
        __cls_kwargs__=options or None,
        **overrides,
    )
    return model


def _with_events(events: list[str]) -> Callable[[dict[str, Any]], None]:
    """Adds ``events`` next to ``event`` in a hook kind's schema: an entry
    names exactly one of the two (see `_expand`, which writes ``events`` out
    into one entry per event before validation)."""

    def extra(schema: dict[str, Any]) -> None:
        properties: dict[str, Any] = schema.get("properties", {})
        ordered: dict[str, Any] = {}
        for name, prop in properties.items():
            ordered[name] = prop
            if name == "event":
                ordered["events"] = {
                    "description": "Several events, instead of 'event': the entry runs at "
                    "each, as if written once per event in this place.",
                    "type": "array",
                    "items": {"type": "string", "enum": events},
                    "minItems": 1,
                    "uniqueItems": True,
                }
        schema["properties"] = ordered
        required = [r for r in schema.get("required", []) if r != "event"]
        if required:
            schema["required"] = required
        else:
            schema.pop("required", None)
        schema["oneOf"] = [{"required": ["event"]}, {"required": ["events"]}]

    return extra


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


def _model_union(registry: Registry, preview: bool) -> Any:
    """``model``: a string ``"<provider>:<name>"`` or a provider's mapping,
    validated by that provider's config model (discriminated by ``provider``)."""
    providers = sorted(
        (p, info) for p, info in registry.models.items() if preview or not info.preview
    )
    members: list[type[ModelConfig]] = []
    for prefix, info in providers:
        literal = Literal[prefix]  # type: ignore[valid-type]
        members.append(
            create_model(
                info.config.__name__,
                __base__=info.config,
                __module__=info.config.__module__,
                __doc__=info.config.__doc__,
                provider=(literal, Field(description="The model provider.")),
            )
        )
    names = [p for p, _ in providers]

    def unknown(value: Any) -> Any:
        value = split_model_spec(value)
        if isinstance(value, str):
            raise PydanticCustomError(
                "model_format",
                "model must be '<provider>:<name>' or a mapping with provider and name, "
                "got '{value}'",
                {"value": value, "hint": "installed providers: " + (", ".join(names) or "none")},
            )
        provider = value.get("provider") if isinstance(value, dict) else None
        if isinstance(provider, str) and provider not in names:
            raise PydanticCustomError(
                "unknown_provider",
                "unknown model provider '{prefix}'",
                {"prefix": provider, "tag": provider, "category": "model"},
            )
        return value

    string = {"type": "string", "pattern": "^[^:]+:.+$", "description": "'<provider>:<name>'"}
    if not members:
        return Annotated[ModelConfig, BeforeValidator(unknown), WithJsonSchema(string)]
    union = members[0] if len(members) == 1 else Union[tuple(members)]  # noqa: UP007
    return Annotated[
        Annotated[union, Field(discriminator="provider")],
        BeforeValidator(unknown, json_schema_input_type=str | union),
    ]


def build_app_model(registry: Registry, base: type[M], *, preview: bool) -> type[M]:
    """The subclass of ``base`` (an ``AppConfig``) for the kinds installed in
    ``registry``."""

    def models(category: Category, refresh: Any) -> list[type[KindConfig]]:
        kinds = registry.kinds_of(category, preview=preview)
        return [_concrete(info, refresh, preview) for _, info in sorted(kinds.items())]

    refresh_union = _union(models("refresh", None), "refresh condition")
    hook_union = _union(models("hook", refresh_union), "hook")
    tool_union = _union(models("tool", refresh_union), "tool")
    sections: dict[str, Any] = {
        key: (
            info.model | None,
            Field(default=None, description=(info.model.__doc__ or "").strip().split("\n")[0]),
        )
        for key, info in sorted(registry.sections.items())
    }
    model_field = base.model_fields["model"]
    return create_model(
        base.__name__,
        __base__=base,
        __module__="seamkit",
        __doc__=base.__doc__,
        model=(_model_union(registry, preview), Field(description=model_field.description)),
        tools=(list[tool_union], Field(default_factory=list, description="Tool entries.")),  # type: ignore[valid-type]
        hooks=(list[hook_union], Field(default_factory=list, description="Configured hooks.")),  # type: ignore[valid-type]
        **sections,
    )


def app_model(registry: Registry, base: type[M], *, preview: bool | None = None) -> type[M]:
    """:func:`build_app_model`, built once per registry state and kept in the
    registry's derived cache (cleared whenever a plugin registers)."""
    show = preview_enabled() if preview is None else preview
    key = ("app_model", base, show)
    model = registry.derived.get(key)
    if model is None:
        model = build_app_model(registry, base, preview=show)
        registry.derived[key] = model
    assert isinstance(model, type) and issubclass(model, base)
    return model


def manifest_schema(
    registry: Registry, base: type[BaseModel], *, preview: bool | None = None
) -> dict[str, Any]:
    """The manifest's JSON Schema (draft 2020-12), ready for an editor."""
    model = app_model(registry, base, preview=preview)
    schema = model.model_json_schema(mode="validation")
    # Every installed refresh condition is listed, even before a hook kind uses one.
    refresh = [info.model for info in registry.kinds_of("refresh", preview=preview).values()]
    if refresh:
        _, extra = models_json_schema([(m, "validation") for m in refresh])
        defs = schema.setdefault("$defs", {})
        for name, definition in extra.get("$defs", {}).items():
            defs.setdefault(name, definition)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://seamkit.dev/schema/app.json",
        **schema,
        "title": "seamkit app manifest",
    }
