"""Tools for testing seamkit plugins and apps (extra ``seamkit[testing]``).

- :func:`build_agent`: an agent from a dict manifest, plugins registered
  in-process, a :class:`ScriptedModel` playing given turns; :class:`Recorder`
  records every hook call; :func:`stream_run` collects a streamed run.
- :func:`run_event` / :func:`arun_event`: drive a list of hooks through one
  event without an agent, and get the net flow back.
- :func:`scripted_hook`: a hook that returns (or raises) what you tell it.
- :mod:`seamkit.testing.strategies`: hypothesis strategies for messages, tool
  calls, histories, documents and request patches.
- :func:`check_patch_laws`, :func:`check_hook_composes` and
  :func:`check_refresh_condition`: ready property checks, one line each in a
  plugin author's test.
- :func:`check_text_guard`: a text guard (an ``on_text_delta`` hook, the
  run's redactor) lets no forbidden text out, whatever the model's deltas.
- :func:`check_session_store` (and :func:`acheck_session_store` in a running
  event loop): the conformance check of a session store, journal included
  when it keeps one.
- :func:`record`: record every model exchange of an agent's runs to a
  cassette that ``model: replay:FILE`` plays back (no network).
- :func:`check_model_provider` (and :func:`acheck_model_provider`): the
  conformance suite of a model provider, run against wire cassettes
  (:func:`load_wire_cassette`) that a local :class:`WireServer` plays; it gives
  a :class:`ProviderReport`.
- The pytest plugin (entry point ``pytest11``) gives ``seamkit_*`` fixtures
  and runs plain ``async def`` tests with asyncio (``seamkit_async = false``
  in the ini turns that off; anyio, pytest-asyncio and pytest-trio keep theirs).

Hypothesis is imported only when strategies or checks are used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_module

if TYPE_CHECKING:  # what the table below loads, spelled out for type checkers
    from .._errors import (
        ProviderCheckFailed as ProviderCheckFailed,
        ScriptError as ScriptError,
        WireCassetteError as WireCassetteError,
    )
    from .._recording import RecordingModel as RecordingModel, record as record
    from .._scripted import ScriptedModel as ScriptedModel
    from . import strategies as strategies
    from ._agents import (
        Recorder as Recorder,
        StreamedRun as StreamedRun,
        build_agent as build_agent,
        stream_run as stream_run,
    )
    from ._checks import (
        check_hook_composes as check_hook_composes,
        check_patch_laws as check_patch_laws,
    )
    from ._harness import (
        Opaque as Opaque,
        arun_event as arun_event,
        make_context as make_context,
        run_event as run_event,
        scripted_hook as scripted_hook,
    )
    from ._provider_checks import (
        CASSETTE_NAMES as CASSETTE_NAMES,
        acheck_model_provider as acheck_model_provider,
        check_model_provider as check_model_provider,
    )
    from ._provider_report import (
        ProviderCheck as ProviderCheck,
        ProviderReport as ProviderReport,
    )
    from ._refresh_checks import check_refresh_condition as check_refresh_condition
    from ._store_checks import (
        acheck_session_store as acheck_session_store,
        check_session_store as check_session_store,
    )
    from ._text_checks import (
        TextGuardChecked as TextGuardChecked,
        check_text_guard as check_text_guard,
    )
    from ._wire_cassette import (
        WireCassette as WireCassette,
        WireResponse as WireResponse,
        load_wire_cassette as load_wire_cassette,
        parse_wire_cassette as parse_wire_cassette,
    )
    from ._wire_server import WireRequest as WireRequest, WireServer as WireServer

__getattr__, __dir__, __all__ = lazy_module(
    __name__,
    {
        "strategies": "",
        "ScriptError": ".._errors",
        "ScriptedModel": ".._scripted",
        "RecordingModel": ".._recording",
        "record": ".._recording",
        "Recorder": "._agents",
        "StreamedRun": "._agents",
        "build_agent": "._agents",
        "stream_run": "._agents",
        "check_hook_composes": "._checks",
        "check_patch_laws": "._checks",
        "Opaque": "._harness",
        "arun_event": "._harness",
        "make_context": "._harness",
        "run_event": "._harness",
        "scripted_hook": "._harness",
        "CASSETTE_NAMES": "._provider_checks",
        "acheck_model_provider": "._provider_checks",
        "check_model_provider": "._provider_checks",
        "ProviderCheck": "._provider_report",
        "ProviderCheckFailed": ".._errors",
        "ProviderReport": "._provider_report",
        "check_refresh_condition": "._refresh_checks",
        "acheck_session_store": "._store_checks",
        "check_session_store": "._store_checks",
        "TextGuardChecked": "._text_checks",
        "check_text_guard": "._text_checks",
        "WireCassetteError": ".._errors",
        "WireCassette": "._wire_cassette",
        "WireResponse": "._wire_cassette",
        "load_wire_cassette": "._wire_cassette",
        "parse_wire_cassette": "._wire_cassette",
        "WireRequest": "._wire_server",
        "WireServer": "._wire_server",
    },
)
