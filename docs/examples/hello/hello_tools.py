"""Tools of the example app (toolset ``calc``)."""

from typing import Annotated

import seamkit
from pydantic import Field


@seamkit.tool
def add(
    a: Annotated[int, Field(description="The first addend.")],
    b: Annotated[int, Field(description="The second addend.")],
) -> int:
    """Add two integers."""
    return a + b


@seamkit.tool(tags={"context"})
def whoami(_user: str = "anonymous") -> str:
    """Say which user this request runs for (injected from the context)."""
    return f"You are {_user}."
