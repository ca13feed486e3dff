"""Discovery: services that announce themselves with the NATS micro services
protocol, found with a ``$SRV.INFO`` scatter-gather, their descriptor read
from the metadata key ``seamkit.descriptor``.

`Discovered` is a `seamkit.ToolSource`: the agent asks it for its tools at
the start of each run and swaps in a changed set before the run starts. It
looks again every ``discover_interval_seconds`` in the background; a service
that no longer answers loses its tools when it missed `MISSES_ALLOWED` + 1
looks in a row (one answer lost to a busy moment does not take them away).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping, Sequence

from seamkit import Diagnostic, Tool

from ._config import ServiceDescriptor, ToolServicesConfig, check_config, located
from ._errors import ToolServiceError
from ._http_auth import mask_urls
from ._tools import Connections, service_tool

__all__ = ["DESCRIPTOR_KEY", "MISSES_ALLOWED", "Discovered"]

DESCRIPTOR_KEY = "seamkit.descriptor"
"""The micro service metadata key holding the service's descriptor (JSON)."""

MISSES_ALLOWED = 1
"""Looks in a row a known service may miss and keep its tools."""

log = logging.getLogger("seamkit_tool_service")


class Discovered:
    """The tools of the services announced on some NATS servers, as last seen.

    Only the services ``discover``'s rules admit add tools (a bare ``true``
    admits every one, with a warning). A discovered tool never displaces a
    tool the agent already has (``reserved``: its manifest entries and code
    tools) nor one another admitted service brought first: it is left out.
    What was left out and why is said once (per service, subject and tool) as
    a `seamkit.Diagnostic` that the next run's diagnostics carry
    (`diagnostics` hands them over) and in the log."""

    def __init__(
        self,
        section: ToolServicesConfig,
        connections: Connections,
        reserved: Mapping[str, str] | None = None,
        *,
        base_dir: str | None = None,
    ) -> None:
        self._servers = section.discovery_servers
        # the section's credentials and TLS: to discover, and to call what is found
        self._auth, self._tls = located(section.auth, section.tls, base_dir)
        self._interval = section.discover_interval_seconds
        self._rules = section.discover_rules
        self._reserved = dict(reserved or {})
        self._connections = connections
        self._known: dict[str, tuple[str, tuple[Tool, ...]]] = {}
        self._missed: dict[str, int] = {}
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._first: asyncio.Event | None = None
        self._closed = False
        self._said: set[tuple[str, ...]] = set()
        self._notes: list[Diagnostic] = []
        if self._rules is None:
            self._say(
                ("admits_all",),
                "discovery_admits_all",
                "tool_services.discover: true admits every service on the bus "
                f"({', '.join(mask_urls(s) for s in self._servers)}); list the services "
                "to admit with discover: {allow: [...]}",
            )

    def diagnostics(self) -> list[Diagnostic]:
        """What discovery left out since the last call (each said once)."""
        notes, self._notes = self._notes, []
        return notes

    def _say(self, key: tuple[str, ...], code: str, message: str) -> None:
        if key in self._said:
            return
        self._said.add(key)
        log.warning("tool service discovery: %s", message)
        self._notes.append(Diagnostic(code=code, message=message))

    async def current(self) -> Sequence[Tool]:
        """The tools of the services seen at the last look (looking now on
        the first call in an event loop; calls meanwhile wait for that look)."""
        loop = asyncio.get_running_loop()
        if not self._closed and (self._task is None or self._task.done() or self._loop is not loop):
            # the task is set before anything is awaited: one looker per loop
            self._first = asyncio.Event()
            self._loop = loop
            self._task = loop.create_task(self._every(self._first))
        first = self._first
        if first is not None and self._loop is loop:
            await first.wait()
        return self._admitted()

    def _admitted(self) -> tuple[Tool, ...]:
        """The tools of the known services, less those whose name is taken
        (by the agent's own tools, or by a service earlier in `_known`)."""
        taken: dict[str, str] = {}
        out: list[Tool] = []
        for service_id, (_, tools) in self._known.items():
            for tool in tools:
                owner = self._reserved.get(tool.name)
                if owner is None and tool.name in taken:
                    owner = f"discovered service {taken[tool.name]!r}"
                if owner is not None:
                    self._say(
                        ("clash", service_id, tool.name, owner),
                        "tool_clash",
                        f"tool {tool.name!r} of discovered service {service_id!r} is left "
                        f"out: {owner} has a tool of that name",
                    )
                    continue
                taken[tool.name] = service_id
                out.append(tool)
        return tuple(out)

    def _admit(self, announced: dict[str, dict[str, str]]) -> dict[str, str]:
        """Of the announcements (by service id, then subject: the descriptor)
        the one each admitted id keeps: its descriptor, by id."""
        rules = self._rules
        seen: dict[str, str] = {}
        for service_id, by_subject in announced.items():
            subjects = sorted(by_subject)
            if rules is not None:
                for subject in subjects:
                    if not rules.admits(service_id, subject):
                        self._say(
                            ("ignored", service_id, subject),
                            "service_ignored",
                            f"discovered service {service_id!r} on subject {subject!r} is "
                            f"ignored: tool_services.discover does not allow it",
                        )
                subjects = [s for s in subjects if rules.admits(service_id, s)]
                if len(subjects) > 1:
                    pinned = [s for s in subjects if s in rules.pinned(service_id)]
                    subjects = pinned if len(pinned) == 1 else subjects
            if len(subjects) > 1:
                self._say(
                    ("twice", service_id, *subjects),
                    "service_ignored",
                    f"discovered service {service_id!r} is announced on subjects "
                    f"{', '.join(map(repr, subjects))}: all are ignored (an allow entry "
                    "{id, subject} pins the one to use)",
                )
                continue
            if subjects:
                seen[service_id] = by_subject[subjects[0]]
        return seen

    async def look(self) -> None:
        """Ask every service for its info now and keep what answered and is
        admitted (and what missed no more than `MISSES_ALLOWED` looks in a row)."""
        if self._closed:
            return
        try:
            transport = self._connections.nats(self._servers, self._auth, self._tls)
            answers = await transport.gather("$SRV.INFO", wait=1.0, quiet=0.1)
        except ToolServiceError as exc:
            log.warning("tool service discovery: %s", exc.message)
            return
        if self._closed:
            return
        announced: dict[str, dict[str, str]] = {}
        for answer in answers:
            try:
                info = json.loads(answer)
                text = info.get("metadata", {}).get(DESCRIPTOR_KEY)
            except (ValueError, AttributeError):
                continue
            if not isinstance(text, str):
                continue
            try:  # a bad descriptor is told in the log by `_tools`, if admitted
                descriptor = json.loads(text)
            except ValueError:
                descriptor = None
            fields = descriptor if isinstance(descriptor, dict) else {}
            service_id = str(fields.get("id") or info.get("name"))
            subject = str(fields.get("subject") or "")
            announced.setdefault(service_id, {}).setdefault(subject, text)
        seen = self._admit(announced)
        known: dict[str, tuple[str, tuple[Tool, ...]]] = {}
        missed: dict[str, int] = {}
        for name, kept in self._known.items():
            if name in seen:
                previous = kept
                text = seen[name]
                if previous[0] == text:
                    known[name] = previous  # unchanged: the same tool objects
                    continue
                tools = self._tools(name, text)
                if tools is not None:
                    known[name] = (text, tools)
            elif name not in announced and self._missed.get(name, 0) < MISSES_ALLOWED:
                known[name] = kept  # missed this look: kept, for now
                missed[name] = self._missed.get(name, 0) + 1
        for name, text in sorted(seen.items()):
            if name in self._known:
                continue
            tools = self._tools(name, text)
            if tools is not None:
                known[name] = (text, tools)
        self._known, self._missed = known, missed
        self._admitted()  # say the clashes of this look now

    def _tools(self, name: str, text: str) -> tuple[Tool, ...] | None:
        try:
            announced = json.loads(text)
            if not isinstance(announced, dict):
                raise ValueError("the descriptor is not a JSON object")
            # reached on the NATS servers it was discovered on
            announced.update(transport="nats", servers=self._servers, auth=None, tls=None)
            service = ServiceDescriptor.model_validate(announced).model_copy(
                update={"auth": self._auth, "tls": self._tls}
            )
        except ValueError as exc:  # pydantic's ValidationError is one
            log.warning("tool service %r announced a bad descriptor: %s", name, exc)
            return None
        tools: list[Tool] = []
        for served in service.tools:
            issues = check_config(served.name, served.config, service)
            if issues:
                log.warning(
                    "tool service %r: tool %r is left out: %s", name, served.name, issues[0][2]
                )
                continue
            tools.append(
                service_tool(
                    service,
                    self._connections,
                    name=served.name,
                    description=served.description,
                    arguments=served.arguments,
                    config=served.config,
                )
            )
        return tuple(tools)

    async def _every(self, first: asyncio.Event) -> None:
        try:
            await self._look_quietly()
        finally:
            first.set()
        while not self._closed:
            await asyncio.sleep(self._interval)
            await self._look_quietly()

    async def _look_quietly(self) -> None:
        try:
            await self.look()
        except Exception as exc:  # a look that fails is tried again at the next
            log.warning("tool service discovery: %s: %s", type(exc).__name__, exc)

    async def aclose(self) -> None:
        """Stop looking (for good: `look` does nothing after this)."""
        self._closed = True
        task, self._task = self._task, None
        if task is not None and not task.done() and self._loop is asyncio.get_running_loop():
            task.cancel()
            await asyncio.wait([task])
