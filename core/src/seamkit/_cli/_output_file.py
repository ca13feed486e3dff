"""``seamkit run --output-schema FILE``: the output a run must give, read
from a JSON or YAML file, replacing the manifest's ``output:`` for that run.

FILE holds either a JSON Schema (the answer's schema, with the defaults of
`seamkit.Output`) or a mapping written as the manifest's ``output:`` section
(``{schema: ... | ref: "module:Name", mode, retries, name, description,
strict}``), told apart by a top-level ``schema`` or ``ref`` key, which a JSON
Schema does not have. A ``ref`` is looked up next to FILE too. Every problem
is a `SeamkitError` with a hint, for the command to print in two lines.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .._errors import ManifestError, OutputDefinitionError, SeamkitError
from .._manifest import OutputConfig, read_document
from .._output import Output

__all__ = ["read_output_file"]

_EXAMPLE = (
    "write a JSON Schema, e.g. {type: object, properties: {name: {type: string}}}, or an "
    "output mapping, e.g. {schema: {...}, mode: tool, retries: 2}"
)


def read_output_file(path: str) -> Output[Any]:
    """The `Output` that ``path`` declares. Raises `SeamkitError` (message
    naming the file and what is wrong, hint saying what would be right)."""
    where = f"--output-schema {path}"
    try:
        data = read_document(path).data
    except ManifestError as exc:
        first = exc.problems[0] if exc.problems else None
        message = first.message if first is not None else exc.message
        raise SeamkitError(f"{where}: {message}", hint=_EXAMPLE) from None
    if not isinstance(data, dict):
        raise SeamkitError(f"{where}: the file must hold a mapping", hint=_EXAMPLE)
    if "schema" not in data and "ref" not in data:
        try:
            return Output(data)
        except OutputDefinitionError as exc:
            raise SeamkitError(f"{where}: {exc.message}", hint=exc.hint or _EXAMPLE) from None
    try:
        config = OutputConfig.model_validate(data)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        field = ".".join(str(part) for part in error["loc"]) or "(top level)"
        hint = (error.get("ctx") or {}).get("hint")
        if error["type"] == "extra_forbidden":
            hint = "allowed fields: " + ", ".join(
                sorted(f.alias or n for n, f in OutputConfig.model_fields.items())
            )
        raise SeamkitError(
            f"{where}: {field}: {error['msg']}", hint=hint if isinstance(hint, str) else _EXAMPLE
        ) from None
    try:
        return config.build(Path(path).resolve().parent)
    except SeamkitError as exc:
        raise SeamkitError(f"{where}: {exc.message}", hint=exc.hint) from None
