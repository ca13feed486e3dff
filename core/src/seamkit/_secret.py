"""`Secret`: a value that reaches the code that uses it and nothing else."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

__all__ = ["Secret", "reveal"]

T = TypeVar("T")

MASK = "***"


class Secret(Generic[T]):
    """Wraps a value so it prints as ``***`` in reprs, logs, schemas and dumps.

    Tools receive the plain value (the kernel unwraps it when injecting);
    everything else sees the mask. ``source`` keeps the text the value came
    from in a manifest (``${secret:API_KEY}``), which is what identities and
    the injected messages show.
    """

    __slots__ = ("_source", "_value")

    def __init__(self, value: T, *, source: str | None = None) -> None:
        self._value = value
        self._source = source

    def get_secret_value(self) -> T:
        """The wrapped value. Call it only where the value is really used."""
        return self._value

    @property
    def source(self) -> str | None:
        """The manifest text this secret was read from, if any."""
        return self._source

    def __repr__(self) -> str:
        return f"Secret({MASK})"

    def __str__(self) -> str:
        return MASK

    def __format__(self, spec: str) -> str:
        return MASK

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and bool(self._value == other._value)

    def __hash__(self) -> int:
        return hash((Secret, self._value))

    def __reduce__(self) -> Any:
        raise TypeError("a Secret cannot be pickled")

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source_type: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        def wrap(value: Any) -> Secret[Any]:
            return value if isinstance(value, Secret) else Secret(value)

        return core_schema.no_info_plain_validator_function(
            wrap,
            serialization=core_schema.plain_serializer_function_ser_schema(
                lambda v: MASK, when_used="always"
            ),
            json_schema_input_schema=core_schema.str_schema(),
        )


def reveal(value: Any) -> Any:
    """Unwrap secrets inside ``value`` (dicts, lists and tuples walked)."""
    if isinstance(value, Secret):
        return value.get_secret_value()
    if isinstance(value, dict):
        return {k: reveal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [reveal(v) for v in value]
    if isinstance(value, tuple):
        return tuple(reveal(v) for v in value)
    return value
