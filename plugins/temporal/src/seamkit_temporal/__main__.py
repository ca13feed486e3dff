"""``python -m seamkit_temporal``: the ``seamkit temporal`` commands
without the ``seamkit`` command around them (how ``seamkit temporal worker
--workers N`` starts its worker processes)."""

from __future__ import annotations

from ._command import temporal_group

if __name__ == "__main__":
    temporal_group(prog_name="seamkit temporal")
