"""`AppConfig`: the app manifest; its run settings, the kernel's `sessions`
section, and the model given as a string or a provider's config mapping."""

from __future__ import annotations

from collections.abc import Mapping
from os import PathLike
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    ValidationError,
    model_validator,
)

from .._config import HookConfig, ModelSpec, Placement, Settings, ToolConfig
from .._registry import Registry
from ._build import app_model
from ._expand import expand_hooks, names_events
from ._load import load_manifest
from ._output import OutputConfig

__all__ = ["AppConfig", "OutputConfig", "Placement", "SessionsConfig", "Settings"]


class SessionsConfig(BaseModel):
    """The kernel's ``sessions:`` section: where conversations are kept."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    store: str | None = Field(
        default=None,
        description="A path or URL: 'sqlite:///path/sessions.sqlite', a plain path, or a "
        "scheme a plugin registers (e.g. 'postgresql://...'). Default: sessions.sqlite "
        "in the user's data directory.",
    )


class AppConfig(BaseModel):
    """An app manifest: the model, the tools, the hooks, the settings, and the
    sections plugins own.

    ``tools`` and ``hooks`` are discriminated unions on ``kind`` over the
    installed plugins, ``model`` a string ``"<provider>:<name>"`` or a
    provider's config mapping; :meth:`load` validates against them.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="The app's name (also the agent's name).")
    model: ModelSpec = Field(
        description="'<provider>:<name>' (e.g. 'scripted:script.yaml'), or a mapping "
        "{provider, name, ...} with the provider's options."
    )
    preamble: str | None = Field(default=None, description="The system prompt.")
    tools: list[ToolConfig] = Field(default_factory=list, description="Tool entries.")
    hooks: list[HookConfig] = Field(default_factory=list, description="Configured hooks.")
    output: OutputConfig | None = Field(
        default=None,
        description="What a run's answer must be: a JSON Schema or a Python type, validated, "
        "with bounded retries (default: text).",
    )
    settings: Settings = Field(default_factory=Settings)
    sessions: SessionsConfig = Field(
        default_factory=SessionsConfig, description="Where sessions are kept."
    )

    _source: str | None = PrivateAttr(default=None)
    _hook_entries: tuple[int, ...] | None = PrivateAttr(default=None)

    @model_validator(mode="wrap")
    @classmethod
    def _expand_hook_events(
        cls, data: Any, handler: ModelWrapValidatorHandler[AppConfig]
    ) -> AppConfig:
        """Hook entries with ``events:`` written out, one per event (see `_expand`)."""
        hooks = data.get("hooks") if isinstance(data, dict) else None
        if not isinstance(hooks, list) or not any(names_events(h) for h in hooks):
            return handler(data)
        expansion = expand_hooks(hooks)
        try:
            config = handler({**data, "hooks": expansion.hooks})
        except ValidationError as exc:
            raise expansion.error(exc.title, exc, list(cls.model_fields)) from None
        if expansion.problems:
            raise expansion.error(cls.__name__, None, list(cls.model_fields))
        config._hook_entries = tuple(expansion.origins)
        return config

    @property
    def hook_entries(self) -> tuple[int, ...]:
        """For each item of ``hooks``, the index of the manifest entry it came from.

        A hook entry that names ``events: [a, b]`` is validated as one entry
        per event, in its place, so ``hooks`` holds one config per event,
        each equal to what a separate entry would give; those items share the
        entry's index here. Without such an entry, item ``i`` came from entry ``i``.
        """
        entries = self._hook_entries
        if entries is None or len(entries) != len(self.hooks):
            return tuple(range(len(self.hooks)))
        return entries

    @property
    def source(self) -> str | None:
        """The file this manifest was read from (relative paths resolve against it)."""
        return self._source

    def section(self, key: str) -> BaseModel | None:
        """The validated section ``key`` that a plugin registered (``serve``,
        ``telemetry``...), or ``None`` when the manifest leaves it out."""
        if key not in type(self).model_fields:
            return None
        value = getattr(self, key)
        return value if isinstance(value, BaseModel) else None

    @classmethod
    def load(
        cls,
        source: str | PathLike[str] | Mapping[str, Any] | AppConfig,
        *,
        registry: Registry | None = None,
    ) -> AppConfig:
        """Read and validate a manifest from a YAML/JSON file path or a dict.

        Raises :class:`seamkit.ManifestError` listing every problem found.
        """
        if isinstance(source, AppConfig):
            return source
        config = load_manifest(source, base=cls, registry=registry)
        assert isinstance(config, AppConfig)
        return config

    @classmethod
    def model_for(cls, registry: Registry, *, preview: bool | None = None) -> type[AppConfig]:
        """The concrete manifest model for the kinds installed in ``registry``."""
        built = app_model(registry, cls, preview=preview)
        assert issubclass(built, AppConfig)
        return built
