"""The round trip of a refresh condition's config through its own model, the
manifest's JSON Schema and the manifest, for :func:`check_refresh_condition`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Literal

from jsonschema import Draft202012Validator, ValidationError as SchemaError
from pydantic import ValidationError

from .._config import AnyRefreshCondition, HookConfig, RefreshCondition
from .._errors import ManifestError, PluginError
from .._events import HookEvent
from .._loader import load_plugins
from .._manifest import AppConfig, manifest_schema
from .._registry import Registry

__all__ = ["ConfigLike", "ManifestProbe", "RefreshHolderConfig", "label"]

ConfigLike = Mapping[str, object] | RefreshCondition
"""A config as a plugin author has it: a manifest mapping (``kind`` may be left
out) or an instance of the condition's model."""

HOLDER_KIND = "seamkit_testing_refresh_holder"


class RefreshHolderConfig(HookConfig):
    """The hook kind the check's manifest puts the condition under test in, the
    way a ``tool_call`` entry holds its ``refresh_condition``."""

    kind: Literal["seamkit_testing_refresh_holder"] = "seamkit_testing_refresh_holder"
    refresh_condition: AnyRefreshCondition


def _never_built(config: object, build: object) -> object:
    """The holder hook kind's factory, which the check never calls (it only validates)."""
    raise AssertionError("the check's holder hook is only validated, never built")


def label(config: RefreshCondition) -> str:
    """The config as a manifest would show it, for failure messages."""
    try:
        shown: object = config.model_dump(mode="json", by_alias=True)
    except Exception:
        shown = config
    return f"{type(config).__name__} {shown!r}"


class ManifestProbe:
    """A registry with only the kernel's built-ins, ``cls`` and the holder hook
    kind, its manifest JSON Schema, and the round trip of a config through it."""

    def __init__(self, cls: type[RefreshCondition]) -> None:
        self.cls = cls
        self.registry: Registry = load_plugins(entry_points=[])
        batch = self.registry.registrar("seamkit.testing")
        try:
            batch.refresh_condition(cls)
            batch.hook_kind(RefreshHolderConfig, _never_built, events={HookEvent.ON_REQUEST_START})
            self.registry.commit(batch)
        except PluginError as exc:
            raise AssertionError(
                f"{getattr(cls, '__qualname__', cls)!r} cannot be registered as a "
                f"refresh condition: {exc}"
            ) from exc
        self.kind = batch.kinds[0].name
        self.validator = Draft202012Validator(manifest_schema(self.registry, preview=False))

    def config(self, raw: ConfigLike) -> RefreshCondition:
        """``raw`` as an instance of the condition's model."""
        if isinstance(raw, self.cls):
            return raw
        if isinstance(raw, RefreshCondition) or not isinstance(raw, Mapping):
            raise TypeError(
                f"a config of {self.cls.__name__} is a mapping or a {self.cls.__name__}, "
                f"got {raw!r}"
            )
        data = {"kind": self.kind, **raw}
        try:
            return self.cls.model_validate(data)
        except ValidationError as exc:
            raise AssertionError(
                f"{self.cls.__name__} {data!r} is not a valid config: {exc}"
            ) from exc

    def fields(self, config: RefreshCondition) -> dict[str, object]:
        """The values of the model's fields (a manifest's copy is a subclass)."""
        return {name: getattr(config, name) for name in self.cls.model_fields}

    def check_round_trip(self, config: RefreshCondition) -> None:
        """The config survives its own model, the JSON Schema and the manifest."""
        shown = label(config)
        try:
            dumped = config.model_dump(mode="json", by_alias=True)
        except Exception as exc:
            raise AssertionError(f"{shown}: model_dump(mode='json') raised {exc!r}") from exc
        try:
            back = self.cls.model_validate(dumped)
        except ValidationError as exc:
            raise AssertionError(
                f"{shown} does not round-trip: {self.cls.__name__} does not validate "
                f"its own model_dump(mode='json'): {exc}"
            ) from exc
        self._same(config, back, f"{self.cls.__name__}.model_validate(model_dump())")
        document: dict[str, object] = {
            "name": "check_refresh_condition",
            "model": "scripted:none",
            "hooks": [
                {"kind": HOLDER_KIND, "event": "on_request_start", "refresh_condition": dumped}
            ],
        }
        errors = sorted(
            _leaf_errors(self.validator.iter_errors(document)),
            key=lambda e: [str(p) for p in e.absolute_path],
        )
        if errors:
            found = "; ".join(
                f"{'/'.join(str(p) for p in e.absolute_path) or '(top)'}: {e.message}"
                for e in errors
            )
            raise AssertionError(
                f"{shown}, dumped as a hook's refresh_condition, does not fit the "
                f"manifest's JSON Schema: {found}"
            )
        try:
            loaded = AppConfig.load(document, registry=self.registry)
        except ManifestError as exc:
            raise AssertionError(
                f"{shown}, dumped as a hook's refresh_condition, fits the JSON Schema but "
                f"the manifest does not load: {exc.format()}"
            ) from exc
        parsed = getattr(loaded.hooks[0], "refresh_condition", None)
        if not isinstance(parsed, self.cls):
            raise AssertionError(f"{shown} loads back from a manifest as {parsed!r}")
        self._same(config, parsed, "a manifest")

    def _same(self, config: RefreshCondition, back: RefreshCondition, through: str) -> None:
        """Fail naming each field that changed when ``config`` came back through ``through``."""
        before, after = self.fields(config), self.fields(back)
        changed = [
            f"{name}: {before[name]!r} -> {after[name]!r}"
            for name in before
            if before[name] != after[name]
        ]
        if changed:
            raise AssertionError(
                f"{label(config)} does not round-trip through {through}: " + ", ".join(changed)
            )


def _leaf_errors(errors: Iterable[SchemaError]) -> Iterator[SchemaError]:
    """The errors inside ``oneOf``/``anyOf`` ones: the manifest's lists are
    unions, whose own error only says no member fits."""
    for error in errors:
        if error.context:
            yield from _leaf_errors(error.context)
        else:
            yield error
