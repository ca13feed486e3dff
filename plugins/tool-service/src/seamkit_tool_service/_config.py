"""What a manifest says about tool services: the ``tool_services:`` section
(service descriptors, discovery) and the ``tool-service`` tool kind.

Two tiers, as in the reference: a service descriptor names a transport and
address and the config params the service takes; a ``tool-service`` entry
names a service, gives values for its config params (as fields of the entry)
and the arguments the model fills in. Every cross-reference is checked when
the manifest loads, with each problem at its own field.
"""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ModelWrapValidatorHandler,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError
from seamkit import Secret, ToolConfig

from ._http_auth import mask_urls

__all__ = [
    "RESERVED_FIELDS",
    "Argument",
    "ConfigParam",
    "HttpAuth",
    "HttpTls",
    "NatsAuth",
    "NatsTls",
    "ServedTool",
    "ServiceDescriptor",
    "ToolServiceConfig",
    "ToolServicesConfig",
    "check_config",
    "check_tool",
    "parameters_schema",
    "plain_urls",
]

RESERVED_FIELDS = frozenset(
    {"kind", "name", "description", "service", "arguments", "timeout_seconds"}
) | frozenset(ToolConfig.model_fields)
"""Fields of a ``tool-service`` entry, those every tool entry has among them
(``toolset``, ``approval``, ``effects``, ``stream_output``); a config param
may not be named like one."""

_STRICT = ConfigDict(extra="forbid", frozen=True)


def plain_urls(urls: Sequence[str | Secret[str]]) -> list[str]:
    """``urls`` as connected to, a ``${secret:...}`` one revealed: never
    show them (`mask_urls`)."""
    return [u.get_secret_value() if isinstance(u, Secret) else u for u in urls]


ArgumentType = Literal["string", "number", "integer", "boolean", "object", "array"]

Issue = tuple[tuple[str | int, ...], str, str, str | None, object]
"""(location inside the model, error type, message, hint, the value at fault)"""


def _raise(title: str, issues: Sequence[Issue]) -> None:
    """Raise every issue at once, each at its own location."""
    _raise_all(title, [], issues)


def _raise_all(title: str, carried: list[InitErrorDetails], issues: Sequence[Issue]) -> None:
    """Raise ``carried`` errors and every issue at once (nothing to raise: return)."""
    if not carried and not issues:
        return
    raise ValidationError.from_exception_data(
        title,
        [
            *carried,
            *(
                InitErrorDetails(
                    type=PydanticCustomError(kind, message, {"hint": hint} if hint else None),
                    loc=loc,
                    input=value,
                )
                for loc, kind, message, hint, value in issues
            ),
        ],
    )


class ConfigParam(BaseModel):
    """A parameter a service takes from each tool that uses it (a knowledge
    base's ``collection``, a joke's ``style``)."""

    model_config = _STRICT

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_-]*$", description="The parameter's name.")
    required: bool = Field(default=False, description="Must every tool give a value?")


class Argument(BaseModel):
    """One argument the model fills in, turned into a JSON Schema property."""

    model_config = _STRICT

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_-]*$", description="The argument's name.")
    type: ArgumentType = Field(description="Its JSON type.")
    description: str = Field(default="", description="What it means, shown to the model.")
    required: bool = Field(default=True, description="Must the model give it?")


def parameters_schema(arguments: Sequence[Argument]) -> dict[str, Any]:
    """The JSON Schema the model sees for ``arguments``."""
    properties: dict[str, Any] = {}
    for argument in arguments:
        prop: dict[str, Any] = {"type": argument.type}
        if argument.description:
            prop["description"] = argument.description
        properties[argument.name] = prop
    return {
        "type": "object",
        "properties": properties,
        "required": [a.name for a in arguments if a.required],
        "additionalProperties": False,
    }


def _argument_issues(arguments: Sequence[Argument]) -> list[Issue]:
    seen: set[str] = set()
    issues: list[Issue] = []
    for index, argument in enumerate(arguments):
        if argument.name in seen:
            issues.append(
                (
                    ("arguments", index, "name"),
                    "duplicate_argument",
                    f"argument '{argument.name}' is defined twice",
                    "give each argument its own name",
                    argument.name,
                )
            )
        seen.add(argument.name)
    return issues


class ServedTool(BaseModel):
    """A tool a service announces with its descriptor, for agents that
    discover services: its name and description, the config values it sends,
    and the arguments the model fills in."""

    model_config = _STRICT

    name: str = Field(description="The tool's name, as the model sees it.")
    description: str = Field(default="", description="What the tool does.")
    config: dict[str, JsonValue] = Field(
        default_factory=dict, description="Values of the service's config params."
    )
    arguments: list[Argument] = Field(default_factory=list, description="What the model gives.")

    @model_validator(mode="after")
    def _check(self) -> ServedTool:
        _raise("ServedTool", _argument_issues(self.arguments))
        return self


class NatsAuth(BaseModel):
    """How to authenticate to NATS: exactly one of ``token``,
    ``user`` + ``password``, ``nkey_seed`` or ``creds_file``. Secrets come
    from ``${secret:...}`` / ``${env:...}`` (never written in the manifest);
    they never appear in errors, logs or banners."""

    model_config = _STRICT

    token: Secret[str] | None = Field(
        default=None, description="A token, e.g. `${secret:NATS_TOKEN}`."
    )
    user: str | None = Field(default=None, description="A user name (with password).")
    password: Secret[str] | None = Field(
        default=None, description="The user's password, e.g. `${secret:NATS_PASSWORD}`."
    )
    nkey_seed: Secret[str] | None = Field(
        default=None, description="An NKey user seed (`SU...`), e.g. `${secret:NATS_NKEY_SEED}`."
    )
    creds_file: str | None = Field(
        default=None,
        description="A .creds file (user JWT and seed, decentralized auth), relative to the "
        "manifest.",
    )

    @model_validator(mode="after")
    def _check(self) -> NatsAuth:
        given = [
            name
            for name, value in (
                ("token", self.token),
                ("user", self.user if self.user is not None else self.password),
                ("nkey_seed", self.nkey_seed),
                ("creds_file", self.creds_file),
            )
            if value is not None
        ]
        issues: list[Issue] = []
        forms = "token, user + password, nkey_seed or creds_file"
        if not given:
            issues.append(((), "missing_auth", f"auth needs one of {forms}", None, None))
        elif len(given) > 1:
            issues.append(
                (
                    (given[1],),
                    "several_auth",
                    f"auth gives {' and '.join(given)}: give only one of {forms}",
                    None,
                    None,
                )
            )
        elif given == ["user"]:
            if self.user is None:
                issues.append(
                    (("user",), "missing", "password needs user", "add user: <name>", None)
                )
            elif self.password is None:
                issues.append(
                    (
                        ("password",),
                        "missing",
                        "user needs password",
                        "add password: ${secret:NATS_PASSWORD}",
                        None,
                    )
                )
        _raise("NatsAuth", issues)
        return self


class NatsTls(BaseModel):
    """TLS to NATS: the CA that signed the server's certificate, and a client
    certificate for servers that verify clients. Paths are relative to the
    manifest."""

    model_config = _STRICT

    ca_file: str | None = Field(
        default=None, description="CA certificates (PEM) to verify the server with."
    )
    cert_file: str | None = Field(
        default=None, description="A client certificate (PEM), for servers with `verify: true`."
    )
    key_file: str | None = Field(default=None, description="The client certificate's key (PEM).")
    handshake_first: bool = Field(
        default=False,
        description="TLS before the server's INFO (servers with `handshake_first: true`).",
    )

    @model_validator(mode="after")
    def _check(self) -> NatsTls:
        issues: list[Issue] = []
        if (self.cert_file is None) != (self.key_file is None):
            missing = "key_file" if self.key_file is None else "cert_file"
            issues.append(((missing,), "missing", "cert_file and key_file go together", None, None))
        _raise("NatsTls", issues)
        return self


class HttpAuth(BaseModel):
    """How an http service is authenticated: a bearer token."""

    model_config = _STRICT

    bearer: Secret[str] = Field(
        description="The token sent as 'Authorization: Bearer ...' (a ${secret:...})."
    )


class HttpTls(BaseModel):
    """TLS for an https service: whether to verify its certificate, the CA
    that signed it, and a client certificate (files relative to the manifest)."""

    model_config = _STRICT

    verify: bool = Field(default=True, description="Verify the service's certificate.")
    ca_file: str | None = Field(
        default=None, description="The CA bundle (PEM) to verify it with (default: the system's)."
    )
    cert_file: str | None = Field(
        default=None, description="A client certificate (PEM), for a service that requires one."
    )
    key_file: str | None = Field(
        default=None, description="The client certificate's key (PEM), if not in cert_file."
    )

    @model_validator(mode="after")
    def _check(self) -> HttpTls:
        if self.key_file and not self.cert_file:
            _raise(
                "HttpTls",
                [
                    (
                        ("key_file",),
                        "missing",
                        "key_file needs cert_file",
                        "set cert_file to the client certificate",
                        self.key_file,
                    )
                ],
            )
        return self


class ServiceDescriptor(BaseModel):
    """How to reach a tool service and what it takes: its ``id``, transport
    and address, its config params and its time-outs."""

    model_config = _STRICT

    id: str = Field(
        pattern=r"^[A-Za-z0-9_-]+$",
        description="The service's id (letters, digits, '_' and '-', as NATS micro names).",
    )
    transport: Literal["http", "nats"] = Field(
        default="http", description="'http' (POST to url) or 'nats' (request/reply on subject)."
    )
    url: str | Secret[str] | None = Field(
        default=None,
        description="http: the URL requests are POSTed to (a ${secret:...} in its userinfo).",
    )
    servers: list[str | Secret[str]] = Field(
        default_factory=list,
        description="nats: the NATS servers, e.g. nats://127.0.0.1:4222 (a ${secret:...} in "
        "a URL's userinfo; prefer auth).",
    )
    subject: str | None = Field(
        default=None, description="nats: the subject the service's workers listen on."
    )
    config_params: list[ConfigParam] = Field(
        default_factory=list, description="What each tool of this service may or must set."
    )
    timeout_seconds: float = Field(
        default=30.0, gt=0, description="Overall deadline of one call (a tool may lower it)."
    )
    message_timeout_seconds: float | None = Field(
        default=None,
        gt=0,
        description="Longest wait for each message of a streamed reply (default: the deadline).",
    )
    max_reply_bytes: int = Field(
        default=4 * 1024 * 1024,
        gt=0,
        description="The most bytes one call's replies may take, all messages together "
        "(default 4 MiB); past it the call ends with BadReply.",
    )
    max_stream_chunks: int | None = Field(
        default=None,
        gt=0,
        description="The most chunks a streamed reply may have, the message that ends it "
        "aside (default: no limit but max_reply_bytes); past it the call ends with BadReply.",
    )
    max_stream_seconds: float | None = Field(
        default=None,
        gt=0,
        description="The longest a reply may stream (default: the deadline); past it the "
        "call ends with BadReply.",
    )
    description: str = Field(default="", description="What the service is for.")
    tools: list[ServedTool] = Field(
        default_factory=list,
        description="Tools the service announces (used when it is discovered).",
    )
    headers: dict[str, str | Secret[str]] = Field(
        default_factory=dict,
        description="http: headers sent with every request (values may be ${secret:...}).",
    )
    auth: HttpAuth | NatsAuth | None = Field(
        default=None,
        description="http: the bearer token to send (`HttpAuth`). nats: the credentials to "
        "connect with (`NatsAuth`, default: tool_services.auth).",
    )
    tls: HttpTls | NatsTls | None = Field(
        default=None,
        description="http: certificate verification and a client certificate (`HttpTls`). "
        "nats: TLS to connect with (`NatsTls`, default: tool_services.tls).",
    )

    @model_validator(mode="after")
    def _check(self) -> ServiceDescriptor:
        issues: list[Issue] = []
        if self.transport == "http":
            url = self.url_text
            if not url:
                issues.append(
                    (
                        ("url",),
                        "missing",
                        "an http service needs 'url'",
                        "e.g. http://127.0.0.1:8765",
                        None,
                    )
                )
            elif not url.startswith(("http://", "https://")):
                issues.append(
                    (
                        ("url",),
                        "bad_url",
                        f"url '{mask_urls(url)}' is not an http(s) URL",
                        "e.g. http://127.0.0.1:8765",
                        self.url if isinstance(self.url, Secret) else mask_urls(url),
                    )
                )
        else:
            if not self.subject:
                issues.append(
                    (
                        ("subject",),
                        "missing",
                        "a nats service needs 'subject'",
                        "e.g. tools.joke",
                        None,
                    )
                )
            elif any(c in self.subject for c in " *>") or "" in self.subject.split("."):
                issues.append(
                    (
                        ("subject",),
                        "bad_subject",
                        f"subject '{self.subject}' is not a NATS subject to publish to",
                        "dot-separated tokens without spaces or wildcards, e.g. tools.joke",
                        self.subject,
                    )
                )
            if not self.servers:
                issues.append(
                    (
                        ("servers",),
                        "missing",
                        "a nats service needs 'servers'",
                        "e.g. [nats://127.0.0.1:4222]",
                        None,
                    )
                )
            for index, server in enumerate(self.server_urls):
                if not server.startswith(("nats://", "tls://", "ws://", "wss://")):
                    shown = mask_urls(server)
                    issues.append(
                        (
                            ("servers", index),
                            "bad_url",
                            f"server '{shown}' is not a NATS URL",
                            "e.g. nats://127.0.0.1:4222",
                            shown,
                        )
                    )
        seen: set[str] = set()
        for index, param in enumerate(self.config_params):
            if param.name in RESERVED_FIELDS:
                issues.append(
                    (
                        ("config_params", index, "name"),
                        "reserved_name",
                        f"config param '{param.name}' is named like a field of tool entries",
                        "rename it; reserved: " + ", ".join(sorted(RESERVED_FIELDS)),
                        param.name,
                    )
                )
            if param.name in seen:
                issues.append(
                    (
                        ("config_params", index, "name"),
                        "duplicate_param",
                        f"config param '{param.name}' is declared twice",
                        None,
                        param.name,
                    )
                )
            seen.add(param.name)
        _raise("ServiceDescriptor", issues)
        return self

    @model_validator(mode="wrap")
    @classmethod
    def _by_transport(
        cls, data: object, handler: ModelWrapValidatorHandler[ServiceDescriptor]
    ) -> ServiceDescriptor:
        """Parse ``auth`` and ``tls`` as the models of the descriptor's
        transport (``{ca_file: ...}`` fits both), each problem located under
        its field, beside the problems of the other fields."""
        carried: list[InitErrorDetails] = []
        transport = data.get("transport", "http") if isinstance(data, Mapping) else None
        models = _SECURITY.get(transport) if isinstance(transport, str) else None
        if isinstance(data, Mapping) and models is not None:
            data = dict(data)
            for name, model in models.items():
                value = data.get(name)
                if value is None or type(value) is model:
                    continue
                if isinstance(value, BaseModel):  # the other transport's model: its fields
                    value = {k: getattr(value, k) for k in value.model_fields_set}
                try:
                    data[name] = model.model_validate(value)
                except ValidationError as exc:
                    del data[name]
                    carried.extend(_under(name, str(transport), exc))
        try:
            result = handler(data)
        except ValidationError as exc:
            _raise_all("ServiceDescriptor", [*carried, *_carried(exc)], [])
            raise
        _raise_all("ServiceDescriptor", carried, [])
        return result

    @property
    def server_urls(self) -> list[str]:
        """The NATS servers as connected to (a secret in a URL revealed):
        never show them (`mask_urls`)."""
        return plain_urls(self.servers)

    @property
    def url_text(self) -> str:
        """The URL as sent (a secret in it revealed): never show it."""
        url = self.url
        return url.get_secret_value() if isinstance(url, Secret) else (url or "")

    @property
    def shown_url(self) -> str:
        """The URL as errors and logs show it: its userinfo masked."""
        return mask_urls(self.url_text)

    def http_headers(self) -> dict[str, str]:
        """The headers to send (secrets revealed): ``headers``, then
        ``Authorization`` from ``auth``."""
        out = {
            k: v.get_secret_value() if isinstance(v, Secret) else v for k, v in self.headers.items()
        }
        if isinstance(self.auth, HttpAuth):
            out["Authorization"] = f"Bearer {self.auth.bearer.get_secret_value()}"
        return out

    @property
    def message_timeout(self) -> float:
        """The longest wait for one message of a reply."""
        return self.message_timeout_seconds or self.timeout_seconds


class DiscoverEntry(BaseModel):
    """One service discovery may admit: its id (a glob) and, to pin it, the
    exact subject it must announce."""

    model_config = _STRICT

    id: str = Field(
        min_length=1,
        description="The service id (a glob: ``*`` and ``?`` match, e.g. ``billing-*``).",
    )
    subject: str | None = Field(
        default=None,
        min_length=1,
        description="The exact subject the service must announce (pins it: of two "
        "announcements of one id, the one on this subject wins).",
    )

    def matches(self, service_id: str, subject: str) -> bool:
        """Whether this entry covers ``service_id`` announced on ``subject``."""
        return fnmatch.fnmatchcase(service_id, self.id) and (
            self.subject is None or self.subject == subject
        )


def _entry(value: object) -> object:
    """An entry given as a bare glob string is ``{id: glob}``."""
    return {"id": value} if isinstance(value, str) else value


class DiscoverRules(BaseModel):
    """Which announced services discovery admits: those an ``allow`` entry
    covers and no ``deny`` entry does (deny wins)."""

    model_config = _STRICT

    allow: list[DiscoverEntry] = Field(
        default_factory=list,
        description="The services admitted: id globs, or ``{id, subject}`` to pin the "
        "subject (at least one: ``['*']`` admits all but the denied).",
    )
    deny: list[DiscoverEntry] = Field(
        default_factory=list,
        description="Services never admitted, even when an allow entry covers them.",
    )

    @field_validator("allow", "deny", mode="before")
    @classmethod
    def _globs(cls, value: object) -> object:
        return [_entry(item) for item in value] if isinstance(value, list) else value

    @model_validator(mode="after")
    def _allows_something(self) -> DiscoverRules:
        if not self.allow:
            raise PydanticCustomError(
                "discover_allows_nothing",
                "discover lists no service to allow: it would admit none",
                {"hint": "allow: ['*'] admits every service but the denied ones"},
            )
        return self

    def admits(self, service_id: str, subject: str) -> bool:
        """Whether ``service_id`` announced on ``subject`` is admitted."""
        if any(e.matches(service_id, subject) for e in self.deny):
            return False
        return any(e.matches(service_id, subject) for e in self.allow)

    def pinned(self, service_id: str) -> set[str]:
        """The subjects allow entries pin for ``service_id``."""
        return {
            e.subject
            for e in self.allow
            if e.subject is not None and fnmatch.fnmatchcase(service_id, e.id)
        }


class ToolServicesConfig(BaseModel):
    """Tool services: the descriptors of services that serve tools over HTTP
    or NATS, and whether to discover more on NATS (``$SRV`` discovery)."""

    model_config = _STRICT

    discover: bool | DiscoverRules = Field(
        default=False,
        description="Pick up services announced on NATS (and their tools) between runs: "
        "``{allow: [...], deny: [...]}`` admits only the services listed (an entry is an "
        "id glob or ``{id, subject}``); a bare ``true`` admits every service on the bus.",
    )

    @field_validator("discover", mode="wrap")
    @classmethod
    def _discover_shape(cls, value: object, handler: ValidatorFunctionWrapHandler) -> object:
        """``true``/``false`` or a mapping of rules, nothing else (not ``"yes"``
        nor ``1``, which a lax bool would take); a broken mapping's errors are
        located in it (``discover.allow.0``), not in each arm of the union."""
        if not isinstance(value, bool | Mapping | DiscoverRules):
            raise PydanticCustomError(
                "discover_shape",
                "discover must be true, false or a mapping of allow and deny lists",
                {"hint": "e.g. discover: {allow: [billing, {id: pay, subject: tools.pay}]}"},
            )
        if isinstance(value, Mapping):
            value = DiscoverRules.model_validate(value)
        return handler(value)

    servers: list[str | Secret[str]] = Field(
        default_factory=list,
        description="NATS servers to discover on (default: those of the nats services listed).",
    )
    discover_interval_seconds: float = Field(
        default=5.0, gt=0, description="How often to look for services that came or went."
    )
    services: list[ServiceDescriptor] = Field(
        default_factory=list, description="The services tools may name."
    )
    auth: NatsAuth | None = Field(
        default=None,
        description="NATS credentials for discovery and every nats service without its own.",
    )
    tls: NatsTls | None = Field(
        default=None,
        description="NATS TLS for discovery and every nats service without its own.",
    )

    @model_validator(mode="wrap")
    @classmethod
    def _unique_ids(
        cls, data: object, handler: ModelWrapValidatorHandler[ToolServicesConfig]
    ) -> ToolServicesConfig:
        """Report a duplicate service id beside the problems of other
        entries (an ``after`` check would not run when one is broken)."""
        issues: list[Issue] = []
        raw = data.get("services") if isinstance(data, Mapping) else None
        seen: set[str] = set()
        for index, item in enumerate(raw if isinstance(raw, list) else ()):
            service_id = item.get("id") if isinstance(item, Mapping) else None
            if not isinstance(service_id, str):
                continue
            if service_id in seen:
                issues.append(
                    (
                        ("services", index, "id"),
                        "duplicate_service",
                        f"service '{service_id}' is declared twice",
                        "give each service its own id",
                        service_id,
                    )
                )
            seen.add(service_id)
        try:
            result = handler(data)
        except ValidationError as exc:
            _raise_all("ToolServicesConfig", _nats_only(_carried(exc)), issues)
            raise
        _raise("ToolServicesConfig", issues)
        return result

    @model_validator(mode="after")
    def _check(self) -> ToolServicesConfig:
        issues: list[Issue] = []
        if self.discover and not self.discovery_servers:
            issues.append(
                (
                    ("servers",),
                    "missing",
                    "discover needs NATS servers to discover on",
                    "set tool_services.servers, e.g. [nats://127.0.0.1:4222]",
                    None,
                )
            )
        _raise("ToolServicesConfig", issues)
        return self

    @property
    def discover_rules(self) -> DiscoverRules | None:
        """The rules discovery admits by (``None``: every service, a bare ``true``)."""
        return self.discover if isinstance(self.discover, DiscoverRules) else None

    @property
    def by_id(self) -> dict[str, ServiceDescriptor]:
        """The declared services by id."""
        return {service.id: service for service in self.services}

    @property
    def discovery_servers(self) -> list[str]:
        """The NATS servers discovery asks: ``servers``, else those of the
        nats services listed."""
        if self.servers:
            return plain_urls(self.servers)
        out: list[str] = []
        for service in self.services:
            out.extend(s for s in service.server_urls if s not in out)
        return out


class ToolServiceConfig(ToolConfig):
    """A tool served by a tool service: the service's id, values for its
    config params (as fields of this entry), and the arguments the model
    fills in."""

    model_config = ConfigDict(extra="allow", frozen=True, defer_build=True)

    kind: Literal["tool-service"] = "tool-service"
    name: str = Field(description="The tool's name, as the model sees it.")
    description: str = Field(description="What the tool does, shown to the model.")
    service: str = Field(description="The id of a service under tool_services.services.")
    arguments: list[Argument] = Field(default_factory=list, description="What the model gives.")
    timeout_seconds: float | None = Field(
        default=None, gt=0, description="Overall deadline of one call (default: the service's)."
    )

    @property
    def config_values(self) -> dict[str, Any]:
        """The values of the service's config params this entry gives."""
        return dict(self.model_extra or {})

    @model_validator(mode="wrap")  # type: ignore[arg-type]  # pydantic's stub rejects the info form
    @classmethod
    def _check(
        cls,
        data: Any,
        handler: ModelWrapValidatorHandler[ToolServiceConfig],
        info: ValidationInfo,
    ) -> ToolServiceConfig:
        """Check the entry's fields and, during a manifest load, what it
        names in ``tool_services``; every problem is reported at once."""
        issues: list[Issue] = []
        declared = _declared_services(info.context)
        if isinstance(data, Mapping) and declared is not None:
            service, name = data.get("service"), data.get("name")
            if isinstance(service, str) and service not in declared[1]:
                values = {k: v for k, v in data.items() if k not in RESERVED_FIELDS}
                issues = check_tool(str(name), service, values, declared[0], also_known=declared[1])
        try:
            result = handler(data)
        except ValidationError as exc:
            _raise_all("ToolServiceConfig", _carried(exc), issues)
            raise
        _raise("ToolServiceConfig", [*_argument_issues(result.arguments), *issues])
        return result


def _carried(exc: ValidationError) -> list[InitErrorDetails]:
    """The errors of ``exc``, to raise again beside more."""
    return [
        InitErrorDetails(
            type=PydanticCustomError(e["type"], e["msg"], e.get("ctx")),
            loc=e["loc"],
            input=e["input"],
        )
        for e in exc.errors(include_url=False)
    ]


_SECURITY: dict[str, dict[str, type[BaseModel]]] = {
    "http": {"auth": HttpAuth, "tls": HttpTls},
    "nats": {"auth": NatsAuth, "tls": NatsTls},
}
"""The models of a descriptor's ``auth`` and ``tls``, by its transport."""


_A = {"http": "an http", "nats": "a nats"}


def _under(name: str, transport: str, exc: ValidationError) -> list[InitErrorDetails]:
    """The errors of the descriptor's ``name`` (``auth``/``tls``), located
    under it; a field of the other transport's model is named as such."""
    other = "nats" if transport == "http" else "http"
    takes = ", ".join(_SECURITY[transport][name].model_fields)
    errors = exc.errors(include_url=False)
    misplaced = [
        e
        for e in errors
        if e["type"] == "extra_forbidden"
        and len(e["loc"]) == 1
        and e["loc"][0] in _SECURITY[other][name].model_fields
    ]
    out: list[InitErrorDetails] = []
    for e in errors:
        if misplaced and e["type"] == "missing":
            continue  # the field given to the wrong transport says it all
        if e in misplaced:
            field = e["loc"][0]
            out.append(
                InitErrorDetails(
                    type=PydanticCustomError(
                        "wrong_transport",
                        f"{name}.{field} is for {other} services, this one's transport is "
                        f"{transport}",
                        {"hint": f"the {name} of {_A[transport]} service takes: {takes}"},
                    ),
                    loc=(name, *e["loc"]),
                    input=e["input"],
                )
            )
            continue
        out.append(
            InitErrorDetails(
                type=PydanticCustomError(e["type"], e["msg"], e.get("ctx")),
                loc=(name, *e["loc"]),
                input=e["input"],
            )
        )
    return out


def _nats_only(errors: list[InitErrorDetails]) -> list[InitErrorDetails]:
    """``errors`` of the section, a field of `HttpAuth`/`HttpTls` given to its
    (NATS-only) ``auth``/``tls`` said as such."""
    out: list[InitErrorDetails] = []
    for error in errors:
        loc, kind = error["loc"], error["type"]
        if (
            len(loc) == 2
            and loc[0] in ("auth", "tls")
            and isinstance(kind, PydanticCustomError)
            and kind.type == "extra_forbidden"
            and loc[1] in _SECURITY["http"][str(loc[0])].model_fields
        ):
            name = loc[0]
            error = InitErrorDetails(
                type=PydanticCustomError(
                    "wrong_transport",
                    f"tool_services.{name} is for NATS (discovery and nats services): "
                    f"{name}.{loc[1]} is not one of its fields",
                    {"hint": f"give an http service's {name} in its descriptor"},
                ),
                loc=loc,
                input=error["input"],
            )
        out.append(error)
    return out


def check_tool(
    tool: str,
    service_id: str,
    values: Mapping[str, object],
    services: Mapping[str, ServiceDescriptor],
    *,
    also_known: Iterable[str] = (),
) -> list[Issue]:
    """What is wrong with the tool ``tool`` of ``service_id`` against the
    declared ``services`` (``also_known``: declared ids that did not
    validate): an unknown service, a missing required config value, an
    unknown config key."""
    service = services.get(service_id)
    if service is None:
        ids = sorted({*services, *also_known})
        known = ", ".join(ids) or "none (declare them under tool_services.services)"
        return [
            (
                ("service",),
                "unknown_service",
                f"unknown tool service '{service_id}'",
                f"known services: {known}",
                service_id,
            )
        ]
    return check_config(tool, values, service)


def check_config(
    tool: str, values: Mapping[str, object], service: ServiceDescriptor
) -> list[Issue]:
    """What is wrong with the config ``values`` of ``tool`` for ``service``:
    a missing required value, an unknown key."""
    issues: list[Issue] = []
    params = {p.name: p for p in service.config_params}
    for name, param in params.items():
        if param.required and name not in values:
            issues.append(
                (
                    (),
                    "missing_config",
                    f"tool '{tool}' misses the required config value '{name}' of "
                    f"service '{service.id}'",
                    f"add '{name}: ...' to this entry",
                    dict(values),
                )
            )
    for key in values:
        if key not in params:
            close = difflib.get_close_matches(key, [*params, *RESERVED_FIELDS], n=1)
            takes = ", ".join(params) or "no config params"
            hint = f"did you mean '{close[0]}'? " if close else ""
            issues.append(
                (
                    (key,),
                    "unknown_config",
                    f"unknown config key '{key}' for service '{service.id}'",
                    f"{hint}it takes: {takes}",
                    values[key],
                )
            )
    return issues


def _declared_services(
    context: object,
) -> tuple[dict[str, ServiceDescriptor], set[str]] | None:
    """The valid services the manifest being validated declares, and the ids
    of those that are not (they report their own problems); ``None``
    outside a manifest load."""
    if not isinstance(context, Mapping):
        return None
    manifest = context.get("manifest")
    if not isinstance(manifest, Mapping):
        return None
    section = manifest.get("tool_services")
    raw = section.get("services") if isinstance(section, Mapping) else None
    found: dict[str, ServiceDescriptor] = {}
    broken: set[str] = set()
    for item in raw if isinstance(raw, list) else ():
        try:
            service = ServiceDescriptor.model_validate(item)
        except ValidationError:
            if isinstance(item, Mapping) and isinstance(item.get("id"), str):
                broken.add(item["id"])
            continue
        found.setdefault(service.id, service)  # a duplicate id is reported on its own
    return found, broken


def _located(path: str | None, base_dir: str | None) -> str | None:
    """``path`` relative to ``base_dir`` (the manifest's folder), when both are
    given and ``path`` is not absolute (``~`` expanded)."""
    if path is None or base_dir is None:
        return path
    from pathlib import Path  # lazy: only for services with files

    expanded = Path(path).expanduser()
    return str(expanded if expanded.is_absolute() else Path(base_dir, expanded))


_Model = TypeVar("_Model", bound=BaseModel)

_FILES = ("creds_file", "ca_file", "cert_file", "key_file")
"""The fields of `NatsAuth`, `HttpTls` and `NatsTls` that name files."""


def _with_files(model: _Model, base_dir: str | None) -> _Model:
    """``model`` with the files it names relative to ``base_dir``."""
    update = {
        name: _located(value, base_dir)
        for name in _FILES
        if isinstance(value := getattr(model, name, None), str)
    }
    return model.model_copy(update=update) if update else model


def located(
    auth: NatsAuth | None, tls: NatsTls | None, base_dir: str | None
) -> tuple[NatsAuth | None, NatsTls | None]:
    """``auth`` and ``tls`` with their file paths relative to ``base_dir``."""
    return (
        None if auth is None else _with_files(auth, base_dir),
        None if tls is None else _with_files(tls, base_dir),
    )


def secured(
    service: ServiceDescriptor, section: ToolServicesConfig | None, base_dir: str | None
) -> ServiceDescriptor:
    """``service`` as it is called: every file path (TLS files of either
    transport, a NATS ``.creds`` file) relative to ``base_dir`` (the
    manifest's folder), and, for a nats service without its own
    ``auth``/``tls``, the section's."""
    auth: HttpAuth | NatsAuth | None = service.auth
    tls: HttpTls | NatsTls | None = service.tls
    if service.transport == "nats" and section is not None:
        auth = auth or section.auth
        tls = tls or section.tls
    if auth is not None:
        auth = _with_files(auth, base_dir)
    if tls is not None:
        tls = _with_files(tls, base_dir)
    if auth is service.auth and tls is service.tls:
        return service
    return service.model_copy(update={"auth": auth, "tls": tls})
