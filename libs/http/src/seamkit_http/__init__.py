"""seamkit-http: what seamkit's HTTP model providers share, written once.

A library, not a plugin: `Endpoint` (pooled `Connections`, an httpx
transport per event loop, and a POST retried as the official clients retry,
never following a redirect), server-sent events (`EventDecoder`,
`server_events`), the wording of errors about a server's answer and an API
key (`server_message`, `error_object`, `json_object`, `shown`, `key_origin`,
`key_refused`, `cut_off`), with secrets masked before anything is cut short,
and `token_count` (a usage count read safely).

Importing this module costs next to nothing; httpx loads when an
`Endpoint` first posts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from seamkit.plugins import lazy_module

if TYPE_CHECKING:
    from ._counts import token_count as token_count
    from ._cut_off import cut_off as cut_off, stream_progress as stream_progress
    from ._endpoint import (
        Connections as Connections,
        Endpoint as Endpoint,
        Failure as Failure,
        RetryRule as RetryRule,
        proxy_for as proxy_for,
    )
    from ._messages import (
        MESSAGE_LIMIT as MESSAGE_LIMIT,
        answered as answered,
        context_too_long as context_too_long,
        error_object as error_object,
        json_object as json_object,
        key_origin as key_origin,
        key_refused as key_refused,
        parsed_object as parsed_object,
        server_message as server_message,
        shown as shown,
        status_failure as status_failure,
    )
    from ._settings import ConnectionSettings as ConnectionSettings
    from ._sse import (
        EventDecoder as EventDecoder,
        ServerEvent as ServerEvent,
        as_streamed as as_streamed,
        body_chunks as body_chunks,
        is_event_stream as is_event_stream,
        server_events as server_events,
    )

__getattr__, __dir__, __all__ = lazy_module(
    __name__,
    {
        "ConnectionSettings": "._settings",  # pydantic loads with a config model
        "Connections": "._endpoint",
        "Endpoint": "._endpoint",  # httpx loads only when it first posts
        "EventDecoder": "._sse",
        "Failure": "._endpoint",
        "ServerEvent": "._sse",
        "MESSAGE_LIMIT": "._messages",
        "RetryRule": "._endpoint",
        "answered": "._messages",
        "as_streamed": "._sse",
        "body_chunks": "._sse",
        "context_too_long": "._messages",
        "cut_off": "._cut_off",
        "error_object": "._messages",
        "json_object": "._messages",
        "is_event_stream": "._sse",
        "key_origin": "._messages",
        "key_refused": "._messages",
        "server_message": "._messages",
        "parsed_object": "._messages",
        "proxy_for": "._endpoint",
        "server_events": "._sse",
        "shown": "._messages",
        "status_failure": "._messages",
        "stream_progress": "._cut_off",
        "token_count": "._counts",
    },
)
