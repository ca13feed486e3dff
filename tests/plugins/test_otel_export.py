"""seamkit-otel end to end: ``seamkit run`` on the telemetry example,
configured by the ``OTEL_*`` environment alone, exports over OTLP/HTTP to a
real receiver on 127.0.0.1 that decodes the protobuf payloads with the
official ``opentelemetry-proto`` package; and the canary: a secret passed
to a tool, a hook and the model request, with content capture on, is in no
exported span, event, metric or log record."""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import pytest
import seamkit
from seamkit import Secret, flow

from tests.plugins.otel_helpers import Exported, exported
from tests.plugins.otlp_receiver import Received, attributes, otlp_receiver

__all__ = ["exported", "otlp_receiver"]

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "docs" / "examples" / "telemetry" / "app.yaml"
SEAMKIT = Path(sys.executable).parent / "seamkit"
CANARY = "canary-otel-5d1f0b"


def forms(secret: str) -> list[str]:
    """``secret`` and the encodings a leak could take."""
    raw = secret.encode()
    encoded = [base64.b64encode(raw), base64.urlsafe_b64encode(raw)]
    return [
        secret,
        quote(secret, safe=""),
        quote_plus(secret),
        *(e.decode().rstrip("=") for e in encoded),
    ]


def leaks(text: str | bytes) -> list[str]:
    """The forms of the canary found in ``text``."""
    data = text.encode() if isinstance(text, str) else text
    return [f for f in forms(CANARY) if f.encode() in data]


def _environment(endpoint: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return {
        **clean,
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_SERVICE_NAME": "shop-test",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
        "SHOP_API_KEY": CANARY,
    }


def test_seamkit_run_exports_its_trace_over_otlp_http(
    otlp_receiver: tuple[str, Received],
) -> None:
    endpoint, received = otlp_receiver
    done = subprocess.run(
        [str(SEAMKIT), "run", str(APP), f"where is A1? my key is {CANARY}"],
        env=_environment(endpoint),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Order A1 has shipped" in done.stdout
    spans = received.spans()
    by_name: dict[str, list[Any]] = {}
    for resource, span in spans:
        assert resource["service.name"] == "shop-test"
        by_name.setdefault(span.name, []).append(span)
    (run,) = by_name["invoke_agent shop"]
    (chats,) = [spans for name, spans in by_name.items() if name.startswith("chat ")]
    assert len(chats) == 2 and str(APP.parent / "script.yaml") in chats[0].name
    tools = {attributes(s.attributes)["gen_ai.tool.name"]: s for s in spans_named(by_name)}
    assert set(tools) == {"lookup_order", "charge"}
    for _, span in spans:
        if span is run:
            continue
        assert span.trace_id == run.trace_id and span.parent_span_id == run.span_id
    assert not run.parent_span_id
    run_attributes = attributes(run.attributes)
    assert run_attributes["gen_ai.agent.name"] == "shop"
    assert run_attributes["gen_ai.provider.name"] == "scripted"
    assert run_attributes["seamkit.run.outcome"] == "completed"
    charge = tools["charge"]
    assert charge.status.code == charge.status.STATUS_CODE_ERROR
    assert attributes(charge.attributes)["error.type"] == "PermissionError"
    lookup = attributes(tools["lookup_order"].attributes)
    assert lookup["gen_ai.tool.call.id"] == "call_lookup"
    assert lookup["gen_ai.tool.call.result"] == "order A1: shipped, paid with ***"  # the pattern
    hooks = [attributes(e.attributes) for e in run.events if e.name == "seamkit.hook"]
    assert [h["seamkit.hook.event"] for h in hooks][:1] == ["on_request_start"]
    assert hooks[0]["seamkit.hook.flow"] == "RewriteMessages"
    assert received.metric_names() >= {
        "gen_ai.client.token.usage",
        "gen_ai.client.operation.duration",
    }
    assert leaks(received.raw()) == []


def spans_named(by_name: dict[str, list[Any]]) -> list[Any]:
    return [s for name, spans in by_name.items() if name.startswith("execute_tool") for s in spans]


class Leaky:
    """A hook that puts the secret into the model request and then fails
    with it in its message (skipped: the run goes on)."""

    on_error = "skip"

    @seamkit.hookimpl
    def on_request_start(
        self, ctx: seamkit.HookContext, messages: tuple[seamkit.Message, ...]
    ) -> flow.RewriteMessages:
        token = ctx.action_context["token"].get_secret_value()
        note = seamkit.Message.system(f"the caller's token is {token}")
        return flow.RewriteMessages([note, *messages])

    @seamkit.hookimpl
    def on_pre_llm(self, ctx: seamkit.HookContext) -> None:
        token = ctx.action_context["token"].get_secret_value()
        raise RuntimeError(f"cannot check quota with {token}")


def test_the_canary_is_in_no_span_event_metric_or_log_record(
    exported: Exported, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHOP_API_KEY", CANARY)
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    monkeypatch.syspath_prepend(str(APP.parent))

    async def go() -> seamkit.RunResult:
        async with await seamkit.Agent.load(APP, hooks=[Leaky()]) as agent:
            return await agent.run(
                f"where is A1? my key is {CANARY}",
                context={"token": Secret(CANARY)},
                session="canary",
                store=str(exported_store(monkeypatch)),
            )

    result = asyncio.run(go())
    assert result.outcome.kind == "completed", result.outcome
    everything = exported.everything()
    names = {s.name for s in exported.finished()}
    assert {"invoke_agent shop", "execute_tool charge", "execute_tool lookup_order"} <= names
    assert "gen_ai.input.messages" in everything  # content was captured...
    assert "cannot check quota with ***" in everything  # ...and the hook's failure logged
    assert leaks(everything) == []  # ...and the canary is nowhere


def exported_store(monkeypatch: pytest.MonkeyPatch) -> Path:
    """A session store in a fresh temporary directory."""
    import tempfile

    directory = Path(tempfile.mkdtemp(prefix="seamkit-otel-"))
    return directory / "sessions.sqlite"
