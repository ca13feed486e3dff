"""`Tool` and `@seamkit.tool`: a function the model can call, with its schema,
its injected dependencies and the rules that turn any outcome into a result."""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import logging
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, overload

from pydantic import ValidationError
from pydantic_core import PydanticSerializationError, to_json

from ._context import ActionContext
from ._errors import InvalidToolCall, SeamkitError
from ._results import ToolResult, ToolSpec
from ._secret import MASK, Secret
from ._signature import ToolSignature, describe

__all__ = ["Tool", "tool"]

log = logging.getLogger("seamkit.tools")

_MISSING: Any = object()
_EMPTY_CONTEXT = ActionContext(context_id="empty")
_PYDANTIC_PREFIX = "Error serializing to JSON: "
_PLAIN = frozenset({str, int, float, bool, dict, list, tuple, type(None)})


class Tool:
    """A function the model can call.

    Its ``name`` may be any text: a tool used under a ``toolset`` gets the
    sanitised ``<toolset>_<name>``; one used as it is must match the tool-name
    grammar, which is checked when the agent's tools are resolved.

    Made with :func:`seamkit.tool` (or :meth:`Tool.from_function`). Calling
    the object calls the function directly; :meth:`call` is what the agent
    does: validate the model's arguments, inject what the function asks for
    from the context, run it, and turn whatever happens into a
    :class:`seamkit.ToolResult`.
    """

    __slots__ = (
        "__wrapped__",
        "_async",
        "_fields",
        "_injected_names",
        "_names",
        "_sig",
        "_spec",
        "_validate",
        "description",
        "function",
        "name",
        "tags",
        "terminal",
        "timeout_seconds",
    )

    def __init__(
        self,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        tags: Iterable[str] = (),
        terminal: bool = False,
        timeout_seconds: float | None = None,
        _signature: ToolSignature | None = None,
    ) -> None:
        if not callable(function):
            raise TypeError(f"a tool needs a callable, not {type(function).__name__}")
        self.function = function
        self.__wrapped__ = function
        self.name = name if name is not None else getattr(function, "__name__", "")
        if not isinstance(self.name, str) or not self.name:
            raise SeamkitError(
                f"tool {_qualname(function)}: a tool needs a non-empty name",
                hint="pass one: @seamkit.tool(name='...')",
            )
        if timeout_seconds is not None and not (
            isinstance(timeout_seconds, int | float) and timeout_seconds > 0
        ):
            raise SeamkitError(
                f"tool {self.name!r}: timeout_seconds must be a number > 0, "
                f"not {timeout_seconds!r}",
                hint="leave it out for no time-out",
            )
        self._sig = _signature or describe(function, description=description)
        self.description = self._sig.description if description is None else description
        self.tags: frozenset[str] = frozenset(tags)
        self.terminal = bool(terminal)
        self.timeout_seconds: float | None = timeout_seconds
        self._async = _is_async(function)
        self._fields = self._sig.fields
        self._validate = self._sig.model.__pydantic_validator__.validate_json
        self._names = frozenset(self._sig.argument_names)
        self._injected_names = frozenset(i.param for i in self._sig.injections)
        self._spec = ToolSpec(
            name=self.name, description=self.description, parameters=self._sig.parameters
        )

    @classmethod
    def from_function(cls, function: Callable[..., Any], **options: Any) -> Tool:
        """The tool for ``function`` (a `Tool` is returned as it is when no
        options are given, or with the options applied)."""
        if isinstance(function, Tool):
            return function.replace(**options) if options else function
        return cls(function, **options)

    @property
    def spec(self) -> ToolSpec:
        """What the model is shown: name, description, JSON Schema of the arguments."""
        return self._spec

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON Schema of the arguments (injected parameters left out)."""
        return self._sig.parameters

    @property
    def injected(self) -> dict[str, str | None]:
        """Injected parameters and the property each receives (``None``: the
        whole `ActionContext`)."""
        return {i.param: i.prop for i in self._sig.injections}

    def replace(self, **changes: Any) -> Tool:
        """A copy with ``name``, ``description``, ``tags``, ``terminal`` or
        ``timeout_seconds`` changed (the signature is not analysed again)."""
        options: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "tags": self.tags,
            "terminal": self.terminal,
            "timeout_seconds": self.timeout_seconds,
        }
        unknown = set(changes) - set(options)
        if unknown:
            raise TypeError(f"Tool.replace() got unknown field(s): {', '.join(sorted(unknown))}")
        options.update(changes)
        return Tool(self.function, _signature=self._sig, **options)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the function itself, exactly as if it were not a tool."""
        return self.function(*args, **kwargs)

    def __repr__(self) -> str:
        args = ", ".join(self._sig.argument_names)
        return f"<Tool {self.name}({args})>"

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The model's arguments, validated and converted, by parameter name.

        Raises :class:`seamkit.InvalidToolCall` saying what is wrong, in words
        meant for the model: not an object, a missing or ill-typed argument,
        an argument the tool does not take (an injected parameter's name
        included). A `Secret` among the arguments is validated as its value.
        """
        return self._check(arguments, [])

    def _check(self, arguments: Mapping[str, Any], hidden: list[str]) -> dict[str, Any]:
        """:meth:`validate`, adding the plain text of every `Secret` argument
        it unwraps to ``hidden``."""
        if type(arguments) is not dict and not isinstance(arguments, Mapping):
            raise InvalidToolCall(
                f"arguments for tool {self.name!r} must be a JSON object, "
                f"not {type(arguments).__name__}",
                tool=self.name,
                errors=("arguments must be a JSON object",),
            )
        extra: dict[str, Any] = {}
        if self._sig.accepts_extra:
            names = self._names
            extra = {k: v for k, v in arguments.items() if k not in names}
            if extra:
                arguments = {k: v for k, v in arguments.items() if k in names}
        try:
            try:
                data = to_json(arguments)
            except PydanticSerializationError:
                data = to_json(arguments, fallback=functools.partial(_unwrap, hidden))
            # Strict, with JSON's meaning: what the schema accepts, and only
            # that ("2026-01-02" is a date, "5" is not an integer).
            model = self._validate(data, strict=True)
        except ValidationError as exc:
            raise self._invalid(self._explain(exc)) from None
        except Exception as exc:  # not JSON at all (a hook rewrote them with objects)
            raise self._invalid([str(exc)]) from None
        values = model.__dict__
        out = {param: values[field] for field, param in self._fields}
        if extra:
            taken = sorted(set(extra) & self._injected_names)
            if taken:
                raise self._invalid([f"{name!r} is not an argument of this tool" for name in taken])
            out.update(extra)
        return out

    async def call(
        self,
        arguments: Mapping[str, Any],
        context: ActionContext | None = None,
        *,
        call_id: str = "",
    ) -> ToolResult:
        """Validate ``arguments``, inject from ``context``, run the function.

        Raises :class:`seamkit.InvalidToolCall` when the arguments do not fit
        (so the agent can take its invalid-call path); every other outcome is
        a `ToolResult`: the return value (a string as it is, anything else as
        JSON), an error the tool returned on purpose (``ToolResult.error``),
        or ``is_error=True, raised=True`` with ``"Error: ..."`` for an
        exception, a time-out or a missing dependency.
        """
        hidden: list[str] = []
        values = self._check(arguments, hidden)
        return await self.invoke(values, context, call_id=call_id, secrets=hidden)

    async def invoke(
        self,
        values: dict[str, Any],
        context: ActionContext | None = None,
        *,
        call_id: str = "",
        secrets: Sequence[str] = (),
    ) -> ToolResult:
        """Run the tool on arguments :meth:`validate` already produced.

        ``secrets`` are more plain texts to mask in error messages and logs,
        besides the context's secrets (:meth:`call` passes the values of the
        `Secret` arguments it unwrapped).
        """
        ctx = _EMPTY_CONTEXT if context is None else context
        kwargs = dict(values)
        for injection in self._sig.injections:
            if injection.prop is None:
                kwargs[injection.param] = ctx
                continue
            value = ctx.get(injection.prop, _MISSING)
            if value is _MISSING:
                if injection.required:
                    return self._failed(
                        f"tool {self.name!r} needs the context property {injection.prop!r} "
                        f"(parameter {injection.param!r}), and this request's context does "
                        f"not provide it",
                        call_id,
                    )
                continue
            if isinstance(value, Secret) and not injection.keep_secret:
                value = value.get_secret_value()
            kwargs[injection.param] = value
        args: tuple[Any, ...] = ()
        if self._sig.positional_only:
            args = tuple(kwargs.pop(p) for p in self._sig.positional_only if p in kwargs)
        timeout = self.timeout_seconds
        scope: asyncio.Timeout | None = None
        try:
            if timeout is None:
                result = self.function(*args, **kwargs)
                if self._async:
                    result = await result
            else:
                async with asyncio.timeout(timeout) as scope:
                    if self._async:
                        result = await self.function(*args, **kwargs)
                    else:
                        call = functools.partial(self.function, *args, **kwargs)
                        result = await asyncio.to_thread(call)
            if type(result) not in _PLAIN and inspect.isawaitable(result):
                result = await result
        except Exception as exc:
            if scope is not None and scope.expired():
                return self._failed(f"tool {self.name!r} timed out after {timeout:g}s", call_id)
            text = _scrub(f"{type(exc).__name__}: {exc}", ctx, secrets)
            log.warning("tool %r raised %s", self.name, text)
            if log.isEnabledFor(logging.DEBUG):
                log.debug("tool %r traceback:\n%s", self.name, _frames(exc))
            return self._failed(text, call_id, logged=True)
        if isinstance(result, str):
            content = result
        elif isinstance(result, ToolResult):
            return (
                result
                if result.call_id == call_id
                else result.model_copy(update={"call_id": call_id})
            )
        else:
            try:
                content = to_json(result, fallback=_unknown).decode()
            except Exception as exc:
                return self._failed(
                    f"tool {self.name!r} returned a {type(result).__name__} that cannot be "
                    f"written as JSON: "
                    f"{_scrub(str(exc), ctx, secrets).removeprefix(_PYDANTIC_PREFIX)}",
                    call_id,
                )
        return ToolResult(call_id=call_id, content=content)

    def _failed(self, text: str, call_id: str, *, logged: bool = False) -> ToolResult:
        if not logged:
            log.warning("%s", text)
        return ToolResult(call_id=call_id, content=f"Error: {text}", is_error=True, raised=True)

    def _invalid(self, errors: list[str]) -> InvalidToolCall:
        return InvalidToolCall(
            f"invalid arguments for tool {self.name!r}: {'; '.join(errors)}",
            tool=self.name,
            errors=errors,
        )

    def _explain(self, exc: ValidationError) -> list[str]:
        injected = self._injected_names
        out: list[str] = []
        for error in exc.errors(include_url=False, include_input=False):
            loc = ".".join(str(p) for p in error["loc"])
            top = len(error["loc"]) == 1
            if error["type"] == "extra_forbidden" and top:
                if loc in injected:
                    out.append(f"{loc!r} is not an argument of this tool")
                else:
                    known = ", ".join(self._sig.argument_names) or "none"
                    out.append(f"unexpected argument {loc!r} (arguments: {known})")
            elif error["type"] == "missing" and top:
                out.append(f"missing required argument {loc!r}")
            else:
                out.append(f"{loc}: {error['msg']}" if loc else error["msg"])
        return out


@overload
def tool(function: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    tags: Iterable[str] = (),
    terminal: bool = False,
    timeout_seconds: float | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    tags: Iterable[str] = (),
    terminal: bool = False,
    timeout_seconds: float | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a function (plain or ``async def``) a tool: ``@seamkit.tool`` or
    ``@seamkit.tool(name=..., description=..., tags=..., terminal=...,
    timeout_seconds=...)``.

    The description defaults to the docstring; the argument schema comes from
    the type hints. See :class:`Tool`.
    """

    def make(fn: Callable[..., Any]) -> Tool:
        return Tool(
            fn,
            name=name,
            description=description,
            tags=tags,
            terminal=terminal,
            timeout_seconds=timeout_seconds,
        )

    return make if function is None else make(function)


def _is_async(function: Callable[..., Any]) -> bool:
    target = function
    while isinstance(target, functools.partial):
        target = target.func
    return inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(
        getattr(target, "__call__", None)  # noqa: B004
    )


def _qualname(function: Callable[..., Any]) -> str:
    return getattr(function, "__qualname__", None) or repr(function)


def _scrub(text: str, context: ActionContext, more: Sequence[str] = ()) -> str:
    """``text`` with the plain value of every secret in ``context`` (and every
    text in ``more``) masked, in the escaped forms repr() and JSON give it too."""
    plains = [
        v.get_secret_value()
        for v in context.values()
        if isinstance(v, Secret) and isinstance(v.get_secret_value(), str)
    ]
    for plain in (*plains, *more):
        if plain:
            for form in {plain, repr(plain)[1:-1], json.dumps(plain)[1:-1]}:
                if form:
                    text = text.replace(form, MASK)
    return text


def _unwrap(hidden: list[str], value: Any) -> Any:
    """A `Secret` argument's value, for validation; its text is remembered to
    be masked in errors."""
    if isinstance(value, Secret):
        plain = value.get_secret_value()
        hidden.append(str(plain))
        return plain
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


def _unknown(value: Any) -> Any:
    if isinstance(value, Secret):
        return MASK
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


def _frames(exc: BaseException) -> str:
    # The frames only: the exception's own text may hold a secret and was
    # logged already, scrubbed.
    return "".join(traceback.format_tb(exc.__traceback__))
