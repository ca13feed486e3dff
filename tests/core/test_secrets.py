"""A canary secret reaches the tool that uses it and nothing else: not the
schema, not the result the model sees, not the logs, not an error, not a repr."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Annotated, Any

import pytest
import seamkit
from seamkit import ActionContext, HookContext, Injected, Secret, ToolResult

CANARY = "canary-7f3e9b21d4"


@seamkit.tool
def fetch(path: str, _token: str) -> dict[str, Any]:
    """Fetch a path with the caller's token."""
    assert _token == CANARY  # the tool gets the plain value
    return {"path": path, "status": 200}


@seamkit.tool
def leaky(path: str, _token: str) -> str:
    """Fail, mentioning the token (a careless tool)."""
    raise PermissionError(f"token {_token} was refused for {path}")


@seamkit.tool
def looks_inside(ctx: ActionContext) -> str:
    """Read the secret through the context and fail with it."""
    token = ctx.get("token")
    assert isinstance(token, Secret)
    raise RuntimeError(f"cannot use {token.get_secret_value()} (wrapped: {token!r}, {token})")


@seamkit.tool
def wants_the_wrapper(auth: Annotated[Secret[str], Injected("token")]) -> str:
    """Log the secret the careless way."""
    logging.getLogger("user.tool").warning("auth is %s / %r / %s", auth, auth, f"{auth}")
    return f"used {auth}"


@seamkit.tool
def reveals(_token: str) -> str:
    """Return the secret on purpose."""
    return _token


def test_the_canary_never_leaks(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    context = ActionContext(token=Secret(CANARY), user="ann")
    tools = asyncio.run(_tool_map([fetch, leaky, looks_inside, wants_the_wrapper, reveals]))
    hook_ctx = HookContext(action_context=context, tools=tools)

    async def calls() -> list[ToolResult]:
        out = [
            await fetch.call({"path": "/a"}, context),
            await leaky.call({"path": "/b"}, context),
            await looks_inside.call({}, context),
            await wants_the_wrapper.call({}, context),
        ]
        with pytest.raises(seamkit.InvalidToolCall) as info:
            await fetch.call({"path": "/c", "_token": "guess"}, context)
        errors.append(str(info.value))
        return out

    errors: list[str] = []
    results = asyncio.run(calls())
    assert results[0].content == '{"path":"/a","status":200}'
    assert results[1].raised and results[1].content == (
        "Error: PermissionError: token *** was refused for /b"
    )
    assert results[2].content == "Error: RuntimeError: cannot use *** (wrapped: Secret(***), ***)"
    assert results[3].content == "used ***"

    seen: list[str] = [
        *(r.content for r in results),
        *(r.model_dump_json() for r in results),
        *(repr(r) for r in results),
        *errors,
        caplog.text,
        *(json.dumps(t.spec.model_dump()) for t in tools.values()),
        *(repr(t) for t in tools.values()),
        repr(tools),
        repr(context),
        repr(hook_ctx),
        str(context.get("token")),
        repr(context.get("token")),
        f"{context.get('token')}",
        json.dumps(dict(context), default=str),
    ]
    for text in seen:
        assert CANARY not in text, text
    assert "token *** was refused" in caplog.text  # the failure is logged, masked

    # A tool may return it on purpose: that is the one way out.
    assert asyncio.run(reveals.call({}, context)).content == CANARY


def test_a_secret_cannot_be_pickled() -> None:
    import pickle

    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(Secret(CANARY))


async def _tool_map(tools: list[object]) -> seamkit.ToolMap:
    return seamkit.ToolMap.of(tools)


def test_a_secret_inside_a_longer_manifest_string_is_masked_on_its_own(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    token = "tok-canary-5e1d"
    monkeypatch.setenv("TOK", token)

    @seamkit.tool
    def call_api(header: str) -> str:
        """Fails, quoting the token alone."""
        raise ValueError(f"rejected token {header.removeprefix('Bearer ')}")

    app = {
        "name": "a",
        "model": "scripted:x",
        "hooks": [
            {
                "kind": "tool_call",
                "event": "on_request_start",
                "tool_name": "call_api",
                "arguments": {"header": "Bearer ${secret:TOK}"},
                "on_error": "skip",
            }
        ],
    }
    model = seamkit.testing.ScriptedModel([{"text": "ok"}])
    agent = asyncio.run(seamkit.Agent.load(app, tools=[call_api], model=model))
    result = agent.run_sync("hi")
    assert result.outcome.kind == "completed"
    assert token not in result.model_dump_json() and token not in caplog.text
    assert "rejected token ***" in caplog.text


# --- seamkit.secret_json: the one Secret -> JSON fallback ------------------------------


def test_secret_json_masks_a_secret_by_default() -> None:
    data = {"token": Secret(CANARY), "n": 1}
    assert json.dumps(data, default=seamkit.secret_json) == '{"token": "***", "n": 1}'


def test_secret_json_writes_the_manifest_text_or_the_value_when_asked() -> None:
    import functools

    secret = Secret(CANARY, source="${secret:TOKEN}")
    as_written = functools.partial(seamkit.secret_json, source=True)
    revealed = functools.partial(seamkit.secret_json, reveal=True)
    assert json.dumps([secret], default=as_written) == '["${secret:TOKEN}"]'
    assert json.dumps([Secret(CANARY)], default=as_written) == '["***"]'  # no manifest text
    assert json.dumps([secret], default=revealed) == f'["{CANARY}"]'


def test_secret_json_refuses_anything_else_as_json_does() -> None:
    with pytest.raises(TypeError, match="object is not JSON-serialisable"):
        json.dumps({"x": object()}, default=seamkit.secret_json)
