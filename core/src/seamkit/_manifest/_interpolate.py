"""Load-time interpolation of manifest strings: ``${env:VAR}``,
``${env:VAR:-default}`` and ``${secret:VAR}`` (which gives a `Secret`).
``$${`` writes a literal ``${``."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from .._errors import Problem
from .._secret import Secret

__all__ = ["interpolate"]

_PATTERN = re.compile(
    r"\$\$\{|\$\{(?P<scheme>env|secret):(?P<var>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>[^}]*))?\}"
)
_BAD = re.compile(r"(?<!\$)\$\{(?!env:|secret:)[^}]*\}?")


def interpolate(data: Any, environ: Mapping[str, str] | None = None) -> tuple[Any, list[Problem]]:
    """Replace placeholders in every string of ``data``; collect the problems."""
    env = os.environ if environ is None else environ
    problems: list[Problem] = []
    return _walk(data, (), env, problems), problems


def _walk(
    value: Any, loc: tuple[str | int, ...], env: Mapping[str, str], problems: list[Problem]
) -> Any:
    if isinstance(value, dict):
        return {k: _walk(v, (*loc, k), env, problems) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, (*loc, i), env, problems) for i, v in enumerate(value)]
    if isinstance(value, str) and "${" in value:
        return _string(value, loc, env, problems)
    return value


def _string(
    text: str, loc: tuple[str | int, ...], env: Mapping[str, str], problems: list[Problem]
) -> Any:
    secret = False
    parts: list[str] = []
    bad = _BAD.search(text.replace("$${", ""))
    if bad:
        problems.append(
            Problem(
                loc,
                f"unknown placeholder {bad.group(0)!r}",
                hint="use ${env:VAR}, ${env:VAR:-default} or ${secret:VAR}; write $${ for a "
                "literal ${",
            )
        )
        return text

    def replace(match: re.Match[str]) -> str:
        nonlocal secret
        if match.group(0) == "$${":
            return "${"
        var, default = match.group("var"), match.group("default")
        scheme = match.group("scheme")
        value = env.get(var, default)
        if scheme == "secret":
            secret = True
            if value:
                parts.append(value)
        if value is not None:
            return value
        problems.append(
            Problem(
                loc,
                f"environment variable {var} is not set",
                hint=f"set {var}, or give a default: ${{{scheme}:{var}:-value}}",
            )
        )
        return ""

    result = _PATTERN.sub(replace, text)
    return Secret(result, source=text, parts=tuple(parts)) if secret else result
