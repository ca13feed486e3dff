"""`seamkit.plugins.retry_status`, `retry_wait` and `render_documents`: what
HTTP model providers share. The retry policy is the official OpenAI and
Anthropic clients' (their ``_base_client.py``), so a provider behaves as the
SDK users already know."""

from __future__ import annotations

import email.utils
import time

import pytest
import seamkit
from hypothesis import given, strategies as st
from seamkit.plugins import render_documents, retry_status, retry_wait, shown_url


@pytest.mark.parametrize(
    ("status", "headers", "retried"),
    [
        (408, {}, True),
        (409, {}, True),
        (429, {}, True),
        (500, {}, True),
        (529, {}, True),  # Anthropic's "overloaded"
        (400, {}, False),
        (401, {}, False),
        (404, {}, False),
        (429, {"x-should-retry": "false"}, False),
        (400, {"x-should-retry": "true"}, True),
    ],
)
def test_which_answers_are_retried(status: int, headers: dict[str, str], retried: bool) -> None:
    assert retry_status(status, headers) is retried


def test_the_servers_wait_is_honoured_in_milliseconds_seconds_or_as_a_date() -> None:
    assert retry_wait(0, {"retry-after-ms": "250"}) == 0.25
    assert retry_wait(3, {"retry-after": "2"}) == 2.0
    soon = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= retry_wait(0, {"retry-after": soon}) <= 31


@given(st.integers(min_value=0, max_value=30))
def test_without_a_usable_server_wait_the_backoff_is_bounded_with_jitter(retry: int) -> None:
    ceiling = min(0.5 * 2.0**retry, 8.0)
    late = email.utils.formatdate(time.time() + 3600, usegmt=True)
    for headers in ({}, {"retry-after": "61"}, {"retry-after": late}, {"retry-after": "soon"}):
        assert 0.75 * ceiling <= retry_wait(retry, headers) <= ceiling


def test_documents_are_rendered_with_their_ids_escaped_and_metadata_as_json() -> None:
    docs = (
        seamkit.Document(id='a"<b', text="Sunny.", metadata={"z": 1, "a": 2}),
        seamkit.Document(id="plain", text="Rain."),
    )
    assert render_documents(docs) == (
        "<documents>\n"
        '<document id="a&quot;&lt;b">\n'
        '<metadata>{"a": 2, "z": 1}</metadata>\n'
        "Sunny.\n"
        "</document>\n"
        '<document id="plain">\n'
        "Rain.\n"
        "</document>\n"
        "</documents>"
    )


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://ann:KEY@127.0.0.1:4000/v1?key=KEY#KEY", "http://127.0.0.1:4000/v1"),
        ("https://api.anthropic.com", "https://api.anthropic.com"),
        ("http://KEY@host/", "http://host/"),
    ],
)
def test_a_base_url_is_shown_without_what_may_carry_a_key(url: str, shown: str) -> None:
    assert shown_url(url) == shown
