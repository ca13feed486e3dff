"""What `check_model_provider` found: one `ProviderCheck` per check, in a
`ProviderReport` a test asserts on."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from .._errors import ProviderCheckFailed

__all__ = ["ProviderCheck", "ProviderReport"]

Outcome = Literal["passed", "failed", "not covered"]


@dataclass(frozen=True)
class ProviderCheck:
    """One check: its ``name``, its ``outcome`` (``passed``, ``failed``, or
    ``not covered`` when no cassette was given for it) and ``detail`` (why it
    failed, or what it saw)."""

    name: str
    outcome: Outcome
    detail: str = ""

    def __str__(self) -> str:
        detail = f": {self.detail}" if self.detail else ""
        return f"{self.outcome:<11}  {self.name}{detail}"


@dataclass(frozen=True)
class ProviderReport:
    """Every check's outcome, in the order they ran. ``report["tools"]`` is
    one check; `failed` and `not_covered` name the checks with that outcome;
    ``str(report)`` is one line per check."""

    checks: tuple[ProviderCheck, ...]

    def __getitem__(self, name: str) -> ProviderCheck:
        for check in self.checks:
            if check.name == name:
                return check
        raise KeyError(f"no check named {name!r}; the checks are {[c.name for c in self.checks]}")

    def __iter__(self) -> Iterator[ProviderCheck]:
        return iter(self.checks)

    def _named(self, outcome: Outcome) -> tuple[str, ...]:
        return tuple(check.name for check in self.checks if check.outcome == outcome)

    @property
    def passed(self) -> tuple[str, ...]:
        """The checks that passed."""
        return self._named("passed")

    @property
    def failed(self) -> tuple[str, ...]:
        """The checks that failed."""
        return self._named("failed")

    @property
    def not_covered(self) -> tuple[str, ...]:
        """The checks no cassette was given for."""
        return self._named("not covered")

    @property
    def ok(self) -> bool:
        """Whether no check failed."""
        return not self.failed

    def __str__(self) -> str:
        return "\n".join(str(check) for check in self.checks)

    def assert_passed(self, *, all_covered: bool = False) -> None:
        """Raise `ProviderCheckFailed` listing every failed check (and, with
        ``all_covered``, every check without a cassette); else nothing."""
        bad = [
            check
            for check in self.checks
            if check.outcome == "failed" or (all_covered and check.outcome == "not covered")
        ]
        if bad:
            lines = "\n".join(f"  {check}" for check in bad)
            raise ProviderCheckFailed(
                f"{len(bad)} of {len(self.checks)} provider checks did not pass:\n{lines}"
            )
