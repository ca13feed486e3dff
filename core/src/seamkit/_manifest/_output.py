"""`OutputConfig`: the manifest's ``output:`` section, what a run's answer
must be (`seamkit.Output`), and `build_output`, which gives the `Output`.

The answer is described by a JSON Schema written in place (``schema``) or by
a Python type named as function tools name functions (``ref:
"package.module:Name"``, looked up next to the manifest when not
importable otherwise). A ``schema`` is checked when the manifest is read
(`seamkit validate`); a ``ref`` when the agent is built, since that imports it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from .._errors import OutputDefinitionError, Problem, SeamkitError
from .._function_kind import import_ref
from .._output import DEFAULT_OUTPUT_NAME, Output
from .._types import OutputMode

__all__ = ["OutputConfig", "build_output"]

_WHICH = "give the answer's JSON Schema under 'schema', or a Python type as ref: 'module:Name'"


class OutputConfig(BaseModel):
    """The ``output:`` section: the answer a run must give, validated, with
    bounded retries (`seamkit.Output`); exactly one of ``schema`` and ``ref``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_: dict[str, JsonValue] | None = Field(
        default=None,
        alias="schema",
        description="The answer's JSON Schema (a mapping; a root that is not an object is "
        "asked for as {response: ...}).",
    )
    ref: str | None = Field(
        default=None,
        description="'package.module:Name': a pydantic model, dataclass, TypedDict or other "
        "type the answer must be (a module is also looked up next to the manifest).",
        pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$",
    )
    name: str = Field(
        default=DEFAULT_OUTPUT_NAME,
        description="The output tool's name (tool mode) and the schema's name (native mode).",
        pattern=r"^[A-Za-z0-9_-]{1,64}$",
    )
    description: str | None = Field(
        default=None, description="What the answer is, for the model (tool and schema)."
    )
    mode: OutputMode = Field(
        default="auto",
        description="How the model is asked: 'tool' (it calls an output tool), 'native' (the "
        "provider's structured output), 'prompted' (the schema in the instructions) or "
        "'auto' (native where the model supports it, else tool).",
    )
    retries: int = Field(
        default=2,
        ge=0,
        description="How many more answers the model may give after one that fails "
        "validation (a hard cap); then the run ends failed with OutputInvalid.",
    )
    strict: bool | None = Field(
        default=None,
        description="Ask a native provider to enforce the schema; true refuses a schema a "
        "strict provider cannot hold (default: strict when the schema allows it).",
    )

    @model_validator(mode="after")
    def _one_answer_and_a_valid_one(self) -> OutputConfig:
        """Exactly one of ``schema`` and ``ref``; a ``schema`` that can be an
        output (a JSON Schema; with ``strict: true``, one a strict provider holds)."""
        if (self.schema_ is None) == (self.ref is None):
            both = self.schema_ is not None
            raise _located(
                "ref" if both else "schema",
                "output takes either 'schema' or 'ref', not both"
                if both
                else "output needs 'schema' or 'ref'",
                _WHICH,
            )
        if self.schema_ is not None:
            try:
                self.build(None)
            except OutputDefinitionError as exc:
                raise _located("schema", exc.message, exc.hint) from None
        return self

    def build(self, base_dir: str | Path | None) -> Output[Any]:
        """The `Output` this section declares (a ``ref`` imported, next to
        ``base_dir`` if need be). Raises `OutputDefinitionError` for what
        cannot be an output, `SeamkitError` for a ref that does not import."""
        declared: object = self.schema_
        if self.ref is not None:
            where = None if base_dir is None else str(base_dir)
            declared = import_ref(self.ref, where, what="output ref")
        return Output(
            declared,
            mode=self.mode,
            retries=self.retries,
            name=self.name,
            description=self.description,
            strict=self.strict,
        )


def build_output(config: OutputConfig, base_dir: str | Path | None) -> Output[Any] | Problem:
    """The `Output` of a manifest's ``output:`` section, or the `Problem`
    (located at ``output.ref`` or ``output.schema``) that keeps it from being one."""
    field = "ref" if config.ref is not None else "schema"
    try:
        return config.build(base_dir)
    except SeamkitError as exc:
        return Problem(("output", field), exc.message, exc.hint)


def _located(field: str, message: str, hint: str | None) -> ValidationError:
    """A validation error at ``output.<field>`` with ``message`` and ``hint``."""
    context: dict[str, str] = {"message": message}
    if hint:
        context["hint"] = hint
    error = PydanticCustomError("output_definition", "{message}", context)
    detail = InitErrorDetails(type=error, loc=(field,), input={})
    return ValidationError.from_exception_data(OutputConfig.__name__, [detail])
