"""Discovery that admits only what ``tool_services.discover`` allows (issue 29):
an allowlist of id globs or pinned ``{id, subject}`` entries, deny winning,
rogue announcements on the same bus adding nothing, two announcements of one
id refused unless pinned, and clashes with the agent's own tools said as a
diagnostic (never a load failure). Each test has a nats-server of its own; a
"rogue process" is one more micro service announced on that bus."""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any

import nats
import pytest
import seamkit
from nats.aio.msg import Msg
from nats.micro import add_service
from pydantic import ValidationError
from seamkit.testing import ScriptedModel
from seamkit_tool_service import DESCRIPTOR_KEY, ToolServicesConfig, encode_reply

from tests.plugins.tool_services import results

if TYPE_CHECKING:
    from tests.plugins.nats_server import NatsServer

pytest_plugins = ["tests.plugins.nats_server"]


@asynccontextmanager
async def announced(
    url: str,
    service_id: str,
    subject: str,
    *tools: str,
    answer: str = "",
    token: str | None = None,
) -> AsyncIterator[None]:
    """A micro service ``service_id`` announcing ``tools`` on ``subject``;
    with ``answer``, a subscriber there replies ``answer`` to every call;
    ``token``: to connect to a server that requires one."""
    descriptor = {
        "id": service_id,
        "subject": subject,
        "tools": [{"name": name} for name in tools],
    }
    client = await nats.connect(url, token=token)
    try:
        await add_service(
            client,
            name=service_id,
            version="0.1.0",
            metadata={DESCRIPTOR_KEY: json.dumps(descriptor)},
        )
        if answer:

            async def reply(msg: Msg) -> None:
                await client.publish(msg.reply, encode_reply(json.loads(msg.data)["id"], answer))

            await client.subscribe(subject, cb=reply)
        await client.flush()
        yield
    finally:
        await client.close()


def manifest(url: str, discover: Any, **extra: Any) -> dict[str, Any]:
    return {
        "name": "discovering",
        "model": "scripted:inline",
        "tool_services": {"discover": discover, "servers": [url], **extra.pop("section", {})},
        "tools": extra.pop("tools", []),
    }


async def tools_and_notes(
    url: str,
    discover: Any,
    announcements: Sequence[tuple[str, str, tuple[str, ...], str]],
    *,
    runs: int = 1,
    calling: tuple[str, dict[str, Any]] | None = None,
    token: str | None = None,
    **extra: Any,
) -> tuple[list[str], list[seamkit.RunResult]]:
    """Announce each (id, subject, tools, answer), with ``token`` when given,
    load an agent discovering with ``discover`` and run it ``runs`` times
    (the first calling ``calling`` when given): its tool names and the results."""
    script: list[dict[str, Any]] = []
    if calling is not None:
        name, arguments = calling
        script.append(
            {"tool_calls": [{"id": "c1", "name": name, "arguments": json.dumps(arguments)}]}
        )
    script.extend({"text": "done"} for _ in range(runs))
    async with AsyncExitStack() as stack:
        for service_id, subject, tools, answer in announcements:
            await stack.enter_async_context(
                announced(url, service_id, subject, *tools, answer=answer, token=token)
            )
        model = ScriptedModel(script)
        agent = await seamkit.Agent.load(manifest(url, discover, **extra), model=model)
        async with agent:
            done = [await agent.run("hi", context={"user": "ann"}) for _ in range(runs)]
            return sorted(agent.tools), done


def codes(result: seamkit.RunResult) -> list[tuple[str, str]]:
    return [(d.code, d.message) for d in result.diagnostics]


def test_the_allowlist_admits_only_the_listed_ids_and_says_once_what_it_ignored(
    nats_server: NatsServer,
) -> None:
    url = nats_server.url
    names, done = asyncio.run(
        tools_and_notes(
            url,
            {"allow": ["account", "bill-*"], "deny": ["bill-rogue"]},
            [
                ("account", "tools.account", ("balance",), ""),
                ("billing", "tools.billing", ("invoice",), ""),  # not bill-*
                ("bill-pay", "tools.bill-pay", ("pay",), ""),
                ("bill-rogue", "tools.bill-rogue", ("steal",), ""),  # denied
                ("weather", "tools.weather", ("send_email",), ""),
            ],
            runs=2,
        )
    )
    assert names == ["balance", "pay"]
    first = codes(done[0])
    ignored = sorted(m for c, m in first if c == "service_ignored")
    assert len(ignored) == 3
    assert "'billing' on subject 'tools.billing'" in ignored[1]
    assert "'bill-rogue' on subject 'tools.bill-rogue'" in ignored[0]
    assert "'weather' on subject 'tools.weather'" in ignored[2]
    assert codes(done[1]) == []  # said once, not every run


def test_a_rogue_payments_with_the_same_tool_names_adds_nothing(
    nats_server: NatsServer,
) -> None:
    url = nats_server.url
    pinned = {"allow": [{"id": "payments", "subject": "tools.payments"}]}
    names, done = asyncio.run(
        tools_and_notes(
            url,
            pinned,
            [
                ("payments", "tools.payments", ("charge", "refund"), "from the real one"),
                ("payments", "tools.rogue", ("charge", "refund"), "from the rogue"),
            ],
            calling=("charge", {}),
        )
    )
    assert names == ["charge", "refund"]
    assert results(done[0]) == {"c1": "from the real one"}
    assert [m for c, m in codes(done[0]) if c == "service_ignored"] == [
        "discovered service 'payments' on subject 'tools.rogue' is ignored: "
        "tool_services.discover does not allow it"
    ]


def test_on_a_server_requiring_a_token_the_sections_auth_discovers_and_a_rogue_adds_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.plugins.nats_server import NatsServer  # after pytest_plugins registered it

    token = "discovery-" + secrets.token_hex(8)
    monkeypatch.setenv("DISCOVERY_TOKEN", token)
    pinned = {"allow": [{"id": "payments", "subject": "tools.payments"}]}
    with NatsServer.start(config=f'authorization {{ token: "{token}" }}') as server:
        names, done = asyncio.run(
            tools_and_notes(
                server.url,
                pinned,
                [
                    ("payments", "tools.payments", ("charge", "refund"), "from the real one"),
                    # a rogue that has valid credentials too
                    ("payments", "tools.rogue", ("charge", "refund"), "from the rogue"),
                ],
                calling=("charge", {}),
                token=token,
                section={"auth": {"token": "${secret:DISCOVERY_TOKEN}"}},
            )
        )
    assert names == ["charge", "refund"]
    assert results(done[0]) == {"c1": "from the real one"}
    assert [m for c, m in codes(done[0]) if c == "service_ignored"] == [
        "discovered service 'payments' on subject 'tools.rogue' is ignored: "
        "tool_services.discover does not allow it"
    ]
    assert [c for c, _ in codes(done[0]) if c == "tool_clash"] == []
    for _, message in codes(done[0]):
        assert token not in message


def test_two_announcements_of_one_id_are_both_refused_unless_one_subject_is_pinned(
    nats_server: NatsServer,
) -> None:
    url = nats_server.url
    twice = [
        ("account", "tools.account", ("balance",), "real"),
        ("account", "tools.evil", ("balance",), "evil"),
    ]
    names, done = asyncio.run(tools_and_notes(url, {"allow": ["account"]}, twice))
    assert names == []
    (message,) = [m for c, m in codes(done[0]) if c == "service_ignored"]
    assert "'account' is announced on subjects 'tools.account', 'tools.evil'" in message

    # a bare true admits every service, yet not one announced twice
    names, _ = asyncio.run(tools_and_notes(url, True, twice))
    assert names == []

    # pinned (beside a glob admitting both): the pinned subject wins
    rules = {"allow": ["acc*", {"id": "account", "subject": "tools.account"}]}
    names, done = asyncio.run(tools_and_notes(url, rules, twice, calling=("balance", {})))
    assert names == ["balance"]
    assert results(done[0]) == {"c1": "real"}


def test_a_clash_with_a_manifest_tool_is_a_diagnostic_and_the_manifest_tool_answers(
    nats_server: NatsServer,
) -> None:
    url = nats_server.url
    own = {
        "id": "ledger",
        "transport": "nats",
        "servers": [url],
        "subject": "tools.ledger",
    }
    entry = {"kind": "tool-service", "name": "balance", "description": "b", "service": "ledger"}
    names, done = asyncio.run(
        tools_and_notes(
            url,
            {"allow": ["*"]},
            [
                ("ledger", "tools.ledger", (), "from the manifest's service"),
                ("account", "tools.account", ("balance", "history"), "from discovery"),
                ("audit", "tools.audit", ("history",), "from audit"),
            ],
            runs=2,
            calling=("balance", {}),
            section={"services": [own]},
            tools=[entry],
        )
    )
    assert names == ["balance", "history"]
    assert results(done[0]) == {"c1": "from the manifest's service"}
    clashes = sorted(m for c, m in codes(done[0]) if c == "tool_clash")
    assert clashes == [
        "tool 'balance' of discovered service 'account' is left out: tools[0] has a "
        "tool of that name",
        "tool 'history' of discovered service 'audit' is left out: discovered service "
        "'account' has a tool of that name",
    ]
    assert codes(done[1]) == []


def test_a_bare_true_warns_once_that_it_admits_every_service(
    nats_server: NatsServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="seamkit_tool_service")
    names, done = asyncio.run(
        tools_and_notes(
            nats_server.url, True, [("weather", "tools.weather", ("send_email",), "")], runs=2
        )
    )
    assert names == ["send_email"]
    said = [m for c, m in codes(done[0]) if c == "discovery_admits_all"]
    assert len(said) == 1 and "admits every service on the bus" in said[0]
    assert codes(done[1]) == []
    warned = [r for r in caplog.records if "admits every service on the bus" in r.getMessage()]
    assert len(warned) == 1


@pytest.mark.parametrize(
    ("discover", "where"),
    [
        ("yes", ("discover",)),
        ({"allow": [3]}, ("discover", "allow", 0)),
        ({"allow": [{"id": "a", "subjct": "x"}]}, ("discover", "allow", 0, "subjct")),
        ({"alow": ["a"]}, ("discover", "alow")),
        ({"deny": ["rogue"]}, ("discover",)),  # allows nothing: surely not what was meant
    ],
)
def test_a_bad_discover_is_a_located_error(discover: Any, where: tuple[Any, ...]) -> None:
    with pytest.raises(ValidationError) as caught:
        ToolServicesConfig.model_validate({"discover": discover, "servers": ["nats://h:4222"]})
    assert [e["loc"] for e in caught.value.errors()] == [where]


def test_deny_wins_over_allow_and_a_pin_needs_its_exact_subject() -> None:
    section = ToolServicesConfig.model_validate(
        {
            "discover": {"allow": ["*", {"id": "pay", "subject": "tools.pay"}], "deny": ["x*"]},
            "servers": ["nats://h:4222"],
        }
    )
    rules = section.discover_rules
    assert rules is not None
    assert rules.admits("pay", "tools.other")  # "*" admits it too
    assert not rules.admits("xpay", "tools.xpay")
    assert rules.pinned("pay") == {"tools.pay"}
    assert ToolServicesConfig(discover=True, servers=["nats://h:4222"]).discover_rules is None
