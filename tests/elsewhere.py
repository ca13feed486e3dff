"""What tests of runs that run elsewhere (through an executor, on Temporal)
share: comparing what such a run left with what the run in process left, and
forgetting the example apps' modules between tests."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["forget_the_apps_modules", "normal"]

_IDS = re.compile(r"\b(call_)?[0-9a-f]{24,64}\b")
_TIMES = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?")
_EPOCHS = re.compile(r"(?<![\w.])1\d{9}(?![\w.])")
"""Seconds since 1970 (an injected result's expiry, say): 2001 to 2033."""
_PAIRS = re.compile(r"\b(synth_[0-9a-f]{18})_[0-9a-f]{8}\b")
"""An injected pair's id, whose tail is its expiry (`seamkit.injection`)."""


def normal(value: object) -> object:
    """``value`` as JSON with the ids a run draws replaced by their order of
    appearance, and its times (ISO 8601 or seconds since 1970) by a mark:
    the same run elsewhere, a moment later, draws other ones."""
    text = _PAIRS.sub(r"\1_<expiry>", json.dumps(value, sort_keys=True, default=str))
    seen: dict[str, str] = {}
    text = _IDS.sub(lambda m: seen.setdefault(m.group(0), f"<id{len(seen)}>"), text)
    return json.loads(_EPOCHS.sub('"<epoch>"', _TIMES.sub("<time>", text)))


@pytest.fixture(autouse=True)
def forget_the_apps_modules(tmp_path: Path) -> Iterator[None]:
    """The example apps' tool modules, imported from ``tmp_path``, are
    forgotten after the test (another test's app may have modules of the
    same names). Import it into a test module to use it there."""
    yield
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith(str(tmp_path)):
            del sys.modules[name]
