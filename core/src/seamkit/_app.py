"""`AppConfig`: the app manifest, and its run settings."""

from __future__ import annotations

from collections.abc import Mapping
from os import PathLike
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from ._config import HookConfig, ToolConfig

__all__ = ["AppConfig", "Settings"]


class Settings(BaseModel):
    """Limits and knobs of a run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_turns: int = Field(default=10, gt=0, description="Model turns before the run stops.")
    tool_concurrency: int = Field(
        default=1, gt=0, description="Tool calls of one turn that may run at once."
    )
    max_invalid_tool_calls: int = Field(
        default=3, ge=0, description="Invalid tool calls the model may retry per run."
    )
    run_timeout_seconds: float | None = Field(
        default=None, gt=0, description="Wall-clock limit of one run; none by default."
    )
    session_wait_seconds: float = Field(
        default=10.0,
        ge=0,
        description="How long a run waits for another run on the same session before it "
        "fails with 'session busy'.",
    )


class AppConfig(BaseModel):
    """An app manifest: the model, the tools, the hooks and the settings.

    ``tools`` and ``hooks`` are discriminated unions on ``kind`` over the
    installed plugins; :meth:`load` validates against them.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="The app's name (also the agent's name).")
    model: str = Field(description="'<provider>:<name>', e.g. 'scripted:script.yaml'.")
    preamble: str | None = Field(default=None, description="The system prompt.")
    tools: list[ToolConfig] = Field(default_factory=list, description="Tool entries.")
    hooks: list[HookConfig] = Field(default_factory=list, description="Configured hooks.")
    settings: Settings = Field(default_factory=Settings)

    _source: str | None = PrivateAttr(default=None)

    @property
    def source(self) -> str | None:
        """The file this manifest was read from (relative paths resolve against it)."""
        return self._source

    @classmethod
    def load(
        cls, source: str | PathLike[str] | Mapping[str, Any], *, registry: Any = None
    ) -> AppConfig:
        """Read and validate a manifest from a YAML/JSON file path or a dict.

        Raises :class:`seamkit.ManifestError` listing every problem found.
        """
        from ._manifest import load_manifest

        return load_manifest(source, registry=registry)
