"""What a tool function asks for: the arguments the model fills (validated by a
pydantic model, advertised as JSON Schema) and the values the kernel injects.

A parameter is injected, and hidden from the model, when it is

- annotated :class:`seamkit.ActionContext` (or a subclass), or named
  ``action_context``: it receives the run's context;
- named ``action_agent``: it receives the running agent;
- annotated :class:`seamkit.CallInfo`: it receives the call's own id,
  idempotency key and attempt (never from the shared context);
- named ``_x``: it receives the context property ``x``;
- annotated ``Annotated[T, Injected("x")]``: it receives property ``x``
  whatever the parameter is called.

Everything else is an argument of the model's. Descriptions come from
``Annotated[T, Field(description=...)]`` or from the docstring's argument
section (Google, NumPy, reST or Epydoc style).
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo
from pydantic.json_schema import GenerateJsonSchema

from ._context import ActionContext, CallInfo
from ._errors import ToolDefinitionError
from ._secret import Secret

__all__ = ["Injected", "Injection", "ToolSignature", "describe"]


@dataclass(frozen=True, slots=True)
class Injected:
    """Marks a parameter as injected: ``Annotated[T, Injected("x")]`` receives
    the context property ``x`` and is never shown to the model."""

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TypeError("Injected(name) needs a non-empty property name")


@dataclass(frozen=True, slots=True)
class Injection:
    """One injected parameter: ``prop`` is the property it receives, ``None``
    for the whole `ActionContext` (or the running agent, when ``agent``)."""

    param: str
    prop: str | None
    required: bool
    keep_secret: bool
    agent: bool = False
    call_info: bool = False


@dataclass(frozen=True, slots=True)
class ToolSignature:
    """A function's arguments split into the model's and the injected ones."""

    model: type[BaseModel]
    """Validates the model's arguments (by parameter name); fields are ``p0..pN``."""
    fields: tuple[tuple[str, str], ...]
    """``(field, parameter)`` pairs, in signature order."""
    injections: tuple[Injection, ...]
    positional_only: tuple[str, ...]
    accepts_extra: bool
    description: str
    parameters: dict[str, Any]
    """The JSON Schema of the model's arguments."""

    @property
    def argument_names(self) -> tuple[str, ...]:
        """The names the model may send."""
        return tuple(param for _, param in self.fields)


class _SchemaWithoutTitles(GenerateJsonSchema):
    """Leaves out the ``title`` pydantic derives from each field name: it
    repeats the name and costs the model tokens."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def describe(func: Callable[..., Any], *, description: str | None = None) -> ToolSignature:
    """Analyse ``func`` once, when it becomes a tool.

    Raises :class:`seamkit.ToolDefinitionError` for a signature a tool cannot have
    (``*args``, a parameter named ``_``, unresolvable type hints).
    """
    where = getattr(func, "__qualname__", repr(func))
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError) as exc:
        raise ToolDefinitionError(f"tool {where}: cannot read its signature: {exc}") from None
    try:
        hints = typing.get_type_hints(func, include_extras=True)
    except Exception as exc:
        raise ToolDefinitionError(
            f"tool {where}: cannot resolve its type hints: {type(exc).__name__}: {exc}",
            hint="import the types the annotations name at module level",
        ) from None
    doc = _parse_doc(func)
    fields: dict[str, Any] = {}
    pairs: list[tuple[str, str]] = []
    injections: list[Injection] = []
    positional_only: list[str] = []
    accepts_extra = False
    for param in signature.parameters.values():
        if param.kind is param.VAR_POSITIONAL:
            raise ToolDefinitionError(
                f"tool {where}: *{param.name} is not supported",
                hint="a tool receives keyword arguments from a JSON object; use a list parameter",
            )
        if param.kind is param.VAR_KEYWORD:
            accepts_extra = True
            continue
        if param.kind is param.POSITIONAL_ONLY:
            positional_only.append(param.name)
        hint = hints.get(param.name, Any)
        injection = _injection(param, hint, where)
        if injection is not None:
            injections.append(injection)
            continue
        field = f"p{len(pairs)}"
        pairs.append((field, param.name))
        default = ... if param.default is param.empty else param.default
        info: dict[str, Any] = {"alias": param.name}
        if doc.params.get(param.name) and not _has_description(hint):
            info["description"] = doc.params[param.name]
        fields[field] = (hint, Field(default, **info))
    try:
        model = create_model(
            f"{getattr(func, '__name__', 'tool')}_arguments",
            __config__=ConfigDict(
                extra="forbid",
                populate_by_name=False,
                arbitrary_types_allowed=False,
                strict=True,
            ),
            **fields,
        )
        parameters = model.model_json_schema(by_alias=True, schema_generator=_SchemaWithoutTitles)
    except Exception as exc:
        raise ToolDefinitionError(
            f"tool {where}: its arguments cannot be described as JSON Schema: "
            f"{type(exc).__name__}: {exc}",
            hint="use JSON-friendly types (str, int, float, bool, lists, dicts, enums, "
            "pydantic models, dataclasses), or inject the value from the context",
        ) from None
    parameters.pop("title", None)
    parameters.setdefault("properties", {})
    if accepts_extra:
        parameters["additionalProperties"] = True
    return ToolSignature(
        model=model,
        fields=tuple(pairs),
        injections=tuple(injections),
        positional_only=tuple(positional_only),
        accepts_extra=accepts_extra,
        description=doc.text if description is None else description,
        parameters=parameters,
    )


def _injection(param: inspect.Parameter, hint: Any, where: str) -> Injection | None:
    required = param.default is param.empty
    base, metadata = _unwrap_annotated(hint)
    marks = [m for m in metadata if isinstance(m, Injected)]
    if marks:
        return Injection(param.name, marks[-1].name, required, _is_secret(base))
    if base is CallInfo:
        return Injection(param.name, None, required, False, call_info=True)
    if param.name == "action_agent":
        return Injection(param.name, None, required, False, agent=True)
    if (isinstance(base, type) and issubclass(base, ActionContext)) or (
        param.name == "action_context"
    ):
        return Injection(param.name, None, required, False)
    if param.name.startswith("_"):
        prop = param.name[1:]
        if not prop:
            raise ToolDefinitionError(
                f"tool {where}: a parameter named '_' names no context property",
                hint="name it '_<property>', e.g. '_user_id'",
            )
        return Injection(param.name, prop, required, _is_secret(base))
    return None


def _unwrap_annotated(hint: Any) -> tuple[Any, tuple[Any, ...]]:
    if get_origin(hint) is Annotated:
        base, *metadata = get_args(hint)
        return base, tuple(metadata)
    return hint, ()


def _is_secret(hint: Any) -> bool:
    return hint is Secret or get_origin(hint) is Secret


def _has_description(hint: Any) -> bool:
    _, metadata = _unwrap_annotated(hint)
    return any(isinstance(m, FieldInfo) and m.description for m in metadata)


@dataclass(frozen=True, slots=True)
class _Doc:
    text: str
    params: dict[str, str]


def _parse_doc(func: Callable[..., Any]) -> _Doc:
    raw = inspect.getdoc(func)
    if not raw:
        return _Doc("", {})
    import docstring_parser  # lazy: only tools with a docstring need it

    try:
        parsed = docstring_parser.parse(raw)
    except docstring_parser.ParseError:
        return _Doc(raw.strip(), {})
    params = {p.arg_name: p.description for p in parsed.params if p.description}
    if not params:
        return _Doc(raw.strip(), {})
    parts = [parsed.short_description or "", parsed.long_description or ""]
    return _Doc("\n\n".join(p.strip() for p in parts if p and p.strip()), params)
