"""`Tool` and `@seamkit.tool`: a function the model can call, with its schema,
its injected dependencies and the rules that turn any outcome into a result;
`Tool.from_schema` for tools whose schema comes from elsewhere (a service, an
MCP server); and the tool-name grammar with `sanitize_toolname`."""

from __future__ import annotations

import functools
import inspect
import json
import logging
import re
import traceback
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, get_args, overload

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError, to_json

from ._approval import ApprovalRule, ApprovalSetting, approval_rule
from ._context import ActionContext, CallInfo, Effects
from ._errors import InvalidToolCall, ToolDefinitionError
from ._flatcheck import flat_check
from ._schema import compile_schema
from ._secret import Redactor, Secret, secret_json, secret_texts
from ._signature import ToolSignature, describe
from ._types import ToolResult, ToolSpec

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

SchemaCall = (
    Callable[[dict[str, Any], ActionContext], Awaitable[Any] | AsyncIterator[str]]
    | Callable[[dict[str, Any], ActionContext, CallInfo], Awaitable[Any] | AsyncIterator[str]]
)
"""``call(arguments, ctx)`` (or ``call(arguments, ctx, info)``, ``info`` the
call's `CallInfo`) of a `Tool.from_schema` tool: returns (or is an ``async
def`` returning) a JSON value, a `ToolResult`, or an async iterator of text
chunks that stream as `seamkit.stream.ToolOutputDelta`."""

__all__ = [
    "TOOL_NAME_PATTERN",
    "SchemaCall",
    "Tool",
    "check_toolname",
    "sanitize_toolname",
    "tool",
]

log = logging.getLogger("seamkit.tools")

_MISSING: Any = object()
_EMPTY_CONTEXT = ActionContext(context_id="empty")
_PYDANTIC_PREFIX = "Error serializing to JSON: "
_PLAIN = frozenset({str, int, float, bool, dict, list, tuple, type(None)})
_NO_REDACTOR = Redactor()
_EFFECTS: tuple[str, ...] = get_args(Effects)


TOOL_NAME_PATTERN = r"^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$"
"""What every final tool name matches (OpenAI's function-name grammar)."""

_VALID = re.compile(r"[a-zA-Z_][a-zA-Z0-9_-]{0,63}")
_OUTSIDE = re.compile(r"[^a-zA-Z0-9_-]+")
_MAX = 64


def sanitize_toolname(name: str) -> str:
    """Turn any text into a valid tool name.

    Each run of characters outside ``[a-zA-Z0-9_-]`` becomes one ``_``; a ``_``
    is prefixed when the first character is not a letter or ``_``; the result
    is cut to 64 characters. ``""`` stays ``""``. Idempotent.
    """
    if not name:
        return ""
    out = _OUTSIDE.sub("_", name)
    if not (out[0].isascii() and (out[0].isalpha() or out[0] == "_")):
        out = "_" + out
    return out[:_MAX]


def check_toolname(name: str) -> str | None:
    """``None`` when ``name`` is a valid final tool name, else what is wrong."""
    if _VALID.fullmatch(name):
        return None
    if not name:
        return "a tool name cannot be empty"
    if len(name) > _MAX:
        return f"tool name {name!r} is longer than {_MAX} characters"
    return (
        f"tool name {name!r} is not valid: use letters, digits, '_' and '-', "
        f"starting with a letter or '_'"
    )


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
        "approval",
        "description",
        "effects",
        "function",
        "name",
        "stream_output",
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
        approval: ApprovalSetting | ApprovalRule = False,
        effects: Effects = "once",
        stream_output: bool = True,
        _signature: ToolSignature | None = None,
    ) -> None:
        if not callable(function):
            raise TypeError(f"a tool needs a callable, not {type(function).__name__}")
        self.function = function
        self.__wrapped__ = function
        self.name = name if name is not None else getattr(function, "__name__", "")
        if not isinstance(self.name, str) or not self.name:
            raise ToolDefinitionError(
                f"tool {_qualname(function)}: a tool needs a non-empty name",
                hint="pass one: @seamkit.tool(name='...')",
            )
        if timeout_seconds is not None and not (
            isinstance(timeout_seconds, int | float) and timeout_seconds > 0
        ):
            raise ToolDefinitionError(
                f"tool {self.name!r}: timeout_seconds must be a number > 0, "
                f"not {timeout_seconds!r}",
                hint="leave it out for no time-out",
            )
        self._sig = _signature or describe(function, description=description)
        self.description = self._sig.description if description is None else description
        self.tags: frozenset[str] = frozenset(tags)
        self.terminal = bool(terminal)
        self.timeout_seconds: float | None = timeout_seconds
        self.approval: ApprovalRule = approval_rule(approval, tool=self.name)
        """When a call needs a person's approval (`seamkit.Decisions`)."""
        if effects not in _EFFECTS:
            raise ToolDefinitionError(
                f"tool {self.name!r}: effects must be one of {', '.join(_EFFECTS)}, "
                f"not {effects!r}",
                hint="'none' for a tool that only reads, 'idempotent' for one that acts "
                "once per idempotency key, 'once' (the default) for any other",
            )
        self.effects: Effects = effects
        """What running it does: ``none``, ``idempotent`` or ``once`` (the journal's rule)."""
        self.stream_output = bool(stream_output)
        """Whether the chunks it streams are shown live (`ToolOutputDelta`) or
        only once its ``on_post_tool_use`` hooks passed its result."""
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

    @classmethod
    def from_schema(
        cls,
        name: str,
        description: str,
        parameters: Mapping[str, Any],
        call: SchemaCall,
        *,
        tags: Iterable[str] = (),
        terminal: bool = False,
        timeout_seconds: float | None = None,
        approval: ApprovalSetting | ApprovalRule = False,
        effects: Effects = "once",
        stream_output: bool = True,
    ) -> Tool:
        """A tool whose JSON Schema comes from elsewhere (a tool service, an
        MCP server): ``await call(arguments, ctx)`` runs it.

        ``parameters`` is the schema the model sees, as given. Arguments are
        validated against it before ``call`` runs, with JSON's meaning ("5"
        is not an integer), and a failure is an `InvalidToolCall` like a
        decorated tool's. ``call`` may return a JSON value, a `ToolResult`,
        or an async iterator of text chunks (streamed live as
        `seamkit.stream.ToolOutputDelta` and joined into the result; a
        `ToolResult` it yields ends the stream and is the result, so a
        stream can end in an error the model sees).
        ``approval``, ``effects`` and ``stream_output`` are as for
        :func:`seamkit.tool`. ``call``
        may take a third parameter: it then receives the call's `CallInfo`.
        Raises `ToolDefinitionError` for a schema that is not valid JSON
        Schema or not an object schema.
        """
        return _SchemaTool(
            call,
            name=name,
            description=description,
            parameters=dict(parameters),
            tags=tags,
            terminal=terminal,
            timeout_seconds=timeout_seconds,
            approval=approval,
            effects=effects,
            stream_output=stream_output,
        )

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
        """A copy with ``name``, ``description``, ``tags``, ``terminal``,
        ``timeout_seconds``, ``approval``, ``effects`` or ``stream_output`` changed (the
        signature is not analysed again)."""
        options: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "tags": self.tags,
            "terminal": self.terminal,
            "timeout_seconds": self.timeout_seconds,
            "approval": self.approval,
            "effects": self.effects,
            "stream_output": self.stream_output,
        }
        unknown = set(changes) - set(options)
        if unknown:
            raise TypeError(f"Tool.replace() got unknown field(s): {', '.join(sorted(unknown))}")
        options.update(changes)
        return self._copy(options)

    def _copy(self, options: dict[str, Any]) -> Tool:
        """A tool of the same kind with ``options``, the analysis reused."""
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
        agent: object = None,
        on_chunk: Callable[[str], None] | None = None,
        redactor: Redactor | None = None,
        call_info: CallInfo | None = None,
    ) -> ToolResult:
        """Run the tool on arguments :meth:`validate` already produced.

        ``secrets`` are more plain texts to mask in error messages and logs,
        besides the context's secrets (:meth:`call` passes the values of the
        `Secret` arguments it unwrapped); ``redactor`` masks more (a run
        passes ``ctx.redactor``: the manifest's secrets too). ``agent`` is what an
        ``action_agent`` parameter receives. A tool that yields text chunks
        hands each to ``on_chunk`` as it comes; the result joins them.
        ``call_info`` is what a ``CallInfo`` parameter receives (by default
        one with a fresh idempotency key).
        """
        ctx = _EMPTY_CONTEXT if context is None else context
        prepared = self._arguments(values, ctx, agent, call_id, call_info)
        if isinstance(prepared, ToolResult):
            return prepared
        args, kwargs = prepared
        timeout = self.timeout_seconds
        scope: asyncio.Timeout | None = None
        try:
            if timeout is None:
                result = self.function(*args, **kwargs)
                if self._async:
                    result = await result
                if type(result) not in _PLAIN:
                    result = await _settle(result, on_chunk)
            else:
                import asyncio  # lazy: a running loop has it loaded; `seamkit plugins` needs none

                async with asyncio.timeout(timeout) as scope:
                    if self._async:
                        result = await self.function(*args, **kwargs)
                    else:
                        call = functools.partial(self.function, *args, **kwargs)
                        result = await asyncio.to_thread(call)
                    if type(result) not in _PLAIN:
                        result = await _settle(result, on_chunk)
        except Exception as exc:
            if scope is not None and scope.expired():
                return self._failed(f"tool {self.name!r} timed out after {timeout:g}s", call_id)
            mask = (redactor or _NO_REDACTOR).extend([*secret_texts(ctx), *secrets])
            text = mask(f"{type(exc).__name__}: {exc}")
            log.warning("tool %r raised %s", self.name, text)
            if log.isEnabledFor(logging.DEBUG):
                log.debug("tool %r traceback:\n%s", self.name, _frames(exc))
            return self._failed(text, call_id, logged=True)
        return self._result(result, call_id, ctx, secrets, redactor)

    def _arguments(
        self,
        values: dict[str, Any],
        ctx: ActionContext,
        agent: object,
        call_id: str,
        info: CallInfo | None,
    ) -> tuple[tuple[Any, ...], dict[str, Any]] | ToolResult:
        """The function's positional and keyword arguments: the model's
        values plus what is injected; a failed result for a missing one."""
        kwargs = dict(values)
        for injection in self._sig.injections:
            if injection.call_info:
                kwargs[injection.param] = _keyed(info, call_id, self.name)
                continue
            if injection.prop is None:
                kwargs[injection.param] = agent if injection.agent else ctx
                if injection.agent and agent is None and injection.required:
                    return self._failed(
                        f"tool {self.name!r} needs the running agent (parameter "
                        f"{injection.param!r}), and it was called outside an agent run",
                        call_id,
                    )
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
        return args, kwargs

    def _result(
        self,
        result: Any,
        call_id: str,
        ctx: ActionContext,
        secrets: Sequence[str],
        redactor: Redactor | None = None,
    ) -> ToolResult:
        """What the function returned, as the model will see it."""
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
                content = to_json(result, fallback=secret_json).decode()
            except Exception as exc:
                mask = (redactor or _NO_REDACTOR).extend([*secret_texts(ctx), *secrets])
                why = mask(str(exc))
                return self._failed(
                    f"tool {self.name!r} returned a {type(result).__name__} that cannot be "
                    f"written as JSON: {why.removeprefix(_PYDANTIC_PREFIX)}",
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
    approval: ApprovalSetting = False,
    effects: Effects = "once",
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
    approval: ApprovalSetting = False,
    effects: Effects = "once",
    stream_output: bool = True,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a function (plain or ``async def``) a tool: ``@seamkit.tool`` or
    ``@seamkit.tool(name=..., description=..., tags=..., terminal=...,
    timeout_seconds=..., approval=..., effects=..., stream_output=...)``.

    The description defaults to the docstring; the argument schema comes from
    the type hints. ``approval`` says when a call needs a person's approval
    (``True``, or ``{"when": <JSON Schema over the arguments>}``);
    ``effects`` what running it does (``"none"``, ``"idempotent"``, or
    ``"once"``, the default), which decides what happens to a call a crash
    cut short; ``stream_output=False`` keeps the chunks a streaming tool
    yields from the stream until its ``on_post_tool_use`` hooks passed the
    result. See :class:`Tool`.
    """

    def make(fn: Callable[..., Any]) -> Tool:
        return Tool(
            fn,
            name=name,
            description=description,
            tags=tags,
            terminal=terminal,
            timeout_seconds=timeout_seconds,
            approval=approval,
            effects=effects,
            stream_output=stream_output,
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


def _unwrap(hidden: list[str], value: Any) -> Any:
    """A `Secret` argument's value, for validation; its text is remembered to
    be masked in errors."""
    plain = secret_json(value, reveal=True)  # a TypeError for anything but a Secret
    hidden.extend(secret_texts(value))  # the value, and its secret parts
    return plain


def _frames(exc: BaseException) -> str:
    # The frames only: the exception's own text may hold a secret and was
    # logged already, scrubbed.
    return "".join(traceback.format_tb(exc.__traceback__))


class _SchemaTool(Tool):
    """A tool made with :meth:`Tool.from_schema`: validated by JSON Schema,
    called as ``call(arguments, ctx)`` (or ``call(arguments, ctx, info)``)."""

    __slots__ = ("_fast", "_schema", "_takes_info", "_validator")

    def __init__(
        self,
        call: SchemaCall,
        *,
        name: str,
        description: str,
        parameters: dict[str, Any],
        tags: Iterable[str] = (),
        terminal: bool = False,
        timeout_seconds: float | None = None,
        approval: ApprovalSetting | ApprovalRule = False,
        effects: Effects = "once",
        stream_output: bool = True,
        _validator: Validator | None = None,
    ) -> None:
        validator = _validator or _compile(name, parameters)
        super().__init__(
            call,
            name=name,
            description=description,
            tags=tags,
            terminal=terminal,
            timeout_seconds=timeout_seconds,
            approval=approval,
            effects=effects,
            stream_output=stream_output,
            _signature=_schema_signature(name, description, parameters),
        )
        self._takes_info = _positional_count(call) >= 3
        self._schema = parameters
        self._validator = validator
        self._fast = flat_check(parameters)

    def _copy(self, options: dict[str, Any]) -> Tool:
        """A schema tool with ``options``; the schema is not compiled again."""
        return _SchemaTool(
            self.function, parameters=self._schema, _validator=self._validator, **options
        )

    def _check(self, arguments: Mapping[str, Any], hidden: list[str]) -> dict[str, Any]:
        if not isinstance(arguments, Mapping):
            raise self._invalid(
                [f"arguments must be a JSON object, not {type(arguments).__name__}"]
            )
        if self._fast is not None and type(arguments) is dict and self._fast(arguments, True):
            return dict(arguments)  # plain JSON scalars that fit: nothing to convert or word
        try:
            data = json.loads(to_json(arguments, fallback=functools.partial(_unwrap, hidden)))
        except Exception as exc:  # not JSON at all (a hook rewrote them with objects)
            raise self._invalid([str(exc)]) from None
        if self._fast is not None and self._fast(data, False):
            return dict(data)
        errors = sorted(self._validator.iter_errors(data), key=lambda e: list(e.path))
        if errors:
            raise self._invalid([_describe(e) for e in errors])
        return dict(data)

    def _arguments(
        self,
        values: dict[str, Any],
        ctx: ActionContext,
        agent: object,
        call_id: str,
        info: CallInfo | None,
    ) -> tuple[tuple[Any, ...], dict[str, Any]] | ToolResult:
        if not self._takes_info:
            return (values, ctx), {}
        return (values, ctx, _keyed(info, call_id, self.name)), {}


def _positional_count(call: Callable[..., Any]) -> int:
    """How many positional arguments ``call`` takes (any number: 3)."""
    try:
        params = inspect.signature(call).parameters.values()
    except (TypeError, ValueError):
        return 2
    count = 0
    for param in params:
        if param.kind is param.VAR_POSITIONAL:
            return 3
        if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            count += 1
    return count


def _keyed(info: CallInfo | None, call_id: str, tool: str) -> CallInfo:
    """``info``, or for a call made outside a journaled run one with a fresh
    idempotency key (made only when a tool asks for it)."""
    if info is not None:
        return info
    return CallInfo(call_id, uuid.uuid4().hex, 1, tool)


def _schema_signature(name: str, description: str, parameters: dict[str, Any]) -> ToolSignature:
    if parameters.get("type", "object") != "object":
        raise ToolDefinitionError(
            f"tool {name!r}: its parameters must be a JSON Schema of type 'object'",
            hint="wrap single values in an object: {'type': 'object', 'properties': {...}}",
        )
    properties = parameters.get("properties") or {}
    return ToolSignature(
        model=_NoModel,
        fields=tuple((key, key) for key in properties),
        injections=(),
        positional_only=(),
        accepts_extra=False,
        description=description,
        parameters=parameters,
    )


class _NoModel(BaseModel):
    """Stands in for the argument model of a schema tool (never validated)."""


def _compile(name: str, parameters: dict[str, Any]) -> Validator:
    return compile_schema(parameters, f"tool {name!r}: its parameters")


def _describe(error: Any) -> str:
    where = ".".join(str(p) for p in error.path)
    if error.validator == "required":
        return f"missing required argument: {error.message}"
    if error.validator == "additionalProperties" and not where:
        return f"unexpected argument: {error.message}"
    return f"{where}: {error.message}" if where else error.message


async def _settle(result: Any, on_chunk: Callable[[str], None] | None) -> Any:
    """What a tool's return value comes to: awaited when it is awaitable, its
    chunks joined (each handed to ``on_chunk`` as it comes) when it is an
    async iterator; a `ToolResult` the iterator yields ends it and is the
    result."""
    if inspect.isawaitable(result):
        result = await result
    if hasattr(result, "__aiter__"):
        chunks: list[str] = []
        async for chunk in result:
            if isinstance(chunk, ToolResult):  # the stream's own ending (an error, say)
                aclose = getattr(result, "aclose", None)
                if aclose is not None:
                    await aclose()  # its clean-up runs now, not when it is collected
                return chunk
            text = chunk if isinstance(chunk, str) else str(chunk)
            chunks.append(text)
            if on_chunk is not None:
                on_chunk(text)
        return "".join(chunks)
    return result
