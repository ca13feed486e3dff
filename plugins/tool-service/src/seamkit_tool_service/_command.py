"""``seamkit tool-service serve module:Class``: run a `DynamicToolService`
over HTTP (uvicorn, this process or ``--workers`` processes sharing one
socket) or NATS (one process per worker, all in one queue group). SIGINT
and SIGTERM stop it gracefully: calls in flight finish first."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import click
import seamkit
from pydantic import ValidationError
from seamkit.plugins import listening_socket

from ._http_auth import TOKENS_ENV, mask_urls
from ._http_serve_auth import HttpServerAuth
from ._http_server import (
    CLIENT_CERTS_ENV,
    MAX_REQUEST_BYTES,
    MAX_REQUEST_BYTES_ENV,
    load_service,
)

if TYPE_CHECKING:
    from ._config import NatsAuth, NatsTls

__all__ = ["tool_service_group"]


@click.group("tool-service")
def tool_service_group() -> None:
    """Tool services: serve a DynamicToolService over HTTP or NATS."""


def _service_or_fail(
    spec: str, transport: str, subject: str | None, url: str, servers: Sequence[str] = ()
) -> None:
    """Load the class once here, so that a mistake is a clear error."""
    try:
        service = load_service(spec)
        service.descriptor(
            "nats" if transport == "nats" else "http",
            subject=subject,
            url=url,
            servers=servers,
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        raise seamkit.SeamkitError(
            f"{spec} does not describe a valid service: {'.'.join(map(str, first['loc']))}: "
            f"{first['msg']}",
            hint="set the class attributes id (letters, digits, '_', '-'), config_params, tools",
        ) from None
    except ValueError as exc:
        raise seamkit.SeamkitError(
            str(exc), hint="pass module:Class of an importable module"
        ) from None


_NATS_AUTH_ENV = {"token": "token_env", "password": "password_env", "nkey_seed": "nkey_seed_env"}
"""The NatsAuth fields read from an environment variable, by its flag's key."""


def _nats_security(
    flags: Mapping[str, str | bool | None],
) -> tuple[NatsAuth | None, NatsTls | None]:
    """The credentials and TLS the ``--nats-*``/``--tls-*`` flags name: secrets
    read from the environment variables they name (never from the command
    line). Raises `seamkit.SeamkitError` (no secret in it) when one is wrong."""
    from ._config import NatsAuth, NatsTls  # lazy: pydantic models, only serving over NATS

    values: dict[str, object] = {}
    for field, key in _NATS_AUTH_ENV.items():
        var = flags.get(key)
        if isinstance(var, str):
            value = os.environ.get(var)
            if not value:
                raise seamkit.SeamkitError(
                    f"the environment variable {var} (--nats-{key.replace('_', '-')}) is not set",
                    hint=f"export {var}=... before serving",
                )
            values[field] = seamkit.Secret(value, source=f"${{env:{var}}}")
    if flags.get("user") is not None:
        values["user"] = flags["user"]
    if flags.get("creds") is not None:
        values["creds_file"] = flags["creds"]
    tls_values = {
        name: flags.get(key)
        for name, key in (("ca_file", "tls_ca"), ("cert_file", "tls_cert"), ("key_file", "tls_key"))
        if flags.get(key) is not None
    }
    if flags.get("tls_handshake_first"):
        tls_values["handshake_first"] = True
    try:
        auth = NatsAuth.model_validate(values) if values else None
        tls = NatsTls.model_validate(tls_values) if tls_values else None
    except ValidationError as exc:
        first = exc.errors()[0]
        raise seamkit.SeamkitError(
            f"NATS flags: {first['msg']}",
            hint="give one of --nats-token-env, --nats-user with --nats-password-env, "
            "--nats-nkey-seed-env, --nats-creds; --tls-cert with --tls-key",
        ) from None
    return auth, tls


def _nats_worker(
    spec: str,
    servers: Sequence[str],
    subject: str,
    drain: float,
    security: Mapping[str, str | bool | None] | None = None,
) -> None:
    """One NATS worker process: serve until SIGTERM or SIGINT. A seamkit
    error (no NATS server to reach, credentials refused) is one line (and a
    hint, neither with a secret), exit code 1. ``security``: the NATS flags
    (environment variable names and file paths, read here: secrets never
    cross to the worker's command line or pickled arguments)."""
    from ._nats_worker import serve_nats  # lazy: the [nats] extra

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)

        def ready() -> None:
            click.echo(f"seamkit tool-service: worker {os.getpid()} ready", err=True)

        auth, tls = _nats_security(security or {})
        await serve_nats(
            load_service(spec),
            servers=servers,
            subject=subject,
            stop=stop,
            drain_seconds=drain,
            ready=ready,
            auth=auth,
            tls=tls,
        )

    try:
        asyncio.run(main())
    except seamkit.SeamkitError as exc:
        click.echo(f"error: {exc.message}", err=True)
        if exc.hint:
            click.echo(f"hint: {exc.hint}", err=True)
        sys.exit(1)


def _serve_nats(
    spec: str,
    servers: Sequence[str],
    subject: str,
    workers: int,
    drain: float,
    security: Mapping[str, str | bool | None] | None = None,
) -> None:
    context = multiprocessing.get_context("spawn")
    processes = [
        context.Process(
            target=_nats_worker, args=(spec, list(servers), subject, drain, dict(security or {}))
        )
        for _ in range(workers)
    ]

    def forward(signum: int, frame: object) -> None:
        for process in processes:
            if process.pid is not None and process.is_alive():
                os.kill(process.pid, signal.SIGTERM)

    # before the workers start: a signal meanwhile reaches those started
    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    for process in processes:
        process.start()
    for process in processes:
        process.join()
    failed = [p.exitcode for p in processes if p.exitcode not in (0, -signal.SIGTERM)]
    if failed:
        sys.exit(1)


def _serve_http(
    spec: str,
    host: str,
    port: int,
    workers: int,
    drain: float,
    options: HttpServerAuth | None = None,
    max_request_bytes: int = MAX_REQUEST_BYTES,
) -> None:
    auth = options or HttpServerAuth()
    sock = listening_socket(host, port)
    bound = sock.getsockname()[1]
    url = f"{'https' if auth.certfile else 'http'}://{host}:{bound}/"
    os.environ["SEAMKIT_TOOL_SERVICE"] = spec
    os.environ["SEAMKIT_TOOL_SERVICE_URL"] = url
    os.environ[TOKENS_ENV] = ",".join(f"{i}={v}" for i, v in auth.tokens)
    os.environ[CLIENT_CERTS_ENV] = "1" if auth.ca_certs else ""
    os.environ[MAX_REQUEST_BYTES_ENV] = str(max_request_bytes)
    banner = f"seamkit tool-service: {spec} on {url} ({workers} worker(s)){auth.banner()}"
    click.echo(mask_urls(banner), err=True)
    import uvicorn  # lazy: only serving over HTTP needs it

    config = uvicorn.Config(
        "seamkit_tool_service._http_server:app_from_env",
        factory=True,
        workers=workers,
        timeout_graceful_shutdown=max(1, int(drain)),
        log_level="warning",
        lifespan="on",
        **auth.uvicorn_options(),
    )
    if workers == 1:
        uvicorn.Server(config).run(sockets=[sock])
    else:
        from uvicorn.supervisors import Multiprocess  # lazy: see above

        Multiprocess(config, sockets=[sock]).run()


@tool_service_group.command("serve")
@click.argument("spec", metavar="MODULE:CLASS")
@click.option("--transport", type=click.Choice(["http", "nats"]), default="http", show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True, help="http: address.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--servers",
    default="nats://127.0.0.1:4222",
    show_default=True,
    help="nats: comma-separated server URLs.",
)
@click.option("--subject", help="nats: the subject to serve on (default: tools.<service id>).")
@click.option(
    "--nats-token-env", metavar="VAR", help="nats: the environment variable holding a token."
)
@click.option("--nats-user", help="nats: the user name (with --nats-password-env).")
@click.option(
    "--nats-password-env",
    metavar="VAR",
    help="nats: the environment variable holding the password.",
)
@click.option(
    "--nats-nkey-seed-env",
    metavar="VAR",
    help="nats: the environment variable holding an NKey user seed.",
)
@click.option(
    "--nats-creds",
    metavar="FILE",
    type=click.Path(exists=True, dir_okay=False),
    help="nats: a .creds file (user JWT and seed).",
)
@click.option(
    "--tls-ca",
    metavar="FILE",
    type=click.Path(exists=True, dir_okay=False),
    help="nats: CA certificates to verify the server with.",
)
@click.option(
    "--tls-cert",
    metavar="FILE",
    type=click.Path(exists=True, dir_okay=False),
    help="nats: a client certificate (with --tls-key).",
)
@click.option(
    "--tls-key",
    metavar="FILE",
    type=click.Path(exists=True, dir_okay=False),
    help="nats: the client certificate's key.",
)
@click.option(
    "--tls-handshake-first", is_flag=True, help="nats: TLS before the server's INFO line."
)
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1))
@click.option(
    "--drain-seconds",
    default=30.0,
    show_default=True,
    type=click.FloatRange(0),
    help="How long calls in flight may take to finish on shutdown.",
)
@click.option(
    "--token-env",
    "token_env",
    multiple=True,
    metavar="[ID=]VAR",
    help="http: accept the bearer token in $VAR, its id ID (default: VAR); repeatable.",
)
@click.option("--certfile", type=click.Path(dir_okay=False), help="http: serve TLS: certificate.")
@click.option("--keyfile", type=click.Path(dir_okay=False), help="http: the certificate's key.")
@click.option(
    "--ca-certs",
    "ca_certs",
    type=click.Path(dir_okay=False),
    help="http: require client certificates signed by these CAs (the subject is the caller).",
)
@click.option(
    "--max-request-bytes",
    type=click.IntRange(1),
    help=f"http: the largest request body (default {MAX_REQUEST_BYTES}); a larger one gets "
    "413 and an error envelope.",
)
def serve(
    spec: str,
    transport: str,
    host: str,
    port: int,
    servers: str,
    subject: str | None,
    workers: int,
    drain_seconds: float,
    nats_token_env: str | None = None,
    nats_user: str | None = None,
    nats_password_env: str | None = None,
    nats_nkey_seed_env: str | None = None,
    nats_creds: str | None = None,
    tls_ca: str | None = None,
    tls_cert: str | None = None,
    tls_key: str | None = None,
    tls_handshake_first: bool = False,
    token_env: tuple[str, ...] = (),
    certfile: str | None = None,
    keyfile: str | None = None,
    ca_certs: str | None = None,
    max_request_bytes: int | None = None,
) -> None:
    """Serve the DynamicToolService MODULE:CLASS."""
    sys.path.insert(0, os.getcwd())  # module:Class of the directory it runs in
    nats_flags = {
        "--nats-token-env": nats_token_env,
        "--nats-user": nats_user,
        "--nats-password-env": nats_password_env,
        "--nats-nkey-seed-env": nats_nkey_seed_env,
        "--nats-creds": nats_creds,
        "--tls-ca": tls_ca,
        "--tls-cert": tls_cert,
        "--tls-key": tls_key,
        "--tls-handshake-first": tls_handshake_first or None,
    }
    http_flags = {
        "--token-env": token_env or None,
        "--certfile": certfile,
        "--keyfile": keyfile,
        "--ca-certs": ca_certs,
        "--max-request-bytes": max_request_bytes,
    }
    other = http_flags if transport == "nats" else nats_flags
    if given := [flag for flag, value in other.items() if value is not None]:
        raise seamkit.SeamkitError(
            f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} not for "
            f"--transport {transport}",
            hint="--nats-* and --tls-* are for --transport nats; --token-env, --certfile, "
            "--keyfile, --ca-certs and --max-request-bytes for --transport http",
        )
    if transport == "nats":
        urls = [s.strip() for s in servers.split(",") if s.strip()]
        _service_or_fail(spec, transport, subject or "tools.x", "", urls)
        subject = subject or f"tools.{load_service(spec).id}"
        _service_or_fail(spec, transport, subject, "", urls)
        security: dict[str, str | bool | None] = {
            "token_env": nats_token_env,
            "user": nats_user,
            "password_env": nats_password_env,
            "nkey_seed_env": nats_nkey_seed_env,
            "creds": None if nats_creds is None else os.path.abspath(nats_creds),
            "tls_ca": None if tls_ca is None else os.path.abspath(tls_ca),
            "tls_cert": None if tls_cert is None else os.path.abspath(tls_cert),
            "tls_key": None if tls_key is None else os.path.abspath(tls_key),
            "tls_handshake_first": tls_handshake_first,
        }
        _nats_security(security)  # a wrong flag or unset variable: one line, before any worker
        click.echo(
            f"seamkit tool-service: {spec} on {', '.join(urls)} subject {subject} "
            f"({workers} worker(s))",
            err=True,
        )
        _serve_nats(spec, urls, subject, workers, drain_seconds, security)
    else:
        _service_or_fail(spec, transport, None, f"http://{host}:{port}/")
        auth = HttpServerAuth.from_options(host, token_env, certfile, keyfile, ca_certs)
        limit = MAX_REQUEST_BYTES if max_request_bytes is None else max_request_bytes
        _serve_http(spec, host, port, workers, drain_seconds, auth, limit)
