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
from collections.abc import Sequence

import click
import seamkit
from pydantic import ValidationError
from seamkit.plugins import listening_socket

from ._http_auth import TOKENS_ENV, mask_urls
from ._http_serve_auth import HttpServerAuth
from ._http_server import CLIENT_CERTS_ENV, load_service

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


def _nats_worker(spec: str, servers: Sequence[str], subject: str, drain: float) -> None:
    """One NATS worker process: serve until SIGTERM or SIGINT. A seamkit
    error (no NATS server to reach) is one line (and a hint), exit code 1."""
    from ._nats_worker import serve_nats  # lazy: the [nats] extra

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)

        def ready() -> None:
            click.echo(f"seamkit tool-service: worker {os.getpid()} ready", err=True)

        await serve_nats(
            load_service(spec),
            servers=servers,
            subject=subject,
            stop=stop,
            drain_seconds=drain,
            ready=ready,
        )

    try:
        asyncio.run(main())
    except seamkit.SeamkitError as exc:
        click.echo(f"error: {exc.message}", err=True)
        if exc.hint:
            click.echo(f"hint: {exc.hint}", err=True)
        sys.exit(1)


def _serve_nats(
    spec: str, servers: Sequence[str], subject: str, workers: int, drain: float
) -> None:
    context = multiprocessing.get_context("spawn")
    processes = [
        context.Process(target=_nats_worker, args=(spec, list(servers), subject, drain))
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
) -> None:
    auth = options or HttpServerAuth()
    sock = listening_socket(host, port)
    bound = sock.getsockname()[1]
    url = f"{'https' if auth.certfile else 'http'}://{host}:{bound}/"
    os.environ["SEAMKIT_TOOL_SERVICE"] = spec
    os.environ["SEAMKIT_TOOL_SERVICE_URL"] = url
    os.environ[TOKENS_ENV] = ",".join(f"{i}={v}" for i, v in auth.tokens)
    os.environ[CLIENT_CERTS_ENV] = "1" if auth.ca_certs else ""
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
def serve(
    spec: str,
    transport: str,
    host: str,
    port: int,
    servers: str,
    subject: str | None,
    workers: int,
    drain_seconds: float,
    token_env: tuple[str, ...] = (),
    certfile: str | None = None,
    keyfile: str | None = None,
    ca_certs: str | None = None,
) -> None:
    """Serve the DynamicToolService MODULE:CLASS."""
    sys.path.insert(0, os.getcwd())  # module:Class of the directory it runs in
    if transport == "nats":
        urls = [s.strip() for s in servers.split(",") if s.strip()]
        _service_or_fail(spec, transport, subject or "tools.x", "", urls)
        subject = subject or f"tools.{load_service(spec).id}"
        _service_or_fail(spec, transport, subject, "", urls)
        click.echo(
            f"seamkit tool-service: {spec} on {', '.join(urls)} subject {subject} "
            f"({workers} worker(s))",
            err=True,
        )
        _serve_nats(spec, urls, subject, workers, drain_seconds)
    else:
        _service_or_fail(spec, transport, None, f"http://{host}:{port}/")
        auth = HttpServerAuth.from_options(host, token_env, certfile, keyfile, ca_certs)
        _serve_http(spec, host, port, workers, drain_seconds, auth)
