"""``seamkit serve APP``: check the manifest and the keys, bind the socket
(``TCP_NODELAY`` on, so no reply waits on Nagle's algorithm), and run
uvicorn with one or more workers."""

from __future__ import annotations

import asyncio
import ipaddress
import os
import secrets

import click
import seamkit
from seamkit.plugins import listening_socket

from ._config import Keys, ServeConfig
from ._handed import KEY_ENV

__all__ = ["serve_command"]


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def _check(app: str, store: str | None, model_spec: str | None) -> None:
    """Build the agent once, so that its errors reach the command line as
    errors (each worker builds its own when it starts)."""
    async with await seamkit.Agent.load(app, model=model_spec, store=store):
        pass


@click.command("serve")
@click.argument("app", type=click.Path(dir_okay=False))
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1), help="Processes.")
@click.option("--store", metavar="URL|PATH", help="Session store (default: the manifest's).")
@click.option("--model", "model_spec", metavar="PROVIDER:NAME", help="Replace the app's model.")
def serve_command(
    app: str, host: str, port: int, workers: int, store: str | None, model_spec: str | None
) -> None:
    """Serve APP as an OpenAI-compatible endpoint: POST /v1/chat/completions,
    GET /v1/models, /healthz and /readyz; POST /v1/sessions/NAME/decisions
    decides the calls a suspended run waits for."""
    config = seamkit.AppConfig.load(app)
    asyncio.run(_check(app, store, model_spec))  # a broken app fails here, clearly
    section = config.section("serve")
    serve = section if isinstance(section, ServeConfig) else ServeConfig()
    keys = Keys.gather(serve)
    if not keys and not _loopback(host):
        raise seamkit.SeamkitError(
            f"no API keys are configured, so the server will not listen on {host}",
            hint="set serve.api_keys in the manifest or SEAMKIT_API_KEYS, or use --host 127.0.0.1",
        )
    sock = listening_socket(host, port)
    bound = sock.getsockname()[1]
    if keys:
        click.echo(
            f"seamkit serve: {config.name} on http://{host}:{bound}/v1 "
            f"({len(keys)} API key{'s' if len(keys) != 1 else ''})",
            err=True,
        )
    else:
        click.echo(
            f"seamkit serve: {config.name} on http://{host}:{bound}/v1 with no API keys: "
            "loopback only, no authentication",
            err=True,
        )
    os.environ["SEAMKIT_SERVE_APP"] = os.path.abspath(app)
    os.environ["SEAMKIT_SERVE_STORE"] = store or ""
    os.environ["SEAMKIT_SERVE_MODEL"] = model_spec or ""
    # the key of handed-out call ids, one for all workers (settings.state_key wins)
    os.environ.setdefault(KEY_ENV, secrets.token_hex(32))
    import uvicorn  # lazy: only the serve command needs the server

    from ._deadlines import HEADER_TIMEOUT_ENV  # lazy: it imports uvicorn, see above

    os.environ[HEADER_TIMEOUT_ENV] = repr(serve.header_timeout_seconds)

    uv_config = uvicorn.Config(
        "seamkit_serve._app:app_from_env",
        factory=True,
        workers=workers,
        timeout_graceful_shutdown=max(1, int(serve.drain_seconds)),
        log_level="info",
        lifespan="on",
        http="seamkit_serve._deadlines:HeaderDeadline",  # h11, with a header deadline
    )
    server = uvicorn.Server(uv_config)
    if workers == 1:
        server.run(sockets=[sock])
    else:
        from uvicorn.supervisors import Multiprocess  # lazy: see above

        Multiprocess(uv_config, sockets=[sock]).run()
